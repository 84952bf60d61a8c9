"""Append a compaction.mark: the next request starts at SUMMARY, then what followed
POSITION. The log keeps everything; a replay never asks a model."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import msgspec

from ..context._compaction import compaction_event
from ..logs._jsonl import LogWriter, write_log
from ._common import Exit, Failure, add_log, load, non_negative

HELP = "append our own compaction: a summary that replaces the log up to a position"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``compact``'s arguments to ``parser``."""
    add_log(parser, help="the log of the built-in kinds (or a session, with --output)")
    parser.add_argument(
        "--summary", required=True, metavar="FILE", help="the summary's text (UTF-8)"
    )
    parser.add_argument(
        "--through",
        type=non_negative,
        metavar="POSITION",
        help="the last event it replaces (default: every event so far)",
    )
    parser.add_argument("--id", help="the compaction's id (default: compaction-N)")
    parser.add_argument(
        "--output", metavar="OUT", help="write the log and the compaction to OUT instead"
    )


def run(args: argparse.Namespace) -> int:
    """Append the mark to the log (or write the log and the mark to ``--output``)."""
    loaded = load(args.log, args.lenient)
    try:
        summary = Path(args.summary).read_text(encoding="utf-8")
    except OSError as exc:
        raise Failure(f"--summary {args.summary}: {exc.strerror or exc}") from exc
    try:
        mark = compaction_event(loaded.events, summary, through=args.through, id=args.id)
    except (ValueError, msgspec.ValidationError) as exc:
        raise Failure(f"{args.log}: {exc}") from exc
    if args.output is not None:
        write_log(args.output, [*loaded.events, mark])
    elif loaded.format == "log" and args.log != "-":
        writer = LogWriter(args.log)
        try:
            writer.append(mark)
        finally:
            writer.close()
    elif loaded.format == "jsonl" and args.log != "-":
        with open(args.log, "rb+") as file:  # plain events: one more line
            file.seek(0, os.SEEK_END)
            if file.tell() and (file.seek(-1, os.SEEK_END), file.read(1))[1] != b"\n":
                file.write(b"\n")
            file.write(msgspec.json.encode(mark) + b"\n")
    else:
        raise Failure(
            f"{args.log}: a {loaded.format} file is not a log to append to: "
            "give --output OUT to write the log with the compaction appended"
        )
    print(f"{args.output or args.log}: compaction {mark['id']} appended", file=sys.stderr)
    return Exit.OK
