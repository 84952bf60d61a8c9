"""Render the view of a log."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from itertools import islice
from pathlib import Path
from typing import Any

import msgspec

from definitions import ProtocolSet
from definitions._render import FOLD_CHARS, FOLD_LINES
from engine import Node

from .. import _branches
from .._progress import Progress
from ..protocols._unclaimed import unclaimed_note, unsupported_note
from ..render._branches import BranchPage, render_branches_html
from ..render._common import encode, render_json
from ..render._html import render_html
from ..render._text import text_pieces
from ._common import (
    Events,
    Exit,
    Failure,
    add_conversation,
    add_definitions,
    add_log,
    choose,
    chosen_events,
    head,
    non_negative,
    recording,
    warn,
    write,
)

HELP = "render the view of a log"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``replay``'s arguments to ``parser``."""
    add_log(parser)
    add_definitions(parser)
    parser.add_argument(
        "--format",
        "-f",
        choices=("text", "json", "nodes", "html"),
        default="text",
        help="json: a protocol recording's final objects (its accumulate()), else the nodes; "
        "nodes: the view's nodes as JSON",
    )
    parser.add_argument(
        "--at", type=non_negative, metavar="N", help="the view after the first N events"
    )
    parser.add_argument(
        "--keys",
        action="store_true",
        help="text: head each node with its #seq and key (as --format nodes names them)",
    )
    parser.add_argument(
        "--full",
        action="store_true",
        help=f"text: show long content whole (else each message text or tool output "
        f"is folded after {FOLD_LINES} lines or {FOLD_CHARS:,} characters)",
    )
    parser.add_argument("--output", "-o", metavar="FILE", help="write here instead of stdout")
    parser.add_argument(
        "--branches",
        action="store_true",
        help="list the leaves of a log with branches (id, depth, last line; * active)",
    )
    parser.add_argument(
        "--leaf",
        metavar="ID",
        help="render the path to this branch's tip (default: the active one)",
    )
    add_conversation(parser)
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="text colours (rich): auto = when stdout is a terminal",
    )


def run(args: argparse.Namespace) -> int:
    """Write the view: streamed, unless the log has branches (then read whole)."""
    if args.branches or args.leaf is not None or args.conversation is not None:
        return _branched(args)
    try:
        return _streamed(args)
    except _branches.Branched:  # a tree, not a line: read it whole
        if args.log == "-":
            raise Failure("-: a log with branch events is read twice; give it as a file") from None
        return _branched(args)


def _branched(args: argparse.Namespace) -> int:
    log = chosen_events(args.log, args.lenient, args.definitions, args.conversation)
    if log.note is not None:
        warn(log.note)
    events = log.events if args.at is None else log.events[: args.at]
    branched = _branches.BranchedLog(events, log.definitions)
    if args.branches:
        write(branched.listing(), args.output)
        return Exit.OK
    view = branched.view(args.leaf)
    notes = {key: _branches.note(version) for key, version in view.markers.items()}
    if args.format == "html":
        title = "Conversation" if args.log == "-" else Path(args.log).name
        pages = [BranchPage(v.leaf, v.nodes, v.markers) for v in branched.views()]
        write(
            render_branches_html(pages, log.definitions.definitions, active=view.leaf, title=title),
            args.output,
        )
        return Exit.OK
    write(_rendered(args, log.definitions, view.nodes, len(events), notes), args.output)
    return Exit.OK


def _streamed(args: argparse.Namespace) -> int:
    with recording(args.log) as source:
        chosen, note, first = choose(source, args.log, args.definitions)
        # A recording whose calls are all to APIs no set reads: refused, named. Decided
        # on the first piece when it is the whole recording (a bigger one folds).
        said = unsupported_note(first[0]) if first and source.whole else None
        if said is not None:
            raise Failure(f"{args.log}: {said}")
        with Progress("folding", source.size, unit="bytes") as bar:
            events = Events(source, args.lenient, chosen.vocabulary, bar, first)
            stream: Iterable[Any] = events if args.at is None else islice(events, args.at)
            engine = chosen.folded(_branches.guard(stream))  # read as they are folded
            nodes, unclaimed = engine.nodes(), engine.statistics().events_unclaimed
        if first is None and unclaimed:  # the first events, to name the set to try
            first = head(source)
    if note is not None:  # once the log was read: a bad line is the error to see first
        warn(note)
    if args.at is not None and events.count < args.at:
        raise Failure(f"--at {args.at}: the log has only {events.count} events")
    count = events.count if args.at is None else min(events.count, args.at)
    unclaimed_warning = unclaimed_note(unclaimed, count, first[0] if first else [], chosen.label)
    if unclaimed_warning is not None:
        warn(unclaimed_warning)
    write(_rendered(args, chosen, nodes, count), args.output)
    return Exit.OK


def _rendered(
    args: argparse.Namespace,
    chosen: ProtocolSet,
    nodes: tuple[Node, ...],
    count: int,
    notes: dict[str, str] | None = None,
) -> str | Iterable[str]:
    """The view as ``--format`` asks (``notes``: a line under a node, by key)."""
    definitions = chosen.definitions
    text: str | Iterable[str]
    if args.format == "json" and chosen.rebuilds:
        # The protocol's own final objects, as its accumulate() returns them: the rebuild of
        # the nodes just folded (the same definitions, pre-pass and routing).
        rebuilt = chosen.rebuild(nodes)
        text = msgspec.json.format(encode(rebuilt), indent=2).decode() + "\n"
    elif args.format in ("json", "nodes"):
        text = render_json(nodes, definitions, indent=2).decode() + "\n"
    elif args.format == "html":
        title = "Conversation" if args.log == "-" else Path(args.log).name
        text = render_html(nodes, definitions, title=title)
    else:
        to_terminal = args.output in (None, "-")
        color = {"always": True, "never": False}.get(args.color, None if to_terminal else False)
        text = text_pieces(
            nodes, definitions, color=color, keys=args.keys, notes=notes, full=args.full
        )
        if not nodes:
            # Say so rather than print nothing: an empty view is a finding, not a failure.
            text = f"(no nodes after {count} events)\n"
    return text
