"""The recorder: numbers a client's calls and appends their records to a log or a store.

Theory of operation
-------------------
``Recorder.begin`` starts call ``n`` (0-based, after the calls the log or conversation
already holds) and writes its ``recording/request``; the ``Call`` it returns is told
what happens next by the instrumented transport: ``response`` (the head),
``chunk`` (each piece of the body, as it arrives: the events it completes are written
at once, stamped with their arrival time) and ``finish`` (read to the end, or cut:
``recording/end`` with ``complete`` false and the error). A call's methods never raise:
a record that cannot be written (disk full, store down) is counted in ``lost`` and
warned about (``RecordingLostWarning``), and the SDK carries on unchanged.

Writes are serialised by a lock, so a client used from several threads (or an async
client's concurrent calls) interleaves whole records, each naming its call.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
from collections.abc import Iterable
from typing import Any

from .._log import LogWriter, read_log
from .._stores import open_store
from ._errors import RecordingError, RecordingLostWarning
from ._wire import BodyParser, api_of, harmless_headers, is_stream, request_body, safe_url

__all__ = ["Call", "Log", "Recorder", "open_sink"]

Log = str | os.PathLike[str] | Any
"""Where a recording goes: a path of our JSON Lines log, a store (``open_store``'s
name when given with ``conversation``), or an open store object."""


class _Sink:
    """Appends one record with its time; raises what the medium raises."""

    path: str

    def append(self, record: dict[str, Any], at: float) -> None:
        raise NotImplementedError

    def existing(self) -> list[Any]:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class _LogSink(_Sink):
    def __init__(self, path: str | os.PathLike[str], conversation: str | None) -> None:
        self.path = os.fspath(path)
        self._now = 0.0
        self._writer = LogWriter(self.path, conversation=conversation, time=self._clock)

    def _clock(self) -> float:
        return self._now

    def append(self, record: dict[str, Any], at: float) -> None:
        self._now = at
        self._writer.append(record)

    def existing(self) -> list[Any]:
        return read_log(self.path, lenient=True).events()

    def close(self) -> None:
        self._writer.close()


class _StoreSink(_Sink):
    def __init__(self, store: Any, conversation: str, *, owned: bool) -> None:
        self.path = str(store.path)
        self._store = store
        self._conversation = conversation
        self._owned = owned

    def append(self, record: dict[str, Any], at: float) -> None:
        self._store.append(self._conversation, [record], time=at)

    def existing(self) -> list[Any]:
        return list(self._store.read(self._conversation))

    def close(self) -> None:
        if self._owned:
            self._store.close()


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
    ``RecordingLostWarning``).
    """

    def __init__(self, sink: _Sink) -> None:
        self._sink = sink
        self.path = sink.path
        self.lost = 0
        self._lock = threading.Lock()
        self.calls = recorded_calls(sink.existing())

    def begin(
        self,
        provider: str,
        method: str,
        url: str,
        headers: Iterable[tuple[str, str]],
        content: bytes | None,
        path: str,
    ) -> Call:
        """Start the next call: write its request and return its ``Call``."""
        with self._lock:
            n = self.calls
            self.calls += 1
        body = request_body(content)
        call = Call(self, n)
        call.write(
            {
                "type": "recording/request",
                "call": n,
                "api": api_of(provider, path),
                "method": method,
                "url": safe_url(url),
                "headers": harmless_headers(headers, response=False),
                "body": body,
                "stream": is_stream(path, body),
            },
            time.time(),
        )
        return call

    def write(self, record: dict[str, Any], at: float) -> bool:
        """Append ``record`` stamped ``at``; on failure count it lost and return false."""
        try:
            with self._lock:
                self._sink.append(record, at)
        except Exception:
            with self._lock:
                self.lost += 1
            return False
        return True

    def close(self) -> None:
        """Close the log (or the store this recorder opened)."""
        with self._lock:
            self._sink.close()


class Call:
    """One call being recorded: told the response head, each body chunk, and the end."""

    __slots__ = (
        "_done",
        "_expected",
        "_failed",
        "_parser",
        "_problem",
        "_received",
        "n",
        "recorder",
    )

    def __init__(self, recorder: Recorder, n: int) -> None:
        self.recorder = recorder
        self.n = n
        self._parser: BodyParser | None = None
        self._problem: str | None = None
        self._failed = False  # a loss was warned about: once per call is enough
        self._done = False
        self._received = 0
        self._expected: int | None = None  # the content-length, when the server gave one

    def write(self, record: dict[str, Any], at: float) -> None:
        if not self.recorder.write(record, at) and not self._failed:
            self._failed = True
            warnings.warn(
                RecordingLostWarning(
                    f"call {self.n}: a {record.get('type')} record could not be written to "
                    f"{self.recorder.path}; the SDK's call goes on unrecorded there "
                    f"({self.recorder.lost} records lost so far)"
                ),
                stacklevel=2,
            )

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
                "headers": harmless_headers(pairs, response=True),
            },
            time.time(),
        )

    def chunk(self, data: bytes) -> None:
        """A piece of the body arrived: write the events it completes."""
        if self._parser is None or self._problem is not None or self._done:
            return
        at = time.time()
        self._received += len(data)
        try:
            records = self._parser.feed(data)
        except Exception as exc:
            self._problem = f"{type(exc).__name__}: {exc}"
            return
        for record in records:
            self.write(record, at)

    def finish(self, error: BaseException | str | None = None) -> None:
        """The body was read to its end (``error`` None) or cut by ``error``; idempotent."""
        if self._done:
            return
        self._done = True
        parser, self._parser = self._parser, None
        if error == CLOSED_EARLY and parser is not None and self._at_end(parser):
            error = None  # closed once everything had arrived: the SDK had its answer
        elif error is None and self._expected is not None and self._received < self._expected:
            # The transport saw no error, but the body is shorter than announced (urllib3
            # under botocore does not check): cut, though the SDK raised nothing.
            error = f"{INCOMPLETE}: {self._received} of {self._expected} bytes arrived"
        at = time.time()
        if parser is not None and self._problem is None:
            try:
                for record in parser.close():
                    self.write(record, at)
            except Exception as exc:
                self._problem = f"{type(exc).__name__}: {exc}"
        end: dict[str, Any] = {"type": "recording/end", "call": self.n, "complete": True}
        if error is not None or self._problem is not None:
            end["complete"] = False
            if isinstance(error, BaseException):
                end["error"] = f"{type(error).__name__}: {error}"
            else:
                end["error"] = error or f"the body could not be parsed: {self._problem}"
        self.write(end, at)

    def _at_end(self, parser: BodyParser) -> bool:
        return parser.done or (self._expected is not None and self._received >= self._expected)


CLOSED_EARLY = "ClosedEarly: the client closed the response before its end"
INCOMPLETE = "IncompleteBody"
"""The error name of a body cut short that the transport did not raise about: playback
ends it there without raising, as the transport did."""
