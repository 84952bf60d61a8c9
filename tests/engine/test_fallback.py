"""``fallback`` definitions: with ``event_type=``, the event types no other definition
admits go to them; nothing else changes (against a model of routing)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import Claim, DefinitionError, RegistrationError, create_conversation_engine


class Seen:
    """Records every event its ``match`` is called with; claims a start of each."""

    def __init__(
        self, kind: str, event_types: frozenset[Hashable] | None, fallback: bool = False
    ) -> None:
        self.kind = kind
        self.event_types = event_types
        self.fallback = fallback
        self.seen: list[Any] = []

    def match(self, event: Any) -> Claim:
        self.seen.append(event)
        return Claim(str(len(self.seen)), "start")

    def start(self, event: Any, reader: object) -> Any:
        return event

    def update(self, state: Any, event: Any) -> Any:
        return state


def _kind_of(event: dict[str, Any]) -> Hashable:
    return event["type"]


class Refuse:
    """A fallback that names the fix for anything but its own events (as ``Unrouted``)."""

    kind = "refuse"
    event_types = frozenset({"mine"})
    fallback = True

    def match(self, event: Any) -> None:
        if event["type"] != "mine":
            raise TypeError(f"no definition takes a {event['type']!r} event; push yours")

    def start(self, event: Any, reader: object) -> None:
        raise AssertionError("never called")

    update = start


class TestFallback:
    def test_a_type_no_definition_admits_reaches_the_fallback(self) -> None:
        a = Seen("a", frozenset({"x"}))
        spare = Seen("spare", frozenset(), fallback=True)
        engine = create_conversation_engine([a, spare], event_type=_kind_of)
        engine.push_many([{"type": "x"}, {"type": "y"}, {"type": "x"}])
        assert a.seen == [{"type": "x"}, {"type": "x"}]
        assert spare.seen == [{"type": "y"}]
        assert [node.key for node in engine.nodes()] == ["a:1", "spare:1", "a:2"]

    def test_it_makes_a_foreign_event_an_error_instead_of_nothing(self) -> None:
        engine = create_conversation_engine(
            [Seen("a", frozenset({"x"})), Refuse()], event_type=_kind_of
        )
        engine.push({"type": "x"})
        with pytest.raises(DefinitionError, match=r"'refuse' match\(\).*'y' event; push yours"):
            engine.push({"type": "y"})
        engine.push({"type": "mine"})  # its own events it lets pass
        assert [node.key for node in engine.nodes()] == ["a:1"]

    def test_a_definition_admitting_every_type_leaves_the_fallback_its_own(self) -> None:
        spare = Seen("spare", frozenset({"z"}), fallback=True)
        every = Seen("every", None)
        engine = create_conversation_engine([spare, every], event_type=_kind_of)
        engine.push_many([{"type": "y"}, {"type": "z"}])
        assert spare.seen == [{"type": "z"}]
        assert every.seen == [{"type": "y"}, {"type": "z"}]

    def test_without_event_type_a_fallback_sees_every_event(self) -> None:
        spare = Seen("spare", frozenset(), fallback=True)
        engine = create_conversation_engine([Seen("a", frozenset({"x"})), spare])
        engine.push_many([{"type": "x"}, {"type": "y"}])
        assert spare.seen == [{"type": "x"}, {"type": "y"}]

    @pytest.mark.parametrize("fallback", [1, "yes", None])
    def test_fallback_must_be_a_bool(self, fallback: Any) -> None:
        spare = Seen("spare", None)
        spare.fallback = fallback
        with pytest.raises(RegistrationError, match=r"'spare': fallback is .*True.*or False"):
            create_conversation_engine([spare])


_TYPES = st.sampled_from(["x", "y", "z", "w"])


@pytest.mark.slow
@given(
    declared=st.lists(
        st.tuples(st.none() | st.frozensets(_TYPES, max_size=3), st.booleans()),
        min_size=1,
        max_size=4,
    ),
    types=st.lists(_TYPES, max_size=8),
)
def test_routing_matches_the_model(
    declared: list[tuple[frozenset[str] | None, bool]], types: list[str]
) -> None:
    """Who sees an event of type t: those admitting t, and when only fallbacks admit
    it (or none), every fallback; in registration order. No fallback: as before."""
    definitions = [
        Seen(f"d{at}", event_types, fallback) for at, (event_types, fallback) in enumerate(declared)
    ]
    engine = create_conversation_engine(definitions, event_type=_kind_of)
    engine.push_many([{"type": kind, "at": at} for at, kind in enumerate(types)])

    def admits(event_types: frozenset[str] | None, kind: str) -> bool:
        return event_types is None or kind in event_types

    for definition, (event_types, fallback) in zip(definitions, declared, strict=True):
        expected = [
            {"type": kind, "at": at}
            for at, kind in enumerate(types)
            if admits(event_types, kind)
            or (fallback and all(f for e, f in declared if admits(e, kind)))
        ]
        assert definition.seen == expected
