"""The ``convo`` command line (also ``python -m replay``).

Subcommands: ``replay`` (render the view of a log), ``check`` (the determinism
checker), ``bench`` (decode and fold speed), ``store`` (move logs in and out of an
event store, SQLite or PostgreSQL), ``context`` (the next model request,
``replay.context._requests``), ``worker`` (projection workers publishing views from
PostgreSQL), ``record`` (run a program, recording its SDK clients' model calls,
``replay.recording``) and ``serve`` (the live server, an optional extra).

Without ``--definitions`` a log is replayed with the definition set of the protocol
its events speak (``replay.protocols._detect``), through that protocol's pre-pass. ``replay``,
``check`` and ``bench`` decode the events with the chosen set's vocabulary (typed
Structs, when the set declares one), as its definitions fold them fastest.

Exit status: 0 on success; 1 when ``check`` finds a divergence; 2 for bad input or
usage, with a one-line message on stderr (file, line, position where known) and
never a traceback for bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec

from engine import ConversationError

from .._errors import DefinitionSpecError, LogError, StoreError
from .._progress import Progress
from ..context import _command as _context
from ..context._compaction import compaction_event
from ..logs._formats import Recording
from ..logs._jsonl import LogWriter, read_source, write_log
from ..logs.sessions import read_transcript
from ..protocols._unclaimed import unsupported_note
from ..stores import _worker
from ..stores._open import open_store
from ..stores._postgres import PostgresStore, describe
from ..stores._sqlite import SQLiteStore
from . import _bench, _check, _replay
from ._common import (
    STORE_HELP,
    Events,
    Failure,
    add_conversation,
    add_log,
    conversation,
    load,
    non_negative,
    write,
)
from ._common import (
    recording as read,
)

__all__ = ["main"]

SERVE_HINT = "install the server extra: pip install -e '.[serve]'"


# -- context -----------------------------------------------------------------------------


def _cmd_context(args: argparse.Namespace) -> int:
    try:
        if args.conversation is not None:
            events = conversation(args.log, args.lenient, args.conversation)
        else:
            events = load(args.log, args.lenient).events
        said = unsupported_note(events)
        if said is not None:
            raise Failure(f"{args.log}: {said}")
        with Progress("building requests", None, unit="requests") as bar:
            text = _context.command(events, args, bar.advance)
    except ValueError as exc:
        raise Failure(f"{args.log}: {exc}") from exc
    write(text, None)
    return 0


# -- compact -----------------------------------------------------------------------------


def _cmd_compact(args: argparse.Namespace) -> int:
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
    return 0


# -- store -------------------------------------------------------------------------------


def _existing_store(path: str) -> SQLiteStore | PostgresStore:
    # Read-only: a reading command changes no file, and refuses one that is not a store.
    return open_store(path, mode="ro")


_EXPORTS = ("chatgpt", "claude-ai")  # files of many conversations: each is imported


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
    return 0


def _cmd_store_import(args: argparse.Namespace) -> int:
    conversation = args.conversation or Path(args.log).stem
    with read(args.log) as recording, open_store(args.store) as store:
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
    return 0


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
    return 0


_entry_encoder = msgspec.json.Encoder()


_EXPORT_PAGE = 10_000  # events read and written at a time by store export


def _cmd_store_export(args: argparse.Namespace) -> int:
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
    return 0


def _cmd_store_ls(args: argparse.Namespace) -> int:
    with _existing_store(args.store) as store:
        conversations = store.conversations()
    for name, length in conversations.items():
        print(f"{name}\t{length}")
    return 0


def _cmd_store_fork(args: argparse.Namespace) -> int:
    with open_store(args.store, mode="rw") as store:
        prefix = store.length(args.source) if args.at is None else args.at
        store.fork(args.source, args.conversation, prefix)
    print(f"forked {args.conversation!r} from the first {prefix} events of {args.source!r}")
    return 0


def _cmd_store_append(args: argparse.Namespace) -> int:
    with read("-") as recording, open_store(args.store) as store:
        length = store.append(
            args.conversation,
            Events(recording, args.lenient),
            expected_position=args.expected_position,
        )
    print(length)
    return 0


# -- serve -------------------------------------------------------------------------------


def _serve_module() -> ModuleType | None:
    # Only the argparse half of the server is imported here: it must not import starlette.
    try:
        return importlib.import_module("replay.serve._command")
    except ImportError:
        return None


def _cmd_serve(args: argparse.Namespace) -> int:
    module = _serve_module()
    if module is None:
        print(SERVE_HINT, file=sys.stderr)
        return 2
    try:
        status: int = module.run(args)
    except ImportError as exc:
        if isinstance(exc, ModuleNotFoundError) and exc.name and exc.name.startswith("replay"):
            raise
        print(SERVE_HINT, file=sys.stderr)
        return 2
    return status


# -- the parser ------------------------------------------------------------------------


def _register(commands: Any, name: str, module: Any) -> None:
    parser = commands.add_parser(name, help=module.HELP, description=module.__doc__)
    module.add_arguments(parser)
    parser.set_defaults(handler=module.run)


def build_parser() -> argparse.ArgumentParser:
    """The ``convo`` argument parser (the serve subcommand's own options included)."""
    parser = argparse.ArgumentParser(
        prog="convo",
        description="Replay, check, measure and store conversation event logs.",
        epilog="Exit status: 0 ok, 1 check found a divergence, 2 bad input or usage.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    _register(commands, "replay", _replay)

    _register(commands, "check", _check)

    compact = commands.add_parser(
        "compact",
        help="append our own compaction: a summary that replaces the log up to a position",
        description="Append a compaction.mark: the next request starts at SUMMARY, then "
        "what followed POSITION. The log keeps everything; a replay never asks a model.",
    )
    add_log(compact, help="the log of the built-in kinds (or a session, with --output)")
    compact.add_argument(
        "--summary", required=True, metavar="FILE", help="the summary's text (UTF-8)"
    )
    compact.add_argument(
        "--through",
        type=non_negative,
        metavar="POSITION",
        help="the last event it replaces (default: every event so far)",
    )
    compact.add_argument("--id", help="the compaction's id (default: compaction-N)")
    compact.add_argument(
        "--output", metavar="OUT", help="write the log and the compaction to OUT instead"
    )
    compact.set_defaults(handler=_cmd_compact)

    context = commands.add_parser(
        "context",
        help="print the model request the log leads to (JSON)",
        description="Print the provider request that would be sent after the log.",
    )
    add_log(context)
    _context.add_arguments(context)
    context.add_argument(
        "--leaf", metavar="ID", help="the branch whose path to continue (default: the active one)"
    )
    add_conversation(context)
    context.set_defaults(handler=_cmd_context)

    _register(commands, "bench", _bench)

    store = commands.add_parser(
        "store",
        help="move logs in and out of an event store (SQLite or PostgreSQL)",
        description="Move logs in and out of an event store: a SQLite file or a postgresql:// URL.",
    )
    actions = store.add_subparsers(dest="action", metavar="ACTION", required=True)
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
    imp.set_defaults(handler=_cmd_store_import)
    exp = actions.add_parser("export", help="write a conversation as a JSON Lines log")
    exp.add_argument("store", metavar="STORE")
    exp.add_argument("conversation", metavar="ID")
    exp.add_argument("--output", "-o", metavar="LOG", help="write here instead of stdout")
    exp.set_defaults(handler=_cmd_store_export)
    ls = actions.add_parser("ls", help="list conversations and their lengths")
    ls.add_argument("store", metavar="STORE")
    ls.set_defaults(handler=_cmd_store_ls)
    fork = actions.add_parser(
        "fork", help="start a conversation from another's first events (none copied)"
    )
    fork.add_argument("store", metavar="STORE", help=STORE_HELP)
    fork.add_argument("source", metavar="SOURCE", help="the conversation to fork")
    fork.add_argument("conversation", metavar="ID", help="the new conversation")
    fork.add_argument(
        "--at", type=non_negative, metavar="P", help="its first P events (default: all)"
    )
    fork.set_defaults(handler=_cmd_store_fork)
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
    app.set_defaults(handler=_cmd_store_append)

    worker = commands.add_parser(
        "worker",
        help="keep published views of a share of a PostgreSQL store's conversations",
        description="A projection worker: owns partitions of the conversations by lease "
        "and publishes each conversation's view to the convo_views table.",
    )
    _worker.add_arguments(worker)
    worker.set_defaults(handler=_worker.run)

    record = commands.add_parser(
        "record",
        help="run a program, recording every model call its SDK clients make",
        description="Run COMMAND with every anthropic, openai, google-genai and boto3 "
        "bedrock-runtime client it creates recorded (no change to its code). Its output and "
        "exit status are its own.",
    )
    record.add_argument("-o", "--output", metavar="LOG", help="the JSON Lines log to append to")
    record.add_argument("--store", metavar="STORE", help=f"record into a store: {STORE_HELP}")
    record.add_argument("--conversation", metavar="ID", help="the store's conversation")
    record.add_argument("program", nargs=argparse.REMAINDER, metavar="-- COMMAND...")
    record.set_defaults(handler=_cmd_record)

    playback = commands.add_parser(
        "playback-server",
        help="serve a recording or cassette as the providers' HTTP APIs, for any language",
        description="Serve RECORDING (our log, or a VCR.py / pytest-recording cassette) on a "
        "loopback port as the Anthropic, OpenAI (Chat, Responses), Gemini and Bedrock HTTP "
        "APIs: point a client's base URL at it and each request is answered from the "
        "recording, as replay.playback answers, a request the recording does not hold "
        "getting HTTP 400 with the first difference. Runs until interrupted.",
    )
    playback.add_argument("recording", nargs="?", metavar="RECORDING", help="the recording")
    playback.add_argument(
        "--example",
        action="store_true",
        help="serve the recording the package ships (the recording guide's calls; implies "
        "--any-order)",
    )
    playback.add_argument("--host", default="127.0.0.1", help="a loopback address")
    playback.add_argument("--port", type=int, default=8765, help="0: a free port")
    playback.add_argument(
        "--speed", type=float, help="pace streams by the recorded times (1.0: real time)"
    )
    playback.add_argument(
        "--any-order",
        action="store_true",
        help="answer each request with the first recorded call it matches, however often",
    )
    playback.add_argument(
        "--strict", action="store_true", help="a null and an absent field do not match"
    )
    playback.add_argument("--conversation", metavar="ID", help="the store's conversation")
    playback.set_defaults(handler=_cmd_playback_server)

    serve = commands.add_parser(
        "serve", help="serve a live view (the [serve] extra)", description="Serve a live view."
    )
    module = _serve_module()
    if module is not None:
        module.add_arguments(serve)
    else:
        serve.epilog = SERVE_HINT
    serve.set_defaults(handler=_cmd_serve)
    return parser


def _cmd_record(args: argparse.Namespace) -> int:
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


def _cmd_playback_server(args: argparse.Namespace) -> int:
    from ..recording import EXAMPLE
    from ..recording._errors import RecordingError
    from ..recording._player import Player, read_calls
    from ..recording._server import PlaybackServer

    if (args.recording is None) == (not args.example):
        raise Failure("convo playback-server: give RECORDING or --example")
    path = str(EXAMPLE) if args.example else args.recording
    try:
        calls = read_calls(path, args.conversation)
        player = Player(
            calls,
            speed=args.speed,
            path=path,
            strict=args.strict,
            any_order=args.any_order or args.example,
        )
        server = PlaybackServer(player, host=args.host, port=args.port)
    except RecordingError as exc:
        raise Failure(f"convo playback-server: {exc}") from exc
    except OSError as exc:  # the port is taken
        raise Failure(f"convo playback-server: {args.host}:{args.port}: {exc.strerror}") from exc
    print(f"serving {path} ({len(calls)} calls) at {server.url}", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


# -- entry point -----------------------------------------------------------------------


def _one_line(text: str) -> str:
    return " ".join(text.split("\n"))


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``convo`` with ``argv`` (default: the process's arguments); returns the exit
    status instead of exiting, so it can be called in-process."""
    parser = build_parser()
    try:
        args, unknown = parser.parse_known_args(argv)
        if unknown and args.command == "serve" and _serve_module() is None:
            # Options of a server that is not installed: say what to install.
            print(SERVE_HINT, file=sys.stderr)
            return 2
        if unknown:
            parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    except SystemExit as exc:  # --help, or a usage error argparse already printed
        return exc.code if isinstance(exc.code, int) else 2
    where = getattr(args, "log", None) or getattr(args, "store", None)
    try:
        status: int = args.handler(args)
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
        return 141
    except OSError as exc:
        message = f"{exc.filename}: {exc.strerror}" if exc.filename else str(exc)
    except KeyboardInterrupt:
        return 130
    else:
        return status
    print(f"convo: error: {_one_line(message)}", file=sys.stderr)
    return 2
