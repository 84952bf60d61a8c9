"""definitions.anthropic against the Anthropic SDK's accumulator (accumulate_event)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from definitions import RawEventError, anthropic
from engine import create_conversation_engine
from tests._shared import shared_files, shared_path

from . import _python_oracles as oracles
from ._compare import assert_same, assert_same_events
from ._strategies import JSON_OBJECTS, anthropic_streams

FIXTURES = [
    *shared_files("fixtures", "recorded", pattern="*anthropic*"),
    *shared_files("fixtures", "synthetic", pattern="anthropic_*"),
]


def per_message_reference(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The SDK's messages, folding each message on its own.

    The SDK folds one message per stream; given several in a row it ignores the
    second ``message_start`` and appends its blocks to the first message (see
    ``TestKnownReferenceErrors``). Within one message it is the reference, so the
    stream is cut at each ``message_start``; a repeated start of the same message
    id restarts that message, so the later segment replaces the earlier.
    """
    segments: list[list[dict[str, Any]]] = []
    ids: list[object] = []
    for event in events:
        if event.get("type") == "message_start":
            message_id = event["message"].get("id")
            if ids and ids[-1] == message_id:
                segments.pop()
                ids.pop()
            segments.append([])
            ids.append(message_id)
        if segments and event.get("type") != "ping":
            segments[-1].append(event)
    return [message for segment in segments for message in oracles.anthropic_messages(segment)]


@pytest.mark.slow
@pytest.mark.parametrize("path", FIXTURES)
def test_fixture_matches_the_sdk(path: Path) -> None:
    """Every recorded and synthetic Anthropic stream rebuilds the SDK's messages."""
    events = oracles.anthropic_read_events(path)
    assert_same(anthropic.PROTOCOL.accumulate(events), per_message_reference(events))


@pytest.mark.parametrize("path", FIXTURES)
def test_replay_reads_the_same_events(path: Path) -> None:
    """replay.load_events yields the events the oracle's reader does."""
    events = [e for e in oracles.replay_events(path) if e.get("type") != "ping"]
    assert_same_events(path, events, oracles.anthropic_read_events(path))


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(anthropic_streams())
def test_generated_streams_match_the_sdk(events: list[dict[str, Any]]) -> None:
    """Random streams (interleaved blocks, JSON split mid-token, several messages)."""
    assert_same(anthropic.PROTOCOL.accumulate(events), per_message_reference(events))


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(anthropic_streams(), st.integers(0, 200))
def test_window_cut_mid_message(events: list[dict[str, Any]], cut: int) -> None:
    """A window without the first K events shows only the messages it saw start.

    The cut-off message's deltas are dropped (no block is attributed to a wrong
    message); every message whose start is in the window is complete.
    """
    cut = min(cut, len(events))
    window = events[cut:]
    rebuilt = anthropic.PROTOCOL.accumulate(window)
    assert_same(rebuilt, per_message_reference(window))
    engine = create_conversation_engine(anthropic.DEFINITIONS, event_type=anthropic.event_type)
    engine.push_many(anthropic.prepare(window))
    started = {e["message"]["id"] for e in window if e.get("type") == "message_start"}
    for node in engine.nodes():
        owner = node.id if node.kind == "anthropic_message" else node.state.message_id
        assert owner in started


class TestKnownReferenceErrors:
    """Where the SDK accumulator is wrong, we are right and say why."""

    def test_second_message_start_begins_a_new_message(self) -> None:
        """The SDK ignores a second message_start and merges its blocks into the first.

        ``spliced-message-start``: msg_first is cut off mid tool call and msg_second
        follows. The SDK folds one message whose thinking is both messages' thinking
        concatenated (deltas address ``content[index]`` of the first message), the
        second message's JSON appended to the first tool's input, and the second
        message's own blocks left empty; we rebuild the two messages.
        """
        path = shared_path(
            "fixtures", "recorded", "vercel-anthropic-spliced-message-start.chunks.txt"
        )
        events = oracles.anthropic_read_events(path)
        [merged] = oracles.anthropic_messages(events)
        assert merged["id"] == "msg_first"
        assert merged["content"][0]["thinking"] == "I will call the tool.Let me call the tool."
        assert merged["content"][1]["input"] == {"value": "Spark{"}
        assert merged["content"][2]["thinking"] == ""
        ours = anthropic.PROTOCOL.accumulate(events)
        assert [m["id"] for m in ours] == ["msg_first", "msg_second"]
        first, second = ours
        assert first["content"][0]["thinking"] == "I will call the tool."
        assert first["content"][0]["signature"] == "sig-first"
        assert first["content"][1]["input"] == {}  # '{"value":"Spark' keeps no complete value
        assert first.get("stop_reason") is None
        assert second["content"][0]["thinking"] == "Let me call the tool."
        assert second["content"][1]["input"] == {"value": "Sparkle Day"}
        assert second["stop_reason"] == "tool_use"

    def test_several_messages_are_not_merged(self) -> None:
        """An agent loop of 15 messages folds to 15 messages, not the SDK's one."""
        path = shared_path(
            "fixtures",
            "recorded",
            "vercel-anthropic-anthropic-programmatic-tool-calling.1.chunks.txt",
        )
        events = oracles.anthropic_read_events(path)
        merged = oracles.anthropic_messages(events)
        ours = anthropic.PROTOCOL.accumulate(events)
        assert len(merged) == 1
        assert len(ours) == sum(e["type"] == "message_start" for e in events) > 1
        # The SDK also drops the content later message_starts carry.
        assert sum(len(m["content"]) for m in ours) > len(merged[0]["content"])


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(JSON_OBJECTS, st.integers(1, 400), st.booleans())
def test_partial_json_agrees_with_jiter(value: dict[str, Any], cut: int, ascii_only: bool) -> None:
    """Every non-empty prefix of a document parses as jiter's partial mode (the SDKs')."""
    from jiter import from_json

    from definitions._partial_json import parse_partial_json

    text = json.dumps(value, ensure_ascii=ascii_only)[:cut]
    assert parse_partial_json(text) == from_json(text.encode(), partial_mode=True)


def test_a_hand_built_envelope_without_a_block_claim_folds_the_same() -> None:
    """``Scoped(message_id, event)`` built by hand (block=None) matches what scope() builds."""
    events = [
        {
            "type": "message_start",
            "message": {
                "id": "m1",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "x",
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_stop"},
    ]
    scoped = list(anthropic.prepare(events))
    assert any(envelope.block is not None for envelope in scoped)
    by_hand = [anthropic.Envelope(envelope.message_id, envelope.event) for envelope in scoped]
    engines = []
    for envelopes in (scoped, by_hand):
        engine = create_conversation_engine(anthropic.DEFINITIONS, event_type=anthropic.event_type)
        engine.push_many(envelopes)
        engines.append(anthropic.messages(engine.nodes()))
    assert engines[0] == engines[1]
    assert engines[0][0]["content"][0]["text"] == "hi"


_INDEXES = st.sampled_from([0, 1, 2, 300, True, 1.0, "1", None])
_ODD_EVENTS = st.one_of(
    st.builds(
        lambda message_id: {"type": "message_start", "message": {"id": message_id, "content": []}},
        st.sampled_from(["a", "b", "", None, 5]),
    ),
    st.builds(
        lambda index, kind: {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": kind},
        },
        _INDEXES,
        st.sampled_from(["text", "thinking", "tool_use", "image"]),
    ),
    st.builds(
        lambda index, delta: {"type": "content_block_delta", "index": index, "delta": delta},
        _INDEXES,
        st.sampled_from(
            [
                {"type": "text_delta", "text": "t"},
                {"type": "thinking_delta", "thinking": "k"},
                {"type": "input_json_delta", "partial_json": '{"a'},
                {"type": "citations_delta", "citation": {"n": 1}},
                {"type": "signature_delta", "signature": "s"},
            ]
        ),
    ),
    st.builds(lambda index: {"type": "content_block_stop", "index": index}, _INDEXES),
    st.sampled_from(
        [
            {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "x"}},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}},
            {"type": "message_stop"},
            {"type": "ping"},
            {"type": None},
            {},
        ]
    ),
)


def _folded(envelopes: list[anthropic.Envelope]) -> tuple[object, str | None]:
    engine = create_conversation_engine(anthropic.DEFINITIONS, event_type=anthropic.event_type)
    error = None
    rest = envelopes
    while rest:  # past each failing event, as a reader that skips bad events would
        position = engine.statistics().events_pushed
        try:
            engine.push_many(rest)
        except Exception as exc:
            error = f"{error} | {exc}"
        rest = envelopes[engine.statistics().events_pushed :]
        if engine.statistics().events_pushed == position:
            break
    return engine.nodes(), error


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(_ODD_EVENTS, max_size=30))
def test_scope_claims_what_match_would(events: list[dict[str, Any]]) -> None:
    """On any stream (odd indexes, repeated starts, events before any message_start),
    ``prepare`` gives the envelopes ``Preparer`` gives, and its block claims fold the same
    nodes (and fail at the same events) as envelopes whose claims ``match`` works out."""
    scoped = list(anthropic.prepare(events))
    scoper = anthropic.Preparer()
    assert scoped == [scoper(event) for event in events if event.get("type") != "ping"]
    by_hand = [anthropic.Envelope(envelope.message_id, envelope.event) for envelope in scoped]
    assert _folded(scoped) == _folded(by_hand)


def test_event_type_is_the_inner_type_however_an_envelope_was_made() -> None:
    """``event_type`` routes prepare()'s envelopes, a hand-built ``Envelope`` and ``Preparer``'s
    envelopes by their event's type; anything else (a raw event pushed without the
    pre-pass) by its class, to the set's guard, which names the fix."""

    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "m", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "a"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {}, "usage": {}},
        {"type": "message_stop"},
        {"type": "error", "error": {}},
        {"no": "type"},
    ]
    scoper = anthropic.Preparer()
    for event, envelope in zip(events, anthropic.prepare(events), strict=True):
        assert anthropic.event_type(envelope) == event.get("type")
        assert anthropic.event_type(scoper(event)) == event.get("type")
        assert anthropic.event_type(anthropic.Envelope("m", event)) == event.get("type")
        assert isinstance(envelope, anthropic.Envelope)
    for other in ({"type": "message.delta"}, {"id": 1}, anthropic.MessageState({}), 5):
        assert anthropic.event_type(other) is type(other)
        engine = anthropic.PROTOCOL.folded([])
        with pytest.raises(RawEventError, match=r"anthropic\.PROTOCOL\.engine\(\)"):
            engine.push(other)
