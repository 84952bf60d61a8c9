"""Two source trees of this project, A and B, on the SDK protocol sets' typed events:
how much faster or slower B folds the SDK's typed event models than A (issue #26
item 5's check of the typed converter).

Run: ``python benchmarks/ab_typed.py A_DIR B_DIR`` where each directory is a checkout
of the project (``git archive <commit> | tar -x -C /tmp/a``); needs ../shared beside
each tree and the pinned SDKs of the test extra.

The figure is the user-visible one of ``bench_protocol_sets.py``'s typed table: the
set's whole ``fold()`` on the typed models its SDK's stream yields (built before the
clock starts, by this tree's ``bench_protocol_sets``), every recording of the set.
Each tree runs in its own process (``PYTHONPATH`` pointing at it), in alternating
rounds (A, B, A, B, ...) so a slow patch of a shared machine lands on both; a figure
is the best pass over every round. ``B/A`` above 1 means B is faster.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROTOCOLS = ("anthropic", "openai_chat", "openai_responses")
PASS_SECONDS = 0.1  # a pass repeats a set's folds until it takes about this long


def _best(run: Callable[[], object], count: int, passes: int) -> float:
    """The best rate (events/s) of ``passes`` passes of ``run`` (``count`` events)."""
    started = time.perf_counter()
    run()
    once = max(time.perf_counter() - started, 1e-6)
    repeat = max(1, int(PASS_SECONDS / once))
    best = float("inf")
    for _ in range(passes):
        gc.collect()
        started = time.perf_counter()
        for _ in range(repeat):
            run()
        best = min(best, (time.perf_counter() - started) / repeat)
    return count / best


def child(protocols: list[str], passes: int) -> dict[str, float]:
    """This tree's typed-fold rate per protocol (run with PYTHONPATH at the tree)."""
    tree = Path(os.environ["PYTHONPATH"])  # the tree's own benchmark makes the inputs
    sys.path.insert(0, str(tree / "benchmarks"))
    import bench_protocol_sets as sets

    figures: dict[str, float] = {}
    streams = sets.streams()
    for protocol in protocols:
        cells = [sets.typed_cell(protocol, events, 1) for _, events in streams[protocol]]
        typed = [(cell.run, cell.make()) for cell in cells if cell is not None]
        count = sum(len(events) for _, events in typed)

        def run(typed: list[tuple[Any, list[Any]]] = typed) -> None:
            for fold, events in typed:
                fold(events)

        figures[protocol] = _best(run, count, passes)
        figures[f"{protocol} events"] = count
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", type=Path, help="the tree before (a checkout of the project)")
    parser.add_argument("b", type=Path, help="the tree after")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--sets", default=",".join(PROTOCOLS), help="comma-separated set names")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    protocols = args.sets.split(",")
    if args.child:
        json.dump(child(protocols, args.passes), sys.stdout)
        return
    best: dict[str, dict[str, float]] = {"A": {}, "B": {}}
    for round in range(args.rounds):
        for label, tree in (("A", args.a), ("B", args.b)):
            env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
            done = subprocess.run(
                [
                    *(sys.executable, __file__, "-", "-", "--child"),
                    *("--passes", str(args.passes), "--sets", args.sets),
                ],
                capture_output=True,
                text=True,
                env=env,
                cwd=ROOT,
                check=True,
            )
            for name, figure in json.loads(done.stdout).items():
                best[label][name] = max(best[label].get(name, 0.0), figure)
            print(f"round {round + 1} {label} done", file=sys.stderr)
    print(f"A = {args.a}\nB = {args.b}")
    print(f"(typed fold, events/s, best of {args.rounds} rounds x {args.passes} passes)")
    print(f"{'set':<18}{'events':>8}{'A':>12}{'B':>12}{'B/A':>8}")
    for protocol in protocols:
        a, b = best["A"][protocol], best["B"][protocol]
        events = int(best["B"][f"{protocol} events"])
        print(f"{protocol:<18}{events:>8}{a:>12,.0f}{b:>12,.0f}{b / a:>8.3f}")


if __name__ == "__main__":
    main()
