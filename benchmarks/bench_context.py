"""Incremental cost of the model context: render a 10,000-turn conversation call by call.

Each call appends one model turn (text and a tool call) and its result through the
Anthropic gateway, then ``CoopContext.render()`` runs with a system-prompt area
(yielded: renders once, then is observed and asked on every call) and, every 200
calls, a sub-task that is exclusive for three calls, retires and is collected into
its result at the next safepoint (50 collections in 10,000 calls). The per-render
time is the Python work of the projection (collection, appends, the pass);
building the final request list is left out (``gateway.request``, O(items) by
nature).

Target (issue #14): the median render of the last 10% of calls within 1.3x of the
first 10%. Run: ``python benchmarks/bench_context.py`` (``--turns N``). Figures are
wall times on a shared machine; read the ratio.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Sequence
from typing import Any

from definitions.gateways import ANTHROPIC
from engine import (
    AreaFlowState,
    AreaLifeState,
    Context,
    CoopContext,
    Message,
    Role,
    Text,
    ToolCall,
    ToolResult,
)


class SystemPrompt:
    """Yielded; renders the system prompt once, then is observed and asked every call."""

    def __init__(self) -> None:
        self.calls = 0
        self.seen = 0
        self.life_state = AreaLifeState.retain
        self.flow_state = AreaFlowState.yielded

    def observe(self, snapshot: Sequence[Any]) -> None:
        self.seen = len(snapshot)

    def render(self) -> list[Message]:
        self.calls += 1
        if self.calls == 1:
            return [Message(role=Role.system, content="You are a careful agent.")]
        return []

    def promote(self) -> tuple[Message, ...]:
        return ()

    def gc_prologue(self) -> None:
        pass


class SubTask:
    """Exclusive for three calls, then retired and collected into one message."""

    def __init__(self) -> None:
        self.left = 3
        self.life_state = AreaLifeState.retain
        self.flow_state = AreaFlowState.exclusive

    def observe(self, snapshot: Sequence[Any]) -> None:
        pass

    def render(self) -> list[Message]:
        self.left -= 1
        if not self.left:
            self.life_state = AreaLifeState.retired
            self.flow_state = AreaFlowState.yielded
        return [Message(role=Role.user, content=f"Sub-task step, {self.left} left.")]

    def promote(self) -> tuple[Message, ...]:
        return (Message(role=Role.user, content="Sub-task result."),)

    def gc_prologue(self) -> None:
        pass


def turn(n: int) -> list[Message]:
    call = f"call-{n}"
    return [
        Message(
            role=Role.assistant,
            content=(Text(f"Step {n}: checking."), ToolCall(call, "run", f'{{"n": {n}}}')),
        ),
        Message(role=Role.user, content=(ToolResult(call, f"output {n}", name="run"),)),
    ]


def run(turns: int) -> tuple[list[int], int, int]:
    coop = CoopContext(Context(ANTHROPIC))
    coop.register(SystemPrompt())
    coop.extend([Message(role=Role.user, content="Begin.")])
    times: list[int] = []
    clock = time.perf_counter_ns
    gc.disable()
    try:
        for n in range(turns):
            if n % 200 == 100:
                coop.register(SubTask())
            if n:
                coop.extend(turn(n - 1))
            start = clock()
            coop.render()
            times.append(clock() - start)
    finally:
        gc.enable()
    collections = sum(1 for r in coop.records if r.collection is not None)
    return times, len(coop.context), collections


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10_000)
    args = parser.parse_args()
    run(min(args.turns, 500))  # warm up
    times, items, collections = run(args.turns)
    tenth = max(1, len(times) // 10)
    first = statistics.median(times[:tenth]) / 1000
    last = statistics.median(times[-tenth:]) / 1000
    ratio = last / first
    print(f"{args.turns} calls rendered, {collections} collections, {items} items at the end")
    print(f"median render, first 10%: {first:8.2f} us")
    print(f"median render, last 10%:  {last:8.2f} us")
    print(f"last / first: {ratio:.2f}x (target <= 1.30x) {'ok' if ratio <= 1.3 else 'MISSED'}")


if __name__ == "__main__":
    main()
