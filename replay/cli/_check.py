"""Run the determinism checker; exit 1 at the first divergence."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from definitions import event_type

from .. import _branches
from .._determinism import Report, check_determinism, steps
from .._progress import Progress
from ..context._recorded import describe_requests
from ..context._requests import check_requests
from ._common import (
    Chosen,
    Exit,
    add_conversation,
    add_definitions,
    add_log,
    chosen_events,
    non_negative,
    warn,
)

HELP = "prove every way of replaying a log gives the same view"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``check``'s arguments to ``parser``."""
    add_log(parser)
    add_definitions(parser)
    add_conversation(parser)
    parser.add_argument("--seed", type=int, default=0, help="fixes every random choice")
    parser.add_argument(
        "--rounds", type=non_negative, default=3, help="random variants per way (default 3)"
    )


def run(args: argparse.Namespace) -> int:
    """Check the log (each branch's path, when it has branches) and print the report."""
    log = chosen_events(args.log, args.lenient, args.definitions, args.conversation)
    chosen = log.definitions
    if log.note is not None:
        warn(log.note)
    if _branches.has_branches(log.events):
        return _check_branches(args, log)
    with Progress("checking", steps(rounds=args.rounds), unit="ways") as bar:
        report = _report(args, log, bar.advance)
    print(f"{args.log}: {report.describe()}")
    if _has_compaction(log.events):
        differs = check_requests(log.events, "anthropic", seed=args.seed, rounds=args.rounds)
        print(f"{args.log}: {differs or 'compaction honoured: every request identical'}")
        if differs is not None:
            return Exit.DIVERGED
    if chosen.name == "recorded" and chosen.rebuilds:
        said = describe_requests(log.events)  # informational: never the exit status
        if said is not None:
            print(said)
    return Exit.OK if report.ok else Exit.DIVERGED


def _report(
    args: argparse.Namespace, log: Chosen, progress: Callable[[], None], leaf: str | None = None
) -> Report:
    """The checker's report on the log (``leaf``: on that branch's path), as asked."""
    chosen = log.definitions
    # The raw events and the set's pre-pass, not the wrapped events: each window is cut
    # from the raw log and wrapped afresh, as a paginated reader would (a pre-pass
    # must cope with a stream that starts in the middle of a message).
    return check_determinism(
        log.events,
        chosen.definitions,
        leaf=leaf,
        seed=args.seed,
        rounds=args.rounds,
        event_type=chosen.event_type,
        prepare=chosen.prepare,
        progress=progress,
    )


def _has_compaction(events: Sequence[Any]) -> bool:
    """Whether the log holds a compaction mark of its own (the requests it leads to
    are then checked too: folded in random batches they must not change)."""
    return any(event_type(e) == "compaction.mark" for e in events)


def _check_branches(args: argparse.Namespace, log: Chosen) -> int:
    """``check`` of a log with branches: every leaf's path proved as a log of its own."""
    branched = _branches.BranchedLog(log.events, log.definitions)
    ok = True
    leaves = branched.tree.leaves()
    with Progress("checking", steps(rounds=args.rounds) * len(leaves), unit="ways") as bar:
        reports = [(leaf.id, _report(args, log, bar.advance, leaf.id)) for leaf in leaves]
    for leaf, report in reports:
        ok = ok and report.ok
        print(f"{args.log} (branch {leaf}): {report.describe()}")
    return Exit.OK if ok else Exit.DIVERGED
