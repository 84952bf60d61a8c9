"""Run COMMAND with every anthropic, openai, google-genai and boto3 bedrock-runtime client
it creates recorded (no change to its code). Its output and exit status are its own."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from ..stores._postgres import describe
from ._common import STORE_HELP, Failure

HELP = "run a program, recording every model call its SDK clients make"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``record``'s arguments to ``parser``."""
    parser.add_argument("-o", "--output", metavar="LOG", help="the JSON Lines log to append to")
    parser.add_argument("--store", metavar="STORE", help=f"record into a store: {STORE_HELP}")
    parser.add_argument("--conversation", metavar="ID", help="the store's conversation")
    parser.add_argument("program", nargs=argparse.REMAINDER, metavar="-- COMMAND...")


def run(args: argparse.Namespace) -> int:
    """Run the program recorded; its exit status is returned as it is."""
    import subprocess

    from ..recording import _auto

    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        raise Failure("convo record: no COMMAND given (convo record -o LOG -- COMMAND...)")
    if (args.output is None) == (args.store is None):
        raise Failure("convo record: give -o LOG or --store STORE (with --conversation)")
    if args.store is not None and args.conversation is None:
        raise Failure("convo record: --store needs --conversation")
    log = None if args.output is None else os.path.abspath(args.output)
    env = _auto.environment(
        dict(os.environ), log=log, store=args.store, conversation=args.conversation
    )
    before = _auto.calls_in(log, args.store, args.conversation)
    with tempfile.TemporaryDirectory(prefix="convo-record-") as directory:
        report = os.path.join(directory, "report")
        with open(report, "wb"):
            pass
        env[_auto.ENV_REPORT] = report
        try:
            status = _auto.run(program, env, subprocess.call)
        except FileNotFoundError as exc:
            raise Failure(f"convo record: cannot run {program[0]!r}: {exc.strerror}") from exc
        if _auto.calls_in(log, args.store, args.conversation) <= before:
            with open(report, encoding="utf-8", errors="replace") as f:
                why = _auto.nothing_recorded(f.read())
            print(
                f"convo record: 0 calls recorded into {args.output or describe(args.store)}: {why}",
                file=sys.stderr,
            )
    return status
