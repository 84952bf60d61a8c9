"""The steps every ``convo`` command shares: reading a log (streamed or whole), choosing
the definition set that folds it, the options several commands take, writing output,
``Failure`` (the bad input a command reports in one line) and ``Exit``, the statuses a
command returns.

May import: every room of ``replay`` below the command line, ``definitions``, ``engine``.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TextIO

import attrs

from definitions import ProtocolSet

from .._errors import EXIT_MEANINGS, Exit, LogError
from .._progress import Progress
from ..context._command import non_negative
from ..context._requests import definition_set_of
from ..logs._formats import Loaded, Recording, load_events, parse_piece
from ..logs._jsonl import read_source
from ..logs.sessions import read_transcript
from ..protocols._detect import detect_protocol, load_definitions, protocol_definitions

__all__ = [
    "EXIT_MEANINGS",
    "STORE_HELP",
    "Chosen",
    "Events",
    "Exit",
    "Failure",
    "add_conversation",
    "add_definitions",
    "add_log",
    "choose",
    "chosen_events",
    "conversation",
    "head",
    "load",
    "non_negative",
    "recording",
    "warn",
    "write",
]

_SLICE = 4096  # events folded between two updates of a progress bar
_WRITE = 1 << 20  # characters encoded at a time: a view is written without a copy of it

STORE_HELP = "a SQLite file (created when missing) or a postgresql:// URL"


class Failure(Exception):
    """Bad input or usage: the message is printed as is, the status is ``BAD_INPUT``."""


def warn(message: str) -> None:
    print(f"convo: warning: {message}", file=sys.stderr)


# -- reading a log -----------------------------------------------------------------------


class Events:
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
                warn(f"skipped: {problem}")
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


def recording(log: str) -> Recording:
    """The recording at ``log`` (``-``: standard input), to read piece by piece."""
    return Recording(sys.stdin.buffer if log == "-" else log)


def head(recording: Recording) -> tuple[list[Any], list[LogError]]:
    """The recording's first piece decoded plain and leniently: what detection reads."""
    return parse_piece(
        recording.head, recording.format, path=recording.path, lenient=True, final=recording.whole
    )


def choose(
    recording: Recording, log: str, specs: Sequence[str] | None
) -> tuple[ProtocolSet, str | None, tuple[list[Any], list[LogError]] | None]:
    """The set named by ``specs``, else the one detected from the recording's first
    piece; a doubt about the detection to warn of; the first piece decoded plain."""
    if specs:
        return load_definitions(specs), None, None
    # Leniently: the decode for the chosen set (strict when asked) is the one to raise,
    # at the first bad line of either kind, with no warning first.
    first = head(recording)
    detection = detect_protocol(first[0])
    note = None
    if detection.ambiguous or not detection.recognised:
        note = f"{log}: {detection.describe()}"
    return protocol_definitions(detection.protocol), note, first


def load(path: str, lenient: bool) -> Loaded:
    """The whole log at ``path`` (``-``: standard input), warning of each skipped line."""
    source = sys.stdin.buffer if path == "-" else path
    loaded = load_events(source, lenient=lenient)
    for problem in loaded.problems:
        warn(f"skipped: {problem}")
    return loaded


@attrs.frozen
class Chosen:
    """A whole log and the set that folds it."""

    events: list[Any]
    definitions: ProtocolSet
    note: str | None  # a doubt about the detection, to warn of


def chosen_events(
    log: str, lenient: bool, specs: Sequence[str] | None, name: str | None = None
) -> Chosen:
    """The whole log, decoded as replay decodes it for the set that folds it (named by
    ``specs``, else detected), warning of skipped lines as replay does: for the
    commands that need every event at once. ``name`` picks one conversation of a file
    that holds several (a chat export)."""
    if name is not None:
        events = conversation(log, lenient, name)
        chosen = load_definitions(specs) if specs else definition_set_of(events)
        return Chosen(events, chosen, None)
    with recording(log) as source:
        chosen, note, first = choose(source, log, specs)
        events = list(Events(source, lenient, chosen.vocabulary, head=first))
    return Chosen(events, chosen, note)


def conversation(log: str, lenient: bool, name: str) -> list[Any]:
    """The events of conversation ``name`` of the file ``log`` (an export or a session
    that holds several)."""
    source = sys.stdin.buffer if log == "-" else log
    data, path = read_source(source)
    transcript = read_transcript(data, path=path, lenient=lenient)
    if transcript is None:
        raise Failure(f"{log}: --conversation picks a conversation of an export or session file")
    for problem in transcript.problems:
        warn(f"skipped: {problem}")
    for thread in transcript.threads:
        if thread.name == name:
            return thread.events
    names = ", ".join(thread.name for thread in transcript.threads)
    raise Failure(f"{log}: no conversation {name!r} (conversations: {names})")


# -- writing -----------------------------------------------------------------------------


def write(text: str | Iterable[str], output: str | None) -> None:
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


# -- options several commands take ---------------------------------------------------


def add_definitions(parser: argparse.ArgumentParser) -> None:
    """``--definitions``: the set to fold with, instead of the detected one."""
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


def add_log(parser: argparse.ArgumentParser, help: str = "the recording ('-': stdin)") -> None:
    """``LOG`` and ``--lenient``."""
    parser.add_argument("log", metavar="LOG", help=help)
    parser.add_argument(
        "--lenient",
        action="store_true",
        help="skip bad lines (each reported on stderr) instead of stopping at the first",
    )


def add_conversation(parser: argparse.ArgumentParser) -> None:
    """``--conversation``: one conversation of a file that holds several."""
    parser.add_argument(
        "--conversation",
        metavar="ID",
        help="the conversation to read, of a file that holds several (a chat export)",
    )
