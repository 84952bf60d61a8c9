"""The engine used the way the seed uses it, beside the minimal fold loop in the same run.

Seed style (seeds/002): ``create_conversation_engine(definitions=[...])`` with five
definitions that declare no ``event_types`` and route nothing (no ``event_type=``),
``publication`` a function of the event, one ``push()`` per event, a subscriber,
and a frame scheduler firing every 64 events. Every definition sees every event
(rule 1); most events are claimed by one of them. Workload: issue #2's (200
messages x 500 text deltas, 50 tool calls x 100 argument deltas), as in
``bench_engine.py``, whose minimal loop is the reference.

Target (issue #13): within 8x the minimal loop. The run also prints the floor, the
five definitions' own ``match``/``start``/``update``/``publication`` calls over the
workload with no engine (rule 1: every ``match`` sees every event), and the engine's
own share, seed style minus that floor, both as ratios to the minimal loop.

Issue #13 also asks that the general path cost what the routed one-slot path costs.
So the same five definitions run routed too (each declares the two types it claims,
the engine routes with ``event_type=itemgetter("type")``: one ``match`` per event),
with their own floor (only the routed definition's calls); the two engine shares,
each run less its floor, are then printed side by side.

Run: ``python benchmarks/bench_seed_style.py`` (``--quick`` for a smaller run).
Figures are best-of-N wall times; the machine is shared, so read the ratio.
"""

from __future__ import annotations

import argparse
import gc
import operator
import sys
import time
from collections.abc import Callable
from typing import Any

from bench_engine import SimpleDefinition, minimal_loop, workload

from definitions import StreamedText
from engine import ManualScheduler, Publication, create_conversation_engine

Event = dict[str, Any]
FRAME_EVERY = 64
TARGET = 8.0


class Simple(SimpleDefinition):
    """``bench_engine``'s kind that claims its own start/set events (reasoning,
    approval, status), declaring no ``event_types`` (the engine then reads none)."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.event_types = None  # type: ignore[assignment]


class Streamed(Simple):
    """A kind with a start and streamed deltas, written as the seed writes ``message``:
    its update appends ``field``, its publication is a function of the event."""

    def __init__(self, kind: str, field: str) -> None:
        super().__init__(kind)
        self.set_type = f"{kind}.delta"  # what match() claims as an update
        self.field = field

    def start(self, event: Event, reader: Any) -> StreamedText:
        return StreamedText()

    def update(self, state: StreamedText, event: Event) -> StreamedText:
        return state.append(event[self.field])

    def publication(self, event: Event) -> Publication:  # type: ignore[override]
        return "animation-frame" if event["type"] == self.set_type else "immediate"


def seed_definitions(*, routed: bool = False) -> list[Any]:
    """The five kinds; ``routed``: each declares the two event types it claims."""
    definitions = [
        Streamed("message", "text"),
        Simple("reasoning"),
        Streamed("tool_call", "delta"),
        Simple("approval"),
        Simple("status"),
    ]
    if routed:
        for d in definitions:
            d.event_types = frozenset({d.start_type, d.set_type})
    return definitions


def seed_run(events: list[Event], *, routed: bool = False) -> Any:
    scheduler = ManualScheduler()
    engine = create_conversation_engine(
        definitions=seed_definitions(routed=routed),
        scheduler=scheduler,
        event_type=operator.itemgetter("type") if routed else None,
    )
    engine.subscribe(lambda nodes: None)
    push = engine.push
    fire = scheduler.fire
    for at, event in enumerate(events, 1):
        push(event)
        if at % FRAME_EVERY == 0:
            fire()
    fire()
    return engine


def definitions_alone(events: list[Event], *, routed: bool = False) -> None:
    """The five definitions' own calls for the workload, no engine: every ``match``,
    then ``start``/``update`` and ``publication`` for each claim (the floor of any
    engine that keeps rule 1). ``routed``: only the ``match`` of the definitions that
    declare the event's type (the floor of the routed engine)."""
    definitions = seed_definitions(routed=routed)
    members = [
        (
            d.match,
            d.start,
            d.update,
            p if callable(p := getattr(d, "publication", None)) else None,
            {},
        )
        for d in definitions
    ]
    by_type: dict[str, list[Any]] = {}
    for d, member in zip(definitions, members, strict=True):
        for event_type in (d.start_type, d.set_type):
            by_type.setdefault(event_type, []).append(member)
    for event in events:
        for match, start, update, publication, states in (
            by_type.get(event["type"], ()) if routed else members
        ):
            claim = match(event)
            if claim is None:
                continue
            if claim.role == "start":
                states[claim.id] = start(event, None)
            elif claim.id in states:
                states[claim.id] = update(states[claim.id], event)
            else:
                continue
            if publication is not None:  # as the engine: after each claim that changed
                publication(event)


def interleaved(runs: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """The best CPU time of each run over ``rounds`` rounds, the runs taking turns (so
    a neighbour's load on the shared machine falls on all of them alike)."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            gc.collect()
            started = time.process_time()
            run()
            times[name].append(time.process_time() - started)
    return {name: min(values) for name, values in times.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller, faster run")
    options = parser.parse_args(argv)
    rounds = 3 if options.quick else 7
    events = workload()
    n = len(events)
    print(f"workload: {n:,} events (200 messages x 500 deltas, 50 tool calls x 100 deltas)")
    print(f"python {sys.version.split()[0]}; frames every {FRAME_EVERY} events")
    print(f"best CPU time of {rounds} interleaved rounds\n")
    seconds = interleaved(
        {
            "minimal loop": lambda: minimal_loop(events),
            "the five definitions alone, no engine": lambda: definitions_alone(events),
            "seed style: push() per event, 5 unrouted": lambda: seed_run(events),
            "the five definitions alone, routed": lambda: definitions_alone(events, routed=True),
            "the same five routed: push() per event": lambda: seed_run(events, routed=True),
        },
        rounds,
    )
    floor = seconds["minimal loop"]
    print(f"{'run':44} {'events/s':>12} {'x minimal':>10}")
    for name, took in seconds.items():
        print(f"{name:44} {n / took:12,.0f} {took / floor:10.2f}")
    seed = seconds["seed style: push() per event, 5 unrouted"]
    alone = seconds["the five definitions alone, no engine"]
    ratio = seed / floor
    verdict = "within" if ratio <= TARGET else "ABOVE"
    print(f"\nseed style / minimal loop = {ratio:.2f}x ({verdict} the {TARGET:g}x target)")
    # Under rule 1 every definition's match sees every event: no engine can cost less
    # than the definitions' own calls, so a target below that floor cannot be met.
    print(
        f"floor: the definitions' own calls = {alone / floor:.2f}x the minimal loop "
        f"(the {TARGET:g}x target is {'above' if alone / floor < TARGET else 'BELOW'} it)"
    )
    print(
        f"the engine's own share: seed style - floor = {(seed - alone) / floor:.2f}x the "
        f"minimal loop ({(seed - alone) / n * 1e9:.0f} ns per event)"
    )
    routed = seconds["the same five routed: push() per event"]
    routed_alone = seconds["the five definitions alone, routed"]
    print(
        f"the engine's own share routed (one match per event): "
        f"{(routed - routed_alone) / floor:.2f}x the minimal loop "
        f"({(routed - routed_alone) / n * 1e9:.0f} ns per event); unrouted / routed share = "
        f"{(seed - alone) / (routed - routed_alone):.2f}"
    )


if __name__ == "__main__":
    main()
