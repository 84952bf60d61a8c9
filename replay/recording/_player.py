"""Playback: the recorded calls, served in order to the requests that match them.

Theory of operation
-------------------
``read_calls`` groups a recording's records by call number. A ``Player`` hands them out
in order: ``take`` compares the request the SDK is making with the one recorded at its
place (API, method, path, streaming, then the JSON body field by field) and raises
``PlaybackMismatchError`` naming the first difference; a call beyond the recording is
refused the same way. The instrumented transport turns the ``RecordedCall`` back into
the bytes the SDK parses (``_wire.frames``), optionally paced by the recorded arrival
times (``speed``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import attrs

from ..logs._jsonl import read_log
from ..stores._open import open_store
from ._errors import PlaybackMismatchError, RecordingError
from ._recorder import INCOMPLETE
from ._wire import api_of, frames, is_stream, request_body

__all__ = ["Player", "RecordedCall", "mismatch_class", "read_calls"]

_MISSING = object()


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
    records: list[tuple[dict[str, Any], float | None]] = attrs.field(factory=list)
    complete: bool = False
    error: str | None = None

    @property
    def raises(self) -> bool:
        """Whether the body ends with the transport's error: it was cut, and the
        transport said so (not a body silently shorter than announced)."""
        return not self.complete and not (self.error or "").startswith(INCOMPLETE)

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "application/json")

    def chunks(self, speed: float | None) -> Iterator[tuple[bytes, float]]:
        """The body's bytes, one chunk per recorded event, each with the seconds to wait
        before it (0 unless ``speed`` asks for pacing)."""
        previous = self.response_time
        for record, at in self.records:
            delay = 0.0
            if speed and at is not None and previous is not None:
                delay = max(0.0, (at - previous) / speed)
            if at is not None:
                previous = at
            for chunk in frames(self.content_type, [record]):
                yield chunk, delay
                delay = 0.0


def read_calls(log: Any, conversation: str | None = None) -> list[RecordedCall]:
    """The calls of a recording (a log's path, a store's name or a store with
    ``conversation``), by call number."""
    entries: list[Any]
    if hasattr(log, "read_entries"):
        entries = log.read_entries(_needs(conversation))
    elif conversation is not None and not str(log).endswith(".jsonl"):
        with open_store(log, mode="ro") as store:
            entries = store.read_entries(conversation)
    else:
        try:
            entries = read_log(log).entries
        except OSError as exc:
            raise RecordingError(f"cannot play back {os.fsdecode(log)!r}: {exc}") from exc
        if conversation is not None:
            entries = [entry for entry in entries if entry.conversation == conversation]
    calls: dict[int, RecordedCall] = {}
    for entry in entries:
        record = entry.event
        if not isinstance(record, dict) or not isinstance(record.get("call"), int):
            continue
        n = record["call"]
        call = calls.setdefault(n, RecordedCall(n))
        kind = record.get("type")
        if kind == "recording/request":
            call.request, call.request_time = record, entry.time
        elif kind == "recording/response":
            call.status, call.response_time = int(record.get("status", 200)), entry.time
            call.headers = dict(record.get("headers") or {})
        elif kind in ("recording/event", "recording/body"):
            call.records.append((record, entry.time))
        elif kind == "recording/end":
            call.complete = bool(record.get("complete"))
            call.error = record.get("error")
    return [calls[n] for n in sorted(calls)]


def _needs(conversation: str | None) -> str:
    if conversation is None:
        raise RecordingError("playing back from a store needs conversation=")
    return conversation


class Player:
    """Serves a recording's calls, in order, to the requests that match them."""

    def __init__(
        self, calls: list[RecordedCall], *, speed: float | None, path: str, hint: str = ""
    ) -> None:
        self._calls = calls
        self._hint = hint
        self._next = 0
        self._lock = threading.Lock()
        self.speed = speed
        self.path = path

    @property
    def remaining(self) -> int:
        """How many recorded calls have not been served yet."""
        return len(self._calls) - self._next

    @property
    def unused(self) -> tuple[RecordedCall, ...]:
        """The recorded calls not served yet, in order: a test that ends with some left
        made fewer calls than it recorded, and its recording is stale."""
        with self._lock:
            return tuple(self._calls[self._next :])

    def take(
        self,
        provider: str,
        method: str,
        url: str,
        content: bytes | None,
        error: type[PlaybackMismatchError] = PlaybackMismatchError,
    ) -> RecordedCall:
        """The recorded call for this request; ``error`` (a ``PlaybackMismatchError``)
        when the request differs from it or the recording has no call left."""
        with self._lock:
            n = self._next
            if n >= len(self._calls):
                raise error(
                    f"call {n} is beyond the recording {self.path} (it holds {len(self._calls)} "
                    f"calls); nothing was sent to the network{self._hint}",
                    call=n,
                    field="call",
                )
            recorded = self._calls[n]
            path = urlsplit(url).path
            body = request_body(content)
            sent = {
                "api": api_of(provider, path),
                "method": method,
                "path": path,
                "stream": is_stream(path, body),
            }
            for field, value in sent.items():
                was = (
                    urlsplit(recorded.request.get("url", "")).path
                    if field == "path"
                    else recorded.request.get(field)
                )
                if was != value:
                    raise error(
                        f"call {n} differs from the recording {self.path}: "
                        f"{field}: {was!r} != {value!r} (recorded != sent)",
                        call=n,
                        field=field,
                        recorded=was,
                        sent=value,
                    )
            difference = first_difference(recorded.request.get("body"), body)
            if difference is not None:
                where, was, value = difference
                at = f" - at $.{where}" if where else ""
                raise error(
                    f"call {n} ({sent['api']}) differs from the recording {self.path}: "
                    f"{where or 'body'}: {_show(was)} != {_show(value)} (recorded != sent){at}",
                    call=n,
                    field=where or "body",
                    recorded=None if was is _MISSING else was,
                    sent=None if value is _MISSING else value,
                )
            self._next += 1
            return recorded


def _show(value: Any) -> str:
    if value is _MISSING:
        return "<absent>"
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def first_difference(recorded: Any, sent: Any, where: str = "") -> tuple[str, Any, Any] | None:
    """The path of the first place ``sent`` differs from ``recorded`` and both values
    there (``_MISSING`` for an absent key or item), or ``None`` when equal."""
    if isinstance(recorded, dict) and isinstance(sent, dict):
        for key in [*recorded, *(k for k in sent if k not in recorded)]:
            inner = f"{where}.{key}" if where else str(key)
            found = first_difference(recorded.get(key, _MISSING), sent.get(key, _MISSING), inner)
            if found is not None:
                return found
        return None
    if isinstance(recorded, list) and isinstance(sent, list):
        for i in range(max(len(recorded), len(sent))):
            found = first_difference(
                recorded[i] if i < len(recorded) else _MISSING,
                sent[i] if i < len(sent) else _MISSING,
                f"{where}[{i}]",
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
