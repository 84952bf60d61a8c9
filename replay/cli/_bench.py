"""Print events/s for decode, fold and both together (best of N)."""

from __future__ import annotations

import argparse
import io
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._progress import Progress
from ..logs._formats import load_events
from ._common import Exit, Failure, add_definitions, add_log, chosen_events, warn

HELP = "measure decode and fold speed"

BENCH_RUN = 0.2
"""``convo bench`` times runs of at least this many seconds (timeit's autorange target)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``bench``'s arguments to ``parser``."""
    add_log(parser, help="the recording")
    add_definitions(parser)
    parser.add_argument("--repeat", type=int, default=5, metavar="N", help="best of N runs")


def _best(action: Callable[[], object], repeat: int, progress: Callable[[], None]) -> float:
    """Seconds per call of ``action``: the best of ``repeat`` runs, each of as many calls
    as take ``BENCH_RUN`` seconds (one call at least), as ``timeit`` does; ``progress``
    is called after each run."""
    timer = timeit.Timer(action)
    number = 1
    while (elapsed := timer.timeit(number)) < BENCH_RUN and number < 1 << 30:
        number *= 2 if elapsed <= 0 else max(2, min(10, int(BENCH_RUN / elapsed) + 1))
    progress()
    runs = [elapsed]
    for _ in range(repeat - 1):
        runs.append(timer.timeit(number))
        progress()
    return min(runs) / number


def run(args: argparse.Namespace) -> int:
    """Time the decode, the fold and both, and print each in events/s."""
    if args.repeat < 1:
        raise Failure(f"--repeat {args.repeat}: must be at least 1")
    data = Path(args.log).read_bytes()
    log = chosen_events(args.log, args.lenient, args.definitions)
    events, chosen = log.events, log.definitions
    if not events:
        raise Failure(f"{args.log}: no events to measure")
    if log.note is not None:
        warn(log.note)
    types = chosen.vocabulary

    def decode() -> list[Any]:
        # Exactly the decode replay does: typed when the set declares a vocabulary.
        return load_events(io.BytesIO(data), lenient=args.lenient, types=types).events

    # The set's registration is made once, with it, as an application folding many logs
    # would have it: a pass measures the fold.
    def fold_only() -> object:
        return chosen.folded(events).nodes()

    def both() -> object:
        return chosen.folded(decode()).nodes()

    count = len(events)
    print(f"{args.log}: {count:,} events, {len(data):,} bytes, {chosen.label}", flush=True)
    for label, action in (("decode", decode), ("fold", fold_only), ("decode+fold", both)):
        with Progress(f"timing {label}", args.repeat, unit="runs") as bar:
            seconds = _best(action, args.repeat, bar.advance)
        print(
            f"  {label:<12} {count / seconds:>14,.0f} events/s"
            f"  ({seconds * 1e3:.3f} ms per pass, best of {args.repeat})"
        )
    return Exit.OK
