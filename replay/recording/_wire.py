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
    """The model API a request path names (one of ``API_NAMES``), or ``"<provider>.other"``
    for any other endpoint of the provider (listing models, counting tokens, ...)."""
    path = path.rstrip("/")
    if path.endswith("/messages"):
        return "anthropic.messages"
    if path.endswith("/chat/completions"):
        return "openai.chat"
    if path.endswith("/responses"):
        return "openai.responses"
    if path.endswith((":generateContent", ":streamGenerateContent")):
        return "gemini.generate_content"
    if path.endswith(("/converse", "/converse-stream")):
        return "bedrock.converse"
    return f"{provider}.other"


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

    __slots__ = ("_buffer", "_call", "_data", "_event", "_frames", "_inflate", "done", "kind")

    def __init__(self, call: int, content_type: str, content_encoding: str = "") -> None:
        self._call = call
        self.kind = _kind(content_type)
        encoding = content_encoding.strip().lower()
        self._inflate = (
            zlib.decompressobj(wbits=47) if encoding in ("gzip", "deflate", "x-gzip") else None
        )
        self._buffer = b""
        self._data: list[str] = []
        self._event = ""
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
            if self._buffer:  # a last frame without its blank line: dispatch it
                out += self._sse(b"\n\n")
            return out
        if self.kind == "body":
            return [*out, self._body(self._buffer)]
        return out

    def _sse(self, chunk: bytes) -> list[dict[str, Any]]:
        data = self._buffer + chunk
        events: list[dict[str, Any]] = []
        lines = data.splitlines(keepends=True)
        # A line is complete once its terminator arrived; a lone "\r" at the end may be
        # the first half of "\r\n", so it waits for the next chunk too.
        if lines and (not lines[-1].endswith((b"\n", b"\r")) or lines[-1].endswith(b"\r")):
            self._buffer = lines.pop()
        else:
            self._buffer = b""
        for raw in lines:
            line = raw.rstrip(b"\r\n").decode("utf-8", "replace")
            if not line:
                if self._data:
                    events.append(self._dispatch())
                self._event = ""
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "data":
                self._data.append(value)
            elif name == "event":
                self._event = value
        return events

    def _dispatch(self) -> dict[str, Any]:
        text = "\n".join(self._data)
        self._data = []
        record: dict[str, Any] = {"type": "recording/event", "call": self._call}
        if text == "[DONE]":
            record["done"] = self.done = True
            return record
        try:
            record["event"] = _decode(text)
        except msgspec.DecodeError:
            record["text"] = text
        if self._event:
            record["sse"] = self._event
        return record

    def _aws(self, headers: Mapping[str, Any], payload: bytes) -> dict[str, Any]:
        message_type = headers.get(":message-type", "event")
        try:
            decoded: Any = _decode(payload) if payload else {}
        except msgspec.DecodeError:
            decoded = payload.decode("utf-8", "replace")
        record: dict[str, Any] = {"type": "recording/event", "call": self._call}
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
    body = payload.encode() if isinstance(payload, str) else _encode(payload)
    return encode_frame(headers, body)
