"""Playback: the recorded calls, served in order to the requests that match them.

Theory of operation
-------------------
``read_calls`` groups a recording's records by call number: our log (read lazily: each
stream event stays the JSON bytes it was received as), a store's conversation, or a
VCR.py / pytest-recording cassette (``replay.logs`` imports it). Each call's body is
framed once, there: the bytes the SDK parses (``_wire.frame``), the events that arrived
together (one recorded time) joined into one chunk, as the server sent them. A
``Player`` hands the calls out in order: ``take`` compares the request the SDK is making
with the one recorded at its place (API, method, path, streaming, then the JSON body
field by field; a ``null`` and an absent field alike unless ``strict``) and raises
``PlaybackMismatchError`` naming the first difference; a call beyond the recording is
refused the same way. The instrumented transport hands over the chunks, optionally
paced by the recorded arrival times (``speed``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import urlsplit

import attrs
import msgspec

from .._errors import LogError
from ..logs._formats import _is_cassette as is_cassette
from ..logs._formats import parse_events
from ..logs._jsonl import parse_log, read_source
from ..stores._open import open_store
from ._errors import PlaybackMismatchError, RecordingError
from ._recorder import INCOMPLETE
from ._wire import Recorded, api_of, frame, is_stream, kind, recorded, request_body

__all__ = ["Player", "RecordedCall", "mismatch_class", "read_calls"]

_MISSING = object()
GAP_MAX = 60.0
"""The longest wait between two chunks when pacing: a recording's times are input (a gap
of 1e9 s would hang playback), and no stream pauses longer than this."""
_encode = msgspec.json.Encoder().encode


@attrs.define
class RecordedCall:
    """One recorded call: its request, response head, body records (stream events or the
    body, with their times) and end."""

    n: int
    request: dict[str, Any] = attrs.field(factory=dict)
    request_time: float | None = None
    status: int | None = None
    headers: dict[str, str] = attrs.field(factory=dict)
    response_time: float | None = None
    records: list[tuple[Recorded, float | None]] = attrs.field(factory=list)
    complete: bool = False
    error: str | None = None
    body: list[tuple[bytes, float | None]] = attrs.field(factory=list)
    """The body as chunks to hand over, each with its arrival time (``frame_body``)."""

    @property
    def raises(self) -> bool:
        """Whether the body ends with the transport's error: it was cut, and the
        transport said so (not a body silently shorter than announced)."""
        return not self.complete and not (self.error or "").startswith(INCOMPLETE)

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "application/json")

    def frame_body(self) -> None:
        """Frame the records into ``body``: the events of one arrival time (one chunk
        as received) joined, each framed from its recorded bytes."""
        framing = kind(self.content_type)
        body: list[tuple[bytes, float | None]] = []
        pending: list[bytes] = []
        at: float | None = None
        for record, time in self.records:
            if pending and time != at:
                body.append((b"".join(pending), at))
                pending = []
            pending.append(frame(framing, record))
            at = time
        if pending:
            body.append((b"".join(pending), at))
        self.body = body

    def chunks(self, speed: float | None) -> Iterator[tuple[bytes, float]]:
        """The body's chunks, each with the seconds to wait before it (0 unless
        ``speed`` asks for pacing by the recorded times; at most ``GAP_MAX``)."""
        if not speed:
            for chunk, _ in self.body:
                yield chunk, 0.0
            return
        previous = self.response_time
        for chunk, at in self.body:
            delay = 0.0
            if at is not None and previous is not None:
                delay = min(GAP_MAX, max(0.0, (at - previous) / speed))
            if at is not None:
                previous = at
            yield chunk, delay


def read_calls(log: Any, conversation: str | None = None) -> list[RecordedCall]:
    """The calls of a recording (a log's path, a cassette's, a store's name or a store
    with ``conversation``), by call number. ``RecordingError`` names the file and the
    record (or the cassette's interaction) when one is not a recording's."""
    entries: Iterable[tuple[Any, float | None, int]]
    if hasattr(log, "read_entries"):
        entries = _objects(log.read_entries(_needs(conversation)))
        name = str(getattr(log, "path", log))
    elif conversation is not None and not str(log).endswith(".jsonl"):
        with open_store(log, mode="ro") as store:
            entries = _objects(store.read_entries(conversation))
        name = os.fsdecode(log)
    else:
        name = os.fsdecode(log)
        try:
            data, _ = read_source(log)
            loaded = parse_events(data, path=name) if is_cassette(data) else None
            if loaded is not None:
                entries = ((_encode(e), None, i) for i, e in enumerate(loaded.events))
            else:
                lines = parse_log(data, path=name, lenient=False, lazy=True).entries
                entries = (
                    (e.event, e.time, e.position)
                    for e in lines
                    if conversation is None or e.conversation == conversation
                )
        except OSError as exc:
            raise RecordingError(f"cannot play back {name!r}: {exc}") from exc
        except LogError as exc:
            raise RecordingError(f"cannot play back {name!r}: {exc}") from exc
    return _calls(entries, name)


def _objects(entries: Iterable[Any]) -> Iterator[tuple[bytes, float | None, int]]:
    for entry in entries:
        yield _encode(entry.event), entry.time, entry.position


def _calls(entries: Iterable[tuple[Any, float | None, int]], name: str) -> list[RecordedCall]:
    calls: dict[int, RecordedCall] = {}
    for raw, time, position in entries:
        try:
            record = recorded(raw)
        except msgspec.DecodeError:
            continue  # not an object: not a recording's record
        kind_ = record.type
        if not isinstance(kind_, str) or not kind_.startswith("recording/"):
            continue
        n = record.call
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise _bad(name, position, f"its call is {n!r}, not a call number")
        call = calls.get(n)
        if call is None:
            call = calls[n] = RecordedCall(n)
        if kind_ == "recording/request":
            request = msgspec.json.decode(raw)
            if not isinstance(request.get("url", ""), str):
                raise _bad(name, position, f"its url is {request.get('url')!r}, not a string")
            call.request, call.request_time = request, time
        elif kind_ == "recording/response":
            status, headers = record.status, record.headers
            if status is None and "status" not in msgspec.json.decode(raw):
                status = 200
            if not isinstance(status, int) or isinstance(status, bool):
                raise _bad(name, position, f"its status is {status!r}, not an HTTP status")
            if headers is not None and not (
                isinstance(headers, dict) and all(isinstance(v, str) for v in headers.values())
            ):
                raise _bad(name, position, f"its headers are {headers!r}, not names to strings")
            call.status, call.response_time = status, time
            call.headers = dict(headers or {})
        elif kind_ in ("recording/event", "recording/body"):
            call.records.append((record, time))
        elif kind_ == "recording/end":
            call.complete = bool(record.complete)
            call.error = None if record.error is None else str(record.error)
    for call in calls.values():
        call.frame_body()
    return [calls[n] for n in sorted(calls)]


def _bad(name: str, position: int, what: str) -> RecordingError:
    return RecordingError(f"cannot play back {name!r}: the record at position {position}: {what}")


def _needs(conversation: str | None) -> str:
    if conversation is None:
        raise RecordingError("playing back from a store needs conversation=")
    return conversation


class Player:
    """Serves a recording's calls to the requests that match them: in order, or with
    ``any_order`` each request answered by the first recorded call it matches, as often
    as it is made (VCR.py's ``allow_playback_repeats``; a server several examples or
    agents share in whatever order they run)."""

    def __init__(
        self,
        calls: list[RecordedCall],
        *,
        speed: float | None,
        path: str,
        hint: str = "",
        strict: bool = False,
        any_order: bool = False,
    ) -> None:
        self._calls = calls
        self.strict = strict
        self.any_order = any_order
        self._hint = hint
        self._next = 0
        self._served: set[int] = set()
        self._lock = threading.Lock()
        self.speed = speed
        self.path = path

    @property
    def calls(self) -> int:
        """How many calls the recording holds."""
        return len(self._calls)

    @property
    def remaining(self) -> int:
        """How many recorded calls have not been served yet."""
        return len(self.unused)

    @property
    def unused(self) -> tuple[RecordedCall, ...]:
        """The recorded calls not served yet, in order: a test that ends with some left
        made fewer calls than it recorded, and its recording is stale."""
        with self._lock:
            if self.any_order:
                return tuple(c for i, c in enumerate(self._calls) if i not in self._served)
            return tuple(self._calls[self._next :])

    def take(
        self,
        provider: str | None,
        method: str,
        url: str,
        content: bytes | None,
        error: type[PlaybackMismatchError] = PlaybackMismatchError,
    ) -> RecordedCall:
        """The recorded call for this request; ``error`` (a ``PlaybackMismatchError``)
        when the request differs from it or the recording has no call left. ``provider``
        names the API of an endpoint that is not a model call (``"anthropic"`` for
        ``anthropic.other``); ``None`` takes the recorded call's."""
        path = urlsplit(url).path
        body = request_body(content)
        with self._lock:
            if self.any_order:
                candidates = range(len(self._calls))
            else:
                candidates = range(self._next, min(self._next + 1, len(self._calls)))
            nearest: tuple[int, tuple[str, Any, Any]] | None = None
            best = (-1, 0)
            for n in candidates:
                difference = self._difference(self._calls[n], provider, method, path, body)
                if difference is None:
                    self._next += 1
                    self._served.add(n)
                    return self._calls[n]
                score = _likeness(self._calls[n].request.get("body"), body, difference)
                if score > best:  # the first of those most like the request
                    nearest, best = (n, difference), score
            if nearest is None:
                n = self._next
                raise error(
                    f"call {n} is beyond the recording {self.path} (it holds {len(self._calls)} "
                    f"calls); nothing was sent to the network{self._hint}",
                    call=n,
                    field="call",
                )
            n, (field, was, value) = nearest
            recorded = self._calls[n]
            if self.any_order:
                what = f"no call of the recording {self.path} matches: the nearest, call {n}"
                differs = "differs"
            else:
                what, differs = f"call {n}", f"differs from the recording {self.path}"
            if field in _HEAD:
                message = f"{what} {differs}: {field}: {was!r} != {value!r} (recorded != sent)"
            else:
                at = f" - at $.{field}" if field else ""
                message = (
                    f"{what} ({recorded.request.get('api')}) {differs}: {field or 'body'}: "
                    f"{_show(was)} != {_show(value)} (recorded != sent){at}"
                )
            raise error(
                message,
                call=n,
                field=field or "body",
                recorded=None if was is _MISSING else was,
                sent=None if value is _MISSING else value,
            )

    def _difference(
        self, recorded: RecordedCall, provider: str | None, method: str, path: str, body: Any
    ) -> tuple[str, Any, Any] | None:
        """The first difference of this request from ``recorded``'s: a field of its head
        (``_HEAD``) or the path into the JSON body, with both values; ``None`` if none."""
        request = recorded.request
        api = str(request.get("api") or "")
        sent = {
            "api": api_of(provider or api.partition(".")[0] or "http", path),
            "method": method,
            "path": path,
            "stream": is_stream(path, body),
        }
        for field, value in sent.items():
            was = urlsplit(request.get("url", "")).path if field == "path" else request.get(field)
            if was != value:
                return field, was, value
        try:
            return first_difference(request.get("body"), body, strict=self.strict)
        except RecursionError:  # a body nested deeper than Python compares
            return "body", "<nested too deep to compare>", "<nested too deep to compare>"


_HEAD = ("api", "method", "path", "stream")


def _likeness(recorded: Any, sent: Any, difference: tuple[str, Any, Any]) -> tuple[int, int]:
    """How like the request a recorded call that differs from it is, for naming the
    nearest: another endpoint least, else by how many more of the top-level members of
    either body are equal than differ."""
    if difference[0] in _HEAD:
        return (0, 0)
    if not (isinstance(recorded, dict) and isinstance(sent, dict)):
        return (1, 0)
    keys = recorded.keys() | sent.keys()
    equal = sum(recorded.get(k, _MISSING) == sent.get(k, _MISSING) for k in keys)
    return (1, 2 * equal - len(keys))


def _show(value: Any) -> str:
    if value is _MISSING:
        return "<absent>"
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def first_difference(
    recorded: Any, sent: Any, where: str = "", *, strict: bool = True
) -> tuple[str, Any, Any] | None:
    """The path of the first place ``sent`` differs from ``recorded`` and both values
    there (``_MISSING`` for an absent key or item), or ``None`` when equal. Unless
    ``strict``, a member that is ``null`` on one side and absent on the other is no
    difference: SDKs differ in whether they send nulls (``"stop": null``) at all."""
    if isinstance(recorded, dict) and isinstance(sent, dict):
        for key in [*recorded, *(k for k in sent if k not in recorded)]:
            was, value = recorded.get(key, _MISSING), sent.get(key, _MISSING)
            if (
                not strict
                and (was is None or was is _MISSING)
                and (value is None or value is _MISSING)
            ):
                continue
            inner = f"{where}.{key}" if where else str(key)
            found = first_difference(was, value, inner, strict=strict)
            if found is not None:
                return found
        return None
    if isinstance(recorded, list) and isinstance(sent, list):
        for i in range(max(len(recorded), len(sent))):
            found = first_difference(
                recorded[i] if i < len(recorded) else _MISSING,
                sent[i] if i < len(sent) else _MISSING,
                f"{where}[{i}]",
                strict=strict,
            )
            if found is not None:
                return found
        return None
    if type(recorded) is not type(sent) or recorded != sent:
        return where, recorded, sent
    return None


_MISMATCH: dict[type[Exception] | None, type[PlaybackMismatchError]] = {}


def mismatch_class(base: type[Exception] | None) -> type[PlaybackMismatchError]:
    """``PlaybackMismatchError``, also an instance of the SDK's own base error ``base``:
    the SDK then raises it as it is (anthropic and openai pass their own errors through,
    neither wrapping them into a connection error nor retrying them)."""
    if base is None:
        return PlaybackMismatchError
    if base not in _MISMATCH:
        _MISMATCH[base] = type(
            "PlaybackMismatchError",
            (PlaybackMismatchError, base),
            {
                "__module__": PlaybackMismatchError.__module__,
                "__doc__": PlaybackMismatchError.__doc__,
            },
        )
    return _MISMATCH[base]
