"""openai_responses' item ``update_many`` is ``update`` over the run, exactly.

The engine hands an item's run of events to ``update_many`` and, only if it raises,
folds the run again with ``update``. So ``update_many`` must raise whenever
``update`` would, and otherwise return an equal state: the state itself exactly when
no update changed it. ``update_many`` joins consecutive appends to one text (a
content part, the arguments, a summary part, the pending text) and folds every other
event as ``update`` does; the runs here mix those deltas (text split anywhere,
unicode, empty) with deltas that only look like appends (a part not there, an item of
another type, a bool or negative index, a non-str delta) and with events that make
``update`` raise.
"""

from __future__ import annotations

import contextlib
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from definitions import openai_responses
from definitions.openai_responses import Envelope as Scoped
from engine import create_conversation_engine

from ._runs import INDEXES, ODD_TEXTS, TEXTS, Counting, check_run

ITEM = openai_responses.ITEM

MISSING = object()  # a field left out of the event

PENDING = [
    "response.mcp_call_arguments.delta",
    "response.custom_tool_call_input.delta",
    "response.code_interpreter_call_code.delta",
]


def event(kind: str, **fields: Any) -> dict[str, Any]:
    raw = {"type": kind, "item_id": "i", "output_index": 0}
    raw.update({key: value for key, value in fields.items() if value is not MISSING})
    return raw


@st.composite
def deltas(draw: st.DrawFn) -> dict[str, Any]:
    """A text delta (mostly into part 0), now and then with an odd index or text."""
    kind = draw(
        st.sampled_from(
            [
                "response.output_text.delta",
                "response.output_text.delta",
                "response.function_call_arguments.delta",
                "response.reasoning_summary_text.delta",
                *PENDING,
            ]
        )
    )
    text = draw(st.one_of(TEXTS, TEXTS, TEXTS, ODD_TEXTS, st.just(MISSING)))
    index = draw(st.sampled_from([0, 0, 1])) if draw(st.booleans()) else draw(INDEXES)
    if kind == "response.output_text.delta":
        return event(kind, content_index=index, delta=text, logprobs=[])
    if kind == "response.reasoning_summary_text.delta":
        return event(kind, summary_index=index, delta=text)
    return event(kind, delta=text)


@st.composite
def other_events(draw: st.DrawFn) -> dict[str, Any]:
    """Item events the general fold takes, some of which make update raise."""
    return draw(
        st.sampled_from(
            [
                event("response.content_part.added", content_index=1, part={"type": "output_text"}),
                event("response.content_part.added", content_index=1, part={"type": "refusal"}),
                event("response.content_part.added", content_index=1, part=["odd"]),
                event("response.reasoning_summary_part.added", summary_index=1, part={"a": 1}),
                event("response.reasoning_summary_part.added", summary_index=3, part={"b": 2}),
                event("response.output_text.done", content_index=0, text="whole"),
                event("response.function_call_arguments.done", arguments="{}"),
                event("response.mcp_call.in_progress"),
                event("response.output_item.done", item={"type": "message", "content": []}),
                event("response.output_item.done", item="not an object"),  # raises
                {"item_id": "i", "output_index": 0, "delta": "no type"},  # raises
                event("response.refusal.delta", content_index=0, delta="no"),
            ]
        )
    )


ADDED_EVENT = event("response.output_item.added", item={"type": "message", "content": []})
ADDED = [
    {"type": "message", "role": "assistant", "content": []},
    {"type": "message", "content": [{"type": "output_text", "text": "pre"}]},
    {"type": "message", "content": [{"type": "refusal", "refusal": ""}, {"type": "output_text"}]},
    {"type": "function_call", "name": "f", "call_id": "c", "arguments": ""},
    {"type": "reasoning", "summary": []},
    {"type": "reasoning", "summary": [{"type": "summary_text", "text": ""}]},
    {"type": "mcp_call", "name": "g", "arguments": ""},
]


@st.composite
def started(draw: st.DrawFn) -> Any:
    """An item state: a message, call, reasoning or other item, with parts added and
    some events folded."""
    added = Scoped("r", event("response.output_item.added", item=draw(st.sampled_from(ADDED))))
    state = ITEM.start(added, None)
    for raw in draw(st.lists(st.one_of(deltas(), other_events()), max_size=3)):
        with contextlib.suppress(Exception):  # an event update refuses changes nothing
            state = ITEM.update(state, Scoped("r", raw))
    return state


runs = st.lists(
    st.builds(lambda raw: Scoped("r", raw), st.one_of(deltas(), deltas(), other_events())),
    min_size=2,
    max_size=10,
)
# Runs as the engine hands them over: deltas of one type into one item.
same_type_runs = st.sampled_from(
    [
        "response.output_text.delta",
        "response.function_call_arguments.delta",
        "response.reasoning_summary_text.delta",
        *PENDING,
    ]
).flatmap(
    lambda kind: st.lists(
        deltas().filter(lambda raw: raw["type"] == kind).map(lambda raw: Scoped("r", raw)),
        min_size=2,
        max_size=10,
    )
)


# The envelopes a scoper makes (in response "r"): a delta's text, part and field read
# once, which update_many takes instead of reading the event again.
SCOPER = openai_responses.Preparer()
SCOPER({"type": "response.created", "response": {"id": "r"}})
QUIET = [
    event("response.output_text.done", content_index=0, text="whole"),
    event("response.output_text.annotation.added", content_index=0, annotation={}),
    event("response.function_call_arguments.done", arguments="{}"),
    event("response.mcp_call.in_progress"),
    event("response.reasoning_summary_part.done", summary_index=0, part={}),
]
scoped_runs = st.lists(
    st.one_of(deltas(), deltas(), other_events(), st.sampled_from(QUIET)).map(SCOPER),
    min_size=2,
    max_size=10,
)
# Runs as the engine hands them over from a scoper: the deltas of one type into one
# item and the events that change nothing among them.
scoped_same_type_runs = st.sampled_from(
    [
        "response.output_text.delta",
        "response.function_call_arguments.delta",
        "response.reasoning_summary_text.delta",
        *PENDING,
    ]
).flatmap(
    lambda kind: st.lists(
        st.one_of(
            deltas().filter(lambda raw: raw["type"] == kind),
            deltas().filter(lambda raw: raw["type"] == kind),
            st.sampled_from(QUIET),
        ).map(SCOPER),
        min_size=2,
        max_size=10,
    )
)


# Each kind of run, and how many examples it is worth.
RUNS = {
    "hand-scoped": (runs, 200),
    "hand-scoped, of one type": (same_type_runs, 100),
    "scoped": (scoped_runs, 200),
    "scoped, of one type": (scoped_same_type_runs, 200),
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", RUNS)
def test_update_many_is_update_over_the_run(kind: str) -> None:
    strategy, examples = RUNS[kind]

    @settings(max_examples=examples)
    @given(state=started(), events=strategy)
    def check(state: Any, events: list[Scoped]) -> None:
        check_run(ITEM, state, events)

    check()


responses_events = st.one_of(
    deltas(),
    other_events(),
    st.sampled_from(QUIET),
    st.builds(
        lambda index, item: event("response.output_item.added", output_index=index, item=item),
        st.one_of(st.integers(0, 2), st.sampled_from([True, None, "1"])),
        st.sampled_from([*ADDED, None]),
    ),
    st.builds(
        lambda kind, rid: {"type": kind, "response": {"id": rid}},
        st.sampled_from(["response.created", "response.in_progress", "response.completed"]),
        st.sampled_from(["r", "s"]),
    ),
    st.builds(
        lambda raw, index: {**raw, "output_index": index},
        deltas(),
        st.one_of(st.integers(0, 2), st.sampled_from([True, 1.0, None, [0]])),
    ),
    st.sampled_from([{"type": "error", "error": {}}, {"type": "other"}, {"no": "type"}]),
)


@pytest.mark.slow
@settings(max_examples=500)
@given(events=st.lists(responses_events, max_size=20))
def test_scope_wraps_each_event_as_a_scoper_does(events: list[dict[str, Any]]) -> None:
    # scope() inlines the scoper's path for the common delta: the same envelopes.
    scoper = openai_responses.Preparer()
    live = [scoper(raw) for raw in events]
    scoped = list(openai_responses.prepare(events))
    assert scoped == live
    assert [type(e) for e in scoped] == [type(e) for e in live]
    assert all(e.event is raw for e, raw in zip(scoped, events, strict=True))


def test_a_run_that_changes_nothing_returns_the_state_itself() -> None:
    # Empty or non-str pending deltas and progress events change nothing, whichever
    # way they are folded (the engine then publishes nothing for them).
    added = event("response.output_item.added", item={"type": "mcp_call", "arguments": ""})
    state = ITEM.start(Scoped("r", added), None)
    quiet = [
        Scoped("r", event(PENDING[0], delta="")),
        Scoped("r", event("response.mcp_call.in_progress")),
        Scoped("r", event(PENDING[0], delta=None)),
        Scoped("r", event(PENDING[0], delta="")),
    ]
    assert all(ITEM.update(state, scoped) is state for scoped in quiet)
    assert ITEM.update_many(state, quiet) is state
    assert ITEM.update_many(state, quiet[::3]) is state  # a run of two empty deltas


STREAMED: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "message": (
        {"type": "message", "content": [{"type": "output_text", "text": ""}]},
        {"type": "response.output_text.delta", "content_index": 0},
    ),
    "function_call": (
        {"type": "function_call", "name": "f", "call_id": "c", "arguments": ""},
        {"type": "response.function_call_arguments.delta"},
    ),
    "reasoning": (
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": ""}]},
        {"type": "response.reasoning_summary_text.delta", "summary_index": 0},
    ),
}


@pytest.mark.parametrize("item_type", list(STREAMED))
def test_a_streamed_item_is_folded_through_update_many(item_type: str) -> None:
    # The engine does hand the deltas over as one run (else the above proves nothing
    # about the fold): 50 deltas are one call, and the live snapshot has their text.
    item, delta = STREAMED[item_type]
    response = {"id": "r", "object": "response", "status": "in_progress", "output": []}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        *({**delta, "output_index": 0, "item_id": "i", "delta": "ab"} for _ in range(50)),
    ]
    counting = Counting(ITEM)
    engine = create_conversation_engine(
        [openai_responses.RESPONSE, counting], event_type=openai_responses.event_type
    )
    engine.push_many(openai_responses.prepare(events))
    assert counting.runs == [49]  # the first delta is folded by update, the rest as a run
    (snapshot,) = openai_responses.snapshots(engine.nodes())
    (output,) = snapshot["output"]
    if item_type == "message":
        assert output["content"][0]["text"] == "ab" * 50
    elif item_type == "function_call":
        assert output["arguments"] == "ab" * 50
    else:
        assert output["summary"][0]["text"] == "ab" * 50


# The item events that change an item other than by a delta: published at once.
AT_ONCE = {
    "response.output_item.added",
    "response.output_item.done",
    "response.content_part.added",
    "response.reasoning_summary_part.added",
}


def test_publication_is_by_envelope_class_routed_or_not() -> None:
    # A mapping the engine resolves per route (the envelope's class), also a function
    # of the event for engines without event_type=: an item's start, content parts and
    # end are published at once; deltas wait for a frame, and so do the events that
    # change nothing (never published: they ride along in a run of deltas).
    publication = ITEM.publication
    scoper = openai_responses.Preparer()
    scoper({"type": "response.created", "response": {"id": "r"}})
    for kind in openai_responses._ITEM_TYPES:
        scoped = scoper({"type": kind, "output_index": 0, "item": {"type": "message"}})
        assert ITEM.match(scoped) is not None, kind
        expected = "immediate" if kind in AT_ONCE else "animation-frame"
        assert publication(scoped) == expected, kind
        assert publication.get(type(scoped), "immediate") == expected, kind
        if kind not in AT_ONCE and not kind.endswith(".delta"):
            state = ITEM.start(scoper(ADDED_EVENT), None)
            assert ITEM.update(state, scoped) is state, kind
    where = {"output_index": 0, "content_index": 0}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "r", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": STREAMED["message"][0]},
        *({"type": "response.output_text.delta", **where, "delta": t} for t in "abc"),
        {"type": "response.output_item.done", "output_index": 0, "item": {"type": "message"}},
    ]
    routed = create_conversation_engine(
        openai_responses.DEFINITIONS, event_type=openai_responses.event_type
    )
    unrouted = create_conversation_engine(openai_responses.DEFINITIONS)
    for engine in (routed, unrouted):
        engine.push_many(openai_responses.prepare(events))
    assert unrouted.nodes() == routed.nodes()


def test_the_envelopes_route_by_the_shared_key_beside_other_definitions() -> None:
    # definitions.event_type gives an envelope's class (an untagged Struct): the
    # Responses definitions fold beside the built-in kinds, which take raw dicts.
    import definitions
    from definitions import builtin

    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "r", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": STREAMED["message"][0]},
        *(
            {
                "type": "response.output_text.delta",
                "output_index": 0,
                "content_index": 0,
                "delta": t,
            }
            for t in "abc"
        ),
    ]
    alone = create_conversation_engine(
        openai_responses.DEFINITIONS, event_type=openai_responses.event_type
    )
    alone.push_many(openai_responses.prepare(events))
    mixed = create_conversation_engine(
        [*builtin.DEFINITIONS, *openai_responses.DEFINITIONS], event_type=definitions.event_type
    )
    mixed.push_many(openai_responses.prepare(events))
    assert openai_responses.snapshots(mixed.nodes()) == openai_responses.snapshots(alone.nodes())
    assert openai_responses.snapshots(alone.nodes())[0]["output"][0]["content"][0]["text"] == "abc"


def test_a_field_equal_to_none_but_not_the_interned_object_folds_as_update() -> None:
    # Issue 13: the "no text" field value was compared by identity, so an envelope
    # whose field equals "none" but is another str object (built by hand, decoded,
    # joined) made update_many raise a bare AssertionError.
    none = "".join(["no", "ne"])
    assert none == "none"
    assert none is not openai_responses._NONE
    item = {"id": "m", "type": "message", "role": "assistant", "content": []}
    part = {"type": "output_text", "text": "", "annotations": []}
    raw = [
        {"type": "response.created", "response": {"id": "r", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        event("response.content_part.added", content_index=0, part=part),
        event("response.output_text.delta", content_index=0, delta="a"),
        event("response.output_text.done", content_index=0, text="a"),
        event("response.output_text.delta", content_index=0, delta="b"),
    ]
    envelopes = list(openai_responses.prepare(raw))
    interned = [e for e in envelopes if e.field == "none"]
    assert interned  # the output_text.done: an event that changes nothing
    rebuilt = [
        msgspec.structs.replace(e, field=none) if e.field == "none" else e for e in envelopes
    ]
    state = ITEM.start(envelopes[1], None)
    for events in ([rebuilt[4]], rebuilt[2:], rebuilt[4:]):
        expected = state
        for one in events:
            expected = ITEM.update(expected, one)
        assert ITEM.update_many(state, list(events)) == expected
    engine = create_conversation_engine(openai_responses.PROTOCOL.registration)
    engine.push_many(rebuilt)
    assert openai_responses.responses(engine.nodes()) == openai_responses.PROTOCOL.accumulate(raw)


@pytest.mark.parametrize("item_type", [*STREAMED, "mcp_call"])
def test_an_empty_delta_changes_nothing_and_progress_joins_the_run(item_type: str) -> None:
    # An empty delta is no change (rule 6: the state itself), so it is not published;
    # an event that changes no item (progress, a text's done) is an empty piece of the
    # run around it, which stays one update_many call.
    item, delta = STREAMED.get(item_type, ({"type": "mcp_call", "arguments": ""}, {}))
    kind = delta.get("type", PENDING[0])
    delta = {**delta, "type": kind, "output_index": 0, "item_id": "i"}
    response = {"id": "r", "object": "response", "status": "in_progress", "output": []}
    start: list[dict[str, Any]] = [
        {"type": "response.created", "response": response},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
    ]
    state = ITEM.start(Scoped("r", start[1]), None)
    assert ITEM.update(state, Scoped("r", {**delta, "delta": ""})) is state
    quiet = event("response.web_search_call.searching")
    events = [
        *start,
        {**delta, "delta": "a"},  # folded by update: the run's first
        {**delta, "delta": "b"},
        quiet,
        {**delta, "delta": ""},
        quiet,
        {**delta, "delta": "c"},
        quiet,
    ]
    counting = Counting(ITEM)
    engine = create_conversation_engine(
        [openai_responses.RESPONSE, counting], event_type=openai_responses.event_type
    )
    scoped = list(openai_responses.prepare([*events, {**delta, "delta": ""}, quiet]))
    engine.push_many(scoped[:-2])
    assert counting.runs == [6]
    expected = create_conversation_engine(openai_responses.DEFINITIONS)  # one at a time
    for one in scoped[:-2]:
        expected.push(one)
    assert engine.nodes() == expected.nodes()
    (node,) = [n for n in engine.nodes() if n.kind == ITEM.kind]
    text = node.state.pending if item_type == "mcp_call" else None
    if item_type == "message":
        text = node.state.parts[0].text
    elif item_type == "function_call":
        text = node.state.arguments
    elif item_type == "reasoning":
        text = node.state.summary[0].text
    assert str(text) == "abc"
    # Pushed alone, an empty delta or a progress event changes nothing: no publication.
    heard: list[object] = []
    engine.subscribe(heard.append)
    version = engine.statistics().events_accepted
    for one in scoped[-2:]:
        engine.push(one)
    assert heard == []
    assert engine.statistics().events_accepted == version
