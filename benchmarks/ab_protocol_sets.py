"""Two source trees of this project, A and B, on the protocol sets' recordings: how
much faster or slower B folds each set than A (issue #13's before/after check).

Run: ``python benchmarks/ab_protocol_sets.py A_DIR B_DIR`` where each directory is a
checkout of the project (``git worktree add /tmp/base 965bfcf``, or ``git archive
965bfcf | tar -x -C /tmp/base``); ``--fixtures`` names the recordings (default
``../shared/fixtures/recorded`` beside this checkout).

Each tree runs in its own process (``PYTHONPATH`` pointing at it), in alternating
rounds (A, B, A, B, ...) so a slow patch of a shared machine lands on both; a figure
is the best pass over every round. Per set, on every recording the newer tree's
detection gives that set (each tree reads the files with its own ``load_events``):

- **fold**: the set's whole ``fold()`` (pre-pass, engine, rebuild), as
  ``bench_protocol_sets.py`` times it;
- **engine**: ``push_many`` of the pre-pass's envelopes (made before the clock starts)
  into a new engine of the set's registration, then ``nodes()``: the engine and the
  definitions alone.

Sets are read through the tree's public surface: ``PROTOCOL`` (``prepare``,
``registration``, ``fold``) where the module has one, else the older modules' own
``fold``, ``scope`` or ``Router().route`` and ``_REGISTRATION``. Only sets both trees
have are compared. Figures are events/s; ``B/A`` above 1 means B is faster.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SETS = (
    "anthropic",
    "openai_chat",
    "openai_responses",
    "ag_ui",
    "ai_sdk",
    "gemini",
    "bedrock",
)
PASS_SECONDS = 0.05  # a pass repeats a set's recordings until it takes about this long


def _recordings(fixtures: Path) -> dict[str, list[str]]:
    """The recordings of each set, by this (the running) tree's detection; one file
    per stream (the same stream saved as .json and .jsonl counts once)."""
    sys.path.insert(0, str(ROOT))
    from replay import detect_protocol, load_events

    found: dict[str, list[str]] = {}
    seen: set[str] = set()
    for path in sorted(p for p in fixtures.iterdir() if p.is_file()):
        try:
            events = load_events(path, lenient=True).events
            protocol = detect_protocol(events).protocol
        except Exception:  # not a recording this tree reads
            continue
        key = f"{protocol}:{path.stem}"
        if protocol not in SETS or key in seen:
            continue
        seen.add(key)
        found.setdefault(protocol, []).append(str(path))
    return found


def _runs(name: str) -> tuple[Callable[[Any], object], Callable[[Any], list[Any]], Any] | None:
    """The set's fold, its pre-pass (to a list) and its registration, or None."""
    try:
        module = importlib.import_module(f"definitions.{name}")
    except ImportError:
        return None
    protocol = getattr(module, "PROTOCOL", None)
    if protocol is not None:
        return module.fold, lambda events: list(protocol.prepare(events)), protocol.registration
    if hasattr(module, "scope"):
        prepare: Callable[[Any], list[Any]] = lambda events: list(module.scope(events))  # noqa: E731
    else:
        prepare = lambda events: list(module.Router().route(events))  # noqa: E731
    return module.fold, prepare, module._REGISTRATION


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


def child(recordings: dict[str, list[str]], passes: int) -> dict[str, dict[str, float]]:
    """This tree's figures per set (run with PYTHONPATH at the tree)."""
    from engine import create_conversation_engine
    from replay import load_events

    figures: dict[str, dict[str, float]] = {}
    for name, paths in recordings.items():
        runs = _runs(name)
        if runs is None:
            continue
        fold, prepare, registration = runs
        streams = [load_events(Path(path), lenient=True).events for path in paths]
        envelopes = [prepare(events) for events in streams]
        count = sum(len(events) for events in streams)

        def folds(streams: list[Any] = streams, fold: Callable[[Any], object] = fold) -> None:
            for events in streams:
                fold(events)

        def engines(
            envelopes: list[list[Any]] = envelopes, registration: Any = registration
        ) -> None:
            for stream in envelopes:
                engine = create_conversation_engine(registration)
                engine.push_many(stream)
                engine.nodes()

        figures[name] = {
            "fold": _best(folds, count, passes),
            "engine": _best(engines, count, passes),
            "events": count,
            "recordings": len(paths),
        }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", type=Path, help="the tree before (a checkout of the project)")
    parser.add_argument("b", type=Path, help="the tree after")
    fixtures = ROOT.parent / "shared" / "fixtures" / "recorded"
    parser.add_argument("--fixtures", type=Path, default=fixtures)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--passes", type=int, default=7)
    parser.add_argument("--sets", default=",".join(SETS), help="comma-separated set names")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        json.dump(child(json.load(sys.stdin), args.passes), sys.stdout)
        return
    wanted = set(args.sets.split(","))
    recordings = {k: v for k, v in _recordings(args.fixtures).items() if k in wanted}
    best: dict[str, dict[str, dict[str, float]]] = {"A": {}, "B": {}}
    for round in range(args.rounds):
        for label, tree in (("A", args.a), ("B", args.b)):
            env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
            done = subprocess.run(
                [sys.executable, __file__, "-", "-", "--child", "--passes", str(args.passes)],
                input=json.dumps(recordings),
                capture_output=True,
                text=True,
                env=env,
                cwd=tree,
                check=True,
            )
            for name, figures in json.loads(done.stdout).items():
                kept = best[label].setdefault(name, dict(figures))
                for what in ("fold", "engine"):
                    kept[what] = max(kept[what], figures[what])
            print(f"round {round + 1} {label} done", file=sys.stderr)
    print(f"A = {args.a}\nB = {args.b}")
    print(f"(events/s, best of {args.rounds} rounds x {args.passes} passes)")
    heads = ("events", "fold A", "fold B", "B/A", "engine A", "engine B", "B/A")
    print(f"{'set':<18}" + "".join(f"{head:>{len(head) + 4}}" for head in heads))
    for name in SETS:
        a = best["A"].get(name)
        b = best["B"].get(name)
        if a is None or b is None:
            continue
        row = (
            f"{int(b['events']):>10}{a['fold']:>10,.0f}{b['fold']:>10,.0f}"
            f"{b['fold'] / a['fold']:>7.3f}{a['engine']:>12,.0f}{b['engine']:>12,.0f}"
            f"{b['engine'] / a['engine']:>7.3f}"
        )
        print(f"{name:<18}{row}")


if __name__ == "__main__":
    main()
