"""Our JSON Lines log: one envelope per line, decoded with msgspec.

Theory of operation
-------------------
A log line is an ``Entry``: ``{"position": 0, "event": {...}}`` plus an optional
``conversation`` and ``time``. The envelope is decoded with a typed msgspec decoder
and the event as plain JSON objects, so any event type passes through untouched (a
plug-in kind needs no schema change). ``lazy=True`` keeps events as ``msgspec.Raw``
(their undecoded JSON), which reads about twice as fast when a reader needs only the
envelopes or decodes payloads with its own typed decoder.

Decoding a whole file takes one ``Decoder.decode_lines`` call, with no Python code run
per line. Only when that fails (or a line holds more or fewer than one value) is the
file decoded again line by line, to name the line and column at fault. A bad line is
fatal in strict mode and reported and skipped in lenient mode (a line nested past
Python's recursion limit is a bad line too); a bad *last* line with
no newline after it is what a crash while appending leaves behind, so it is reported
and skipped in both modes.

Typed events: given an event vocabulary (``types``, a tagged msgspec Struct or a union
of them, such as ``definitions.builtin.Event``), the events whose tag it holds decode
to its Structs and every other event to a plain dict as before, so a plug-in kind
still needs no schema change (an event that is not a JSON object is a bad line). The
fast path is one ``decode_lines`` call with the typed decoder; the first event of
another tag fails it, and the line-by-line pass then tries each line typed first,
plain second. An event whose tag is in the
vocabulary but whose fields do not fit is a bad line like any other, and msgspec's
message names the field (``- at `$.event.text```).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import sys
import time as time_module
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, BinaryIO, Generic, Literal, TypeVar, overload

import attrs
import msgspec

from .._errors import LogError

try:
    import fcntl
except ImportError:  # Windows: one writer per log (see LogWriter)
    fcntl = None  # type: ignore[assignment]

# What flock raises where the file system has no locks: writing goes on unlocked.
_NO_LOCKS = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL})

__all__ = [
    "Entry",
    "Log",
    "LogWriter",
    "Source",
    "read_log",
    "write_log",
]

Source = str | os.PathLike[str] | bytes | BinaryIO
"""Where a log is read from: a path, or an open binary file. ``bytes`` is a path too."""

T = TypeVar("T")
EventT = TypeVar("EventT")


class Entry(msgspec.Struct, Generic[EventT], frozen=True, omit_defaults=True, gc=False):
    """One line of a log: the event at ``position`` and, optionally, where and when.

    ``event`` is the decoded event (plain Python objects) or, read with ``lazy=True``,
    its undecoded JSON (``msgspec.Raw``; ``msgspec.json.decode(entry.event)`` decodes
    it). ``time`` is seconds since the epoch when recorded.
    """

    position: int
    event: EventT
    conversation: str | None = None
    time: float | None = None


_any_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder()
_entry_decoder = msgspec.json.Decoder(Entry[Any])
_lazy_decoder = msgspec.json.Decoder(Entry[msgspec.Raw])
# A recording's events are JSON objects: these decoders refuse anything else in C, so the
# rule costs no Python per event (see parse_log's objects and replay.logs._formats).
object_decoder = msgspec.json.Decoder(dict[str, Any])
_object_entry_decoder = msgspec.json.Decoder(Entry[dict[str, Any]])
_encoder = msgspec.json.Encoder()


@attrs.frozen(kw_only=True)
class Log(Generic[EventT]):
    """What ``read_log`` read: the entries in file order and the lines it skipped.

    ``problems`` is empty unless a bad line was skipped (lenient mode) or an
    unterminated last line was dropped (both modes).
    """

    path: str | None
    entries: list[Entry[EventT]]
    problems: tuple[LogError, ...] = ()

    def events(self) -> list[Any]:
        """Every entry's event as plain Python objects, in file order (lazy payloads are
        decoded now; ``msgspec.DecodeError`` if one holds invalid UTF-8)."""
        events: list[Any] = [entry.event for entry in self.entries]
        if events and type(events[0]) is msgspec.Raw:
            decode = _any_decoder.decode
            return [decode(raw) for raw in events]
        return events


@overload
def read_log(source: Source, *, lenient: bool = ..., lazy: Literal[False] = ...) -> Log[Any]: ...


@overload
def read_log(source: Source, *, lenient: bool = ..., lazy: Literal[True]) -> Log[msgspec.Raw]: ...


def read_log(source: Source, *, lenient: bool = False, lazy: bool = False) -> Log[Any]:
    """Read one of our JSON Lines logs.

    Raises ``LogError`` for the first bad line unless ``lenient`` (then every bad
    line is skipped and listed in ``Log.problems``). An unterminated bad last line is
    skipped and listed in both modes. Blank lines are ignored. ``OSError`` passes
    through. With ``lazy`` the events stay undecoded JSON (``msgspec.Raw``), about
    twice as fast to read; their JSON syntax is checked, their UTF-8 only when decoded.
    """
    data, path = read_source(source)
    return parse_log(data, path=path, lenient=lenient, lazy=lazy)


def parse_log(
    data: bytes,
    *,
    path: str | None,
    lenient: bool,
    lazy: bool = False,
    types: Any = None,
    objects: bool = False,
    first_line: int = 1,
) -> Log[Any]:
    """``read_log`` on bytes already read; ``path`` names them in messages, whose first
    line is ``first_line`` of the file. ``types`` is an event vocabulary (see
    ``event_types``; its events are objects); it cannot be combined with ``lazy``.
    ``objects``: an event that is not a JSON object is a bad line."""
    decoder: msgspec.json.Decoder[Entry[Any]] = (
        _lazy_decoder if lazy else _object_entry_decoder if objects else _entry_decoder
    )
    decode: Callable[[bytes], Entry[Any]] | None = None
    if types is not None:
        if lazy:
            raise ValueError("lazy events stay undecoded: they cannot be typed")
        typed = event_types(types)
        decoder, decode = typed.entries, typed.decode_entry
    entries, problems = decode_lines(
        data, decoder, path=path, lenient=lenient, decode=decode, first_line=first_line
    )
    return Log(path=path, entries=entries, problems=tuple(problems))


def write_log(
    path: str | os.PathLike[str],
    events: Iterable[Any],
    *,
    conversation: str | None = None,
    time: Callable[[], float] | None = None,
) -> int:
    """Write ``events`` as a new log at ``path`` (replacing any file there), positions 0, 1, ...

    ``time`` is a clock (e.g. ``time.time``) read once per event when given.
    Returns the number of events written. Raises ``msgspec.EncodeError`` (before
    anything is written) for an event msgspec cannot encode.
    """
    stamp = time
    lines = _encoder.encode_lines(
        [
            Entry(i, event, conversation, stamp() if stamp is not None else None)
            for i, event in enumerate(events)
        ]
    )
    with open(path, "wb") as f:
        f.write(lines)
    return lines.count(b"\n")


def _identity(status: os.stat_result) -> tuple[int, int]:
    return status.st_dev, status.st_ino


class LogWriter:
    """Appends events to a log, one line per event, written to the OS line by line.

    Opening an existing log continues its positions after the last good entry. An
    unterminated last line (a crash while appending) is cut off first, so the next
    line starts clean; the cut line is in ``recovered``. Not thread-safe: give each
    thread its own writer, or lock around ``append``. Lines are written unbuffered, not
    fsync'ed: a crash of the process loses nothing, a crash of the machine may.

    Faults leave the log valid: a write the OS refuses part of (disk full, a file size
    limit) is cut off again and its lines counted in ``dropped`` (``OSError`` raised);
    a log deleted or replaced (rotated) since it was opened is noticed when the lock is
    taken (``FileNotFoundError``); with ``lock_wait`` the lock is waited for at most
    that many seconds (``TimeoutError``).

    Several processes may append to one log (``convo record`` of a program that starts
    others): each write holds an exclusive ``flock`` on the file and, when another
    writer appended since this one last wrote, reads what it wrote first, so positions
    stay unique and gapless. Without ``fcntl`` (Windows), or on a file system that
    has no locks (some network mounts), there is no such lock: one writer per log
    there.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        conversation: str | None = None,
        time: Callable[[], float] | None = None,
        lock_wait: float | None = None,
    ) -> None:
        self.path = os.fspath(path)
        self.conversation = conversation
        self._time = time
        self.recovered: tuple[LogError, ...] = ()
        self.position = 0
        self.dropped = 0  # lines a failed write left out (their bytes cut off again)
        self.dropped_bytes = 0
        self.lock_wait = lock_wait
        self._end = 0  # where this writer's view of the file ends, in bytes
        self._lines = 0  # the lines before _end, to number a bad line read later
        self._held = False
        self._lockable = fcntl is not None
        # Unbuffered: a write the OS refuses (disk full, file size limit) must not stay
        # in a buffer to be written later, after the lines that follow it.
        self._file: IO[bytes] = open(self.path, "a+b", buffering=0)  # noqa: SIM115 (closed in close())
        self._identity = _identity(os.fstat(self._file.fileno()))
        # Absolute: a program that changes its directory has not moved its log.
        self._where = os.path.abspath(self.path)
        try:
            with self.exclusive():
                pass
        except BaseException:
            self._file.close()
            raise

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[list[Entry[Any]]]:
        """Hold the log against other processes' writers; yields the entries they
        appended since this writer last looked (its positions continue after them).
        Writes inside are part of the hold: a caller that numbers something after what
        others wrote (the recorder's calls) decides and writes without a race."""
        if self._held:
            yield []
            return
        others = self._hold()
        try:
            yield others
        finally:
            self._release()

    def _hold(self) -> list[Entry[Any]]:
        if self._lockable:
            try:
                self._lock()
            except OSError as exc:
                if exc.errno not in _NO_LOCKS:
                    raise
                self._lockable = False  # a file system without locks: one writer there
        self._held = True
        try:
            self._check_identity()
            return self._catch_up()
        except BaseException:
            self._release()
            raise

    def _lock(self) -> None:
        """Take the lock, waiting at most ``lock_wait`` seconds when it is set (a process
        stopped while holding it must not stop this one): ``TimeoutError`` after that."""
        fd = self._file.fileno()
        if self.lock_wait is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return
        deadline = time_module.monotonic() + self.lock_wait
        pause = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                left = deadline - time_module.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        errno.ETIMEDOUT,
                        f"another process held the lock of {self.path} for more than "
                        f"{self.lock_wait:g} s",
                    ) from None
                time_module.sleep(min(pause, left))
                pause = min(pause * 2, 0.05)

    def _check_identity(self) -> None:
        """Raise ``FileNotFoundError`` when the path no longer names the file this writer
        opened (deleted, or rotated: renamed and replaced): lines written to it now
        would reach no reader."""
        try:
            now = _identity(os.stat(self._where))
        except FileNotFoundError:
            now = None
        if now != self._identity:
            raise FileNotFoundError(
                errno.ENOENT,
                f"{self.path} was {'deleted' if now is None else 'replaced (rotated)'} "
                "since this writer opened it; nothing more is written to it",
            )

    def _release(self) -> None:
        self._held = False
        if self._lockable:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)

    def _catch_up(self) -> list[Entry[Any]]:
        # What others appended past _end (everything, when the writer opens). A bad line
        # is fatal, but a torn last line (a writer that crashed mid-line) is cut off and
        # kept in ``recovered``, and a good last line missing its newline is ended.
        size = os.fstat(self._file.fileno()).st_size
        if size == self._end:
            return []
        self._file.seek(self._end)
        data = self._file.read()
        entries, problems = decode_lines(
            data, _entry_decoder, path=self.path, lenient=False, first_line=self._lines + 1
        )
        self.recovered += tuple(problems)
        if entries:
            self.position = entries[-1].position + 1
        if not data.endswith(b"\n"):
            if problems:
                self._file.truncate(self._end + data.rfind(b"\n") + 1)
            else:
                self._file.write(b"\n")
        self._end = self._file.seek(0, os.SEEK_END)
        self._lines += data.count(b"\n") + (not data.endswith(b"\n") and not problems)
        return entries

    def append(self, event: Any) -> Entry[Any]:
        """Write ``event`` as the next line. Returns the entry written."""
        held = self._held  # (no context manager here: ~1.5 us more per line)
        if not held:
            self._hold()
        try:
            out = Entry(
                self.position,
                event,
                self.conversation,
                self._time() if self._time is not None else None,
            )
            self._write(_encoder.encode(out) + b"\n", 1)
        finally:
            if not held:
                self._release()
        return out

    def extend(self, runs: Iterable[tuple[float | None, Iterable[Any]]]) -> None:
        """Write runs of events, each run's events stamped with its time, as the next
        lines in one write: for many small events (a recorder's stream events), a write
        per line would cost more than the events."""
        with self.exclusive():
            conversation = self.conversation
            entries: list[Entry[Any]] = []
            add = entries.append
            position = self.position
            # One flat loop: a stream sent one event per chunk makes runs of one event,
            # where a comprehension per run cost more than the line it builds.
            for at, events in runs:
                for event in events:
                    add(Entry(position, event, conversation, at))
                    position += 1
            self._write(_encoder.encode_lines(entries), len(entries))

    def _write(self, data: bytes, lines: int) -> None:
        """Write ``data`` whole or not at all: when the OS refuses part of it (disk full,
        ``RLIMIT_FSIZE``), what did reach the file is cut off again, the lines are
        counted in ``dropped`` and the ``OSError`` raised; positions stay gapless."""
        view = memoryview(data)
        done = 0
        try:
            while done < len(data):
                done += self._file.write(view[done:]) or 0
        except OSError:
            self.dropped += lines
            self.dropped_bytes += len(data)
            if done:
                with contextlib.suppress(OSError):  # else the next hold cuts the torn line
                    self._file.truncate(self._end)
            raise
        self.position += lines
        self._lines += lines
        self._end += len(data)

    def close(self) -> None:
        """Close the file; idempotent."""
        self._file.close()

    def __enter__(self) -> LogWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


# --- shared by the readers of every line-based format -----------------------------------


def read_source(source: Source) -> tuple[bytes, str | None]:
    """The bytes of ``source`` and its name for messages (``None`` when it has none)."""
    if isinstance(source, str | bytes | os.PathLike):
        return Path(os.fsdecode(source)).read_bytes(), os.fsdecode(source)
    name = getattr(source, "name", None)
    return source.read(), name if isinstance(name, str) else None


_BYTE_OFFSET = re.compile(r"\(byte (\d+)\)")


def describe(path: str | None, line: int, column: int) -> str:
    """``"log.jsonl, line 3, column 7"``: where, for messages."""
    return f"{path or '<stream>'}, line {line}, column {column}"


def line_error(
    exc: msgspec.DecodeError | RecursionError,
    text: bytes,
    *,
    path: str | None,
    line: int,
    what: str,
    column: int = 1,
    truncated: bool = False,
) -> LogError:
    """A ``LogError`` for ``text``, which msgspec rejected.

    ``text`` starts at ``line``, ``column`` of ``path`` and may span lines (a JSON
    array); msgspec's byte offset is turned into the line and column it falls on.
    """
    reason = str(exc)
    found = _BYTE_OFFSET.search(reason)
    if isinstance(exc, RecursionError):
        offset = 0
        reason = (
            "nested deeper than the decoder follows (arrays and objects within each other "
            f"past Python's recursion limit, {sys.getrecursionlimit()})"
        )
    elif found:
        offset = int(found.group(1))
    elif reason.startswith("Input data was truncated"):
        offset = len(text.rstrip())
        reason = "expected more JSON, the input ends first (input data was truncated)"
    else:
        offset = 0  # a type error: msgspec names the field (`- at $.x`), not the byte
    before = text[:offset]
    crossed = before.count(b"\n")
    if crossed:
        line += crossed
        column = 1
        before = before[before.rfind(b"\n") + 1 :]
    column += len(before.decode("utf-8", "replace"))
    if reason.startswith("Expected `object`"):
        reason += " (an event is a JSON object)"
    if truncated:
        reason += "; it is the last line and unterminated, as a crash while writing leaves it"
    message = f"{describe(path, line, column)}: invalid {what}: {reason}"
    return LogError(message, path=path, line=line, column=column, truncated=truncated)


def decode_lines(
    data: bytes,
    decoder: msgspec.json.Decoder[T],
    *,
    path: str | None,
    lenient: bool,
    what: str = "log entry",
    decode: Callable[[bytes], T] | None = None,
    first_line: int = 1,
) -> tuple[list[T], list[LogError]]:
    """Decode one value per non-blank line of ``data``; see the module docstring.

    ``decode`` decodes one line when the whole-file ``decoder`` fails (default: that
    decoder's own ``decode``); a ``msgspec.DecodeError`` from it, or a
    ``RecursionError`` (a line nested too deep), makes the line bad. ``data`` starts at
    line ``first_line`` of its file (a piece of a file read in pieces).
    """
    if data:
        lines = data.count(b"\n") + (not data.endswith(b"\n"))
        try:
            # One call, no per-line Python. Trusted only when it yields exactly one value
            # per line: blank lines, or two values on one line, take the slow path, which
            # decides what they mean.
            fast = decoder.decode_lines(data)
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
            pass
        else:
            if len(fast) == lines:
                return fast, []
    problems: list[LogError] = []
    numbered = each_line(
        data,
        decoder.decode if decode is None else decode,
        problems,
        path=path,
        lenient=lenient,
        what=what,
        first_line=first_line,
    )
    return [value for _, value in numbered], problems


def each_line(
    data: bytes,
    decode: Callable[[bytes], T],
    problems: list[LogError],
    *,
    path: str | None,
    lenient: bool,
    what: str,
    first_line: int = 1,
) -> list[tuple[int, T]]:
    """(line number, value) for every non-blank line of ``data``, one ``decode`` call
    each. A line it refuses (``msgspec.DecodeError``, ``RecursionError``) raises its
    ``line_error`` unless ``lenient``; an unterminated last line (a torn write) never
    does. Either way the error is appended to ``problems`` and the line skipped."""
    out: list[tuple[int, T]] = []
    pieces = data.split(b"\n")
    last = len(pieces) - 1
    for index, text in enumerate(pieces):
        if not text.strip():
            continue
        line = first_line + index
        try:
            out.append((line, decode(text)))
        except (msgspec.DecodeError, RecursionError) as exc:
            truncated = index == last  # nothing follows: no newline after this line
            error = line_error(exc, text, path=path, line=line, what=what, truncated=truncated)
            if not (lenient or truncated):
                raise error from exc
            problems.append(error)
    return out


class EventTypes:
    """Decoders for one event vocabulary: ``types``, a tagged msgspec Struct or a union
    of them (see the module docstring). Made by ``event_types``, which keeps them."""

    __slots__ = ("entries", "events", "field", "tags", "type")

    def __init__(self, types: Any) -> None:
        # The decoders first: msgspec's own check of the union (one tag field, no tag
        # twice) gives the clearest message for a vocabulary it cannot decode.
        self.events: msgspec.json.Decoder[Any] = msgspec.json.Decoder(types)
        self.entries: msgspec.json.Decoder[Entry[Any]] = msgspec.json.Decoder(Entry[types])
        info = msgspec.inspect.type_info(types)
        members = info.types if isinstance(info, msgspec.inspect.UnionType) else (info,)
        structs = [
            member
            for member in members
            if isinstance(member, msgspec.inspect.StructType) and member.tag is not None
        ]
        if len(structs) != len(members):
            raise TypeError(
                f"an event vocabulary is a tagged msgspec Struct or a union of them, not {types!r}"
            )
        self.type: Any = types
        self.field: str = structs[0].tag_field  # type: ignore[assignment]
        self.tags: frozenset[object] = frozenset(struct.tag for struct in structs)

    def known(self, event: Any) -> bool:
        """Whether ``event``, decoded as plain objects, carries a tag of the vocabulary."""
        if type(event) is not dict:
            return False
        tag = event.get(self.field)
        return type(tag) in (str, int) and tag in self.tags

    def decode_event(self, line: bytes) -> Any:
        """One raw event: its Struct when its tag is known, else plain objects.

        A known tag with bad fields raises msgspec's ``ValidationError``.
        """
        try:
            return self.events.decode(line)
        except msgspec.ValidationError:
            plain = object_decoder.decode(line)  # malformed JSON raises here, with its offset
            if self.known(plain):
                raise
            return plain

    def decode_entry(self, line: bytes) -> Entry[Any]:
        """One log line, its event decoded as ``decode_event`` does."""
        try:
            return self.entries.decode(line)
        except msgspec.ValidationError:
            entry = _object_entry_decoder.decode(line)  # a bad envelope raises here
            if self.known(entry.event):
                raise
            return entry

    def convert(self, event: Any) -> Any:
        """``event`` (plain objects) as its Struct when its tag is known, else as it is.

        A known tag with bad fields raises msgspec's ``ValidationError``.
        """
        return msgspec.convert(event, self.type) if self.known(event) else event


@functools.lru_cache(maxsize=64)
def event_types(types: Any) -> EventTypes:
    """The decoders for the vocabulary ``types``, built once per vocabulary (a decoder
    for a union of many Structs costs more to build than a small log to decode).

    Raises ``TypeError`` when ``types`` is not a tagged Struct or a union of them.
    """
    return EventTypes(types)
