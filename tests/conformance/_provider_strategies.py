"""Hypothesis strategies: random valid Gemini and Bedrock streams.

Texts are split into random non-empty pieces; Gemini calls come whole or streamed
(``partialArgs`` per leaf, strings continued in pieces, nested objects and arrays);
Bedrock tool input JSON is split at arbitrary points. What they leave out is where
the AI SDK's providers are known to differ (tested by name in test_gemini/test_bedrock):
a second candidate, a signature on an empty part after thoughts, redacted reasoning
in several pieces, empty text deltas.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from hypothesis import strategies as st

from ._strategies import splits

TEXT = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=30)
NAMES = st.text("abcdefgh", min_size=1, max_size=5)
SIGNATURES = st.binary(min_size=1, max_size=40).map(lambda raw: base64.b64encode(raw).decode())
# Numbers that print alike in JSON from both languages (no 5.0, no 1e20).
NUMBERS = st.integers(-(10**6), 10**6) | st.integers(-999, 999).map(lambda n: n + 0.5)
LEAVES = TEXT | NUMBERS | st.booleans() | st.none()
ARGS = st.dictionaries(
    NAMES,
    st.recursive(
        LEAVES,
        lambda inner: (
            st.lists(inner, min_size=1, max_size=3)
            | st.dictionaries(NAMES, inner, min_size=1, max_size=3)
        ),
        max_leaves=6,
    ),
    max_size=4,
)


def _pieces(draw: st.DrawFn, text: str) -> list[str]:
    return [piece for piece in draw(splits(text)) if piece] or [text]


# -- Gemini ---------------------------------------------------------------------------


def _leaves(value: Any, path: str) -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [leaf for key, item in value.items() for leaf in _leaves(item, f"{path}.{key}")]
    if isinstance(value, list):
        return [leaf for n, item in enumerate(value) for leaf in _leaves(item, f"{path}[{n}]")]
    return [(path, value)]


def _partial(draw: st.DrawFn, path: str, value: Any) -> list[dict[str, Any]]:
    """The partialArgs entries that stream one leaf, as Gemini 3 sends them."""
    if isinstance(value, str):
        pieces = _pieces(draw, value)
        out = [{"jsonPath": path, "stringValue": p, "willContinue": True} for p in pieces]
        return [*out, {"jsonPath": path, "stringValue": ""}]
    if isinstance(value, bool):
        return [{"jsonPath": path, "boolValue": value}]
    if value is None:
        return [{"jsonPath": path, "nullValue": None}]
    return [{"jsonPath": path, "numberValue": value}]


@st.composite
def gemini_parts(draw: st.DrawFn) -> list[dict[str, Any]]:
    """The parts one response streams, in order (one part per chunk later)."""
    parts: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["text", "thought", "call", "streamed"]))
        signature = draw(st.none() | SIGNATURES)
        if kind in ("text", "thought"):
            pieces = _pieces(draw, draw(TEXT))
            for piece in pieces:
                part: dict[str, Any] = {"text": piece}
                if kind == "thought":
                    part["thought"] = True
                parts.append(part)
            if signature is not None:
                if kind == "text" and draw(st.booleans()):
                    parts.append({"text": "", "thoughtSignature": signature})  # Gemini 3's way
                else:
                    parts[-1]["thoughtSignature"] = signature
            continue
        name, args = draw(NAMES), draw(ARGS)
        call: dict[str, Any] = {"name": name}
        if kind == "call":
            if args or draw(st.booleans()):
                call["args"] = args
            if draw(st.booleans()):
                call["id"] = f"call-{len(parts)}"
            parts.append({"functionCall": call, **_signed(signature)})
            continue
        parts.append({"functionCall": {**call, "willContinue": True}, **_signed(signature)})
        for path, value in _leaves(args, "$"):
            for entry in _partial(draw, path, value):
                parts.append({"functionCall": {"partialArgs": [entry], "willContinue": True}})
        parts.append({"functionCall": {}})
    return parts


def _signed(signature: str | None) -> dict[str, Any]:
    return {} if signature is None else {"thoughtSignature": signature}


@st.composite
def gemini_stream(draw: st.DrawFn) -> list[dict[str, Any]]:
    """One response's chunks: a part each, cumulative usage, an empty last part with
    the finish reason."""
    parts = draw(gemini_parts())
    chunks = []
    tokens = 0
    meta = {"modelVersion": "gemini-test", "responseId": draw(NAMES)}
    for part in parts:
        tokens += draw(st.integers(0, 5))
        usage = {"promptTokenCount": 3, "candidatesTokenCount": tokens}
        content = {"role": "model", "parts": [part]}
        chunks.append({"candidates": [{"content": content}], "usageMetadata": usage, **meta})
    finish = draw(st.sampled_from(["STOP", "MAX_TOKENS", "SAFETY"]))
    last = {"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": finish}
    usage = {"promptTokenCount": 3, "candidatesTokenCount": tokens, "totalTokenCount": tokens + 3}
    chunks.append({"candidates": [last], "usageMetadata": usage, **meta})
    return chunks


# -- Bedrock --------------------------------------------------------------------------


@st.composite
def bedrock_stream(draw: st.DrawFn) -> list[dict[str, Any]]:
    """One message's ConverseStream events."""
    events: list[dict[str, Any]] = []
    if draw(st.booleans()):
        events.append({"messageStart": {"role": "assistant"}})
    for index in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["text", "reasoning", "tool"]))
        if kind == "tool":
            tool = {"toolUseId": f"tool-{index}", "name": draw(NAMES)}
            events.append(
                {"contentBlockStart": {"contentBlockIndex": index, "start": {"toolUse": tool}}}
            )
            text = json.dumps(draw(ARGS)) if draw(st.integers(0, 4)) else ""
            for piece in draw(splits(text)) if text else [""]:
                delta = {"toolUse": {"input": piece}}
                events.append({"contentBlockDelta": {"contentBlockIndex": index, "delta": delta}})
        else:
            for piece in _pieces(draw, draw(TEXT)):
                delta: dict[str, Any] = (
                    {"text": piece} if kind == "text" else {"reasoningContent": {"text": piece}}
                )
                events.append({"contentBlockDelta": {"contentBlockIndex": index, "delta": delta}})
            if kind == "reasoning" and draw(st.booleans()):
                delta = {"reasoningContent": {"signature": draw(SIGNATURES)}}
                events.append({"contentBlockDelta": {"contentBlockIndex": index, "delta": delta}})
        events.append({"contentBlockStop": {"contentBlockIndex": index}})
    stop = {"messageStop": {"stopReason": draw(st.sampled_from(["end_turn", "tool_use"]))}}
    tokens = draw(st.integers(0, 99))
    usage = {"inputTokens": 5, "outputTokens": tokens, "totalTokens": tokens + 5}
    metadata = {"metadata": {"usage": usage, "metrics": {"latencyMs": 7}}}
    events += [stop, metadata] if draw(st.booleans()) else [metadata, stop]
    return events
