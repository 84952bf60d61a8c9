"""Random areas against a naive model of CONTEXT.md rules 2-6.

The model keeps items as labels, ranges as (earliest, latest) and finds the tail
component by growing an overlap graph to a fixed point: no ordering tricks.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from engine import AreaFlowState, AreaLifeState, Context, CoopContext, RenderRecord

from ._areas import Scripted, text, user


@attrs.define
class ModelArea:
    area: Scripted
    order: int
    earliest: int | None = None
    latest: int | None = None


def overlaps(a: ModelArea, b: ModelArea) -> bool:
    assert a.earliest is not None
    assert a.latest is not None
    assert b.earliest is not None
    assert b.latest is not None
    return a.earliest <= b.latest and b.earliest <= a.latest


class Model:
    def __init__(self) -> None:
        self.items: list[str] = []
        self.ring: list[ModelArea] = []
        self.cursor = 0
        self.pending: list[str] = []
        self.retired: set[int] = set()

    def is_retired(self, m: ModelArea) -> bool:
        if m.area.life is AreaLifeState.retired:
            self.retired.add(m.order)
        return m.order in self.retired

    def render(self, plan: dict[int, Any]) -> None:
        """``plan[order]`` says what each area will do: (count, flow, retire_obs, retire_after)."""
        for m in self.ring:
            self.is_retired(m)
        victims = [m for m in self.ring if self.is_retired(m) and m.earliest is None]
        ranged = [m for m in self.ring if m.earliest is not None]
        start = None
        if ranged:
            tail = max(ranged, key=lambda m: (m.latest, m.order))
            component = [tail]
            grown = True
            while grown:
                grown = False
                for m in ranged:
                    if m not in component and any(overlaps(m, c) for c in component):
                        component.append(m)
                        grown = True
            if all(self.is_retired(m) for m in component):
                victims += component
                start = min(m.earliest for m in component if m.earliest is not None)
        victims.sort(key=lambda m: m.order)
        promoted = [p.content for m in victims for p in m.area.promoted]
        if start is not None:
            del self.items[start:]
        if victims:
            n = len(self.ring)
            keep = next(
                (
                    self.ring[(self.cursor + i) % n]
                    for i in range(n)
                    if self.ring[(self.cursor + i) % n] not in victims
                ),
                None,
            )
            self.ring = [m for m in self.ring if m not in victims]
            self.cursor = 0 if keep is None else self.ring.index(keep)
        self.items += [str(p) for p in promoted]
        self.items += self.pending
        self.pending = []
        n = len(self.ring)
        for step in range(n):
            index = (self.cursor + step) % n
            m = self.ring[index]
            if self.is_retired(m):
                continue
            count, flow, retire_obs, retire_after = plan[m.order]
            if m.earliest is not None and retire_obs:
                self.retired.add(m.order)
                continue
            name = m.area.name
            first = len(self.items)
            emitted = m.area.emitted
            self.items += [f"{name}{emitted + i}" for i in range(count)]
            if count:
                m.earliest = first if m.earliest is None else m.earliest
                m.latest = len(self.items) - 1
            if retire_after:
                self.retired.add(m.order)
            if flow is AreaFlowState.exclusive:
                self.cursor = index
                return


class CoopMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.coop = CoopContext(Context())
        self.model = Model()
        self.areas: list[Scripted] = []
        self.conversation: list[list[Any]] = []
        self.queued: list[Any] = []
        self.turn = 0

    @rule(promote=st.lists(st.sampled_from(["p", "q"]), max_size=2))
    def register(self, promote: list[str]) -> None:
        name = f"A{len(self.areas)}_"
        area = Scripted(name, [], promote=[f"{name}{p}" for p in promote])
        self.coop.register(area)
        self.model.ring.append(ModelArea(area, len(self.areas)))
        self.areas.append(area)

    @rule(count=st.integers(0, 2))
    def converse(self, count: int) -> None:
        messages = [user(f"c{self.turn}_{i}") for i in range(count)]
        self.turn += 1
        self.coop.extend(messages)
        self.queued += messages
        self.model.pending += [text(m) for m in messages]

    @rule(data=st.data())
    def render(self, data: st.DataObject) -> None:
        plan = {}
        for order, area in enumerate(self.areas):
            count = data.draw(st.integers(0, 2), label=f"count {order}")
            flow = data.draw(st.sampled_from(AreaFlowState), label=f"flow {order}")
            retire_obs = data.draw(st.integers(0, 3), label=f"observe {order}") == 0
            retire_after = data.draw(st.integers(0, 3), label=f"retire {order}") == 0
            plan[order] = (count, flow, retire_obs, retire_after)
            area.script = [count]
            area.flow = flow
            area.retire_on_observe = retire_obs
            area.retire_after = area.renders + 1 if retire_after else None
        self.model.render(plan)
        self.coop.render()
        self.conversation.append(self.queued)
        self.queued = []

    @precondition(lambda self: self.areas)
    @rule(data=st.data())
    def retire_from_outside(self, data: st.DataObject) -> None:
        area = data.draw(st.sampled_from(self.areas))
        area.life = AreaLifeState.retired

    @invariant()
    def items_agree(self) -> None:
        assert [text(item) for item in self.coop.context] == self.model.items
        assert list(self.coop.areas) == [m.area for m in self.model.ring]

    @invariant()
    def records_rebuild_the_context(self) -> None:
        rebuilt = Context()
        for record, messages in zip(self.coop.records, self.conversation, strict=True):
            assert isinstance(record, RenderRecord)
            rebuilt.apply(record, messages)
        assert list(rebuilt) == list(self.coop.context)


CoopMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=30, deadline=None)
TestCoopContext = CoopMachine.TestCase
TestCoopContext.pytestmark = [pytest.mark.slow]
