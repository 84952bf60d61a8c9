"""The recorder: numbers a client's calls and appends their records to a log or a store.

Theory of operation
-------------------
``Recorder.begin`` starts call ``n`` (0-based, after every call the log or
conversation holds, other processes' included) and writes its ``recording/request``;
the ``Call`` it returns is told what happens next by the instrumented transport:
``response`` (the head), ``chunk`` (each piece of the body, as it arrives: held with
its arrival time, then parsed and written with the pieces before it, at most ``BATCH``
seconds or ``BATCH_BYTES`` bytes later, each event stamped with the arrival of the
piece that completed it) and ``finish`` (read to the end, or cut:
``recording/end`` with ``complete`` false and the error). A call's methods never raise:
a record that cannot be written (disk full, a file size limit, store down, the log
deleted or rotated, its lock held by another process past ``LOCK_WAIT``) is counted in
``lost`` and warned about (``RecordingLostWarning``), and the SDK carries on unchanged.
A call that lost a record writes nothing more but its end, ``complete`` false with the
reason (``LOST``): what the log keeps of it is a clean prefix, which playback raises at,
never a stream with a hole that would play back as a shorter, complete answer.

Time comes from the recorder's ``clock`` (``time.time`` unless given): each record is
stamped with it and the batching rule reads it, so both are tested without sleeping.

Writes are serialised by a lock, so a client used from several threads (or an async
client's concurrent calls) interleaves whole records, each naming its call.
"""

from __future__ import annotations

import errno
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import msgspec

from .._errors import ConcurrencyError
from ..logs._jsonl import LogWriter, read_log
from ..logs._secrets import kept_headers, kept_url, scrub, withheld
from ..stores._open import open_store
from ._errors import RecordingError, RecordingLostWarning
from ._wire import (
    BodyParser,
    StreamEvent,
    api_of,
    is_stream,
    request_body,
)

__all__ = ["Call", "Log", "Recorder", "open_sink"]

Log = str | os.PathLike[str] | Any
"""Where a recording goes: a path of our JSON Lines log, a store (``open_store``'s
name when given with ``conversation``), or an open store object."""


Record = dict[str, Any] | StreamEvent
"""One record as written: a stream event, or any other record as a dict."""
Batches = Sequence[tuple[float, Sequence[Record]]]

_encoder = msgspec.json.Encoder()


class PartlyWritten(Exception):
    """``_Sink.extend`` failed after writing the first ``written`` records (the
    exception's cause says why)."""

    def __init__(self, written: int) -> None:
        super().__init__(f"{written} records written")
        self.written = written


class _Sink:
    """Appends one record with its time; raises what the medium raises."""

    path: str
    # One more than the highest call number among the records this sink has seen, its
    # own and those other processes appended to the same log or conversation.
    calls = 0

    def append(self, record: Record, at: float) -> None:
        raise NotImplementedError

    def extend(self, batches: Batches) -> None:
        """Append each batch's records, stamped with the batch's time; on failure raise
        what the medium raised, or ``PartlyWritten`` when some records were written."""
        raise NotImplementedError

    def look(self) -> None:
        """Read the records the log or conversation holds, for ``calls``."""
        raise NotImplementedError

    def _note(self, events: Iterable[Any]) -> None:
        self.calls = max(self.calls, recorded_calls(events))

    def begin(self, build: Callable[[int], dict[str, Any]], at: float) -> dict[str, Any]:
        """Append the record ``build`` makes from ``calls`` as it is after every record
        other processes appended so far, with nothing appended in between: how a call's
        number follows every number another process gave. Returns the record."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class _LogSink(_Sink):
    def __init__(self, path: str | os.PathLike[str], conversation: str | None) -> None:
        self.path = os.fspath(path)
        self._now = 0.0
        self._writer = LogWriter(
            self.path, conversation=conversation, time=self._clock, lock_wait=LOCK_WAIT
        )

    def _clock(self) -> float:
        return self._now

    def append(self, record: Record, at: float) -> None:
        with self._writer.exclusive() as others:
            self._note(entry.event for entry in others)
            self._now = at
            self._writer.append(record)

    def extend(self, batches: Batches) -> None:
        # One write for many stream events: a write and flush per event would cost the
        # recorder more than the SDK spends on the event.
        with self._writer.exclusive() as others:
            self._note(entry.event for entry in others)
            self._writer.extend(batches)

    def look(self) -> None:
        self._note(read_log(self.path, lenient=True).events())

    def begin(self, build: Callable[[int], dict[str, Any]], at: float) -> dict[str, Any]:
        # The writer's hold on the file spans reading the others' records and writing.
        with self._writer.exclusive() as others:
            self._note(entry.event for entry in others)
            record = build(self.calls)
            self.append(record, at)
        return record

    def close(self) -> None:
        self._writer.close()


class _StoreSink(_Sink):
    def __init__(self, store: Any, conversation: str, *, owned: bool) -> None:
        self.path = str(store.path)
        self._store = store
        self._conversation = conversation
        self._owned = owned
        self._seen = 0  # how many of the conversation's events this sink has looked at
        # Absolute: a program that changes its directory has not moved its store.
        self._where = os.path.abspath(self.path) if os.path.exists(self.path) else self.path
        self._identity = _identity(self._where)

    def _check(self) -> None:
        # An SQLite store deleted or replaced under the recorder would take its appends
        # into the unlinked file, where no reader finds them.
        if self._identity is not None and _identity(self._where) != self._identity:
            raise FileNotFoundError(
                errno.ENOENT, f"the store {self.path} was deleted or replaced since it was opened"
            )

    def append(self, record: Record, at: float) -> None:
        self._check()
        # A stream event is kept as its JSON bytes (msgspec.Raw): a store takes objects.
        self._store.append(self._conversation, [_objects(record)], time=at)

    def extend(self, batches: Batches) -> None:
        self._check()
        written = 0
        for at, records in batches:  # one append (one transaction) per batch, its time
            try:
                self._store.append(self._conversation, [_objects(r) for r in records], time=at)
            except Exception as exc:
                raise PartlyWritten(written) from exc
            written += len(records)

    def look(self) -> None:
        events = self._store.read(self._conversation)
        self._seen = len(events)
        self._note(events)

    def begin(self, build: Callable[[int], dict[str, Any]], at: float) -> dict[str, Any]:
        # Optimistic: append only if nobody appended since the look; else look again.
        store, conversation = self._store, self._conversation
        self._check()
        while True:
            length = store.length(conversation)
            self._note(store.read(conversation, self._seen, length))
            self._seen = length
            record = build(self.calls)
            try:
                store.append(conversation, [record], time=at, expected_position=length)
            except ConcurrencyError:
                continue
            self._seen = length + 1
            return record

    def close(self) -> None:
        if self._owned:
            self._store.close()


def _identity(path: str) -> tuple[int, int] | None:
    """The file ``path`` names (device, inode), or None where it names no file (a
    PostgreSQL store's URL, a file not there)."""
    try:
        status = os.stat(path)
    except (OSError, ValueError):
        return None
    return status.st_dev, status.st_ino


def _objects(record: Record) -> dict[str, Any]:
    if isinstance(record, StreamEvent):
        objects: dict[str, Any] = msgspec.json.decode(_encoder.encode(record))
        return objects
    return record


def open_sink(log: Log, conversation: str | None, *, store: bool = False) -> _Sink:
    """The sink for ``log``: an object with ``append``/``read`` is a store; a path is our
    JSON Lines log, or a store when ``store`` is true (``open_store`` names it)."""
    if hasattr(log, "append") and hasattr(log, "read"):
        if conversation is None:
            raise RecordingError("recording into a store needs conversation=")
        return _StoreSink(log, conversation, owned=False)
    try:
        if store:
            if conversation is None:
                raise RecordingError("recording into a store needs conversation=")
            return _StoreSink(open_store(log), conversation, owned=True)
        return _LogSink(log, conversation)
    except OSError as exc:
        raise RecordingError(f"cannot record into {os.fsdecode(log)!r}: {exc}") from exc


def recorded_calls(events: Iterable[Any]) -> int:
    """How many calls the recording ``events`` holds (one more than the highest number)."""
    highest = -1
    for event in events:
        if isinstance(event, dict) and str(event.get("type", "")).startswith("recording/"):
            call = event.get("call")
            if isinstance(call, int) and call > highest:
                highest = call
    return highest + 1


class Recorder:
    """Writes the records of one instrumented client's calls.

    ``path`` is where they go, ``calls`` the number of the next call, ``lost`` how many
    records could not be written (each loss is also warned about with
    ``RecordingLostWarning``; ``problem`` is the last reason). ``clock`` gives the time
    records are stamped with (seconds since the epoch; ``time.time`` unless given).
    """

    def __init__(self, sink: _Sink, *, clock: Callable[[], float] = time.time) -> None:
        self._sink = sink
        self.path = sink.path
        self.clock = clock
        self.lost = 0
        self.problem: str | None = None
        self._lock = threading.Lock()
        sink.look()
        self.calls = sink.calls

    def begin(
        self,
        provider: str,
        method: str,
        url: str,
        headers: Iterable[tuple[str, str]],
        content: bytes | None,
        path: str,
    ) -> Call:
        """Start the next call: write its request and return its ``Call``. Its number
        follows every call in the log, those other processes recorded into it too."""
        body = request_body(content)
        pairs = list(headers)
        request: dict[str, Any] = {
            "type": "recording/request",
            "call": -1,
            "api": api_of(provider, path),
            "method": method,
            "url": kept_url(url),
            "headers": kept_headers(pairs, response=False),
            "body": body,
            "stream": is_stream(path, body),
        }

        def numbered(in_log: int) -> dict[str, Any]:
            self.calls = max(self.calls, in_log)
            return {**request, "call": self.calls}

        with self._lock:
            try:
                self._sink.begin(numbered, self.clock())
                written = True
            except Exception as exc:
                written = False
                self._count(1, exc)
            n = self.calls
            self.calls += 1
        call = Call(self, n, withheld(url, pairs))
        if not written:
            call._lost("recording/request", 1, unwritten=True)
        return call

    def _count(self, records: int, exc: BaseException) -> None:
        if isinstance(exc, PartlyWritten) and exc.__cause__ is not None:
            exc = exc.__cause__
        self.lost += records
        self.problem = f"{type(exc).__name__}: {exc}"

    def write(self, record: Record, at: float) -> bool:
        """Append ``record`` stamped ``at``; on failure count it lost and return false."""
        with self._lock:
            try:
                self._sink.append(record, at)
            except Exception as exc:
                self._count(1, exc)
                return False
        return True

    def write_many(self, batches: Batches) -> int:
        """Append each batch's records, stamped with its time, at once; returns how many
        could not be written (counted lost), 0 when all were."""
        with self._lock:
            try:
                self._sink.extend(batches)
            except Exception as exc:
                written = exc.written if isinstance(exc, PartlyWritten) else 0
                lost = sum(len(records) for _, records in batches) - written
                self._count(lost, exc)
                return lost
        return 0

    def close(self) -> None:
        """Close the log (or the store this recorder opened)."""
        with self._lock:
            self._sink.close()


class Call:
    """One call being recorded: told the response head, each body chunk, and the end.

    After a record of the call is lost the call writes nothing but its end (counting
    what it leaves out as lost), which says why: the log keeps a clean prefix of it."""

    __slots__ = (
        "_chunks",
        "_done",
        "_drained",
        "_expected",
        "_failed",
        "_parsed",
        "_parser",
        "_problem",
        "_received",
        "_times",
        "_unwritten",
        "_withheld",
        "n",
        "recorder",
    )

    def __init__(self, recorder: Recorder, n: int, secrets: Sequence[str] = ()) -> None:
        self.recorder = recorder
        self.n = n
        # What the request's recorded form left out (keys, tokens): an error text that
        # quotes one (httpx names a header value it refuses) is written without it.
        self._withheld = secrets
        self._parser: BodyParser | None = None
        self._problem: str | None = None
        self._failed = 0  # records of this call lost (then only its end is written)
        self._unwritten = False  # its request was lost: the log has nothing of it
        self._done = False
        self._received = 0
        # The pieces of the body held since the last drain, with their arrival times.
        self._chunks: list[bytes] = []
        self._times: list[float] = []
        self._parsed = 0  # bytes of the body parsed (held no more)
        self._drained = 0.0
        self._expected: int | None = None  # the content-length, when the server gave one

    def write(self, record: Record, at: float) -> None:
        if self._failed:
            self._skip(1)
        elif not self.recorder.write(record, at):
            self._lost(record["type"] if isinstance(record, dict) else "recording/event", 1)

    def _skip(self, records: int) -> None:
        with self.recorder._lock:
            self.recorder.lost += records
        self._failed += records

    def response(self, status: int, headers: Iterable[tuple[str, str]]) -> None:
        """The response head arrived."""
        pairs = list(headers)
        lower = {name.lower(): value for name, value in pairs}
        self._parser = BodyParser(
            self.n, lower.get("content-type", ""), lower.get("content-encoding", "")
        )
        length = lower.get("content-length", "")
        self._expected = int(length) if length.isdigit() else None
        self.write(
            {
                "type": "recording/response",
                "call": self.n,
                "status": status,
                "headers": kept_headers(pairs, response=True),
            },
            self.recorder.clock(),
        )

    def chunk(self, data: bytes) -> None:
        """A piece of the body arrived (now: its events' time). It is held and parsed
        with the pieces before it, its events written at most ``BATCH`` seconds (or
        ``BATCH_BYTES`` bytes) after it came."""
        if self._parser is None or self._problem is not None or self._done:
            return
        at = self.recorder.clock()
        self._received += len(data)
        # Held, not parsed: taking apart a stream that arrives one frame per piece (as
        # the APIs send it) costs a recorder half as much a batch of pieces at a time.
        self._chunks.append(data)
        self._times.append(at)
        if at - self._drained >= BATCH or self._received - self._parsed >= BATCH_BYTES:
            self._drain(at)

    def _drain(self, now: float) -> None:
        """Parse the pieces held and write the events they complete."""
        chunks, times, parser = self._chunks, self._times, self._parser
        self._chunks, self._times, self._drained = [], [], now
        self._parsed = self._received
        if not chunks or parser is None:
            return
        batches = parser.feed_many(chunks, times)
        self._problem = parser.error
        if not batches:
            return
        if self._failed:
            self._skip(sum(len(records) for _, records in batches))
            return
        lost = self.recorder.write_many(batches)
        if lost:
            self._lost("recording/event", lost)

    def _lost(self, kind: str, records: int, *, unwritten: bool = False) -> None:
        first = not self._failed
        self._failed += records
        self._unwritten = self._unwritten or unwritten
        if not first:
            return
        warnings.warn(
            RecordingLostWarning(
                f"call {self.n}: a {kind} record could not be written to "
                f"{self.recorder.path} ({self.recorder.problem}); the SDK's call goes on, "
                f"its recording ends there ({self.recorder.lost} records lost so far)"
            ),
            stacklevel=4,
        )

    def finish(self, error: BaseException | str | None = None) -> None:
        """The body was read to its end (``error`` None) or cut by ``error``; idempotent."""
        if self._done:
            return
        self._drain(self.recorder.clock())
        self._done = True
        parser, self._parser = self._parser, None
        if error == CLOSED_EARLY and parser is not None and self._at_end(parser):
            error = None  # closed once everything had arrived: the SDK had its answer
        elif error is None and self._expected is not None and self._received < self._expected:
            # The transport saw no error, but the body is shorter than announced (urllib3
            # under botocore does not check): cut, though the SDK raised nothing.
            error = f"{INCOMPLETE}: {self._received} of {self._expected} bytes arrived"
        at = self.recorder.clock()
        if parser is not None and self._problem is None:
            try:
                for record in parser.close():
                    self.write(record, at)
            except Exception as exc:
                self._problem = f"{type(exc).__name__}: {exc}"
        if self._unwritten:
            self._skip(1)  # an end with no request in the log would name no call
            return
        end: dict[str, Any] = {"type": "recording/end", "call": self.n, "complete": True}
        if self._failed:
            end["complete"] = False
            text = (
                f"{LOST}: {self._failed} records of this call could not be written "
                f"({self.recorder.problem})"
            )
        elif error is not None or self._problem is not None:
            end["complete"] = False
            if isinstance(error, BaseException):
                text = f"{type(error).__name__}: {error}"
            else:
                text = error or f"the body could not be parsed: {self._problem}"
        if not end["complete"]:
            end["error"] = scrub(text, self._withheld)
        if not self.recorder.write(end, at):
            self._lost("recording/end", 1)

    def _at_end(self, parser: BodyParser) -> bool:
        return parser.done or (self._expected is not None and self._received >= self._expected)


BATCH = 0.05
"""Seconds a stream event may wait to be written with the ones after it: one write per
batch instead of one per event keeps the recorder's cost a few percent of the SDK's."""

BATCH_BYTES = 1 << 16
"""Bytes of a body held before they are parsed and written, however fast they come: a
batch stays small enough for the processor's caches and a long stream's memory."""

LOCK_WAIT = 1.0
"""Seconds a write waits for the log's lock that another process holds (a process
stopped while holding it would otherwise stop this one's SDK calls): after that the
records are counted lost and the SDK goes on."""

CLOSED_EARLY = "ClosedEarly: the client closed the response before its end"
INCOMPLETE = "IncompleteBody"
"""The error name of a body cut short that the transport did not raise about: playback
ends it there without raising, as the transport did."""
LOST = "RecordingLost"
"""The error name of a call the recorder could not write whole: playback raises at its
end, as at a cut."""
