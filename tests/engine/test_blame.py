"""An ``EventError`` blames the event: raised by ``event_type``, a definition's ``match``
or a push hook's ``on_push_start`` (a protocol set's pre-pass), it goes out of
``push`` as itself, never wrapped, with the event's position filled in when it had
none; nothing changed. Any other exception of a definition or hook is still wrapped
(``DefinitionError``, ``HookError``)."""

from __future__ import annotations

from typing import Any

import pytest

from engine import (
    Claim,
    DefinitionError,
    EventError,
    HookError,
    PushContext,
    create_conversation_engine,
)


class Picky:
    """Claims dict events with an ``id``; blames any other event."""

    kind = "picky"

    @staticmethod
    def match(event: Any) -> Claim:
        if not isinstance(event, dict):
            raise EventError(f"not an event of mine: {event!r}", position=-1)
        if "id" not in event:
            raise KeyError("id")  # the definition's own bug: still its error
        return Claim(event["id"], "start")

    @staticmethod
    def start(event: Any, reader: object) -> int:
        return 1

    @staticmethod
    def update(state: int, event: Any) -> int:
        return state + 1


@pytest.mark.parametrize("many", [False, True])
def test_an_event_error_from_match_goes_out_as_itself(many: bool) -> None:
    engine = create_conversation_engine([Picky()])
    engine.push({"id": "a"})
    push = engine.push_many if many else engine.push
    with pytest.raises(EventError, match="not an event of mine") as info:
        push([{"id": "b"}, 3] if many else 3)
    assert type(info.value) is EventError
    assert info.value.position == (2 if many else 1)
    assert [node.key for node in engine.nodes()] == (
        ["picky:a", "picky:b"] if many else ["picky:a"]
    )


def test_any_other_exception_of_match_is_still_the_definitions() -> None:
    engine = create_conversation_engine([Picky()])
    with pytest.raises(DefinitionError, match="picky"):
        engine.push({"no": "id"})


class PrePass:
    """A push hook that blames an event it cannot read, as a protocol set's pre-pass."""

    def on_push_start(self, ctx: PushContext) -> None:
        if ctx.event == "bad":
            raise EventError("cannot read this event", position=7)
        if ctx.event == "buggy":
            raise RuntimeError("the hook's own bug")
        ctx.event = {"id": ctx.event}


def test_an_event_error_from_a_push_hook_goes_out_as_itself() -> None:
    engine = create_conversation_engine([Picky()], hooks=[PrePass()])
    engine.push("a")
    with pytest.raises(EventError, match="cannot read") as info:
        engine.push("bad")
    assert not isinstance(info.value, HookError)
    assert info.value.position == 7  # the hook knew it: kept
    with pytest.raises(HookError, match="the hook's own bug"):
        engine.push("buggy")
    engine.push("c")
    assert [node.key for node in engine.nodes()] == ["picky:a", "picky:c"]
