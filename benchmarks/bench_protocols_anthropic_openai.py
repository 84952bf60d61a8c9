"""Events/s of ``definitions.anthropic`` / ``openai_chat`` / ``openai_responses`` ``fold()``
vs the SDK references.

Run: ``python benchmarks/bench_protocols_anthropic_openai.py`` (needs ../shared and the
pinned SDKs of the test extra). Every figure comes from the same run: the largest
recorded fixtures of each protocol and a synthetic stream of ~100k deltas, each
folded by our definitions and by the reference accumulator the oracles use.
"""

from __future__ import annotations

import copy
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from definitions import anthropic, openai_chat, openai_responses  # noqa: E402
from tests.conformance import _python_oracles as oracles  # noqa: E402

FIXTURES = ROOT.parent / "shared" / "fixtures" / "recorded"


def rate(fold: Callable[[list[dict[str, Any]]], object], events: list[dict[str, Any]]) -> float:
    """Best events/s over a few repetitions (at least ~0.3 s of work)."""
    best = 0.0
    repeat = max(1, 20_000 // max(1, len(events)))
    for _ in range(3):
        batches = [copy.deepcopy(events) for _ in range(repeat)]  # references mutate nothing,
        started = time.perf_counter()  # but copy so both sides start from fresh dicts
        for batch in batches:
            fold(batch)
        elapsed = time.perf_counter() - started
        best = max(best, len(events) * repeat / elapsed)
    return best


def anthropic_reference(events: list[Any]) -> object:
    """The SDK's ``accumulate_event`` over one stream, raw dicts or typed events, from
    its first ``message_start`` (as the oracle folds it)."""
    from anthropic.lib.streaming._messages import accumulate_event

    accumulate: Any = accumulate_event
    snapshot: Any = None
    json_bufs: dict[int, bytes] = {}
    for event in events:
        if snapshot is None:
            kind = event.get("type") if type(event) is dict else event.type
            if kind != "message_start":
                continue
        snapshot = accumulate(event=event, current_snapshot=snapshot, json_bufs=json_bufs)
    return snapshot


def anthropic_typed(events: list[dict[str, Any]]) -> list[Any]:
    """The events as the SDK's own event models (what its stream builds per event), to
    time its accumulate step alone."""
    from anthropic._models import construct_type_unchecked
    from anthropic.types import RawMessageStreamEvent

    kind: Any = RawMessageStreamEvent
    return [construct_type_unchecked(type_=kind, value=event) for event in events]


def chat_reference(events: list[dict[str, Any]]) -> object:
    from openai._models import construct_type
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    state: Any = ChatCompletionStreamState()
    for event in events:
        list(state.handle_chunk(construct_type(type_=ChatCompletionChunk, value=event)))
    return state.current_completion_snapshot


def responses_reference(events: list[dict[str, Any]]) -> object:
    """One ``ResponseStreamState`` per response, as the oracle folds a log."""
    from openai._models import construct_type
    from openai._types import omit
    from openai.lib.streaming.responses import ResponseStreamState
    from openai.types.responses import ResponseStreamEvent

    state: Any = None
    for event in events:
        if state is None or event.get("type") == "response.created":
            state = ResponseStreamState(input_tools=omit, text_format=omit)
        state.handle_event(construct_type(type_=ResponseStreamEvent, value=event))
    return state


def synthetic_responses(deltas: int) -> list[dict[str, Any]]:
    response = {"id": "r", "object": "response", "created_at": 1, "model": "m", "output": []}
    response |= {"status": "in_progress", "tools": [], "parallel_tool_calls": True}
    item = {"id": "m", "type": "message", "role": "assistant", "status": "in_progress"}
    part = {"type": "output_text", "text": "", "annotations": []}
    where = {"item_id": "m", "output_index": 0, "content_index": 0}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "content": []}},
        {"type": "response.content_part.added", **where, "part": part},
    ]
    events += [
        {"type": "response.output_text.delta", **where, "delta": "abcdefgh", "logprobs": []}
        for _ in range(deltas)
    ]
    text = "abcdefgh" * deltas
    done = {**item, "status": "completed", "content": [{**part, "text": text}]}
    events.append({"type": "response.output_item.done", "output_index": 0, "item": done})
    final = {**response, "status": "completed", "output": [done]}
    events.append({"type": "response.completed", "response": final})
    return events


def synthetic_anthropic(deltas: int) -> list[dict[str, Any]]:
    message: dict[str, Any] = {
        "id": "m",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "x",
    }
    message |= {"stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1}}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": message}]
    for index, kind in enumerate(("text", "tool_use")):
        block = (
            {"type": "text", "text": ""}
            if kind == "text"
            else {"type": "tool_use", "id": "t", "name": "f", "input": {}}
        )
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        for n in range(deltas // 2):
            delta = (
                {"type": "text_delta", "text": "abcdefgh"}
                if kind == "text"
                else {"type": "input_json_delta", "partial_json": '{"a": 1' if n == 0 else " "}
            )
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
        if kind == "tool_use":
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": "}"},
                }
            )
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 9},
        }
    )
    events.append({"type": "message_stop"})
    return events


def synthetic_chat(deltas: int) -> list[dict[str, Any]]:
    base = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}

    def chunk(delta: dict[str, Any]) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": "abcdefgh"}) for _ in range(deltas)]
    return events


def row(
    name: str,
    events: list[dict[str, Any]],
    ours: Callable[..., object],
    references: dict[str, Callable[..., object]],
) -> None:
    mine = rate(ours, events)
    text = f"{name:<62} {len(events):>7} events  ours {mine / 1e6:6.3f}M/s"
    for label, reference in references.items():
        theirs = rate(reference, events)
        text += f"  {label} {theirs / 1e6:6.3f}M/s (x{mine / theirs:5.1f})"
    print(text, flush=True)


def main() -> None:
    refs_a = {"anthropic-sdk": anthropic_reference}
    refs_c = {"openai-chat-state": chat_reference}
    largest_a = sorted(FIXTURES.glob("*anthropic*"), key=lambda p: p.stat().st_size)[-3:]
    for path in largest_a:
        row(path.name, oracles.anthropic_read_events(path), anthropic.PROTOCOL.accumulate, refs_a)
    row(
        "synthetic anthropic (text + JSON deltas)",
        synthetic_anthropic(100_000),
        anthropic.PROTOCOL.accumulate,
        refs_a,
    )
    chat = [
        p for p in FIXTURES.iterdir() if p.name.startswith(("openai-python", "vercel-openai-chat"))
    ]
    for path in sorted(chat, key=lambda p: p.stat().st_size)[-2:]:
        row(path.name, oracles.openai_read_events(path), openai_chat.PROTOCOL.accumulate, refs_c)
    row(
        "synthetic chat (content deltas)",
        synthetic_chat(100_000),
        openai_chat.PROTOCOL.accumulate,
        refs_c,
    )
    refs_r = {"openai-responses-state": responses_reference}
    responses = [
        p
        for p in FIXTURES.iterdir()
        if p.name.startswith(("vercel-openai-responses", "openai_responses"))
        and "parallel-tool-call-wrapper" not in p.name  # unreadable lines
        and "id-rotation" not in p.name  # the SDK refuses it
    ]
    for path in sorted(responses, key=lambda p: p.stat().st_size)[-3:]:
        row(
            path.name,
            oracles.openai_read_events(path),
            openai_responses.PROTOCOL.accumulate,
            refs_r,
        )
    row(
        "synthetic responses (output_text deltas)",
        synthetic_responses(100_000),
        openai_responses.PROTOCOL.accumulate,
        refs_r,
    )


if __name__ == "__main__":
    main()
