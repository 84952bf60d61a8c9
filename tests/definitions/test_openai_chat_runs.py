"""openai_chat's ``update_many`` is ``update`` over the run, exactly.

The engine hands a completion's run of chunks to ``update_many`` and, only if it
raises, folds the run again with ``update``. So ``update_many`` must raise whenever
``update`` would, and otherwise return an equal state. Both go through one fold that
joins consecutive appends to one text (content, refusal, a tool call's arguments) and
folds every other chunk the general way; the runs here mix those appends (text split
anywhere, unicode, empty) with chunks that only look like them (a finish reason,
logprobs, a second choice or tool call, a call not made yet, a non-str text) and with
chunks that make ``update`` raise.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from definitions import RawEventError, openai_chat
from definitions.openai_chat import Envelope as ScopedChunk
from engine import Claim, create_conversation_engine

from ._runs import INDEXES, ODD_TEXTS, TEXTS, Counting, check_run

DEFINITION = openai_chat.COMPLETION


def chunk(choices: Any, **extra: Any) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion.chunk", "created": 1, **extra, "choices": choices}


def choice(index: Any, delta: Any, **extra: Any) -> dict[str, Any]:
    return {"index": index, "delta": delta, "logprobs": None, "finish_reason": None, **extra}


def call(index: Any, arguments: Any) -> dict[str, Any]:
    return {"index": index, "function": {"arguments": arguments}}


@st.composite
def appends(draw: st.DrawFn) -> dict[str, Any]:
    """A chunk that appends to content, refusal or a call's arguments (mostly choice 0,
    call 0), or one that is almost such a chunk."""
    index = draw(st.sampled_from([0, 0, 0, 1])) if draw(st.booleans()) else draw(INDEXES)
    text = draw(st.one_of(TEXTS, TEXTS, TEXTS, ODD_TEXTS))
    kind = draw(st.sampled_from(["content", "content", "refusal", "call", "call"]))
    if kind == "call":
        number = draw(st.sampled_from([0, 0, 1])) if draw(st.booleans()) else draw(INDEXES)
        delta: dict[str, Any] = {"tool_calls": [call(number, text)]}
    else:
        delta = {kind: text}
    extra: dict[str, Any] = {}
    if draw(st.integers(0, 9)) == 0:  # almost an append
        extra = draw(
            st.sampled_from(
                [
                    {"finish_reason": "stop"},
                    {"finish_reason": ""},
                    {"logprobs": {"content": [{"token": "a"}], "refusal": None}},
                    {"content_filter_results": {}},  # other keys are ignored: still one
                ]
            )
        )
    usage: dict[str, Any] = draw(
        st.sampled_from([{}, {"usage": None}, {"usage": {"total_tokens": 3}}])
    )
    return chunk([choice(index, delta, **extra)], **usage)


@st.composite
def other_chunks(draw: st.DrawFn) -> dict[str, Any]:
    """Chunks the general fold takes, some of which make update raise."""
    return draw(
        st.sampled_from(
            [
                chunk([choice(0, {})]),
                chunk([], usage={"total_tokens": 9}, system_fingerprint="fp"),
                chunk([choice(0, {"content": "a"}), choice(1, {"content": "b"})]),
                chunk([choice(0, {"tool_calls": [call(0, "x"), call(1, "y")]})]),
                chunk([choice(0, {"tool_calls": [call(2, "z")]})]),  # a new call
                chunk(
                    [
                        choice(
                            0,
                            {
                                "tool_calls": [
                                    {
                                        "index": 1,
                                        "id": "call_1",
                                        "type": "function",
                                        "function": {"name": "g", "arguments": ""},
                                    }
                                ]
                            },
                        )
                    ]
                ),
                chunk([choice(0, {"tool_calls": [{"index": 0, "id": "again"}]})]),
                chunk([choice(0, {"content": "a", "refusal": None})]),
                chunk([choice(0, {"role": "assistant"})]),
                chunk([choice(0, {"reasoning_content": "hm"})]),
                chunk([choice(2, {"content": "late"})]),  # a choice seen for the first time
                chunk((choice(0, {"content": "tuple"}),)),  # folded the general way
                chunk([choice(0, {"tool_calls": [{"function": {"arguments": "x"}}]})]),  # raises
                chunk([{"delta": {"content": "no index"}}]),  # raises: no index
                chunk({0: choice(0, {"content": "a"})}),  # raises: a dict of choices
                chunk([choice(0.0, {"content": "a"})]),  # raises: a float index
                chunk([choice(0, ["content"])]),  # raises: a delta that is not an object
                chunk(None),  # no choices: usage and fingerprint only
                {"id": "c", "usage": {"total_tokens": 1}},  # no choices key
                chunk("x"),  # raises: choices that are a string
                chunk([{"index": 0, "delta": {"content": "no logprobs key"}}]),
                chunk([{"index": 0, "delta": {"content": "x"}, "finish_reason": "stop"}]),
                chunk([choice(0, {"content": "x"}), "not a choice"]),  # raises
            ]
        )
    )


@st.composite
def started(draw: st.DrawFn) -> Any:
    """A completion state: one or two choices, their content, refusal and tool calls
    started or not, possibly folded some more chunks."""
    first = []
    for index in range(draw(st.integers(1, 2))):
        delta: dict[str, Any] = {"role": "assistant"}
        if draw(st.booleans()):
            delta["content"] = draw(TEXTS)
        if draw(st.booleans()):
            delta["refusal"] = draw(st.sampled_from([None, "", "no"]))
        if draw(st.booleans()):
            delta["tool_calls"] = [
                {"index": n, "id": f"call_{n}", "function": {"name": "f", "arguments": "{"}}
                for n in range(draw(st.integers(1, 2)))
            ]
        first.append(choice(index, delta))
    if draw(st.booleans()):
        first.reverse()  # index 1 before index 0
    state = DEFINITION.start(ScopedChunk("c", True, chunk(first)), None)
    for extra in draw(st.lists(st.one_of(appends(), other_chunks()), max_size=3)):
        with contextlib.suppress(Exception):  # a chunk update refuses changes nothing
            state = DEFINITION.update(state, ScopedChunk("c", False, extra))
    return state


# Content appends to choice 0 (which a run of them takes the short way) and chunks
# that differ from one in a single detail, to follow them.
near_appends = st.sampled_from(
    [
        chunk([choice(0, {"content": "a"})]),
        chunk([choice(0, {"content": "a"})]),
        chunk([choice(0, {"content": "a", "reasoning_content": "r"})]),
        chunk([choice(0, {"content": "a", "refusal": "r"})]),
        chunk([choice(0, {"content": "a"}, logprobs={"content": [{"token": "a"}]})]),
        chunk([choice(0, {"content": "a"}, finish_reason="length")]),
        chunk([choice(0, {"content": "a"}), choice(1, {"content": "b"})]),
        chunk([choice(False, {"content": "a"})]),
        chunk([choice(0, {"content": 5})]),
        chunk([choice(0, {"refusal": "a"})]),
    ]
)
runs = st.lists(
    st.builds(
        lambda c: ScopedChunk("c", False, c),
        st.one_of(appends(), appends(), other_chunks(), near_appends),
    ),
    min_size=2,
    max_size=10,
)


@pytest.mark.slow
@settings(max_examples=200)
@given(state=started(), events=runs)
def test_update_many_is_update_over_the_run(state: Any, events: list[ScopedChunk]) -> None:
    check_run(DEFINITION, state, events)


@pytest.mark.slow
@settings(max_examples=200)
@given(state=started(), extra=st.one_of(appends(), other_chunks()))
def test_update_takes_appends_the_way_the_general_fold_does(
    state: Any, extra: dict[str, Any]
) -> None:
    # update's append path skips _fold_choices for chunks it proves are appends: it
    # must give what _fold_choices gives (the conformance tests check that against
    # the SDK on whole streams; this checks it chunk by chunk, odd chunks included).
    event = ScopedChunk("c", False, extra)
    try:
        expected = openai_chat._folded(state, extra)
    except Exception:
        with pytest.raises(Exception):  # noqa: B017, PT011
            DEFINITION.update(state, event)
        return
    assert DEFINITION.update(state, event) == expected


@pytest.mark.parametrize("field", ["content", "arguments"])
def test_a_streamed_completion_is_folded_through_update_many(field: str) -> None:
    # The engine does hand the chunks over as one run (else the above proves nothing
    # about the fold): 50 deltas, a finish chunk and a usage chunk are one call.
    opening: dict[str, Any] = {"role": "assistant", "content": ""}
    if field == "arguments":
        opening["tool_calls"] = [{"index": 0, "id": "call_0", "function": {"name": "f"}}]
    delta = {"content": "ab"} if field == "content" else {"tool_calls": [call(0, "ab")]}
    chunks = [
        chunk([choice(0, opening)]),
        *(chunk([choice(0, delta)]) for _ in range(50)),
        chunk([choice(0, {}, finish_reason="stop")]),
        chunk([], usage={"total_tokens": 3}),
    ]
    definition = Counting(DEFINITION)
    engine = create_conversation_engine([definition], event_type=openai_chat.event_type)
    engine.push_many(openai_chat.prepare(chunks))
    assert definition.runs == [51]  # the first chunk is folded by update, the rest as a run
    (completion,) = openai_chat.completions(engine.nodes())
    message = completion["choices"][0]["message"]
    if field == "content":
        assert message["content"] == "ab" * 50
    else:
        assert message["tool_calls"][0]["function"]["arguments"] == "ab" * 50
    assert completion["usage"] == {"total_tokens": 3}


@pytest.mark.slow
@settings(max_examples=300)
@given(
    ids=st.lists(
        st.tuples(st.sampled_from(["a", "b", "", None]), st.booleans()),
        max_size=12,
    )
)
def test_scope_sets_the_claim_match_would_compute(ids: list[tuple[Any, bool]]) -> None:
    # scope() hands each chunk its claim (match reads it); a ScopedChunk made by hand
    # computes the same claim: start when it opens, the completion's one shared update
    # claim after that, None when dropped.
    chunks = []
    for chunk_id, role in ids:
        delta: dict[str, Any] = {"role": "assistant"} if role else {"content": "x"}
        event = chunk([choice(0, delta)])
        if chunk_id is None:
            del event["id"]
        else:
            event["id"] = chunk_id
        chunks.append(event)
    for scoped in openai_chat.prepare(chunks):
        plain = ScopedChunk(scoped.completion, scoped.opens, scoped.chunk)
        claim = DEFINITION.match(scoped)
        assert claim == DEFINITION.match(plain)
        if scoped.completion is None:
            assert claim is None
        elif scoped.opens:
            assert claim == Claim(scoped.completion, "start")
        else:
            assert claim is DEFINITION.match(plain)  # one update claim per completion
            assert claim == Claim(scoped.completion, "update")


def test_event_type_routes_what_scope_yields_to_the_completion() -> None:
    # The routing key is the event's class: scope's envelopes reach the definition, a
    # raw chunk pushed without scope is an error naming the fix (never 0 nodes).
    chunks = [chunk([choice(0, {"role": "assistant", "content": "a"})])]
    engine = create_conversation_engine(openai_chat.DEFINITIONS, event_type=openai_chat.event_type)
    with pytest.raises(RawEventError, match=r"openai_chat\.PROTOCOL\.engine\(\)"):
        engine.push_many(chunks)
    assert engine.nodes() == ()
    engine.push_many(openai_chat.prepare(chunks))
    assert [node.kind for node in engine.nodes()] == [DEFINITION.kind]
    for event in [*openai_chat.prepare(chunks), ScopedChunk("c", True, chunks[0])]:
        assert openai_chat.event_type(event) in DEFINITION.event_types
