"""What crosses the wire, as the recording writes it: the request's harmless parts, the
model API a URL names, and a response body turned into recorded events and back.

Theory of operation
-------------------
A response body arrives in chunks of any size. ``BodyParser.feed`` takes each chunk as
it comes and returns the recorded events it completes: one per SSE frame
(``text/event-stream``) or AWS event-stream frame
(``application/vnd.amazon.eventstream``); any other body is kept whole and becomes one
``recording/body`` at ``close``. The parsers are written once and shared by every
provider. ``frames`` does the reverse for playback: recorded events back to the bytes
the SDK parses (SSE frames, event-stream frames, or the body).

Secrets: headers are kept only when on an allow-list of harmless names; URLs lose their
userinfo and every query parameter that names a key, token, signature or credential.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import msgspec

from definitions._eventstream import EventStreamDecoder, encode_frame
from definitions.recorded import api_of_url

__all__ = [
    "API_NAMES",
    "BodyParser",
    "api_of",
    "frames",
    "harmless_headers",
    "is_stream",
    "request_body",
    "safe_url",
]

API_NAMES: Final = (
    "anthropic.messages",
    "openai.chat",
    "openai.responses",
    "gemini.generate_content",
    "bedrock.converse",
)

# Headers worth keeping (content negotiation, versions, request ids, retry hints). A
# name not listed is dropped: a new secret-bearing header cannot leak by default.
_REQUEST_HEADERS: Final = frozenset(
    {
        "accept",
        "content-type",
        "user-agent",
        "anthropic-version",
        "anthropic-beta",
        "openai-beta",
        "x-stainless-lang",
        "x-stainless-package-version",
        "x-stainless-runtime",
        "x-stainless-runtime-version",
        "x-stainless-retry-count",
        "x-stainless-helper-method",
        "x-stainless-stream-helper",
        "x-goog-api-client",
        "amz-sdk-request",
    }
)
_RESPONSE_HEADERS: Final = frozenset(
    {
        "content-type",
        "request-id",
        "x-request-id",
        "x-amzn-requestid",
        "x-amzn-errortype",
        "openai-processing-ms",
        "openai-version",
        "retry-after",
        "retry-after-ms",
        "x-should-retry",
        "server-timing",
    }
)
_RESPONSE_PREFIXES: Final = ("anthropic-ratelimit-", "x-ratelimit-", "x-amzn-bedrock-")
_SECRET_PARAMS: Final = ("key", "token", "secret", "signature", "credential", "sig", "x-amz-")


def harmless_headers(headers: Iterable[tuple[str, str]], *, response: bool) -> dict[str, str]:
    """The allow-listed headers of a request or response, names lower-cased."""
    allowed = _RESPONSE_HEADERS if response else _REQUEST_HEADERS
    kept: dict[str, str] = {}
    for name, value in headers:
        lower = name.lower()
        if lower in allowed or (response and lower.startswith(_RESPONSE_PREFIXES)):
            kept[lower] = value
    return kept


def safe_url(url: str) -> str:
    """``url`` without userinfo and without query parameters that may carry a secret
    (``key``, ``api_key``, ``X-Amz-Signature``, ...)."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    query = [
        (name, value)
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
        if not any(word in name.lower() for word in _SECRET_PARAMS)
    ]
    return urlunsplit((parts.scheme, host, parts.path, urlencode(query), ""))


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


def _kind(content_type: str) -> str:
    media = content_type.split(";", 1)[0].strip().lower()
    if media == "text/event-stream":
        return "sse"
    if media == "application/vnd.amazon.eventstream":
        return "eventstream"
    return "body"


class BodyParser:
    """Turns a response body fed in chunks into the recorded events of call ``call``.

    ``feed`` returns the events the chunk completes (stream events as they arrive);
    ``close`` returns what is left (the whole body of a non-streamed response). A
    content encoding (gzip, deflate) is undone first: the recording keeps what the SDK
    decodes, and playback serves it unencoded.
    """

    __slots__ = ("_buffer", "_call", "_frames", "_inflate", "_names", "done", "kind")

    def __init__(self, call: int, content_type: str, content_encoding: str = "") -> None:
        self._call = call
        self.kind = _kind(content_type)
        encoding = content_encoding.strip().lower()
        self._inflate = (
            zlib.decompressobj(wbits=47) if encoding in ("gzip", "deflate", "x-gzip") else None
        )
        self._buffer = b""
        self._names: dict[bytes, str] = {}  # an "event: NAME" line, decoded once
        self._frames = EventStreamDecoder() if self.kind == "eventstream" else None
        self.done = False  # OpenAI's "data: [DONE]" arrived: nothing more is expected

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        if self._inflate is not None:
            chunk = self._inflate.decompress(chunk)
        if self.kind == "sse":
            return self._sse(chunk)
        if self._frames is not None:
            return [self._aws(frame.headers, frame.payload) for frame in self._frames.feed(chunk)]
        self._buffer += chunk
        return []

    def close(self) -> list[dict[str, Any]]:
        if self._inflate is not None:
            tail = self._inflate.flush()
            self._inflate = None
            out = self.feed(tail) if tail else []
        else:
            out = []
        if self.kind == "sse":
            if self._buffer.strip():  # a last frame without its blank line: dispatch it
                out += self._sse(b"\n\n")
            return out
        if self.kind == "body":
            return [*out, self._body(self._buffer)]
        return out

    def _sse(self, chunk: bytes) -> list[dict[str, Any]]:
        # Whole frames at a time (split in C at blank lines), not line by line: this runs
        # for every event of every recorded stream.
        data = self._buffer + chunk if self._buffer else chunk
        held = b""
        if b"\r" in data:
            if data.endswith(b"\r"):  # maybe half of a "\r\n": wait for the next chunk
                data, held = data[:-1], b"\r"
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        frames = data.split(b"\n\n")
        self._buffer = frames.pop() + held
        events: list[dict[str, Any]] = []
        call, names = self._call, self._names
        for frame in frames:
            # The frame every provider but OpenAI's chat sends, inline: this loop is the
            # recorder's cost per streamed event.
            if frame.startswith(b"event: "):
                head, found, text = frame.partition(b"\ndata: ")
                if found and b"\n" not in text and b"\n" not in head:
                    try:
                        raw = _raw(text)
                    except msgspec.DecodeError:
                        pass
                    else:
                        name = names.get(head)
                        if name is None:
                            name = names[head] = head[7:].decode("utf-8", "replace")
                        events.append(
                            {"type": "recording/event", "call": call, "event": raw, "sse": name}
                        )
                        continue
            record = self._frame(frame)
            if record is not None:
                events.append(record)
        return events

    def _frame(self, frame: bytes) -> dict[str, Any] | None:
        # The frames providers send, "event: NAME\ndata: JSON" and "data: JSON", are
        # taken apart without a loop; anything else goes line by line.
        name = b""
        if frame.startswith(b"event: "):
            head, found, text = frame.partition(b"\ndata: ")
            if found and b"\n" not in text and b"\n" not in head:
                return self._record(head[7:], text)
        elif frame.startswith(b"data: ") and b"\n" not in frame:
            return self._record(name, frame[6:])
        data: list[bytes] = []
        for line in frame.split(b"\n"):
            if line.startswith(b"data:"):
                data.append(line[6:] if line.startswith(b"data: ") else line[5:])
            elif line.startswith(b"event:"):
                name = line[7:] if line.startswith(b"event: ") else line[6:]
        if not data:
            return None  # a comment, or an event name without data: not dispatched
        return self._record(name, data[0] if len(data) == 1 else b"\n".join(data))

    def _record(self, name: bytes, text: bytes) -> dict[str, Any]:
        record: dict[str, Any] = {"type": "recording/event", "call": self._call}
        if text == b"[DONE]":
            record["done"] = self.done = True
            return record
        try:
            # Checked as JSON, kept as its bytes: written to the log as they came.
            record["event"] = _raw(text)
        except msgspec.DecodeError:
            record["text"] = text.decode("utf-8", "replace")
        if name:
            record["sse"] = name.decode("utf-8", "replace")
        return record

    def _aws(self, headers: Mapping[str, Any], payload: bytes) -> dict[str, Any]:
        message_type = headers.get(":message-type", "event")
        record: dict[str, Any] = {"type": "recording/event", "call": self._call}
        try:
            decoded: Any = _decode(payload) if payload else {}
        except msgspec.DecodeError:
            decoded = payload.decode("utf-8", "replace")
            record["payload_text"] = True  # not JSON: kept as text, framed back as is
        if message_type == "event":
            record["event"] = {str(headers.get(":event-type")): decoded}
        elif message_type == "exception":
            record["event"] = {str(headers.get(":exception-type")): decoded}
            record["exception"] = True
        else:  # an error frame: its code and message ride in headers
            record["event"] = {
                "error": {
                    "code": headers.get(":error-code"),
                    "message": headers.get(":error-message"),
                }
            }
            record["error_frame"] = True
        return record

    def _body(self, data: bytes) -> dict[str, Any]:
        record: dict[str, Any] = {"type": "recording/body", "call": self._call}
        try:
            record["body"] = _decode(data)
        except (msgspec.DecodeError, UnicodeDecodeError):
            record["text"] = data.decode("utf-8", "replace")
        return record


def frames(content_type: str, records: Iterable[Mapping[str, Any]]) -> Iterator[bytes]:
    """The bytes that carry ``records`` (recorded events or one body) in the framing
    ``content_type`` names: one chunk per event, as the server sent them."""
    kind = _kind(content_type)
    for record in records:
        if record.get("type") == "recording/body":
            if "body" in record:
                yield _encode(record["body"])
            else:
                yield str(record.get("text", "")).encode()
        elif kind == "eventstream":
            yield _aws_frame(record)
        elif record.get("done"):
            yield b"data: [DONE]\n\n"
        else:
            head = f"event: {record['sse']}\n".encode() if "sse" in record else b""
            data = _encode(record["event"]) if "event" in record else record["text"].encode()
            yield head + b"data: " + data + b"\n\n"


def _aws_frame(record: Mapping[str, Any]) -> bytes:
    [(name, payload)] = record["event"].items()
    if record.get("error_frame"):
        headers = {
            ":message-type": "error",
            ":error-code": str(payload.get("code") or ""),
            ":error-message": str(payload.get("message") or ""),
        }
        return encode_frame(headers, b"")
    message_type, key = (
        ("exception", ":exception-type") if record.get("exception") else ("event", ":event-type")
    )
    headers = {":message-type": message_type, key: name, ":content-type": "application/json"}
    body = payload.encode() if record.get("payload_text") else _encode(payload)
    return encode_frame(headers, body)
