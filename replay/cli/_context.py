"""Print the provider request that would be sent after the log."""

from __future__ import annotations

import argparse

from .._progress import Progress
from ..context import _command
from ..protocols._unclaimed import unsupported_note
from ._common import Exit, Failure, add_conversation, add_log, conversation, load, write

HELP = "print the model request the log leads to (JSON)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``context``'s arguments to ``parser`` (the projection's own, then ours)."""
    add_log(parser)
    _command.add_arguments(parser)
    parser.add_argument(
        "--leaf", metavar="ID", help="the branch whose path to continue (default: the active one)"
    )
    add_conversation(parser)


def run(args: argparse.Namespace) -> int:
    """Read the whole log and print what ``replay.context._command`` makes of it."""
    try:
        if args.conversation is not None:
            events = conversation(args.log, args.lenient, args.conversation)
        else:
            events = load(args.log, args.lenient).events
        said = unsupported_note(events)
        if said is not None:
            raise Failure(f"{args.log}: {said}")
        with Progress("building requests", None, unit="requests") as bar:
            text = _command.command(events, args, bar.advance)
    except ValueError as exc:
        raise Failure(f"{args.log}: {exc}") from exc
    write(text, None)
    return Exit.OK
