"""Blame: who is at fault is who the error names, in every protocol set.

- An event the set's pre-pass cannot read is the event's fault: an ``EventError``
  naming the set, the event and its position, raised as itself by
  ``PROTOCOL.engine()``'s push (never wrapped in a ``HookError``) as by the batch fold.
- A raw event pushed where envelopes belong is a ``RawEventError`` (one class, for
  every set) naming the set and the fix, raised by the set's one guard.
- A set whose routing would let a raw event past its guard is refused when built.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from definitions import ProtocolSet, RawEventError, gemini
from engine import Claim, EventError, HookError, RegistrationError, create_conversation_engine

from ._sets import MODULES as SETS

# One event each set's pre-pass cannot read: a field it needs missing or of another type.
MALFORMED: dict[str, dict[str, Any]] = {
    "anthropic": {"type": "message_start", "message": "not an object"},
    "openai_chat": {"id": "c", "object": "chat.completion.chunk", "choices": [None]},
    "openai_responses": {"type": "response.created", "response": None},
    "gemini": {"type": "message_start"},  # another protocol's event
    "bedrock": {"messageStart": {"role": "assistant"}, "contentBlockDelta": {}},
    "ag_ui": {"type": "TEXT_MESSAGE_CONTENT", "delta": "no messageId"},
    "ai_sdk": {"type": "text-start"},  # no id
    "recorded": {"type": "recording/request", "call": 0, "api": "cohere.chat"},
}


def test_every_set_is_here() -> None:
    from replay import PROTOCOLS

    assert set(SETS) == set(PROTOCOLS) - {"builtin"}  # the built-in kinds: no pre-pass


@pytest.mark.parametrize("name", sorted(SETS))
def test_a_malformed_event_pushed_live_is_an_event_error_as_itself(name: str) -> None:
    protocol = SETS[name].PROTOCOL
    bad = MALFORMED[name]
    with pytest.raises(EventError) as batch:
        protocol.accumulate([bad])
    engine = protocol.engine()
    with pytest.raises(EventError) as live:
        engine.push(bad)
    error = live.value
    assert type(error) is type(batch.value)  # the pre-pass's own class
    assert not isinstance(error, HookError)
    assert error.position == 0
    assert str(error) == str(batch.value)  # the same message both ways
    assert engine.nodes() == ()
    assert engine.statistics().events_accepted == 0


@pytest.mark.parametrize("name", sorted(SETS))
def test_the_position_is_the_events_in_the_stream(name: str) -> None:
    # Two bad pushes in a row: each names its own position, counted by the pre-pass.
    protocol = SETS[name].PROTOCOL
    engine = protocol.engine()
    for position in range(2):
        with pytest.raises(EventError) as info:
            engine.push(MALFORMED[name])
        assert info.value.position == position


@pytest.mark.parametrize("name", sorted(SETS))
def test_a_raw_event_past_the_pre_pass_is_one_class_naming_the_set(name: str) -> None:
    protocol = SETS[name].PROTOCOL
    engines = [create_conversation_engine(protocol.registration)]
    try:  # no routing: the guard is first (or the set refuses to be registered so)
        engines.append(create_conversation_engine(protocol.definitions))
    except RegistrationError:
        assert name in ("anthropic", "recorded")  # their publication needs the routing
    for engine in engines:
        with pytest.raises(RawEventError, match=rf"{name}\.PROTOCOL\.engine\(\)") as info:
            engine.push(MALFORMED[name])
        assert info.value.protocol == name
        assert info.value.position == 0
        assert protocol.title in str(info.value)
        assert engine.nodes() == ()


class _Envelope(msgspec.Struct):
    claim: Claim


class _Kind:
    kind = "kind"
    event_types = frozenset({_Envelope})

    @staticmethod
    def match(event: Any) -> Claim:
        return event.claim

    @staticmethod
    def start(event: Any, reader: object) -> int:
        return 0

    @staticmethod
    def update(state: int, event: Any) -> int:
        return state + 1


def test_a_set_whose_routing_lets_raw_events_past_its_guard_is_refused() -> None:
    with pytest.raises(RegistrationError, match=r"'leaky'.*must reach its guard"):
        # Every object routed as an envelope: a raw dict reaches the kind's match.
        ProtocolSet(
            name="leaky",
            definitions=(_Kind(),),
            envelope=_Envelope,
            event_type=lambda event: _Envelope,
        )
    # Routed by class, the same set is built: a raw dict goes to its guard.
    sound = ProtocolSet(name="sound", definitions=(_Kind(),), envelope=_Envelope, event_type=type)
    engine = sound.engine()
    engine.push(_Envelope(Claim("a", "start")))
    with pytest.raises(RawEventError, match="sound"):
        engine.push({"type": "raw"})
    assert [node.state for node in engine.nodes()] == [0]


@pytest.mark.parametrize("name", sorted(SETS))
def test_every_way_in_folds_a_recording_alike(name: str) -> None:
    """Live (``PROTOCOL.engine()``, raw events pushed one at a time), batch
    (``accumulate``) and, where the set allows it, an engine without routing fed the
    envelopes (every match sees every envelope) give the same final objects."""
    from .test_mutations import streams

    protocol = SETS[name].PROTOCOL
    _, events = streams(name)[0]
    expected = protocol.accumulate(events)
    live = protocol.engine()
    for event in events:
        live.push(event)
    assert protocol.rebuild(live.nodes()) == expected
    try:
        unrouted = create_conversation_engine(protocol.definitions)
    except RegistrationError:  # its publication needs the routing
        assert name in ("anthropic", "recorded")
        return
    unrouted.push_many(protocol.prepare(events))
    assert protocol.rebuild(unrouted.nodes()) == expected


def test_a_set_module_that_names_a_part_otherwise_is_refused() -> None:
    # ProtocolSet.of_module reads the parts every set names alike; a module without
    # one (its pre-pass called Scoper, say) cannot build a set.
    namespace = {**vars(gemini), "__name__": "acme"}
    del namespace["Preparer"]
    with pytest.raises(RegistrationError, match=r"'acme' \(acme\).*missing \['Preparer'\]"):
        ProtocolSet.of_module(namespace, name="acme", definitions=gemini.DEFINITIONS[1:])
    assert ProtocolSet.of_module(vars(gemini), name="gemini", definitions=gemini.DEFINITIONS[1:])
