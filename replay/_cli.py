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
import io
import os
import sys
import tempfile
import timeit
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

import attrs
import msgspec

from definitions import ProtocolSet, event_type
from definitions._render import FOLD_CHARS, FOLD_LINES
from engine import ConversationError, Node

from . import _branches
from ._determinism import check_determinism, steps
from ._errors import DefinitionSpecError, LogError, StoreError
from ._progress import Progress
from .context import _command as _context
from .context._compaction import compaction_event
from .context._recorded import describe_requests
from .context._requests import check_requests, definition_set_of
from .logs._formats import Loaded, Recording, load_events, parse_piece
from .logs._jsonl import LogWriter, read_source, write_log
from .logs.sessions import read_transcript
from .protocols._detect import detect_protocol, load_definitions, protocol_definitions
from .protocols._unclaimed import unclaimed_note, unsupported_note
from .render._branches import BranchPage, render_branches_html
from .render._common import encode, render_json
from .render._html import render_html
from .render._text import text_pieces
from .stores import _worker
from .stores._open import open_store
from .stores._postgres import PostgresStore, describe
from .stores._sqlite import SQLiteStore

__all__ = ["main"]

SERVE_HINT = "install the server extra: pip install -e '.[serve]'"
_SLICE = 4096  # events folded between two updates of a progress bar
BENCH_RUN = 0.2
"""``convo bench`` times runs of at least this many seconds (timeit's autorange target)."""


class _Failure(Exception):
    """Bad input or usage: the message is printed as is, the exit status is 2."""


# -- shared steps ------------------------------------------------------------------------


def _warn(message: str) -> None:
    print(f"convo: warning: {message}", file=sys.stderr)


class _Events:
    """The events of a recording, decoded piece by piece as they are iterated (so a
    log of any size is folded or stored in bounded memory), for the vocabulary
    ``types``. Skipped lines are warned of as they are met; ``count`` is how many
    events were given; ``progress`` is told the bytes read after each piece."""

    def __init__(
        self,
        recording: Recording,
        lenient: bool,
        types: Any = None,
        progress: Progress | None = None,
        head: tuple[list[Any], list[LogError]] | None = None,
    ) -> None:
        self.recording = recording
        self.lenient = lenient
        self.types = types
        self.progress = progress
        self.count = 0
        # The first piece decoded plain and leniently (for detection): what decoding
        # it again would give when the set has no vocabulary and nothing was skipped
        # that strict mode must refuse.
        self._head = head if types is None and head and (lenient or not head[1]) else None

    def __iter__(self) -> Iterator[Any]:
        recording = self.recording
        done = 0
        for data, line, final in recording.pieces():
            if line == 1 and self._head is not None:
                events, problems = self._head
                self._head = None
            else:
                events, problems = parse_piece(
                    data,
                    recording.format,
                    path=recording.path,
                    lenient=self.lenient,
                    types=self.types,
                    first_line=line,
                    final=final,
                )
            for problem in problems:
                _warn(f"skipped: {problem}")
            self.count += len(events)
            if self.progress is None:
                yield from events
            else:
                # A piece may be a whole file (an agent session, a JSON array): its
                # events are told in slices, so a long fold of one piece moves the bar.
                for start in range(0, len(events), _SLICE):
                    yield from events[start : start + _SLICE]
                    share = min(len(events), start + _SLICE) / len(events)
                    self.progress.update(done + int(len(data) * share))
            done += len(data)


def _recording(log: str) -> Recording:
    return Recording(sys.stdin.buffer if log == "-" else log)


def _head(recording: Recording) -> tuple[list[Any], list[LogError]]:
    """The recording's first piece decoded plain and leniently: what detection reads."""
    return parse_piece(
        recording.head, recording.format, path=recording.path, lenient=True, final=recording.whole
    )


def _choose(
    recording: Recording, log: str, specs: Sequence[str] | None
) -> tuple[ProtocolSet, str | None, tuple[list[Any], list[LogError]] | None]:
    """The set named by ``specs``, else the one detected from the recording's first
    piece; a doubt about the detection to warn of; the first piece decoded plain."""
    if specs:
        return load_definitions(specs), None, None
    # Leniently: the decode for the chosen set (strict when asked) is the one to raise,
    # at the first bad line of either kind, with no warning first.
    head = _head(recording)
    detection = detect_protocol(head[0])
    note = None
    if detection.ambiguous or not detection.recognised:
        note = f"{log}: {detection.describe()}"
    return protocol_definitions(detection.protocol), note, head


def _load(path: str, lenient: bool) -> Loaded:
    """The whole log at ``path`` (``-``: standard input), warning of each skipped line."""
    source = sys.stdin.buffer if path == "-" else path
    loaded = load_events(source, lenient=lenient)
    for problem in loaded.problems:
        _warn(f"skipped: {problem}")
    return loaded


@attrs.frozen
class _Chosen:
    """A whole log and the set that folds it."""

    events: list[Any]
    definitions: ProtocolSet
    note: str | None  # a doubt about the detection, to warn of


def _chosen_events(
    log: str, lenient: bool, specs: Sequence[str] | None, conversation: str | None = None
) -> _Chosen:
    """The whole log, decoded as replay decodes it for the set that folds it (named by
    ``specs``, else detected), warning of skipped lines as replay does: for the
    commands that need every event at once. ``conversation`` picks one conversation
    of a file that holds several (a chat export)."""
    if conversation is not None:
        events = _conversation(log, lenient, conversation)
        chosen = load_definitions(specs) if specs else definition_set_of(events)
        return _Chosen(events, chosen, None)
    with _recording(log) as recording:
        chosen, note, head = _choose(recording, log, specs)
        events = list(_Events(recording, lenient, chosen.vocabulary, head=head))
    return _Chosen(events, chosen, note)


def _conversation(log: str, lenient: bool, conversation: str) -> list[Any]:
    """The events of conversation ``conversation`` of the file ``log`` (an export or
    a session that holds several)."""
    source = sys.stdin.buffer if log == "-" else log
    data, path = read_source(source)
    transcript = read_transcript(data, path=path, lenient=lenient)
    if transcript is None:
        raise _Failure(f"{log}: --conversation picks a conversation of an export or session file")
    for problem in transcript.problems:
        _warn(f"skipped: {problem}")
    for thread in transcript.threads:
        if thread.name == conversation:
            return thread.events
    names = ", ".join(thread.name for thread in transcript.threads)
    raise _Failure(f"{log}: no conversation {conversation!r} (conversations: {names})")


_WRITE = 1 << 20  # characters encoded at a time: a view is written without a copy of it


def _write(text: str | Iterable[str], output: str | None) -> None:
    """Write ``text``, or its pieces in order, to ``output`` (stdout: ``None``, ``-``)."""
    with contextlib.ExitStack() as files:
        if output is None or output == "-":
            out: TextIO = sys.stdout
        else:
            out = files.enter_context(open(output, "w", encoding="utf-8"))
        for piece in [text] if isinstance(text, str) else text:
            for start in range(0, len(piece), _WRITE):
                out.write(piece[start : start + _WRITE])
        out.flush()


# -- replay ------------------------------------------------------------------------------


def _cmd_replay(args: argparse.Namespace) -> int:
    if args.branches or args.leaf is not None or args.conversation is not None:
        return _replay_branched(args)
    try:
        return _replay_stream(args)
    except _branches.Branched:  # a tree, not a line: read it whole
        if args.log == "-":
            raise _Failure("-: a log with branch events is read twice; give it as a file") from None
        return _replay_branched(args)


def _replay_branched(args: argparse.Namespace) -> int:
    log = _chosen_events(args.log, args.lenient, args.definitions, args.conversation)
    if log.note is not None:
        _warn(log.note)
    events = log.events if args.at is None else log.events[: args.at]
    branched = _branches.BranchedLog(events, log.definitions)
    if args.branches:
        _write(branched.listing(), args.output)
        return 0
    view = branched.view(args.leaf)
    notes = {key: _branches.note(version) for key, version in view.markers.items()}
    if args.format == "html":
        title = "Conversation" if args.log == "-" else Path(args.log).name
        pages = [BranchPage(v.leaf, v.nodes, v.markers) for v in branched.views()]
        _write(
            render_branches_html(pages, log.definitions.definitions, active=view.leaf, title=title),
            args.output,
        )
        return 0
    _write(_rendered(args, log.definitions, view.nodes, len(events), notes), args.output)
    return 0


def _replay_stream(args: argparse.Namespace) -> int:
    with _recording(args.log) as recording:
        chosen, note, head = _choose(recording, args.log, args.definitions)
        # A recording whose calls are all to APIs no set reads: refused, named. Decided
        # on the first piece when it is the whole recording (a bigger one folds).
        said = unsupported_note(head[0]) if head and recording.whole else None
        if said is not None:
            raise _Failure(f"{args.log}: {said}")
        with Progress("folding", recording.size, unit="bytes") as bar:
            events = _Events(recording, args.lenient, chosen.vocabulary, bar, head)
            source: Iterable[Any] = events if args.at is None else islice(events, args.at)
            engine = chosen.folded(_branches.guard(source))  # read as they are folded
            nodes, unclaimed = engine.nodes(), engine.statistics().events_unclaimed
        if head is None and unclaimed:  # the first events, to name the set to try
            head = _head(recording)
    if note is not None:  # once the log was read: a bad line is the error to see first
        _warn(note)
    if args.at is not None and events.count < args.at:
        raise _Failure(f"--at {args.at}: the log has only {events.count} events")
    count = events.count if args.at is None else min(events.count, args.at)
    unclaimed_warning = unclaimed_note(unclaimed, count, head[0] if head else [], chosen.label)
    if unclaimed_warning is not None:
        _warn(unclaimed_warning)
    _write(_rendered(args, chosen, nodes, count), args.output)
    return 0


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


# -- context -----------------------------------------------------------------------------


def _cmd_context(args: argparse.Namespace) -> int:
    try:
        if args.conversation is not None:
            events = _conversation(args.log, args.lenient, args.conversation)
        else:
            events = _load(args.log, args.lenient).events
        said = unsupported_note(events)
        if said is not None:
            raise _Failure(f"{args.log}: {said}")
        with Progress("building requests", None, unit="requests") as bar:
            text = _context.command(events, args, bar.advance)
    except ValueError as exc:
        raise _Failure(f"{args.log}: {exc}") from exc
    _write(text, None)
    return 0


# -- compact -----------------------------------------------------------------------------


def _cmd_compact(args: argparse.Namespace) -> int:
    loaded = _load(args.log, args.lenient)
    try:
        summary = Path(args.summary).read_text(encoding="utf-8")
    except OSError as exc:
        raise _Failure(f"--summary {args.summary}: {exc.strerror or exc}") from exc
    try:
        mark = compaction_event(loaded.events, summary, through=args.through, id=args.id)
    except (ValueError, msgspec.ValidationError) as exc:
        raise _Failure(f"{args.log}: {exc}") from exc
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
        raise _Failure(
            f"{args.log}: a {loaded.format} file is not a log to append to: "
            "give --output OUT to write the log with the compaction appended"
        )
    print(f"{args.output or args.log}: compaction {mark['id']} appended", file=sys.stderr)
    return 0


# -- check -------------------------------------------------------------------------------


def _cmd_check(args: argparse.Namespace) -> int:
    log = _chosen_events(args.log, args.lenient, args.definitions, args.conversation)
    chosen = log.definitions
    if log.note is not None:
        _warn(log.note)
    if _branches.has_branches(log.events):
        return _check_branches(args, log)
    # The raw events and the set's pre-pass, not the wrapped events: each window is cut
    # from the raw log and wrapped afresh, as a paginated reader would (a pre-pass
    # must cope with a stream that starts in the middle of a message).
    with Progress("checking", steps(rounds=args.rounds), unit="ways") as bar:
        report = check_determinism(
            log.events,
            chosen.definitions,
            seed=args.seed,
            rounds=args.rounds,
            event_type=chosen.event_type,
            prepare=chosen.prepare,
            progress=bar.advance,
        )
    print(f"{args.log}: {report.describe()}")
    if _has_compaction(log.events):
        differs = check_requests(log.events, "anthropic", seed=args.seed, rounds=args.rounds)
        print(f"{args.log}: {differs or 'compaction honoured: every request identical'}")
        if differs is not None:
            return 1
    if chosen.name == "recorded" and chosen.rebuilds:
        said = describe_requests(log.events)  # informational: never the exit status
        if said is not None:
            print(said)
    return 0 if report.ok else 1


def _has_compaction(events: Sequence[Any]) -> bool:
    """Whether the log holds a compaction mark of its own (the requests it leads to
    are then checked too: folded in random batches they must not change)."""
    return any(event_type(e) == "compaction.mark" for e in events)


def _check_branches(args: argparse.Namespace, log: _Chosen) -> int:
    """``check`` of a log with branches: every leaf's path proved as a log of its own."""
    branched = _branches.BranchedLog(log.events, log.definitions)
    chosen = log.definitions
    ok = True
    leaves = branched.tree.leaves()
    with Progress("checking", steps(rounds=args.rounds) * len(leaves), unit="ways") as bar:
        reports = [
            (
                leaf.id,
                check_determinism(
                    log.events,
                    chosen.definitions,
                    leaf=leaf.id,
                    seed=args.seed,
                    rounds=args.rounds,
                    event_type=chosen.event_type,
                    prepare=chosen.prepare,
                    progress=bar.advance,
                ),
            )
            for leaf in leaves
        ]
    for leaf, report in reports:
        ok = ok and report.ok
        print(f"{args.log} (branch {leaf}): {report.describe()}")
    return 0 if ok else 1


# -- bench -------------------------------------------------------------------------------


def _best(action: Callable[[], object], repeat: int, progress: Callable[[], None]) -> float:
    """Seconds per call of ``action``: the best of ``repeat`` runs, each of as many calls
    as take ``BENCH_RUN`` seconds (one call at least), as ``timeit`` does; ``progress``
    is called after each run."""
    timer = timeit.Timer(action)
    number = 1
    while (elapsed := timer.timeit(number)) < BENCH_RUN and number < 1 << 30:
        number *= 2 if elapsed <= 0 else max(2, min(10, int(BENCH_RUN / elapsed) + 1))
    progress()
    runs = [elapsed]
    for _ in range(repeat - 1):
        runs.append(timer.timeit(number))
        progress()
    return min(runs) / number


def _cmd_bench(args: argparse.Namespace) -> int:
    if args.repeat < 1:
        raise _Failure(f"--repeat {args.repeat}: must be at least 1")
    data = Path(args.log).read_bytes()
    log = _chosen_events(args.log, args.lenient, args.definitions)
    events, chosen = log.events, log.definitions
    if not events:
        raise _Failure(f"{args.log}: no events to measure")
    if log.note is not None:
        _warn(log.note)
    types = chosen.vocabulary

    def decode() -> list[Any]:
        # Exactly the decode replay does: typed when the set declares a vocabulary.
        return load_events(io.BytesIO(data), lenient=args.lenient, types=types).events

    # The set's registration is made once, with it, as an application folding many logs
    # would have it: a pass measures the fold.
    def fold_only() -> object:
        return chosen.folded(events).nodes()

    def both() -> object:
        return chosen.folded(decode()).nodes()

    count = len(events)
    print(f"{args.log}: {count:,} events, {len(data):,} bytes, {chosen.label}", flush=True)
    for label, action in (("decode", decode), ("fold", fold_only), ("decode+fold", both)):
        with Progress(f"timing {label}", args.repeat, unit="runs") as bar:
            seconds = _best(action, args.repeat, bar.advance)
        print(
            f"  {label:<12} {count / seconds:>14,.0f} events/s"
            f"  ({seconds * 1e3:.3f} ms per pass, best of {args.repeat})"
        )
    return 0


# -- store -------------------------------------------------------------------------------

_STORE_HELP = "a SQLite file (created when missing) or a postgresql:// URL"


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
        raise _Failure(
            f"{args.log}: no conversation {args.conversation!r} (conversations: {names})"
        )
    existing = store.conversations()
    taken = [t.name for t in threads if existing.get(t.name)]
    if taken and not args.append:
        raise _Failure(
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
    with _recording(args.log) as recording, open_store(args.store) as store:
        if recording.format in _EXPORTS:
            return _import_export(args, store)
        if args.fork_of is None and (source := _forked_from(recording, store)) is not None:
            args.fork_of = source
        if args.fork_of is not None:
            return _import_fork(args, recording, store, conversation)
        expected = None if args.append else 0
        if expected is not None and (existing := store.length(conversation)):
            raise _Failure(
                f"{args.store}: conversation {conversation!r} already has {existing} events; "
                "nothing was imported (--append adds to it, --conversation ID names another)"
            )
        # Stored as decoded, in one transaction: a bad line (strict) imports nothing.
        with Progress("importing", recording.size, unit="bytes") as bar:
            events = _Events(recording, args.lenient, progress=bar)
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
    events = list(_Events(recording, args.lenient))
    source = store.read(args.fork_of)
    if not source:
        raise _Failure(f"{args.store}: no conversation {args.fork_of!r} to fork")
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
            raise _Failure(f"{args.store}: no conversation {args.conversation!r}")
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
    for conversation, length in conversations.items():
        print(f"{conversation}\t{length}")
    return 0


def _cmd_store_fork(args: argparse.Namespace) -> int:
    with open_store(args.store, mode="rw") as store:
        prefix = store.length(args.source) if args.at is None else args.at
        store.fork(args.source, args.conversation, prefix)
    print(f"forked {args.conversation!r} from the first {prefix} events of {args.source!r}")
    return 0


def _cmd_store_append(args: argparse.Namespace) -> int:
    with _recording("-") as recording, open_store(args.store) as store:
        length = store.append(
            args.conversation,
            _Events(recording, args.lenient),
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


def _add_definitions(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--definitions",
        "-d",
        action="append",
        metavar="MODULE[:ATTR]",
        help=(
            "definitions to replay with: an importable attribute holding a definition or a "
            "sequence of them, or a module exposing DEFINITIONS (repeatable, in order). "
            "Default: the set of the protocol detected from the log's events"
        ),
    )


def _add_log(parser: argparse.ArgumentParser, help: str = "the recording ('-': stdin)") -> None:
    parser.add_argument("log", metavar="LOG", help=help)
    parser.add_argument(
        "--lenient",
        action="store_true",
        help="skip bad lines (each reported on stderr) instead of stopping at the first",
    )


def _add_conversation(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--conversation",
        metavar="ID",
        help="the conversation to read, of a file that holds several (a chat export)",
    )


def _add_branch_options(parser: argparse.ArgumentParser) -> None:
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


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The ``convo`` argument parser (the serve subcommand's own options included)."""
    parser = argparse.ArgumentParser(
        prog="convo",
        description="Replay, check, measure and store conversation event logs.",
        epilog="Exit status: 0 ok, 1 check found a divergence, 2 bad input or usage.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    replay = commands.add_parser(
        "replay", help="render the view of a log", description="Render the view of a log."
    )
    _add_log(replay)
    _add_definitions(replay)
    replay.add_argument(
        "--format",
        "-f",
        choices=("text", "json", "nodes", "html"),
        default="text",
        help="json: a protocol recording's final objects (its accumulate()), else the nodes; "
        "nodes: the view's nodes as JSON",
    )
    replay.add_argument(
        "--at", type=_non_negative, metavar="N", help="the view after the first N events"
    )
    replay.add_argument(
        "--keys",
        action="store_true",
        help="text: head each node with its #seq and key (as --format nodes names them)",
    )
    replay.add_argument(
        "--full",
        action="store_true",
        help=f"text: show long content whole (else each message text or tool output "
        f"is folded after {FOLD_LINES} lines or {FOLD_CHARS:,} characters)",
    )
    replay.add_argument("--output", "-o", metavar="FILE", help="write here instead of stdout")
    _add_branch_options(replay)
    _add_conversation(replay)
    replay.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="text colours (rich): auto = when stdout is a terminal",
    )
    replay.set_defaults(handler=_cmd_replay)

    check = commands.add_parser(
        "check",
        help="prove every way of replaying a log gives the same view",
        description="Run the determinism checker; exit 1 at the first divergence.",
    )
    _add_log(check)
    _add_definitions(check)
    _add_conversation(check)
    check.add_argument("--seed", type=int, default=0, help="fixes every random choice")
    check.add_argument(
        "--rounds", type=_non_negative, default=3, help="random variants per way (default 3)"
    )
    check.set_defaults(handler=_cmd_check)

    compact = commands.add_parser(
        "compact",
        help="append our own compaction: a summary that replaces the log up to a position",
        description="Append a compaction.mark: the next request starts at SUMMARY, then "
        "what followed POSITION. The log keeps everything; a replay never asks a model.",
    )
    _add_log(compact, help="the log of the built-in kinds (or a session, with --output)")
    compact.add_argument(
        "--summary", required=True, metavar="FILE", help="the summary's text (UTF-8)"
    )
    compact.add_argument(
        "--through",
        type=_non_negative,
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
    _add_log(context)
    _context.add_arguments(context)
    context.add_argument(
        "--leaf", metavar="ID", help="the branch whose path to continue (default: the active one)"
    )
    _add_conversation(context)
    context.set_defaults(handler=_cmd_context)

    bench = commands.add_parser(
        "bench",
        help="measure decode and fold speed",
        description="Print events/s for decode, fold and both together (best of N).",
    )
    _add_log(bench, help="the recording")
    _add_definitions(bench)
    bench.add_argument("--repeat", type=int, default=5, metavar="N", help="best of N runs")
    bench.set_defaults(handler=_cmd_bench)

    store = commands.add_parser(
        "store",
        help="move logs in and out of an event store (SQLite or PostgreSQL)",
        description="Move logs in and out of an event store: a SQLite file or a postgresql:// URL.",
    )
    actions = store.add_subparsers(dest="action", metavar="ACTION", required=True)
    imp = actions.add_parser("import", help="append a recording as a new conversation")
    imp.add_argument("store", metavar="STORE", help=_STORE_HELP)
    _add_log(imp)
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
    fork.add_argument("store", metavar="STORE", help=_STORE_HELP)
    fork.add_argument("source", metavar="SOURCE", help="the conversation to fork")
    fork.add_argument("conversation", metavar="ID", help="the new conversation")
    fork.add_argument(
        "--at", type=_non_negative, metavar="P", help="its first P events (default: all)"
    )
    fork.set_defaults(handler=_cmd_store_fork)
    app = actions.add_parser(
        "append",
        help="append events read from stdin (JSON Lines); prints the new length",
    )
    app.add_argument("store", metavar="STORE", help=_STORE_HELP)
    app.add_argument("conversation", metavar="ID")
    app.add_argument(
        "--expected-position",
        type=_non_negative,
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
    record.add_argument("--store", metavar="STORE", help=f"record into a store: {_STORE_HELP}")
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

    from .recording import _auto

    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        raise _Failure("convo record: no COMMAND given (convo record -o LOG -- COMMAND...)")
    if (args.output is None) == (args.store is None):
        raise _Failure("convo record: give -o LOG or --store STORE (with --conversation)")
    if args.store is not None and args.conversation is None:
        raise _Failure("convo record: --store needs --conversation")
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
            raise _Failure(f"convo record: cannot run {program[0]!r}: {exc.strerror}") from exc
        if _auto.calls_in(log, args.store, args.conversation) <= before:
            with open(report, encoding="utf-8", errors="replace") as f:
                why = _auto.nothing_recorded(f.read())
            print(
                f"convo record: 0 calls recorded into {args.output or describe(args.store)}: {why}",
                file=sys.stderr,
            )
    return status


def _cmd_playback_server(args: argparse.Namespace) -> int:
    from .recording import EXAMPLE
    from .recording._errors import RecordingError
    from .recording._player import Player, read_calls
    from .recording._server import PlaybackServer

    if (args.recording is None) == (not args.example):
        raise _Failure("convo playback-server: give RECORDING or --example")
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
        raise _Failure(f"convo playback-server: {exc}") from exc
    except OSError as exc:  # the port is taken
        raise _Failure(f"convo playback-server: {args.host}:{args.port}: {exc.strerror}") from exc
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
    except (_Failure, DefinitionSpecError) as exc:
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
