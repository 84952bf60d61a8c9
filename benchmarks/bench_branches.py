"""The cost of switching branches as the shared prefix grows: flat.

A conversation of up to 10,000 events (built-in messages: a start, two deltas and
an end per message) whose last answer was regenerated: two branches that share a
prefix of P events and differ in a fixed divergent part of 200 events each. For P
from 1,000 to 9,600 events it prints the time of one switch with
``definitions.branch.Branches`` (``show`` of the other branch: step back over one
divergent part, forward over the other, with ``engine.Cursor``) beside its anchor,
a fresh fold of the branch's whole path (what a switch costs without the cursor),
and the memory a switch allocates at its peak (``tracemalloc``): the divergent
part's nodes and undo entries, never a copy of the shared prefix.

Run: ``python benchmarks/bench_branches.py`` (best of ``--repeat`` interleaved
rounds, each timing many switches; the machine is shared, so read the ratios).
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from typing import Any

from definitions import branch, builtin
from engine import create_conversation_engine

TOTAL = 10_000  # the longest log: a prefix of 9,600 and two divergent parts
DIVERGENT = 200  # events per branch after the branch point


def messages(count: int, prefix: str) -> list[dict[str, Any]]:
    """``count`` events: messages of a start, two deltas and an end, alternating roles."""
    events: list[dict[str, Any]] = []
    n = 0
    while len(events) < count:
        id = f"{prefix}{n}"
        role = "user" if n % 2 == 0 else "assistant"
        events += [
            {"type": "message.start", "id": id, "role": role, "text": ""},
            {"type": "message.delta", "id": id, "text": "lorem ipsum "},
            {"type": "message.delta", "id": id, "text": "dolor sit amet"},
            {"type": "message.end", "id": id},
        ]
        n += 1
    return events[:count]


def log(shared: int) -> list[dict[str, Any]]:
    """A prefix of ``shared`` events, one version's divergent part, a regeneration
    of its first message, and the other version's."""
    prefix = messages(shared, "p")
    one = messages(DIVERGENT, "a")
    two = messages(DIVERGENT, "b")
    regenerate = {"type": "branch.regenerate", "id": "v2", "of": "message:a0"}
    return [*prefix, *one, regenerate, *two]


def best(action: Any, repeat: int, number: int) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            action()
        runs.append((time.perf_counter() - start) / number)
    return min(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{TOTAL:,}-event conversation, {DIVERGENT} divergent events per branch")
    print(
        f"{'shared prefix':>14} {'switch':>10} {'fresh fold':>11} {'ratio':>7} {'switch peak':>12}"
    )
    for shared in (1_000, 2_000, 4_000, 8_000, 9_600):
        events = log(shared)
        shown = branch.Branches(events, builtin.DEFINITIONS)
        shown.show("main")
        state = {"on": "main"}

        def switch(shown: branch.Branches = shown, state: dict[str, str] = state) -> None:
            state["on"] = "v2" if state["on"] == "main" else "main"
            shown.show(state["on"])

        path = branch.path_events(events, shown.tree, "v2")

        def fresh(path: list[dict[str, Any]] = path) -> None:
            engine = create_conversation_engine(builtin.DEFINITIONS)
            engine.push_many(path)
            engine.nodes()

        switch_s = best(switch, args.repeat, 200)
        fresh_s = best(fresh, args.repeat, 5)
        tracemalloc.start()
        switch()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(
            f"{shared:>14,} {switch_s * 1e6:>8.0f}us {fresh_s * 1e3:>9.2f}ms"
            f" {fresh_s / switch_s:>6.0f}x {peak / 1024:>9.0f} KiB"
        )


if __name__ == "__main__":
    main()
