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

``--instructions`` counts instead of timing: each set's passes run under valgrind
(callgrind), less a run without them, as events per million instructions, with the
cyclic garbage collector off (its timing is not the code's). A count is
deterministic, so it shows a few per cent a loaded machine's timing cannot (it does
not see cache misses or mispredicted branches; read both). About a minute per set
and tree.

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
import re
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
        # accumulate: fold was its name before (a tree of an older release)
        accumulate = getattr(protocol, "accumulate", None) or module.fold
        return accumulate, lambda events: list(protocol.prepare(events)), protocol.registration
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


def _workloads(
    recordings: dict[str, list[str]],
) -> dict[str, tuple[int, dict[str, Callable[[], None]]]]:
    """Per set its event count and the two workloads (``fold``, ``engine``), inputs
    made (run with PYTHONPATH at the tree)."""
    from engine import create_conversation_engine
    from replay import load_events

    found: dict[str, tuple[int, dict[str, Callable[[], None]]]] = {}
    for name, paths in recordings.items():
        runs = _runs(name)
        if runs is None:
            continue
        fold, prepare, registration = runs
        streams = [load_events(Path(path), lenient=True).events for path in paths]
        envelopes = [prepare(events) for events in streams]

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

        count = sum(len(events) for events in streams)
        found[name] = (count, {"fold": folds, "engine": engines})
    return found


def child(recordings: dict[str, list[str]], passes: int) -> dict[str, dict[str, float]]:
    """This tree's timed figures per set."""
    return {
        name: {
            **{what: _best(run, count, passes) for what, run in runs.items()},
            "events": count,
        }
        for name, (count, runs) in _workloads(recordings).items()
    }


def counted(recordings: dict[str, list[str]], what: str, count: int) -> None:
    """Run one set's ``what`` once (routes and caches made), then ``count`` times: the
    difference of two such runs under valgrind is the instructions of the passes.

    The cyclic collector is off: when it runs depends on every allocation before, and
    where objects hash by identity (a route record) on their addresses, so with it on
    one tree's count moved by up to 20% run to run; off, a count repeats exactly.
    """
    gc.disable()
    for _, runs in _workloads(recordings).values():
        for _ in range(count + 1):
            runs[what]()


def _instructions(tree: Path, recordings: dict[str, list[str]], what: str, count: int) -> int:
    """The instructions (callgrind's Ir) a child of ``tree`` runs ``counted`` with."""
    env = {**os.environ, "PYTHONPATH": str(tree.resolve()), "PYTHONHASHSEED": "0"}
    command = [
        *("valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"),
        *(sys.executable, __file__, "-", "-", "--child", "--what", what, "--count", str(count)),
    ]
    done = subprocess.run(
        command, input=json.dumps(recordings), capture_output=True, text=True, env=env, cwd=tree
    )
    found = re.search(r"refs:\s*([\d,]+)", done.stderr)
    if done.returncode or found is None:
        raise SystemExit(f"valgrind run failed in {tree}:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def by_instructions(
    trees: dict[str, Path], recordings: dict[str, list[str]], count: int
) -> dict[str, dict[str, dict[str, float]]]:
    """Per tree and set: events per million instructions of a pass (deterministic,
    so a shared machine's load does not move it), ``count`` passes less none."""
    figures: dict[str, dict[str, dict[str, float]]] = {label: {} for label in trees}
    for name, paths in recordings.items():
        one = {name: paths}
        events = 0
        for label, tree in trees.items():
            row: dict[str, float] = {}
            for what in ("fold", "engine"):
                spent = _instructions(tree, one, what, count) - _instructions(tree, one, what, 0)
                row[f"{what} Ir"] = spent / count
            figures[label][name] = row
            events = events or _events(paths)
        for label in trees:
            row = figures[label][name]
            row["events"] = events
            for what in ("fold", "engine"):
                row[what] = events / row[f"{what} Ir"] * 1e6
        print(f"{name} counted", file=sys.stderr)
    return figures


def _events(paths: list[str]) -> int:
    from replay import load_events

    return sum(len(load_events(Path(path), lenient=True).events) for path in paths)


def timed(
    trees: dict[str, Path], recordings: dict[str, list[str]], rounds: int, passes: int
) -> dict[str, dict[str, dict[str, float]]]:
    """Per tree and set: the best events/s over alternating rounds of children."""
    best: dict[str, dict[str, dict[str, float]]] = {label: {} for label in trees}
    for round in range(rounds):
        for label, tree in trees.items():
            env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
            done = subprocess.run(
                [sys.executable, __file__, "-", "-", "--child", "--passes", str(passes)],
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
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", type=Path, help="the tree before (a checkout of the project)")
    parser.add_argument("b", type=Path, help="the tree after")
    fixtures = ROOT.parent / "shared" / "fixtures" / "recorded"
    parser.add_argument("--fixtures", type=Path, default=fixtures)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--passes", type=int, default=7)
    parser.add_argument("--sets", default=",".join(SETS), help="comma-separated set names")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count instructions under valgrind (callgrind) instead of timing",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--what", help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, default=3, help="passes counted (--instructions)")
    args = parser.parse_args()
    if args.child:
        recordings = json.load(sys.stdin)
        if args.what:
            counted(recordings, args.what, args.count)
        else:
            json.dump(child(recordings, args.passes), sys.stdout)
        return
    wanted = set(args.sets.split(","))
    recordings = {k: v for k, v in _recordings(args.fixtures).items() if k in wanted}
    trees = {"A": args.a, "B": args.b}
    if args.instructions:
        figures = by_instructions(trees, recordings, args.count)
        unit = f"events per million instructions (callgrind Ir), {args.count} passes"
    else:
        figures = timed(trees, recordings, args.rounds, args.passes)
        unit = f"events/s, best of {args.rounds} rounds x {args.passes} passes"
    digits = 1 if args.instructions else 0
    print(f"A = {args.a}\nB = {args.b}\n({unit})")
    heads = ("events", "fold A", "fold B", "B/A", "engine A", "engine B", "B/A")
    print(f"{'set':<18}" + "".join(f"{head:>{len(head) + 4}}" for head in heads))
    for name in SETS:
        a = figures["A"].get(name)
        b = figures["B"].get(name)
        if a is None or b is None:
            continue
        row = (
            f"{int(b['events']):>10}{a['fold']:>10,.{digits}f}{b['fold']:>10,.{digits}f}"
            f"{b['fold'] / a['fold']:>7.3f}{a['engine']:>12,.{digits}f}"
            f"{b['engine']:>12,.{digits}f}{b['engine'] / a['engine']:>7.3f}"
        )
        print(f"{name:<18}{row}")


if __name__ == "__main__":
    main()
