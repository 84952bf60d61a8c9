"""Generic sessions for the economy's tests: builders, a hypothesis strategy, and a
pairing validator that knows only the generic rules (every gateway's validator
is checked on top of it where the gateways exist)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from hypothesis import strategies as st

from definitions.harness import glance
from engine import Economy, Marks, Message, Native, Reasoning, Role, Text, ToolCall, ToolResult


def call(id: str, command: str = "ls", name: str = "Bash") -> ToolCall:
    return ToolCall(id=id, name=name, arguments=json.dumps({"command": command}))


def result(id: str, content: str = "out", **flags: bool) -> ToolResult:
    return ToolResult(call_id=id, content=content, name="Bash", **flags)


def user(*parts: Text | ToolResult | str) -> Message:
    return Message(
        role=Role.user, content=tuple(Text(p) if isinstance(p, str) else p for p in parts)
    )


def assistant(*parts: Text | ToolCall | Reasoning | Native | str) -> Message:
    return Message(
        role=Role.assistant, content=tuple(Text(p) if isinstance(p, str) else p for p in parts)
    )


def pairing_problems(messages: Sequence[Message]) -> list[str]:
    """Every generic rule a request breaks: a call answered in the next turn and only
    there, a result right after its call, alternating roles, no empty turn, no turn
    of nothing but reasoning."""
    problems: list[str] = []
    previous: Message | None = None
    for n, message in enumerate(messages):
        parts = message.parts
        if not parts:
            problems.append(f"message {n} is empty")
        if (
            previous is not None
            and previous.role == message.role == Role.user
            and any(isinstance(p, ToolResult) for p in parts)
        ):
            problems.append(f"messages {n - 1} and {n} are both user turns, results second")
        if (
            message.role == Role.assistant
            and parts
            and all(isinstance(p, Reasoning) for p in parts)
        ):
            problems.append(f"message {n} is reasoning alone")
        asked = [p.id for p in previous.parts if isinstance(p, ToolCall)] if previous else []
        answered = [p.call_id for p in parts if isinstance(p, ToolResult)]
        if message.role == Role.user and sorted(answered) != sorted(asked):
            problems.append(f"message {n} answers {answered}, the calls were {asked}")
        if message.role != Role.user and asked:
            problems.append(f"calls {asked} of message {n - 1} are not answered")
        previous = message
    if previous is not None and any(isinstance(p, ToolCall) for p in previous.parts):
        problems.append("the last turn's calls are unanswered")
    return problems


COMMANDS = ["ls", "git status", "cat a.txt", "pytest -q", "make", "git status && rm -rf x"]


@st.composite
def sessions(draw: st.DrawFn) -> tuple[list[Message], Marks]:
    """A valid session of user turns and model turns (reasoning, text, parallel calls),
    with big and small results, denials, interrupted calls and retry debris."""
    messages: list[Message] = [Message(role=Role.system, content="be brief")]
    interrupted: set[str] = set()
    debris: set[int] = set()
    n = 0
    for _ in range(draw(st.integers(1, 4))):
        messages.append(user(draw(st.sampled_from(["hi", "go on", "x" * 50]))))
        for _ in range(draw(st.integers(0, 4))):
            if draw(st.integers(0, 9)) == 0:
                debris.add(len(messages))
                messages.append(assistant("API Error: overloaded"))
            parts: list[Text | ToolCall | Reasoning] = []
            if draw(st.booleans()):
                parts.append(Reasoning(text="hmm", provider="anthropic", signature="sig"))
            if draw(st.booleans()):
                parts.append(Text("ok"))
            calls = []
            for _ in range(draw(st.integers(0, 3))):
                n += 1
                calls.append(call(f"c{n}", draw(st.sampled_from(COMMANDS))))
            if not calls:
                parts.append(Text("done"))
            parts.extend(calls)
            messages.append(Message(role=Role.assistant, content=tuple(parts)))
            if not calls:
                break
            answers = []
            for c in calls:
                size = draw(st.sampled_from([3, 1999, 2000, 4000, 4001, 9000]))
                kind = draw(st.sampled_from(["ok", "ok", "ok", "denied", "error", "cut", "list"]))
                if kind == "cut":
                    interrupted.add(c.id)
                if kind == "list":
                    answers.append(
                        ToolResult(call_id=c.id, content=(Text("y" * size),), name="Bash")
                    )
                else:
                    answers.append(
                        result(
                            c.id,
                            "z" * size,
                            denied=kind == "denied",
                            is_error=kind in ("denied", "error"),
                        )
                    )
            messages.append(Message(role=Role.user, content=tuple(answers)))
        else:
            messages.append(assistant("finished"))
    return messages, Marks(interrupted=frozenset(interrupted), debris=frozenset(debris))


@st.composite
def economies(draw: st.DrawFn) -> Economy:
    """Random policy settings, every switch and count."""
    return Economy(
        spill_threshold=draw(st.sampled_from([0, 10, 4000])),
        spill_preview=draw(st.sampled_from([0, 5, 400])),
        load_time=draw(st.booleans()),
        expire=draw(st.booleans()),
        keep_recent=draw(st.integers(0, 7)),
        keep_denials=draw(st.sampled_from([None, 0, 1, 2])),
        repair_interruptions=draw(st.booleans()),
        drop_retry_debris=draw(st.booleans()),
        trim=draw(st.booleans()),
        trim_min_chars=draw(st.sampled_from([1, 2000])),
        trim_keep_recent=draw(st.integers(0, 21)),
        clear_at_least=draw(st.sampled_from([0, 100, 4000, 10**9])),
        glance=draw(st.sampled_from([glance, None])),
    )
