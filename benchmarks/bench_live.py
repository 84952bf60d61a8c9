"""The live path: one ``push()`` per event, hooks, and flatness, each beside its anchor.

A server or an SDK stream feeds the engine one event at a time. This benchmark
prints, from one run, what the engine itself adds to such a push, what a push hook
adds, and whether a long conversation stays flat (issue #27, items 3 to 5):

- **minimal loop**: the hand-written dict-and-list fold (``bench_engine``), the unit
  every ratio is counted in;
- **engine share of push()**: the five definitions of ``bench_seed_style``, routed
  (each declares its two event types, ``event_type=itemgetter("type")``), one
  ``push()`` per event with a subscriber and a frame every 64 events, less the same
  definitions' own calls without any engine (target <= 4x). Its anchor, the floor of
  a push, is the engine's own batch path: the same run as ``push_many`` of 64. Split
  beside it: the fold of one event by itself (``Fold.apply_event``, where each rule
  is one function: route, match, claim), and what push() adds around it (the lock,
  the publication check, its own call);
- **no-op hook**: the same push() run with one engine-level hook whose
  ``on_push_end`` does nothing, less the run without it (target <= 0.5x). Its
  anchor, the floor of a hook, is one plain Python function call per event; beside
  it, what the hook contract itself asks per event (a fresh ``PushContext``, two
  clock reads for ``elapsed_ms``, the call), which is above the target;
- **hook-free cost**: engines whose hooks have nothing to run per event (``hooks=[]``,
  a hook with only ``on_publish``) less the engine made without hooks (target 0);
- **flatness**: a 10,000-node conversation (a start and two deltas per node) pushed
  one event at a time with a subscriber and a frame every 64 events: the last
  tenth's cost per event over the first tenth's (target <= 1.3x). Beside it, the same
  ratio less the tuple snapshots the notifications hand listeners (every ``immediate``
  start and every frame makes ``nodes()``, a tuple of every node: O(n) each, rule 6),
  counted by replaying those notifications' ``tuple()`` calls without the engine.

Run: ``python benchmarks/bench_live.py`` (best CPU time of interleaved rounds; the
machine is shared, so read the ratios) or ``--instructions`` (needs valgrind: every
figure is a callgrind instruction count, which a loaded machine does not move; a
count does not see cache misses, so read it beside a timed run). ``--quick`` runs a
fifth of the workload.
"""

from __future__ import annotations

import argparse
import gc
import glob
import itertools
import operator
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_engine import minimal_loop, workload
from bench_seed_style import definitions_alone, seed_definitions

from engine import ManualScheduler, Node, PushContext, create_conversation_engine

Event = dict[str, Any]
FRAME_EVERY = 64
ROUTER = operator.itemgetter("type")


class NoOpEnd:
    """A tracing hook that does nothing: what the hook machinery costs by itself."""

    def on_push_end(self, ctx: PushContext) -> None:
        pass


class PublishOnly:
    """A hook with nothing to run per event (only ``on_publish``)."""

    def on_publish(self, nodes: tuple[Node, ...]) -> None:
        pass


def live(events: list[Event], hooks: Any = None, batch: int = 1) -> Any:
    """The five routed definitions, a subscriber, a frame every 64 events; ``batch``
    1 pushes one event at a time, else ``push_many`` of ``batch``. ``hooks`` None
    makes the engine without the argument."""
    scheduler = ManualScheduler()
    extra = {} if hooks is None else {"hooks": hooks}
    engine = create_conversation_engine(
        seed_definitions(routed=True), scheduler=scheduler, event_type=ROUTER, **extra
    )
    engine.subscribe(lambda nodes: None)
    fire = scheduler.fire
    if batch == 1:
        push = engine.push
        for at, event in enumerate(events, 1):
            push(event)
            if at % FRAME_EVERY == 0:
                fire()
    else:
        push_many = engine.push_many
        for start in range(0, len(events), batch):
            push_many(events[start : start + batch])
            if (start + batch) % FRAME_EVERY == 0:
                fire()
    fire()
    return engine


def fold_alone(events: list[Event]) -> None:
    """The fold of one event at a time by itself (``Fold.apply_event``): push() less
    its lock, its publication check and its own call; no subscriber is told."""
    engine = create_conversation_engine(
        seed_definitions(routed=True), scheduler=ManualScheduler(), event_type=ROUTER
    )
    apply_event = engine._fold.apply_event
    for event in events:
        apply_event(event)


def _noop(event: object) -> None:
    pass


def empty_loop(events: list[Event]) -> None:
    for _event in events:
        pass


def call_loop(events: list[Event]) -> None:
    """The floor of a hook: one plain function call per event (less ``empty_loop``)."""
    noop = _noop
    for event in events:
        noop(event)


def contract_loop(events: list[Event]) -> None:
    """What the hook contract asks per event whatever the engine does: a fresh
    ``PushContext``, two clock reads for ``elapsed_ms``, one call (less ``empty_loop``)."""
    noop = _noop
    clock = time.perf_counter
    for position, event in enumerate(events):
        ctx = PushContext(event=event, position=position)
        started = clock()
        noop(ctx)
        ctx.elapsed_ms = (clock() - started) * 1000.0


def runs(events: list[Event]) -> dict[str, Callable[[], object]]:
    return {
        "minimal loop": lambda: minimal_loop(events),
        "definitions alone, routed": lambda: definitions_alone(events, routed=True),
        "push() per event": lambda: live(events),
        "push_many(64)": lambda: live(events, batch=64),
        "the fold of one event alone": lambda: fold_alone(events),
        "push(), no-op on_push_end hook": lambda: live(events, hooks=[NoOpEnd()]),
        "push(), hooks=[]": lambda: live(events, hooks=[]),
        "push(), an on_publish-only hook": lambda: live(events, hooks=[PublishOnly()]),
        "empty loop": lambda: empty_loop(events),
        "a function call per event": lambda: call_loop(events),
        "a context, two clock reads, a call": lambda: contract_loop(events),
    }


def many_nodes(count: int = 10_000) -> list[Event]:
    return [
        e
        for m in range(count)
        for e in (
            {"type": "message.start", "id": f"m{m}"},
            {"type": "message.delta", "id": f"m{m}", "text": "hello "},
            {"type": "message.delta", "id": f"m{m}", "text": "world"},
        )
    ]


def snapshots(events: list[Event], mark: Callable[[int], None]) -> None:
    """The notifications of ``tenths`` without the engine: a tuple of every node at
    each start (``immediate``) and at each frame that has something new, as
    ``nodes()`` must hand listeners (rule 6: a tuple, O(n) to make)."""
    nodes: list[object] = []
    bounds = [len(events) * i // 10 for i in range(11)]
    new = False
    mark(0)
    for tenth, (start, stop) in enumerate(itertools.pairwise(bounds), 1):
        for at in range(start, stop):
            if events[at]["type"] == "message.start":
                nodes.append(events[at])
                tuple(nodes)
                new = False
            else:
                new = True
            if (at + 1) % FRAME_EVERY == 0 and new:
                tuple(nodes)
                new = False
        mark(tenth)


def tenths(events: list[Event], mark: Callable[[int], None]) -> None:
    """Push ``events`` one at a time (subscriber, a frame every 64), calling
    ``mark(i)`` after the i-th tenth (``mark(0)`` before the first)."""
    scheduler = ManualScheduler()
    engine = create_conversation_engine(
        seed_definitions(routed=True), scheduler=scheduler, event_type=ROUTER
    )
    engine.subscribe(lambda nodes: None)
    push = engine.push
    fire = scheduler.fire
    bounds = [len(events) * i // 10 for i in range(11)]
    mark(0)
    for tenth, (start, stop) in enumerate(itertools.pairwise(bounds), 1):
        for at in range(start, stop):
            push(events[at])
            if (at + 1) % FRAME_EVERY == 0:
                fire()
        mark(tenth)


# -- figures -----------------------------------------------------------------------


def report(
    costs: dict[str, float],
    n: int,
    unit: str,
    flat: tuple[float, float],
    copies: tuple[float, float],
) -> None:
    """Print the table and the ratios; ``costs`` are per run of ``n`` events, ``flat``
    the first and last tenths of the flatness run, ``copies`` those of ``snapshots``."""
    floor = costs["minimal loop"]
    print(f"{'run':36} {unit + '/event':>16} {'x minimal':>10}")
    for name, cost in costs.items():
        print(f"{name:36} {cost / n:16,.1f} {cost / floor:10.2f}")
    alone = costs["definitions alone, routed"]
    push = costs["push() per event"]

    def ratio(cost: float) -> float:
        return cost / floor

    def line(what: str, value: float, target: str) -> None:
        print(f"  {what:58} {value:6.2f}x   {target}")

    print(f"\nminimal loop: {floor / n:.1f} {unit}/event; ratios below are in its units")
    line("engine share of push() (push - definitions alone)", ratio(push - alone), "target <= 4")
    line(
        "  anchor: engine share of push_many(64), the batch path",
        ratio(costs["push_many(64)"] - alone),
        "(the floor of a push)",
    )
    line(
        "  of which the fold of one event (Fold.apply_event alone)",
        ratio(costs["the fold of one event alone"] - alone),
        "(one rule per function)",
    )
    line(
        "  of which the lock, the publication check and the call",
        ratio(push - costs["the fold of one event alone"]),
        "",
    )
    line(
        "no-op on_push_end hook, added per event",
        ratio(costs["push(), no-op on_push_end hook"] - push),
        "target <= 0.5",
    )
    line(
        "  anchor: one plain function call per event",
        ratio(costs["a function call per event"] - costs["empty loop"]),
        "(the floor of a hook)",
    )
    line(
        "  anchor: a PushContext, two clock reads and a call per event",
        ratio(costs["a context, two clock reads, a call"] - costs["empty loop"]),
        "(what the contract asks)",
    )
    line("hook-free cost: hooks=[], added per event", ratio(costs["push(), hooks=[]"] - push), "0")
    line(
        "hook-free cost: an on_publish-only hook, added per event",
        ratio(costs["push(), an on_publish-only hook"] - push),
        "0",
    )
    first, last = flat
    print(
        f"  {'flatness, 10,000 nodes, push(), frame every 64: last/first tenth':58} "
        f"{last / first:6.2f}x   target <= 1.3"
    )
    first_copies, last_copies = copies
    print(
        f"  {'  floor: the same less its tuple snapshots (nodes(), O(n) each)':58} "
        f"{(last - last_copies) / (first - first_copies):6.2f}x   (the snapshots: "
        f"{last_copies / (last - last_copies):.2f}x the rest of the last tenth)"
    )


def timed(events: list[Event], rounds: int) -> None:
    """Best CPU time of each run over interleaved rounds."""
    table = runs(events)
    best: dict[str, float] = {}
    for _ in range(rounds):
        for name, run in table.items():
            gc.collect()
            started = time.process_time()
            run()
            took = time.process_time() - started
            best[name] = min(best.get(name, took), took)
    nodes = many_nodes()
    tenth_pairs: dict[Callable[..., None], tuple[float, float]] = {}
    for _ in range(rounds):
        for run_tenths in (tenths, snapshots):
            stamps: list[float] = []
            gc.collect()
            run_tenths(nodes, lambda _, stamps=stamps: stamps.append(time.process_time()))  # type: ignore[misc]
            first, last = tenth_pairs.get(run_tenths, (float("inf"), float("inf")))
            tenth_pairs[run_tenths] = (
                min(first, stamps[1] - stamps[0]),
                min(last, stamps[10] - stamps[9]),
            )
    report(
        {k: v * 1e9 for k, v in best.items()},
        len(events),
        "ns",
        tenth_pairs[tenths],
        tenth_pairs[snapshots],
    )


# -- instruction counts (callgrind) ----------------------------------------------------


def _control(command: str) -> None:
    subprocess.run(
        ["callgrind_control", command, str(os.getpid())], capture_output=True, check=True
    )


def child(quick: bool) -> None:
    """Under callgrind: each run once to warm up, then once counted between dumps."""
    events = workload(40, 500, 10, 100) if quick else workload()
    table = runs(events)
    for run in table.values():
        run()
    nodes = many_nodes()
    gc.collect()
    gc.disable()  # a collection's timing would move one count by its size
    print(f"EVENTS {len(events)}")
    sys.stdout.flush()
    _control("--instr=on")
    _control("--dump=start")
    _control("--dump=empty")
    for number, run in enumerate(table.values()):
        run()
        _control(f"--dump=run{number}")
    tenths(nodes, lambda i: _control(f"--dump=tenth{i}"))
    snapshots(nodes, lambda i: _control(f"--dump=copies{i}"))
    _control("--instr=off")


def instructions(quick: bool) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "callgrind.out")
        done = subprocess.run(
            [
                *("valgrind", "--tool=callgrind", "--instr-atstart=no"),
                f"--callgrind-out-file={out}",
                *(sys.executable, __file__, "--child", *(["--quick"] if quick else [])),
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        found = re.search(r"EVENTS (\d+)", done.stdout)
        if found is None:
            raise SystemExit(f"the run under valgrind failed:\n{done.stderr[-2000:]}")
        dumps: dict[str, int] = {}
        for path in glob.glob(out + ".*"):
            text = Path(path).read_text()
            trigger = re.search(r"desc: Trigger: dump (\w+)", text)
            total = re.search(r"totals: (\d+)", text)
            if trigger and total:
                dumps[trigger.group(1)] = int(total.group(1))
    empty = dumps["empty"]
    costs = {name: dumps[f"run{i}"] - empty for i, name in enumerate(runs([]))}
    flat = (dumps["tenth1"] - empty, dumps["tenth10"] - empty)
    copies = (dumps["copies1"] - empty, dumps["copies10"] - empty)
    report({k: float(v) for k, v in costs.items()}, int(found.group(1)), "instr", flat, copies)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a fifth of the workload")
    parser.add_argument("--instructions", action="store_true", help="count under callgrind")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.child:
        child(options.quick)
        return
    events = workload(40, 500, 10, 100) if options.quick else workload()
    print(f"python {sys.version.split()[0]}; {len(events):,} events; frames every {FRAME_EVERY}")
    if options.instructions:
        print("callgrind instruction counts\n")
        instructions(options.quick)
    else:
        rounds = 3 if options.quick else 7
        print(f"best CPU time of {rounds} interleaved rounds\n")
        timed(events, rounds)


if __name__ == "__main__":
    main()
