"""Scripted areas for the cooperative-context tests: each does what it is told."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine import AreaFlowState, AreaLifeState, Message, Role


def text(message: Any) -> str:
    """The text of a plain-text message item (gateway=None keeps Messages)."""
    assert isinstance(message, Message)
    assert isinstance(message.content, str)
    return message.content


class Scripted:
    """An area whose next renders, flow and retirement the test sets.

    ``script`` is a list of message counts for successive renders (then 0);
    ``log`` records every call the CoopContext made, in order.
    """

    def __init__(
        self,
        name: str,
        script: Sequence[int] = (1,),
        *,
        flow: AreaFlowState = AreaFlowState.yielded,
        retire_after: int | None = None,
        promote: Sequence[str] = (),
        log: list[str] | None = None,
    ) -> None:
        self.name = name
        self.script = list(script)
        self.flow = flow
        self.life = AreaLifeState.retain
        self.retire_after = retire_after
        self.retire_on_observe = False
        self.promoted = tuple(Message(role=Role.user, content=p) for p in promote)
        self.log = [] if log is None else log
        self.renders = 0
        self.emitted = 0
        self.snapshots: list[list[str]] = []

    @property
    def life_state(self) -> AreaLifeState:
        return self.life

    @property
    def flow_state(self) -> AreaFlowState:
        return self.flow

    def observe(self, context: Sequence[Any]) -> None:
        self.log.append(f"{self.name}.observe")
        self.snapshots.append([text(item) for item in context])
        if self.retire_on_observe:
            self.life = AreaLifeState.retired

    def render(self) -> list[Message]:
        self.log.append(f"{self.name}.render")
        count = self.script.pop(0) if self.script else 0
        self.renders += 1
        out = []
        for _ in range(count):
            out.append(Message(role=Role.user, content=f"{self.name}{self.emitted}"))
            self.emitted += 1
        if self.retire_after is not None and self.renders >= self.retire_after:
            self.life = AreaLifeState.retired
        return out

    def promote(self) -> tuple[Message, ...]:
        self.log.append(f"{self.name}.promote")
        return self.promoted

    def gc_prologue(self) -> None:
        self.log.append(f"{self.name}.gc_prologue")


def user(content: str) -> Message:
    """A plain user message."""
    return Message(role=Role.user, content=content)
