"""The interruption kind's facts in the conversation the economy works on."""

from __future__ import annotations

from typing import Any

from definitions import builtin, event_type
from definitions.conversation import NO_RESULT
from definitions.gateways import GATEWAYS
from definitions.harness import glance
from engine import INTERRUPTED, Economy, Role, Text, ToolResult, economize
from replay import replay
from replay.context._economy import conversation, requests


def events(*marks: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"type": "message.start", "id": "u1", "role": "user", "text": "go"},
        {"type": "message.end", "id": "u1"},
        {"type": "tool_call.start", "id": "c1", "name": "Bash"},
        {"type": "tool_call.arguments_delta", "id": "c1", "text": '{"command": "make"}'},
        {"type": "tool_call.arguments_end", "id": "c1"},
    ]
    out += marks
    out += [
        {"type": "message.start", "id": "u2", "role": "user", "text": "and now?"},
        {"type": "message.end", "id": "u2"},
        {"type": "message.start", "id": "a2", "role": "assistant", "text": "done"},
        {"type": "message.end", "id": "a2"},
    ]
    return out


def talk_of(*marks: dict[str, Any]) -> Any:
    return conversation(replay(events(*marks), builtin.DEFINITIONS, event_type=event_type))


def result(messages: Any, call_id: str) -> ToolResult:
    return next(
        p for m in messages for p in m.parts if isinstance(p, ToolResult) and p.call_id == call_id
    )


def test_a_cut_call_is_answered_neutrally_and_repaired_at_resume() -> None:
    talk = talk_of({"type": "interruption.mark", "id": "i", "cause": "cut", "tool_call_id": "c1"})
    assert talk.marks.interrupted == {"c1"}
    assert result(talk.messages, "c1").content == NO_RESULT
    out = economize(talk.messages, Economy.resume(glance=glance), talk.marks)
    assert result(out.messages, "c1").content == INTERRUPTED
    for gateway in GATEWAYS.values():
        assert all(not r.problems for r in requests(talk, gateway, Economy.none()))


def test_the_users_interruption_is_a_user_turn() -> None:
    notice = "[Request interrupted by user]"
    talk = talk_of({"type": "interruption.mark", "id": "i", "cause": "user", "text": notice})
    texts = [m.content for m in talk.messages if m.role == Role.user]
    assert notice in texts
    # the call it left open is answered; only a cut mark would name it interrupted
    # (the importers write one for every open call before the user's interruption)
    assert result(talk.messages, "c1").content == NO_RESULT
    assert talk.marks.interrupted == frozenset()


def test_retry_debris_is_marked_and_dropped_at_resume() -> None:
    error = "API Error: 529 overloaded"
    talk = talk_of({"type": "interruption.mark", "id": "i", "cause": "retry_error", "text": error})
    [index] = talk.marks.debris
    assert talk.messages[index].content == error
    assert index not in talk.calls  # no model call answered with it
    kept = economize(talk.messages, Economy.none(), talk.marks).messages
    dropped = economize(talk.messages, Economy.resume(glance=glance), talk.marks).messages
    assert any(Text(error) in m.parts for m in kept)
    assert not any(Text(error) in m.parts for m in dropped)
    for gateway in GATEWAYS.values():
        for economy in (Economy.none(), Economy.resume(glance=glance)):
            assert all(not r.problems for r in requests(talk, gateway, economy))
