"""Move logs in and out of an event store: a SQLite file or a postgresql:// URL."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable
from pathlib import Path

import msgspec

from .._progress import Progress
from ..logs._formats import Recording
from ..logs._jsonl import read_source
from ..logs.sessions import read_transcript
from ..stores._open import open_store
from ..stores._postgres import PostgresStore
from ..stores._sqlite import SQLiteStore
from ._common import STORE_HELP, Events, Exit, Failure, add_log, non_negative
from ._common import recording as open_recording

HELP = "move logs in and out of an event store (SQLite or PostgreSQL)"

_EXPORTS = ("chatgpt", "claude-ai")  # files of many conversations: each is imported
_EXPORT_PAGE = 10_000  # events read and written at a time by store export
_entry_encoder = msgspec.json.Encoder()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``store``'s actions, each with its arguments, to ``parser``."""
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    imp = actions.add_parser("import", help="append a recording as a new conversation")
    imp.add_argument("store", metavar="STORE", help=STORE_HELP)
    add_log(imp)
    imp.add_argument(
        "--conversation",
        "-c",
        metavar="ID",
        help="its id (default: the log's file name); of a chat export, the one conversation "
        "to import (default: every one, each under its own id)",
    )
    imp.add_argument(
        "--append", action="store_true", help="append to the conversation if it exists"
    )
    imp.add_argument(
        "--fork-of",
        metavar="SOURCE",
        help="the log continues conversation SOURCE (a forked session): store the prefix "
        "they share as a fork of it, none of it copied",
    )
    exp = actions.add_parser("export", help="write a conversation as a JSON Lines log")
    exp.add_argument("store", metavar="STORE")
    exp.add_argument("conversation", metavar="ID")
    exp.add_argument("--output", "-o", metavar="LOG", help="write here instead of stdout")
    ls = actions.add_parser("ls", help="list conversations and their lengths")
    ls.add_argument("store", metavar="STORE")
    fork = actions.add_parser(
        "fork", help="start a conversation from another's first events (none copied)"
    )
    fork.add_argument("store", metavar="STORE", help=STORE_HELP)
    fork.add_argument("source", metavar="SOURCE", help="the conversation to fork")
    fork.add_argument("conversation", metavar="ID", help="the new conversation")
    fork.add_argument(
        "--at", type=non_negative, metavar="P", help="its first P events (default: all)"
    )
    app = actions.add_parser(
        "append",
        help="append events read from stdin (JSON Lines); prints the new length",
    )
    app.add_argument("store", metavar="STORE", help=STORE_HELP)
    app.add_argument("conversation", metavar="ID")
    app.add_argument(
        "--expected-position",
        type=non_negative,
        metavar="N",
        help="append only if the conversation has exactly N events",
    )
    app.add_argument("--lenient", action="store_true", help="skip bad lines")


def run(args: argparse.Namespace) -> int:
    """Run the action asked for."""
    return _ACTIONS[args.action](args)


# -- import ------------------------------------------------------------------------------


def _import(args: argparse.Namespace) -> int:
    conversation = args.conversation or Path(args.log).stem
    with open_recording(args.log) as recording, open_store(args.store) as store:
        if recording.format in _EXPORTS:
            return _import_export(args, store)
        if args.fork_of is None and (source := _forked_from(recording, store)) is not None:
            args.fork_of = source
        if args.fork_of is not None:
            return _import_fork(args, recording, store, conversation)
        expected = None if args.append else 0
        if expected is not None and (existing := store.length(conversation)):
            raise Failure(
                f"{args.store}: conversation {conversation!r} already has {existing} events; "
                "nothing was imported (--append adds to it, --conversation ID names another)"
            )
        # Stored as decoded, in one transaction: a bad line (strict) imports nothing.
        with Progress("importing", recording.size, unit="bytes") as bar:
            events = Events(recording, args.lenient, progress=bar)
            length = store.append(conversation, events, expected_position=expected)
    print(f"imported {events.count} events into {conversation!r} ({length} in all)")
    return Exit.OK


def _import_export(args: argparse.Namespace, store: SQLiteStore | PostgresStore) -> int:
    """Every conversation of a chat export (``--conversation``: that one), each under
    its own id, each in one transaction; one that exists is refused unless --append."""
    data, path = read_source(args.log)
    transcript = read_transcript(data, path=path, lenient=args.lenient)
    assert transcript is not None
    threads = [t for t in transcript.threads if args.conversation in (None, t.name)]
    if not threads:
        names = ", ".join(t.name for t in transcript.threads)
        raise Failure(f"{args.log}: no conversation {args.conversation!r} (conversations: {names})")
    existing = store.conversations()
    taken = [t.name for t in threads if existing.get(t.name)]
    if taken and not args.append:
        raise Failure(
            f"{args.store}: conversations {', '.join(map(repr, taken))} already exist; "
            "nothing was imported (--append adds to them)"
        )
    for thread in threads:
        store.append(thread.name, thread.events)
    count = sum(len(t.events) for t in threads)
    print(f"imported {len(threads)} conversations, {count} events")
    return Exit.OK


def _forked_from(recording: Recording, store: SQLiteStore | PostgresStore) -> str | None:
    """The stored conversation a Codex rollout was forked from (its ``session_meta``
    names the source session in ``forked_from_id``; the source is the conversation
    whose id ends with that session id, as a rollout's file name does), or None."""
    if recording.format != "codex":
        return None
    try:
        first = msgspec.json.decode(recording.head.split(b"\n", 1)[0])
    except msgspec.DecodeError:
        return None
    payload = first.get("payload") if isinstance(first, dict) else None
    source = payload.get("forked_from_id") if isinstance(payload, dict) else None
    if not isinstance(source, str) or not source:
        return None
    return next((c for c in store.conversations() if c.endswith(source)), None)


def _import_fork(
    args: argparse.Namespace,
    recording: Recording,
    store: SQLiteStore | PostgresStore,
    conversation: str,
) -> int:
    """Import a log that continues another conversation (a forked session): a fork of
    the prefix it shares with ``--fork-of`` (none of it copied), then its own events."""
    events = list(Events(recording, args.lenient))
    source = store.read(args.fork_of)
    if not source:
        raise Failure(f"{args.store}: no conversation {args.fork_of!r} to fork")
    shared = next(
        (n for n, (a, b) in enumerate(zip(source, events, strict=False)) if a != b),
        min(len(source), len(events)),
    )
    store.fork(args.fork_of, conversation, shared)
    length = store.append(conversation, events[shared:], expected_position=shared)
    print(
        f"imported {len(events)} events into {conversation!r} ({length} in all): "
        f"the first {shared} are {args.fork_of!r}'s, not copied"
    )
    return Exit.OK


# -- the other actions -------------------------------------------------------------------


def _existing_store(path: str) -> SQLiteStore | PostgresStore:
    # Read-only: a reading command changes no file, and refuses one that is not a store.
    return open_store(path, mode="ro")


def _export(args: argparse.Namespace) -> int:
    with _existing_store(args.store) as store:
        length = store.conversations().get(args.conversation)
        if length is None:
            raise Failure(f"{args.store}: no conversation {args.conversation!r}")
        to_stdout = args.output is None or args.output == "-"
        if to_stdout:
            sys.stdout.flush()
        with contextlib.ExitStack() as files:
            out = sys.stdout.buffer if to_stdout else files.enter_context(open(args.output, "wb"))
            # Written as read, a page at a time. Positions below the length read above
            # never change (the store is append-only): the pages are one snapshot.
            for start in range(0, length, _EXPORT_PAGE):
                page = store.read_entries(
                    args.conversation, start, min(length, start + _EXPORT_PAGE)
                )
                out.write(_entry_encoder.encode_lines(page))
            out.flush()
    return Exit.OK


def _ls(args: argparse.Namespace) -> int:
    with _existing_store(args.store) as store:
        conversations = store.conversations()
    for name, length in conversations.items():
        print(f"{name}\t{length}")
    return Exit.OK


def _fork(args: argparse.Namespace) -> int:
    with open_store(args.store, mode="rw") as store:
        prefix = store.length(args.source) if args.at is None else args.at
        store.fork(args.source, args.conversation, prefix)
    print(f"forked {args.conversation!r} from the first {prefix} events of {args.source!r}")
    return Exit.OK


def _append(args: argparse.Namespace) -> int:
    with open_recording("-") as recording, open_store(args.store) as store:
        length = store.append(
            args.conversation,
            Events(recording, args.lenient),
            expected_position=args.expected_position,
        )
    print(length)
    return Exit.OK


_ACTIONS: dict[str, Callable[[argparse.Namespace], int]] = {
    "import": _import,
    "export": _export,
    "ls": _ls,
    "fork": _fork,
    "append": _append,
}
