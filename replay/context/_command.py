"""``convo context``: the command line of the model-context projection and its economy.

``add_arguments`` declares the options, ``command`` computes what the command prints
for a recording's events. The projection itself is ``_requests`` (plain requests) and
``_economy`` (requests under a policy, with figures); this module only reads options
and reports. May import: ``_requests``, ``_economy``, ``_workbench``, ``definitions``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import msgspec

from definitions.gateways import GATEWAYS, Problem, gateway
from engine import Economy, Node

from ._economy import POLICIES, CallRequest, conversation, measure, timed
from ._economy import requests as economy_requests
from ._requests import ContextOptions, definition_set_of, is_record, request_bytes, requests
from ._workbench import Workbench

__all__ = ["add_arguments", "command", "options_from"]


# -- convo context ---------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``convo context`` (after LOG); policies add theirs here."""
    parser.add_argument(
        "--provider", "-p", choices=sorted(GATEWAYS), required=True, help="whose request"
    )
    parser.add_argument(
        "--calls",
        action="store_true",
        help="JSON Lines: the request before every model turn of the log",
    )
    parser.add_argument(
        "--at", type=_count, metavar="N", help="project only the first N events of the log"
    )
    parser.add_argument("--model", default="", help="the model named in each request")
    parser.add_argument(
        "--before-compaction",
        action="store_true",
        help="the counterfactual: each request as if nothing had been compacted (the "
        "whole history, no summary), to compare with the request that starts at the "
        "latest compaction",
    )
    _add_economy_arguments(parser)


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text}")
    return value


def options_from(args: argparse.Namespace) -> ContextOptions:
    """The ``ContextOptions`` the command line asks for."""
    return ContextOptions(model=args.model, compaction=not args.before_compaction)


def warn(index: int, problems: Iterable[Problem]) -> None:
    """Report call ``index``'s validator problems on stderr."""
    for problem in problems:
        print(
            f"warning: call {index}: {problem.code} at item {problem.index}: {problem.detail}",
            file=sys.stderr,
        )


def command(
    events: Sequence[Any], args: argparse.Namespace, progress: Callable[[], None] | None = None
) -> str:
    """What ``convo context`` prints for ``events``; each validator problem is reported
    on stderr; ``progress`` is called as each request is built. ``ValueError`` for bad
    input (an ``--at`` past the end, a bad record)."""
    if args.at is not None:
        if args.at > len(events):
            raise ValueError(f"--at {args.at}: the log has only {len(events)} events")
        events = events[: args.at]
    if _economy_wanted(args):
        plain = [e for e in events if not is_record(e)]
        return _economy_command(definition_set_of(plain).replay(plain), args, progress)
    calls = requests(events, args.provider, options=options_from(args), progress=progress)
    shown = calls[:-1] if args.calls else calls[-1:]
    for call in shown:
        warn(call.index, call.problems)
        for note in call.notes:
            print(f"note: call {call.index}: {note}", file=sys.stderr)
    if args.calls:
        return "".join(request_bytes(c.request).decode() + "\n" for c in shown)
    return msgspec.json.format(request_bytes(shown[0].request), indent=2).decode() + "\n"


# -- the economy's options: --policy / --workbench / --stats --------------------------


def _add_economy_arguments(parser: argparse.ArgumentParser) -> None:
    """The economy's options of ``convo context``."""
    parser.add_argument(
        "--policy",
        choices=list(POLICIES),
        help="the context economy: none (as recorded), live (what a running agent "
        "sends: spill at entry), resume (each request as an agent resumed before that "
        "call sends it: expiry, denial pruning, interruption repair and retry debris too)",
    )
    parser.add_argument(
        "--workbench",
        metavar="DIR",
        help="the workbench: spill files are written to DIR/spill, and its index of "
        "DIR/scripts and DIR/artifacts leads each request as a system message",
    )
    parser.add_argument(
        "--stats",
        action="store_true",
        help="print the economy's figures (JSON) instead of requests",
    )


def _economy_wanted(args: argparse.Namespace) -> bool:
    """Whether the command line asks for the economy (any of its options)."""
    return args.policy is not None or args.workbench is not None or args.stats


def _economy_command(
    nodes: Iterable[Node], args: argparse.Namespace, progress: Callable[[], None] | None
) -> str:
    """What ``convo context`` prints under the economy's options: the request before
    every model call (``--calls``, JSON Lines) or after the log, or the figures
    (``--stats``). Each validator problem is reported on stderr."""
    target = gateway(args.provider)
    talk = conversation(nodes, compaction=not args.before_compaction)
    policy = args.policy or "none"
    bench = Workbench(args.workbench) if args.workbench is not None else None
    calls, seconds = timed(
        _told(
            economy_requests(talk, target, POLICIES[policy](), workbench=bench, model=args.model),
            progress,
        )
    )
    before = calls[:-1]  # the request before every model call; the last follows the log
    if args.stats:
        figures = measure(before)
        tenth = max(1, len(before) // 10)
        first, last = seconds[: len(before)][:tenth], seconds[: len(before)][-tenth:]
        baseline = (
            figures
            if policy == "none"
            else measure(
                list(economy_requests(talk, target, Economy.none(), model=args.model))[:-1]
            )
        )
        out = {
            "provider": target.name,
            "policy": policy,
            **figures.as_dict(),
            "chars_none": baseline.total,
            "reduction": round(1 - figures.total / baseline.total, 4) if baseline.total else 0.0,
            "ms_per_call_first_tenth": round(1000 * sum(first) / len(first), 3) if first else 0,
            "ms_per_call_last_tenth": round(1000 * sum(last) / len(last), 3) if last else 0,
            "sizes": list(figures.sizes),
        }
        return msgspec.json.encode(out).decode() + "\n"
    shown = before if args.calls else calls[-1:]
    for call in shown:
        warn(call.call, call.problems)
    if args.calls:
        return "".join(msgspec.json.encode(c.payload).decode() + "\n" for c in shown)
    return msgspec.json.format(msgspec.json.encode(shown[0].payload), indent=2).decode() + "\n"


def _told(
    calls: Iterator[CallRequest], progress: Callable[[], None] | None
) -> Iterator[CallRequest]:
    """``calls`` as they come, calling ``progress`` after each."""
    for call in calls:
        yield call
        if progress is not None:
            progress()
