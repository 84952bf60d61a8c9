"""Hypothesis strategies: random valid streams of the Anthropic and OpenAI protocols.

Each stream holds several messages/responses in a row; texts are split into
random deltas (empty ones included, astral characters included) and tool
arguments are JSON documents split at arbitrary points, mid-token.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
JSON_OBJECTS = st.dictionaries(TEXT, JSON_VALUES, max_size=5)

SHORT_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=6)
"""A few characters that UTF-8 encodes (what the JavaScript references read back)."""


def cut_into(value: str, cuts: list[int]) -> list[str]:
    """``value`` cut at each of ``cuts`` (taken modulo its length + 1), in order: a cut
    at either end gives an empty piece (an empty delta)."""
    points = sorted({c % (len(value) + 1) for c in cuts})
    out, last = [], 0
    for point in [*points, len(value)]:
        out.append(value[last:point])
        last = point
    return out


@st.composite
def splits(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` cut at random points into deltas, some of them empty."""
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=8)))
    pieces, last = [], 0
    for cut in cuts:
        pieces.append(text[last:cut])
        last = cut
    pieces.append(text[last:])
    return pieces


@st.composite
def interleave(draw: st.DrawFn, lanes: list[list[Any]]) -> list[tuple[int, Any]]:
    """The items of ``lanes`` merged in a random order that keeps each lane's order."""
    order = [lane for lane, items in enumerate(lanes) for _ in items]
    order = draw(st.permutations(order))
    positions = [0] * len(lanes)
    out = []
    for lane in order:
        out.append((lane, lanes[lane][positions[lane]]))
        positions[lane] += 1
    return out


# -- Anthropic ----------------------------------------------------------------------


@st.composite
def anthropic_block(draw: st.DrawFn) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A content block start payload and its deltas."""
    kind = draw(st.sampled_from(["text", "thinking", "tool_use", "compaction"]))
    if kind == "compaction":  # the beta accumulator sets both fields from each delta
        deltas = [
            {"type": "compaction_delta", "content": draw(TEXT)}
            | ({"encrypted_content": draw(TEXT)} if draw(st.booleans()) else {})
            for _ in range(draw(st.integers(0, 2)))
        ]
        return {"type": "compaction", "content": None, "encrypted_content": None}, deltas
    if kind == "text":
        pieces = draw(splits(draw(TEXT)))
        return {"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in pieces]
    if kind == "thinking":
        pieces = draw(splits(draw(TEXT)))
        deltas = [{"type": "thinking_delta", "thinking": p} for p in pieces]
        deltas.append({"type": "signature_delta", "signature": draw(TEXT)})
        return {"type": "thinking", "thinking": "", "signature": ""}, deltas
    arguments = json.dumps(draw(JSON_OBJECTS), ensure_ascii=draw(st.booleans()))
    pieces = draw(splits(arguments))
    block = {
        "type": "tool_use",
        "id": f"toolu_{draw(st.integers(0, 99))}",
        "name": "f",
        "input": {},
    }
    return block, [{"type": "input_json_delta", "partial_json": p} for p in pieces]


@st.composite
def anthropic_streams(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Several Anthropic messages in a row, block deltas interleaved within each."""
    events: list[dict[str, Any]] = []
    for number in range(draw(st.integers(1, 3))):
        events.append(
            {
                "type": "message_start",
                "message": {
                    "id": f"msg_{number}",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "model": "claude-test",
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 3, "output_tokens": 1},
                },
            }
        )
        blocks = draw(st.lists(anthropic_block(), max_size=4))
        lanes = [
            [{"type": "content_block_delta", "index": i, "delta": d} for d in deltas]
            + [{"type": "content_block_stop", "index": i}]
            for i, (_, deltas) in enumerate(blocks)
        ]
        started = 0
        for lane, event in draw(interleave(lanes)):
            # Blocks start in index order: the SDK appends a block per start.
            while started <= lane:
                start = {"type": "content_block_start", "index": started}
                events.append({**start, "content_block": blocks[started][0]})
                started += 1
            events.append(event)
        if draw(st.booleans()):
            events.append({"type": "ping"})
        usage: dict[str, Any] = {"output_tokens": draw(st.integers(0, 1000))}
        if draw(st.booleans()):  # the beta per-iteration usage, a compaction's among them
            usage["iterations"] = [
                {"type": kind, "input_tokens": draw(st.integers(0, 10**6)), "output_tokens": 1}
                | {"cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
                for kind in draw(st.lists(st.sampled_from(["compaction", "message"]), max_size=3))
            ]
        events.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": usage,
            }
        )
        events.append({"type": "message_stop"})
    if draw(st.booleans()):  # a recording cut off mid-stream
        events = events[: draw(st.integers(1, len(events)))]
    return events


# -- OpenAI Chat Completions --------------------------------------------------------


@st.composite
def openai_chat_streams(draw: st.DrawFn) -> list[list[dict[str, Any]]]:
    """Several completions, each a list of chunks; tool calls interleaved by index.

    Tool calls start in index order with their id and name on the first delta only
    (what OpenAI sends; the SDK is known to be wrong otherwise).
    """
    out = []
    for number in range(draw(st.integers(1, 3))):
        base = {"id": f"chatcmpl-{number}", "object": "chat.completion.chunk", "created": 1}
        base["model"] = "gpt-test"

        def chunk(delta: dict[str, Any], finish: str | None = None, b: Any = base) -> Any:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            return {**b, "choices": [choice]}

        chunks = [chunk({"role": "assistant", "content": ""})]
        text = [{"content": p} for p in draw(splits(draw(TEXT)))]
        lanes: list[list[dict[str, Any]]] = [text]
        for index in range(draw(st.integers(0, 3))):
            arguments = json.dumps(draw(JSON_OBJECTS))
            pieces = draw(splits(arguments))
            first = {"index": index, "id": f"call_{number}_{index}", "type": "function"}
            first["function"] = {"name": f"tool{index}", "arguments": pieces[0]}
            calls = [first] + [{"index": index, "function": {"arguments": p}} for p in pieces[1:]]
            lanes.append([{"tool_calls": [call]} for call in calls])
        started = 1  # lanes below this have sent their first delta
        emitted = [0] * len(lanes)
        for lane, _ in draw(interleave(lanes)):
            # Tool calls start in index order: the SDK places them by list position.
            while started <= lane:
                chunks.append(chunk(lanes[started][0]))
                emitted[started] = 1
                started += 1
            if emitted[lane] < len(lanes[lane]):
                chunks.append(chunk(lanes[lane][emitted[lane]]))
                emitted[lane] += 1
        chunks.append(chunk({}, "tool_calls" if len(lanes) > 1 else "stop"))
        usage = {"completion_tokens": 5, "prompt_tokens": 3, "total_tokens": 8}
        chunks.append({**base, "choices": [], "usage": usage})
        out.append(chunks)
    return out
