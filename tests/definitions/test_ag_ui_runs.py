"""The AG-UI set's ``update_many`` is ``update`` over the run, exactly.

The engine hands a run to ``update_many`` and, only if it raises, folds the run
again with ``update``. So ``update_many`` must raise whenever ``update`` would, and
otherwise either raise (the slow way round, still right) or return an equal state:
the state itself exactly when no update changed it. The envelopes here are what
the router makes of raw events, good and bad: deltas that are empty, not strings,
str subclasses or unicode split anywhere, mixed with ends, renames and encrypted
values, on nodes that are streaming, ended, or made by a tool call or result.
"""

from __future__ import annotations

import operator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from definitions import ag_ui
from definitions._text import StreamedText
from tests.conformance._strategies import TEXT, splits

from . import _runs

MESSAGE, TOOL_CALL = ag_ui.DEFINITIONS[1:3]  # after the guard
RUN: dict[str, Any] = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}


class Text(str):
    """A str subclass: a delta the router passes on as it is."""


DELTAS: st.SearchStrategy[Any] = st.one_of(
    TEXT,
    st.sampled_from(["", "", "a", "é", "🙂", '{"x": [1, "', "\\"]),
    st.sampled_from([None, 0, 5, False, [], ["x"], {}, Text("sub")]),
)

# The events that open node "m" of each kind (the router's first sight of it).
MESSAGE_STARTS: list[dict[str, Any]] = [
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
    {"type": "REASONING_MESSAGE_START", "messageId": "m"},
    {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "hi"},
    {"type": "TOOL_CALL_START", "toolCallId": "m", "toolCallName": "f"},  # content None
    {"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "c", "content": "ok"},
    {"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "c", "content": {"a": 1}},
]
TOOL_STARTS: list[dict[str, Any]] = [
    {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"},
    {"type": "TOOL_CALL_CHUNK", "toolCallId": "c", "toolCallName": "f", "delta": "{"},
]


def message_updates(delta: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.builds(lambda d: {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": d}, delta),
        st.builds(
            lambda d: {"type": "REASONING_MESSAGE_CONTENT", "messageId": "m", "delta": d}, delta
        ),
        st.builds(lambda d: {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": d}, delta),
        st.sampled_from(
            [
                {"type": "TEXT_MESSAGE_END", "messageId": "m"},
                {"type": "REASONING_MESSAGE_END", "messageId": "m"},
                {"type": "REASONING_ENCRYPTED_VALUE", "entityId": "m", "encryptedValue": "e"},
            ]
        ),
    )


def tool_updates(delta: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.builds(lambda d: {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": d}, delta),
        st.builds(lambda d: {"type": "TOOL_CALL_CHUNK", "toolCallId": "c", "delta": d}, delta),
        st.builds(
            lambda name: {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": name},
            st.sampled_from(["f", "g", None]),
        ),
        st.sampled_from(
            [
                {"type": "TOOL_CALL_END", "toolCallId": "c"},
                {
                    "type": "REASONING_ENCRYPTED_VALUE",
                    "subtype": "tool-call",
                    "entityId": "c",
                    "encryptedValue": "e",
                },
            ]
        ),
    )


# Per kind: its definition, the events that start its node, its update events, and
# the end that finishes it.
KINDS: dict[str, tuple[Any, ...]] = {
    "message": (
        MESSAGE,
        MESSAGE_STARTS,
        message_updates,
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
    ),
    "tool_call": (
        TOOL_CALL,
        TOOL_STARTS,
        tool_updates,
        {"type": "TOOL_CALL_END", "toolCallId": "c"},
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
@settings(max_examples=400)
@given(data=st.data(), ended=st.booleans())
def test_update_many_is_update_over_the_run(kind: str, data: Any, ended: bool) -> None:
    definition, starts, updates, end = KINDS[kind]
    _runs.check_a_run(data, ag_ui, [RUN], definition, (starts, updates(DELTAS), end), ended)


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
@settings(max_examples=200)
@given(data=st.data(), text=TEXT)
def test_a_text_split_anywhere_is_appended_whole(kind: str, data: Any, text: str) -> None:
    definition, starts, updates, _ = KINDS[kind]
    start = data.draw(st.sampled_from(starts))
    state, envelope = _runs.started(ag_ui, [RUN], start, definition)
    events = [
        data.draw(updates(st.just(delta)).filter(lambda event: "delta" in event))
        for delta in data.draw(splits(text))
    ]
    if len(events) < 2:
        return
    got = _runs.check_run(definition, state, [envelope(event) for event in events])
    if text:  # appended to the text so far (a message's other content is dropped)
        before = state.content if kind == "message" else state.arguments
        before = str(before) if isinstance(before, str | StreamedText) else ""
        assert str(got.content if kind == "message" else got.arguments) == before + text


STREAMS: dict[str, tuple[Any, ...]] = {
    "text": (
        1,
        [{"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}],
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "ab"},
    ),
    "reasoning": (
        1,
        [{"type": "REASONING_MESSAGE_START", "messageId": "m"}],
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "m", "delta": "ab"},
    ),
    "chunks": (
        1,
        [{"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": ""}],
        {"type": "TEXT_MESSAGE_CHUNK", "delta": "ab"},
    ),
    "tool arguments": (
        2,
        [
            {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
            {
                "type": "TOOL_CALL_START",
                "toolCallId": "c",
                "toolCallName": "f",
                "parentMessageId": "m",
            },
        ],
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "ab"},
    ),
}


@pytest.mark.parametrize("stream", list(STREAMS))
def test_a_streamed_node_is_folded_through_one_update_many_call(stream: str) -> None:
    # The engine does hand the deltas over as one run (else the above proves nothing
    # about the fold): 50 deltas are one update_many call, the rest fold one by one.
    which, head, delta = STREAMS[stream]
    end = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
    read = operator.attrgetter("content" if which == 1 else "arguments")
    _runs.check_one_run(ag_ui, which, [RUN, *head, *[delta] * 50, end], read)


@pytest.mark.parametrize("definition", _runs.by_route(ag_ui))
def test_publication_by_type_is_publication_by_event(definition: Any) -> None:
    _runs.check_publication_by_route(ag_ui, definition)


@settings(max_examples=50)
@given(events=st.lists(message_updates(DELTAS) | tool_updates(DELTAS), max_size=30))
def test_fold_with_runs_is_the_fold_one_event_at_a_time(events: list[dict[str, Any]]) -> None:
    stream = [RUN, MESSAGE_STARTS[0], TOOL_STARTS[0], *events]
    _runs.check_fold_with_runs(ag_ui.PROTOCOL, stream)


# A small vocabulary over two messages and two tool calls, so that deltas alternate
# between nodes, follow their node's end, a snapshot that drops it or a new run, name
# unknown or missing ids, or come before any start.
ROUTER_EVENTS = st.sampled_from(
    [
        RUN,
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
        {"type": "MESSAGES_SNAPSHOT", "messages": []},
        {"type": "TEXT_MESSAGE_CONTENT", "delta": "no id"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m"},  # no delta: the router raises
        *(
            event
            for message in ("m", "n")
            for event in (
                {"type": "TEXT_MESSAGE_START", "messageId": message, "role": "assistant"},
                {"type": "TEXT_MESSAGE_CONTENT", "messageId": message, "delta": "d"},
                {"type": "TEXT_MESSAGE_CONTENT", "messageId": message, "delta": ""},
                {"type": "TEXT_MESSAGE_END", "messageId": message},
                {"type": "REASONING_MESSAGE_START", "messageId": message},
                {"type": "REASONING_MESSAGE_CONTENT", "messageId": message, "delta": "r"},
                {"type": "TEXT_MESSAGE_CHUNK", "messageId": message, "delta": "c"},
            )
        ),
        *(
            event
            for call in ("c", "d")
            for event in (
                {"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": "f"},
                {"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": "{"},
                {"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": "}"},
                {"type": "TOOL_CALL_END", "toolCallId": call},
            )
        ),
    ]
)


@pytest.mark.slow
@settings(max_examples=300)
@given(events=st.lists(ROUTER_EVENTS, max_size=40))
def test_the_batch_router_is_the_live_one_and_takes_only_rows(
    events: list[dict[str, Any]],
) -> None:
    # prepare() repeats the last delta's route for the deltas after it naming the same node.
    _runs.check_router(ag_ui, events)
