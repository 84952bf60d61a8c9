"""What crosses the wire, as the recording writes it: the request's harmless parts, the
model API a URL names, and a response body turned into recorded events and back.

Theory of operation
-------------------
A response body arrives in chunks of any size. ``BodyParser.feed`` takes a chunk and
returns the recorded events it completes: one per SSE frame (``text/event-stream``) or
AWS event-stream frame (``application/vnd.amazon.eventstream``); any other body is kept
whole and becomes one ``recording/body`` at ``close``. ``feed_many`` takes a batch of
chunks held as they arrived (the recorder's) and gives the same events, each stamped
with the arrival of the chunk that completed it, taking the batch's SSE frames apart in
one pass. The parsers are written once and shared by every
provider. ``frames`` does the reverse for playback: recorded events back to the bytes
the SDK parses (SSE frames, event-stream frames, or the body).

Secrets: what of a request or response is kept is ``replay.logs._secrets``'s rule, the
one every importer applies too.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

import msgspec

from definitions._eventstream import EventStreamDecoder, encode_frame
from definitions.recorded import api_of_url

__all__ = [
    "API_NAMES",
    "BodyParser",
    "Recorded",
    "Runs",
    "StreamEvent",
    "api_of",
    "frame",
    "frames",
    "is_stream",
    "kind",
    "recorded",
    "request_body",
]

API_NAMES: Final = (
    "anthropic.messages",
    "openai.chat",
    "openai.responses",
    "openai.responses.compact",
    "gemini.generate_content",
    "bedrock.converse",
)


def api_of(provider: str, path: str) -> str:
    """The model API a request path names (``definitions.recorded.api_of_url``, the one
    rule readers use too), or ``"<provider>.other"`` for any other endpoint of the
    provider (listing models, counting tokens, ...)."""
    return api_of_url(path) or f"{provider}.other"


def is_stream(path: str, body: Any) -> bool:
    """Whether the request asks for a streamed answer: ``"stream": true`` in the body
    (Anthropic, OpenAI) or a streaming endpoint (Gemini, Bedrock)."""
    if isinstance(body, dict) and body.get("stream") is True:
        return True
    return path.rstrip("/").endswith((":streamGenerateContent", "/converse-stream"))


def request_body(content: bytes | None) -> Any:
    """The request's JSON body decoded, or ``None`` (no body, or not JSON)."""
    if not content:
        return None
    try:
        return _decode(content)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None


_decode = msgspec.json.Decoder().decode
_raw = msgspec.json.Decoder(msgspec.Raw).decode
_encode = msgspec.json.Encoder().encode
_CR: Final = 13  # b"\r"
# One SSE frame up to its blank line: either of the two forms providers send,
# "event: NAME\ndata: DATA" (the name optional), with NAME and DATA captured, or
# anything else, captured whole (the third group) to be read field by field.
_FRAMES: Final = re.compile(rb"(?:(?:event: ([^\n]*)\n)?data: ([^\n]*)|([^\n][\s\S]*?))\n\n")


class StreamEvent(
    msgspec.Struct,
    tag_field="type",
    tag="recording/event",
    omit_defaults=True,
    frozen=True,
    gc=False,
):
    """A ``recording/event`` record: one stream event of call ``call``, written to the log
    as it is. ``event`` is the event's JSON (kept as its bytes, ``msgspec.Raw``, for SSE;
    decoded for AWS event-stream frames); ``sse`` the SSE event name; ``text`` data that
    was not JSON; ``done`` OpenAI's ``[DONE]``; the last three flags how an AWS frame is
    framed back. A Struct, not a dict: this is built for every event of every recorded
    stream, and a Struct is built and encoded in about half the time."""

    call: int
    event: Any = None
    sse: str | None = None
    text: str | None = None
    done: bool = False
    exception: bool = False
    error_frame: bool = False
    payload_text: bool = False


def kind(content_type: str) -> str:
    """How a body of ``content_type`` is framed: ``"sse"``, ``"eventstream"`` or
    ``"body"``."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media == "text/event-stream":
        return "sse"
    if media == "application/vnd.amazon.eventstream":
        return "eventstream"
    return "body"


Runs = list[tuple[float, list[StreamEvent]]]
"""Stream events in runs, each stamped with the time of the chunk that completed it."""


class BodyParser:
    """Turns a response body fed in chunks into the recorded events of call ``call``.

    ``feed`` returns the events a chunk completes; ``feed_many`` the same for many chunks
    at once, each run of events stamped with the arrival time of the chunk that completed
    it (a recorder holds a stream's chunks as they arrive and parses them in batches);
    ``close`` returns what is left (the whole body of a non-streamed response). A
    content encoding (gzip, deflate) is undone first: the recording keeps what the SDK
    decodes, and playback serves it unencoded.
    """

    __slots__ = ("_buffer", "_call", "_frames", "_inflate", "_names", "done", "error", "kind")

    def __init__(self, call: int, content_type: str, content_encoding: str = "") -> None:
        self._call = call
        self.kind = kind(content_type)
        encoding = content_encoding.strip().lower()
        self._inflate = (
            zlib.decompressobj(wbits=47) if encoding in ("gzip", "deflate", "x-gzip") else None
        )
        self._buffer = b""
        self._names: dict[bytes, str] = {}  # an "event: NAME" line, decoded once
        self._frames = EventStreamDecoder() if self.kind == "eventstream" else None
        self.done = False  # OpenAI's "data: [DONE]" arrived: nothing more is expected
        self.error: str | None = None  # why feed_many stopped: the body cannot be parsed

    def feed(self, chunk: bytes) -> list[StreamEvent]:
        """The events ``chunk`` completes; raises what a body that cannot be parsed
        raises (a bad gzip stream, an event-stream frame failing its checksum)."""
        if self._inflate is not None:
            chunk = self._inflate.decompress(chunk)
        if self.kind == "sse":
            runs: Runs = []
            self._sse((chunk,), (0.0,), runs)
            return runs[0][1] if runs else []
        if self._frames is not None:
            return [self._aws(frame.headers, frame.payload) for frame in self._frames.feed(chunk)]
        self._buffer += chunk
        return []

    def feed_many(self, chunks: Sequence[bytes], times: Sequence[float]) -> Runs:
        """The events ``chunks`` complete, in runs, each stamped with ``times[i]``, the
        arrival of the chunk ``chunks[i]`` that completed it: what ``feed`` gives chunk by
        chunk, in one call. A body that cannot be parsed sets ``error`` and ends the
        runs there; nothing more is parsed."""
        runs: Runs = []
        if self.error is not None:
            return runs
        try:
            if self.kind == "sse" and self._inflate is None:
                self._sse(chunks, times, runs)  # the common case, without a call per chunk
            else:
                for chunk, at in zip(chunks, times, strict=True):
                    events = self.feed(chunk)
                    if events:
                        runs.append((at, events))
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"
        return runs

    def close(self) -> list[StreamEvent | dict[str, Any]]:
        out: list[StreamEvent | dict[str, Any]] = []
        if self._inflate is not None:
            tail = self._inflate.flush()
            self._inflate = None
            if tail:
                out += self.feed(tail)
        if self.kind == "sse":
            if self._buffer.strip():  # a last frame without its blank line: dispatch it
                out += self.feed(b"\n\n")
            return out
        if self.kind == "body":
            out.append(self._body(self._buffer))
        return out

    def _sse(self, chunks: Sequence[bytes], times: Sequence[float], runs: Runs) -> None:
        # Whole frames at a time, taken apart in C by _FRAMES, not line by line: this
        # runs for every event of every recorded stream, and a batch of chunks (one
        # frame each, as the APIs send them) is taken apart in one pass.
        buffer = self._buffer
        data = buffer + b"".join(chunks) if buffer else b"".join(chunks)
        # CRs to turn into newlines, or blank lines beyond a frame's end, move the frame
        # ends off the "\n\n"s counted below: then chunk by chunk (an int needle: a
        # bytes one costs CPython 3.11 7x more).
        if _CR in data or b"\n\n\n" in data or data.startswith(b"\n"):
            if len(chunks) > 1:
                for chunk, at in zip(chunks, times, strict=True):
                    self._sse((chunk,), (at,), runs)
                return
            held = b""
            if _CR in data:
                if data.endswith(b"\r"):  # maybe half of a "\r\n": wait for the next chunk
                    data, held = data[:-1], b"\r"
                data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            end = data.rfind(b"\n\n") + 2  # after the last whole frame (1: there is none)
            self._buffer = (data[end:] if end >= 2 else data) + held
            found = [event for event in self._events(data, end)[0] if event is not None]
            if found:
                runs.append((times[0], found))
            return
        end = data.rfind(b"\n\n") + 2
        if end < 2:
            self._buffer = data
            return
        self._buffer = data[end:]
        events, holes = self._events(data, end)
        # Each frame ends at a "\n\n" here: those in a chunk are the frames it completes,
        # unless one straddles two chunks (then fewer are counted than there are frames).
        ended = [chunk.count(b"\n\n") for chunk in chunks] if len(chunks) > 1 else [len(events)]
        if len(ended) > 1 and sum(ended) != len(events):
            self._buffer = buffer
            for chunk, at in zip(chunks, times, strict=True):
                self._sse((chunk,), (at,), runs)
            return
        taken = 0
        for count, at in zip(ended, times, strict=True):
            if count:
                run = events[taken : taken + count]
                taken += count
                if holes:
                    run = [event for event in run if event is not None]
                if run:
                    runs.append((at, run))  # type: ignore[arg-type]

    def _events(self, data: bytes, end: int) -> tuple[list[StreamEvent | None], bool]:
        """The record of each SSE frame in ``data[:end]`` (whole frames), ``None`` for a
        frame that dispatches no event (a comment); and whether there is a ``None``."""
        call, names = self._call, self._names
        events: list[StreamEvent | None] = []
        holes = False
        for name, text, other in _FRAMES.findall(data, 0, end):
            if other:
                record = self._frame(other)
                holes = holes or record is None
                events.append(record)
                continue
            try:
                raw = _raw(text)
            except msgspec.DecodeError:
                events.append(self._record(name, text))  # [DONE], or data that is not JSON
                continue
            sse = names.get(name)
            if sse is None:
                sse = names[name] = name.decode("utf-8", "replace")
            events.append(StreamEvent(call, raw, sse or None))
        return events, holes

    def _frame(self, frame: bytes) -> StreamEvent | None:
        # A frame not of the two forms providers send, field by field.
        name = b""
        data: list[bytes] = []
        for line in frame.split(b"\n"):
            if line.startswith(b"data:"):
                data.append(line[6:] if line.startswith(b"data: ") else line[5:])
            elif line.startswith(b"event:"):
                name = line[7:] if line.startswith(b"event: ") else line[6:]
        if not data:
            return None  # a comment, or an event name without data: not dispatched
        return self._record(name, data[0] if len(data) == 1 else b"\n".join(data))

    def _record(self, name: bytes, text: bytes) -> StreamEvent:
        sse = name.decode("utf-8", "replace") if name else None
        if text == b"[DONE]":
            self.done = True
            return StreamEvent(self._call, done=True)
        try:
            # Checked as JSON, kept as its bytes: written to the log as they came.
            return StreamEvent(self._call, _raw(text), sse)
        except msgspec.DecodeError:
            return StreamEvent(self._call, sse=sse, text=text.decode("utf-8", "replace"))

    def _aws(self, headers: Mapping[str, Any], payload: bytes) -> StreamEvent:
        message_type = headers.get(":message-type", "event")
        payload_text = False
        try:
            decoded: Any = _decode(payload) if payload else {}
        except msgspec.DecodeError:
            decoded = payload.decode("utf-8", "replace")
            payload_text = True  # not JSON: kept as text, framed back as is
        if message_type == "event":
            event = {str(headers.get(":event-type")): decoded}
            return StreamEvent(self._call, event, payload_text=payload_text)
        if message_type == "exception":
            event = {str(headers.get(":exception-type")): decoded}
            return StreamEvent(self._call, event, exception=True, payload_text=payload_text)
        # An error frame: its code and message ride in headers.
        error = {"code": headers.get(":error-code"), "message": headers.get(":error-message")}
        return StreamEvent(self._call, {"error": error}, error_frame=True)

    def _body(self, data: bytes) -> dict[str, Any]:
        record: dict[str, Any] = {"type": "recording/body", "call": self._call}
        try:
            record["body"] = _decode(data)
        except (msgspec.DecodeError, UnicodeDecodeError):
            record["text"] = data.decode("utf-8", "replace")
        return record


class Recorded(msgspec.Struct, gc=False):
    """A recording's record as playback reads it: a ``recording/event``'s ``event`` and a
    ``recording/body``'s ``body`` kept as their JSON bytes (``msgspec.Raw``), framed
    back as they were received, never decoded and encoded again."""

    type: Any = None
    call: Any = None
    event: msgspec.Raw = msgspec.Raw()  # empty when absent
    body: msgspec.Raw = msgspec.Raw()
    text: Any = None
    sse: Any = None
    done: Any = False
    exception: Any = False
    error_frame: Any = False
    payload_text: Any = False
    status: Any = None
    headers: Any = None
    complete: Any = None
    error: Any = None


recorded = msgspec.json.Decoder(Recorded).decode
"""A record's JSON as a ``Recorded``."""


def frame(framing: str, record: Recorded) -> bytes:
    """The bytes that carry ``record`` (a recorded event or a body) in ``framing``
    (``kind``), as the server sent them."""
    if record.type == "recording/body":
        if record.body:
            return bytes(record.body)
        return str(record.text or "").encode()
    if framing == "eventstream":
        return _aws_frame(record)
    if record.done:
        return b"data: [DONE]\n\n"
    head = b"event: " + str(record.sse).encode() + b"\n" if record.sse else b""
    data = bytes(record.event) if record.event else str(record.text).encode()
    if b"\n" in data:  # data of several lines: one data: line each
        data = data.replace(b"\n", b"\ndata: ")
    return head + b"data: " + data + b"\n\n"


def frames(content_type: str, records: Iterable[Mapping[str, Any]]) -> Iterator[bytes]:
    """The bytes that carry ``records`` (recorded events or one body, as objects) in
    the framing ``content_type`` names: one chunk per event."""
    framing = kind(content_type)
    for record in records:
        yield frame(framing, recorded(_encode(record)))


def _aws_frame(record: Recorded) -> bytes:
    [(name, payload)] = _decode(record.event or b"{}").items()
    if record.error_frame:
        headers = {
            ":message-type": "error",
            ":error-code": str(payload.get("code") or ""),
            ":error-message": str(payload.get("message") or ""),
        }
        return encode_frame(headers, b"")
    message_type, key = (
        ("exception", ":exception-type") if record.exception else ("event", ":event-type")
    )
    headers = {":message-type": message_type, key: name, ":content-type": "application/json"}
    body = payload.encode() if record.payload_text else _encode(payload)
    return encode_frame(headers, body)
