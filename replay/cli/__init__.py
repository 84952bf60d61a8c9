"""The ``convo`` command line (also ``python -m replay``): one module per command.

Each command is a module here with a ``HELP`` line (its entry in ``convo --help``), a
docstring (its description under ``convo COMMAND --help``), ``add_arguments(parser)``
and ``run(args) -> int``; ``COMMANDS`` lists them in the order ``--help`` shows, and
``main`` parses, runs the command and turns bad input into one line on stderr.
``_common`` holds the steps several commands share (reading a log, choosing the
definition set, writing output, ``Failure``). ``serve`` lives with the server
(``replay.serve._command``, an optional extra): ``_serve`` imports it lazily.

Without ``--definitions`` a log is replayed with the definition set of the protocol
its events speak (``replay.protocols._detect``), through that protocol's pre-pass.
``replay``, ``check`` and ``bench`` decode the events with the chosen set's vocabulary
(typed Structs, when the set declares one), as its definitions fold them fastest.

Every status is a member of ``Exit`` (``OK``, ``DIVERGED`` when ``check`` finds a
divergence, ``BAD_INPUT`` for bad input or usage, with a one-line message on stderr
naming the file, line and position where known, never a traceback).

May import: every room of ``replay`` (this is the top floor), ``definitions``, ``engine``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Protocol

from engine import ConversationError

from .._errors import DefinitionSpecError, LogError, StoreError
from ..stores._postgres import describe
from . import (
    _bench,
    _check,
    _compact,
    _context,
    _playback_server,
    _record,
    _replay,
    _serve,
    _store,
    _worker,
)
from ._common import Exit, Failure

__all__ = ["Exit", "build_parser", "main"]


class Command(Protocol):
    """What a command module holds: its ``HELP`` line, its docstring (the description),
    ``add_arguments`` and ``run``, which returns the exit status (an ``Exit``, or the
    status of a program it ran)."""

    HELP: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


COMMANDS: dict[str, Command] = {
    "replay": _replay,
    "check": _check,
    "compact": _compact,
    "context": _context,
    "bench": _bench,
    "store": _store,
    "worker": _worker,
    "record": _record,
    "playback-server": _playback_server,
    "serve": _serve,
}
"""Every ``convo`` command, by name: a module with ``HELP``, a docstring,
``add_arguments(parser)`` and ``run(args) -> int``. A new command is a module and a
line here (docs/architecture.md, "Adding a command")."""


def _exit_statuses() -> str:
    # Those a caller tests; above 128 a status is the shell's signal convention.
    said = ", ".join(f"{int(status)} {status.meaning}" for status in Exit if status < 128)
    return f"Exit status: {said}."


def build_parser() -> argparse.ArgumentParser:
    """The ``convo`` argument parser (the serve subcommand's own options included)."""
    parser = argparse.ArgumentParser(
        prog="convo",
        description="Replay, check, measure and store conversation event logs.",
        epilog=_exit_statuses(),
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, module in COMMANDS.items():
        command = commands.add_parser(name, help=module.HELP, description=module.__doc__)
        module.add_arguments(command)
    return parser


# -- entry point -------------------------------------------------------------------------


def _one_line(text: str) -> str:
    return " ".join(text.split("\n"))


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``convo`` with ``argv`` (default: the process's arguments); returns the exit
    status instead of exiting, so it can be called in-process."""
    parser = build_parser()
    try:
        args, unknown = parser.parse_known_args(argv)
        # A command whose options are unknown (its extra is missing) takes any: its
        # run says what to install.
        if unknown and not getattr(args, "options_unknown", False):
            parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    except SystemExit as exc:  # --help, or a usage error argparse already printed
        return Exit.BAD_INPUT if exc.code else Exit.OK
    where = getattr(args, "log", None) or getattr(args, "store", None)
    try:
        status = COMMANDS[args.command].run(args)
    except LogError as exc:
        message = str(exc)
        if not getattr(args, "lenient", True):
            message += " (--lenient skips each bad line, reporting it, and reads on)"
    except (Failure, DefinitionSpecError) as exc:
        message = str(exc)
    except StoreError as exc:
        message = str(exc)
        name = describe(args.store)  # a URL's password stays out of the message
        if not message.startswith(f"{name}:"):
            message = f"{name}: {message}"
    except ConversationError as exc:  # a definition failed on this log, or was rejected
        message = f"{where}: {exc}" if where else str(exc)
    except BrokenPipeError:
        # The reader went away (`convo replay LOG | head`): as other tools do, stop
        # quietly; stdout goes to devnull so the interpreter's final flush is silent.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return Exit.BROKEN_PIPE
    except OSError as exc:
        message = f"{exc.filename}: {exc.strerror}" if exc.filename else str(exc)
    except KeyboardInterrupt:
        return Exit.INTERRUPTED
    else:
        return status
    print(f"convo: error: {_one_line(message)}", file=sys.stderr)
    return Exit.BAD_INPUT
