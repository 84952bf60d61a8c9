"""The AI SDK set's ``update_many`` is ``update`` over the run, exactly.

The engine hands a run to ``update_many`` and, only if it raises, folds the run
again with ``update``. So ``update_many`` must raise whenever ``update`` would, and
otherwise either raise (the slow way round, still right) or return an equal state:
the state itself exactly when no update changed it. The envelopes here are what
the router makes of raw chunks, good and bad: deltas that are empty, missing, not
strings, str subclasses or unicode split anywhere, with provider metadata now and
then, mixed with ends, inputs, outputs, errors and approvals, on parts that are
streaming or done.
"""

from __future__ import annotations

import operator
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from definitions import ai_sdk
from tests.conformance._strategies import JSON_VALUES, TEXT, splits

from . import _runs

BY_KIND = {d.kind: d for d in ai_sdk.DEFINITIONS}
TEXT_PART, REASONING_PART, TOOL_PART = (
    BY_KIND[kind] for kind in ("ai_sdk_text", "ai_sdk_reasoning", "ai_sdk_tool")
)
START: dict[str, Any] = {"type": "start", "messageId": "x"}


class Text(str):
    """A str subclass: a delta the router passes on as it is."""


MISSING = object()  # a delta left out of its chunk
DELTAS: st.SearchStrategy[Any] = st.one_of(
    TEXT,
    st.sampled_from(["", "", "a", "é", "🙂", '{"x": [1, "', "\\"]),
    st.sampled_from([None, 0, 5, False, [], {}, Text("sub"), MISSING]),
)
METADATA = st.one_of(
    st.just({}),
    st.builds(lambda value: {"providerMetadata": value}, st.sampled_from([None, {"a": 1}, "m"])),
)


def chunk(base: dict[str, Any], key: str, delta: Any, metadata: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``delta`` at ``key`` (unless MISSING) and ``metadata``."""
    return {**base, **({} if delta is MISSING else {key: delta}), **metadata}


def text_updates(tag: str) -> Any:
    def updates(delta: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
        return st.one_of(
            st.builds(
                chunk,
                st.just({"type": f"{tag}-delta", "id": "0"}),
                st.just("delta"),
                delta,
                METADATA,
            ),
            st.builds(lambda metadata: {"type": f"{tag}-end", "id": "0", **metadata}, METADATA),
        )

    return updates


def tool_updates(delta: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    call = {"toolCallId": "c"}
    return st.one_of(
        st.builds(
            chunk,
            st.just({"type": "tool-input-delta", **call}),
            st.just("inputTextDelta"),
            delta,
            METADATA,
        ),
        st.builds(
            lambda value: {"type": "tool-input-available", **call, "toolName": "f", "input": value},
            JSON_VALUES,
        ),
        st.sampled_from(
            [
                {"type": "tool-input-error", **call, "toolName": "f", "errorText": "bad"},
                {"type": "tool-output-available", **call, "output": {"ok": True}},
                {"type": "tool-output-error", **call, "errorText": "failed"},
                {"type": "tool-approval-request", **call, "approvalId": "a"},
                {"type": "tool-output-denied", **call},
            ]
        ),
    )


# Per kind: its definition, the chunks that start its node, its update chunks, one
# that finishes it, and the chunk of a delta.
KINDS: dict[str, tuple[Any, ...]] = {
    "text": (
        TEXT_PART,
        [
            {"type": "text-start", "id": "0"},
            {"type": "text-start", "id": "0", "providerMetadata": 1},
        ],
        text_updates("text"),
        {"type": "text-end", "id": "0"},
        lambda delta: {"type": "text-delta", "id": "0", "delta": delta},
    ),
    "reasoning": (
        REASONING_PART,
        [{"type": "reasoning-start", "id": "0"}],
        text_updates("reasoning"),
        {"type": "reasoning-end", "id": "0"},
        lambda delta: {"type": "reasoning-delta", "id": "0", "delta": delta},
    ),
    "tool": (
        TOOL_PART,
        [
            {"type": "tool-input-start", "toolCallId": "c", "toolName": "f"},
            {"type": "tool-input-start", "toolCallId": "c", "toolName": "f", "title": "T"},
        ],
        tool_updates,
        {"type": "tool-output-available", "toolCallId": "c", "output": 1},
        lambda delta: {"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": delta},
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
@settings(max_examples=400)
@given(data=st.data(), done=st.booleans())
def test_update_many_is_update_over_the_run(kind: str, data: Any, done: bool) -> None:
    definition, starts, updates, end, _ = KINDS[kind]
    _runs.check_a_run(data, ai_sdk, [START], definition, (starts, updates(DELTAS), end), done)


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
@settings(max_examples=200)
@given(data=st.data(), text=TEXT)
def test_a_text_split_anywhere_is_appended_whole(kind: str, data: Any, text: str) -> None:
    definition, starts, _, _, delta_chunk = KINDS[kind]
    start = data.draw(st.sampled_from(starts))
    state, envelope = _runs.started(ai_sdk, [START], start, definition)
    events = [delta_chunk(delta) for delta in data.draw(splits(text))]
    if len(events) < 2:
        return
    got = _runs.check_run(definition, state, [envelope(event) for event in events])
    assert str(got.raw if kind == "tool" else got.text) == text


STREAMS: dict[str, tuple[Any, ...]] = {
    "text": (
        3,
        {"type": "text-start", "id": "0"},
        {"type": "text-delta", "id": "0", "delta": "ab"},
    ),
    "reasoning": (
        4,
        {"type": "reasoning-start", "id": "0"},
        {"type": "reasoning-delta", "id": "0", "delta": "ab"},
    ),
    "tool input": (
        5,
        {"type": "tool-input-start", "toolCallId": "c", "toolName": "f"},
        {"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": "ab"},
    ),
}


@pytest.mark.parametrize("stream", list(STREAMS))
def test_a_streamed_part_is_folded_through_one_update_many_call(stream: str) -> None:
    # The engine does hand the deltas over as one run (else the above proves nothing
    # about the fold): 50 deltas are one update_many call.
    which, start, delta = STREAMS[stream]
    chunks = [START, {"type": "start-step"}, start, *[delta] * 50, {"type": "finish"}]
    _runs.check_one_run(ai_sdk, which, chunks, operator.attrgetter("raw" if which == 5 else "text"))


@pytest.mark.parametrize("definition", _runs.by_route(ai_sdk))
def test_publication_by_type_is_publication_by_event(definition: Any) -> None:
    _runs.check_publication_by_route(ai_sdk, definition)


@settings(max_examples=50)
@given(
    events=st.lists(
        text_updates("text")(DELTAS) | text_updates("reasoning")(DELTAS) | tool_updates(DELTAS),
        max_size=30,
    )
)
def test_fold_with_runs_is_the_fold_one_event_at_a_time(events: list[dict[str, Any]]) -> None:
    starts = [KINDS[kind][1][0] for kind in KINDS]
    stream = [START, *starts, *events]
    _runs.check_fold_with_runs(ai_sdk.PROTOCOL, stream)


# A small vocabulary of chunks over two part ids and two tool calls, so that deltas
# alternate between parts, follow their part's end, a finish-step, a start-step or a
# new message, name unknown or missing ids, or come before any start.
ROUTER_CHUNKS = st.sampled_from(
    [
        {"type": "start", "messageId": "a"},
        {"type": "start", "messageId": "b"},
        {"type": "start"},
        {"type": "start-step"},
        {"type": "finish-step"},
        {"type": "finish"},
        {"type": "tool-input-available", "toolCallId": "c", "toolName": "f", "input": {}},
        {"type": "tool-output-available", "toolCallId": "c", "output": 1},
        {"type": "data-x", "id": "0", "data": 1},
        {"type": "text-delta", "delta": "no id"},
        {"type": "text-delta", "id": None, "delta": "null id"},
        {"type": "text-start", "id": None},
        *(
            {"type": f"{tag}-{what}", "id": part, **({"delta": "d"} if what == "delta" else {})}
            for tag in ("text", "reasoning")
            for what in ("start", "delta", "delta", "delta", "end")
            for part in ("0", "1")
        ),
        *(
            chunk
            for call in ("c", "d")
            for chunk in (
                {"type": "tool-input-start", "toolCallId": call, "toolName": "f"},
                {"type": "tool-input-start", "toolCallId": call, "toolName": "f", "dynamic": True},
                {"type": "tool-input-delta", "toolCallId": call, "inputTextDelta": "{"},
                {"type": "tool-input-delta", "toolCallId": call, "inputTextDelta": "}"},
            )
        ),
    ]
)


@pytest.mark.slow
@settings(max_examples=300)
@given(chunks=st.lists(ROUTER_CHUNKS, max_size=40))
@example(  # a part whose id is null, then a delta without one (the router raises)
    chunks=[
        {"type": "text-start", "id": None},
        {"type": "text-delta", "id": None, "delta": "null id"},
        {"type": "text-delta", "delta": "no id"},
    ]
)
def test_the_batch_router_is_the_live_one_and_takes_only_rows(
    chunks: list[dict[str, Any]],
) -> None:
    # prepare() remembers the last delta's part to route the deltas after it quickly.
    _runs.check_router(ai_sdk, chunks)
