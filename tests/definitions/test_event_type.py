"""``definitions.event_type``: one key function per class, the same key for every event
of a class whatever order the classes are met in."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from definitions import event_type


class Tagged(msgspec.Struct, tag="tagged.event"):
    """A tagged Struct: its tag."""

    x: int = 0


class ClassTagged(msgspec.Struct, tag=True):
    """``tag=True``: the class name is the tag."""


class Untagged(msgspec.Struct):
    """No tag: its class."""


class Envelope(msgspec.Struct):
    """A routed envelope: its ``route`` field, whatever the event."""

    route: str = "r"


class Plain:
    """Not a Struct: its class."""


def _key(event: Any) -> Any:
    """What ``event_type`` must give (its specification, one case a kind)."""
    if type(event) is dict:
        return event.get("type")
    if isinstance(event, Envelope):
        return event.route
    if isinstance(event, Tagged):
        return "tagged.event"
    if isinstance(event, ClassTagged):
        return "ClassTagged"
    return type(event)


EVENTS = st.sampled_from(
    [
        {"type": "a"},
        {},
        Tagged(),
        ClassTagged(),
        Untagged(),
        Envelope("x"),
        Envelope("y"),
        Plain(),
        7,
        "text",
    ]
)


@given(st.lists(EVENTS, max_size=20))
def test_each_event_gets_its_class_key_in_any_order(events: list[Any]) -> None:
    assert [event_type(event) for event in events] == [_key(event) for event in events]
