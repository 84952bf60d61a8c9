"""``convo context``: the command line of the model-context projection and its economy.

``command`` reads in one pass, top to bottom:

1. options: the command line as ``ContextOptions``, the events of one branch's path
   (``--leaf``, else the active one; ``definitions.branch``) cut at ``--at``, and
   what every request carries beside the conversation (``carried``: the recorded
   model, tools and settings, the flags' overrides; what cannot cross to the
   provider is warned of);
2. requests: the request before every model call and the one after the log, plain
   (``_requests.requests``) or under an economy policy (``_economy.requests``);
3. economy: with ``--stats``, the figures of those requests instead of them;
4. output: each validator problem on stderr, then the last request (JSON) or every
   one before a call (``--calls``, JSON Lines). A request that could not be sent (no
   conversation, no model) is a ``ValueError`` instead.

May import: ``_requests``, ``_economy``, ``_siblings``, ``_workbench``, ``definitions``,
``engine``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import attrs
import msgspec

from definitions.branch import Branches, is_branch_event, path_events
from definitions.gateways import GATEWAYS, Carried, Problem, gateway
from engine import Economy

from ._economy import POLICIES, CallRequest, Conversation, conversation, measure, timed
from ._economy import requests as economy_requests
from ._requests import (
    ContextOptions,
    carried,
    definition_set_of,
    is_record,
    request_bytes,
    requests,
    require_sendable,
)
from ._siblings import SiblingPrefix, sibling_prefixes
from ._workbench import Workbench

__all__ = ["add_arguments", "command", "non_negative", "options_from"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``convo context`` (after LOG)."""
    parser.add_argument(
        "--provider", "-p", choices=sorted(GATEWAYS), required=True, help="whose request"
    )
    parser.add_argument(
        "--calls",
        action="store_true",
        help="JSON Lines: the request before every model turn of the log",
    )
    parser.add_argument(
        "--at", type=non_negative, metavar="N", help="project only the first N events of the log"
    )
    parser.add_argument(
        "--model",
        default="",
        help="the model named in each request (default: the one the log's last request "
        "named, when it was to the same provider)",
    )
    parser.add_argument(
        "--max-tokens",
        type=non_negative,
        metavar="N",
        help="the output limit of each request (default: the recorded one; 4096 for "
        "anthropic when none is known)",
    )
    parser.add_argument(
        "--before-compaction",
        action="store_true",
        help="the counterfactual: each request as if nothing had been compacted (the "
        "whole history, no summary), to compare with the request that starts at the "
        "latest compaction",
    )
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


def non_negative(text: str) -> int:
    """An option's count: a whole number, 0 or more (else argparse's usage error).
    Every command's counts use it (``replay.cli`` imports it from here: this room's
    options need it and may not import the command line above it)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text}")
    return value


def options_from(args: argparse.Namespace) -> ContextOptions:
    """The ``ContextOptions`` the command line asks for."""
    return ContextOptions(
        model=args.model, max_tokens=args.max_tokens, compaction=not args.before_compaction
    )


def warn(index: int, problems: Iterable[Problem]) -> None:
    """Report call ``index``'s validator problems on stderr."""
    for problem in problems:
        print(
            f"warning: call {index}: {problem.code} at item {problem.index}: {problem.detail}",
            file=sys.stderr,
        )


@attrs.frozen
class _Shown:
    """One request as the command prints it: call ``index``, the payload, its problems
    and what it could not carry as recorded (``notes``)."""

    index: int
    payload: dict[str, Any]
    problems: tuple[Problem, ...]
    notes: tuple[str, ...] = ()


def command(
    events: Sequence[Any], args: argparse.Namespace, progress: Callable[[], None] | None = None
) -> str:
    """What ``convo context`` prints for ``events`` (see the module docstring); what
    could not be carried and each validator problem are reported on stderr;
    ``progress`` is called as each request is built. ``ValueError`` for bad input (an
    ``--at`` past the end, a bad record) and for a request that could not be sent."""
    # 1. options
    siblings: list[SiblingPrefix] = []
    leaf = getattr(args, "leaf", None)
    if leaf is not None or any(map(is_branch_event, events)):
        # One branch's path is its log (definitions.branch); --stats adds what each
        # version's request shares with its sibling's.
        plain = [e for e in events if not is_record(e) and not is_branch_event(e)]
        chosen = definition_set_of(plain)
        branches = Branches(events, chosen.definitions, event_type=chosen.event_type)
        if args.stats:
            siblings = sibling_prefixes(events, chosen, gateway(args.provider))
        events = path_events(events, branches.tree, leaf)
    if args.at is not None:
        if args.at > len(events):
            raise ValueError(f"--at {args.at}: the log has only {len(events)} events")
        events = events[: args.at]
    options = options_from(args)
    head = carried(events, args.provider, options)
    for note in head.notes:
        print(f"warning: {note}", file=sys.stderr)
    # 2. requests
    economized: list[CallRequest] = []
    seconds: list[float] = []
    talk = None
    if _economy_wanted(args):
        plain = [e for e in events if not is_record(e)]
        talk = conversation(
            definition_set_of(plain).replay(plain), compaction=not args.before_compaction
        )
        economy = POLICIES[args.policy or "none"]()
        bench = Workbench(args.workbench) if args.workbench is not None else None
        made = economy_requests(talk, gateway(args.provider), economy, workbench=bench, head=head)
        economized, seconds = timed(_told(made, progress))
        calls = [_Shown(c.call, c.payload, c.problems) for c in economized]
    else:
        projected = requests(events, args.provider, options=options, progress=progress, head=head)
        calls = [_Shown(c.index, c.request, c.problems, c.notes) for c in projected]
    # 3. economy
    if talk is not None and args.stats:
        return _figures(talk, args, head, economized, seconds, siblings)
    # 4. output
    require_sendable(calls[-1].payload, head, len(events))
    shown = calls[:-1] if args.calls else calls[-1:]
    for call in shown:
        warn(call.index, call.problems)
        for note in call.notes:
            print(f"note: call {call.index}: {note}", file=sys.stderr)
    if args.calls:
        return "".join(request_bytes(c.payload).decode() + "\n" for c in shown)
    return msgspec.json.format(request_bytes(shown[0].payload), indent=2).decode() + "\n"


def _economy_wanted(args: argparse.Namespace) -> bool:
    """Whether the command line asks for the economy (any of its options)."""
    return args.policy is not None or args.workbench is not None or args.stats


def _figures(
    talk: Conversation,
    args: argparse.Namespace,
    head: Carried,
    calls: list[CallRequest],
    seconds: list[float],
    siblings: Sequence[SiblingPrefix] = (),
) -> str:
    """``--stats``: the figures of the requests before every model call, beside those
    of the same requests with no policy, and at each branch point what a version's
    request shares with its sibling's."""
    before = calls[:-1]  # the last request follows the log: no call answered it
    figures = measure(before)
    if args.policy in (None, "none"):
        baseline = figures
    else:
        unchanged = economy_requests(talk, gateway(args.provider), Economy.none(), head=head)
        baseline = measure(list(unchanged)[:-1])
    tenth = max(1, len(before) // 10)
    first, last = seconds[: len(before)][:tenth], seconds[: len(before)][-tenth:]
    out = {
        "provider": args.provider,
        "policy": args.policy or "none",
        **figures.as_dict(),
        "chars_none": baseline.total,
        "reduction": round(1 - figures.total / baseline.total, 4) if baseline.total else 0.0,
        "ms_per_call_first_tenth": round(1000 * sum(first) / len(first), 3) if first else 0,
        "ms_per_call_last_tenth": round(1000 * sum(last) / len(last), 3) if last else 0,
        "sizes": list(figures.sizes),
    }
    if siblings:
        out["siblings"] = [sibling.as_dict() for sibling in siblings]
    return msgspec.json.encode(out).decode() + "\n"


def _told(
    calls: Iterator[CallRequest], progress: Callable[[], None] | None
) -> Iterator[CallRequest]:
    """``calls`` as they come, calling ``progress`` after each."""
    for call in calls:
        yield call
        if progress is not None:
            progress()
