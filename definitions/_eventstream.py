"""The ``application/vnd.amazon.eventstream`` frame format: bytes in, frames out.

Pure byte parsing, no I/O: it sits in ``definitions`` beside the Bedrock set that
needs it, so a live user can decode a response body with ``definitions`` alone, and
``replay`` (which reads files) calls it for a recorded binary body.

A frame (AWS "event stream encoding")::

    total length   u32 big-endian   (the whole frame, these 4 bytes included)
    headers length u32 big-endian
    prelude CRC    u32              crc32 of the 8 bytes above
    headers        headers-length bytes: name length u8, name, value type u8, value
    payload        total - headers - 16 bytes
    message CRC    u32              crc32 of every byte before it

Both CRCs are checked (``zlib.crc32``, the same CRC-32 the format uses). A bad
frame raises ``EventStreamError`` naming its byte offset in the stream.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from typing import Any, Final

import msgspec

__all__ = [
    "EventStreamDecoder",
    "EventStreamError",
    "Frame",
    "decode_frames",
    "encode_frame",
    "is_eventstream",
]

_PRELUDE: Final = 12
_MINIMUM: Final = 16  # prelude and message CRC, no headers, no payload
# AWS caps a frame at 16 MB and its headers at 128 KB: a larger length is garbage.
_MAXIMUM: Final = 16 * 1024 * 1024
_MAX_HEADERS: Final = 128 * 1024
_u32 = struct.Struct(">I")
_prelude = struct.Struct(">III")


class EventStreamError(ValueError):
    """A malformed event-stream frame; ``offset`` is where the frame starts."""

    def __init__(self, offset: int, problem: str) -> None:
        super().__init__(f"bad event-stream frame at byte {offset}: {problem}")
        self.offset = offset
        self.problem = problem


class Frame(msgspec.Struct, frozen=True, gc=False):
    """One decoded frame: its headers (name -> value), payload and byte offset."""

    headers: dict[str, Any]
    payload: bytes
    offset: int


def _headers(data: bytes, base: int) -> dict[str, Any]:
    """The headers block ``data`` of the frame at byte ``base``."""
    headers: dict[str, Any] = {}
    at = 0
    end = len(data)
    try:
        while at < end:
            size = data[at]
            name = data[at + 1 : at + 1 + size].decode("utf-8")
            at += 1 + size
            kind = data[at]
            at += 1
            value: Any
            if kind == 0 or kind == 1:  # bool true / false: no value bytes
                value = kind == 0
            elif kind == 2:
                value = struct.unpack_from(">b", data, at)[0]
                at += 1
            elif kind == 3:
                value = struct.unpack_from(">h", data, at)[0]
                at += 2
            elif kind == 4:
                value = struct.unpack_from(">i", data, at)[0]
                at += 4
            elif kind == 5 or kind == 8:  # long, timestamp (ms since the epoch)
                value = struct.unpack_from(">q", data, at)[0]
                at += 8
            elif kind == 6 or kind == 7:  # bytes, string: u16 length first
                length = struct.unpack_from(">H", data, at)[0]
                raw = data[at + 2 : at + 2 + length]
                if len(raw) != length:
                    raise EventStreamError(base, f"header {name!r} runs past the headers")
                value = raw if kind == 6 else raw.decode("utf-8")
                at += 2 + length
            elif kind == 9:
                raw = data[at : at + 16]
                if len(raw) != 16:
                    raise EventStreamError(base, f"header {name!r} runs past the headers")
                value = str(uuid.UUID(bytes=raw))
                at += 16
            else:
                raise EventStreamError(base, f"header {name!r} has unknown value type {kind}")
            if at > end:
                raise EventStreamError(base, f"header {name!r} runs past the headers")
            headers[name] = value
    except (IndexError, struct.error, UnicodeDecodeError) as exc:
        raise EventStreamError(base, f"bad headers block ({exc})") from None
    return headers


# A stream's frames mostly repeat a few header blocks (":event-type" and the same two
# others): each distinct block is parsed once. Bounded, as the claim caches are.
_HEADER_CACHE_SIZE: Final = 256
_header_cache: dict[bytes, dict[str, Any]] = {}


def _frame(data: memoryview, base: int) -> Frame:
    """The frame that ``data`` (exactly its bytes, its prelude checked by
    ``_check_prelude``) holds; ``base`` is its offset."""
    total, headers_length, _ = _prelude.unpack_from(data, 0)
    (message_crc,) = _u32.unpack_from(data, total - 4)
    if zlib.crc32(data[: total - 4]) != message_crc:
        raise EventStreamError(base, "message CRC mismatch")
    block = bytes(data[_PRELUDE : _PRELUDE + headers_length])
    headers = _header_cache.get(block)
    if headers is None:
        headers = _headers(block, base)
        if len(_header_cache) >= _HEADER_CACHE_SIZE:
            _header_cache.clear()
        _header_cache[block] = headers
    # a copy: a caller may change its frame's headers, never another frame's
    return Frame(dict(headers), bytes(data[_PRELUDE + headers_length : total - 4]), base)


def _check_prelude(data: bytes | memoryview, base: int) -> int:
    """The total length the prelude at the start of ``data`` announces, checked."""
    total, headers_length, prelude_crc = _prelude.unpack_from(data, 0)
    if zlib.crc32(data[:8]) != prelude_crc:
        raise EventStreamError(base, "prelude CRC mismatch")
    if total < _MINIMUM or total > _MAXIMUM:
        raise EventStreamError(base, f"frame length {total} is out of range")
    if headers_length > min(_MAX_HEADERS, total - _MINIMUM):
        raise EventStreamError(base, f"headers length {headers_length} does not fit the frame")
    return int(total)


def is_eventstream(data: bytes) -> bool:
    """Whether ``data`` opens with an event-stream frame: a prelude whose CRC holds
    (text never does: its first byte would have to be NUL for any sane length)."""
    if len(data) < _PRELUDE:
        return False
    try:
        _check_prelude(data, 0)
    except EventStreamError:
        return False
    return True


class EventStreamDecoder:
    """Decodes a stream fed in pieces of any size: ``feed(bytes)`` gives the frames
    completed so far, ``close()`` raises if a frame was left unfinished."""

    __slots__ = ("_buffer", "_offset")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._offset = 0  # stream offset of the buffer's first byte

    def feed(self, data: bytes) -> list[Frame]:
        """The frames that ``data`` completes, in order."""
        buffer = self._buffer
        buffer += data
        frames: list[Frame] = []
        at = 0
        view = memoryview(buffer)
        try:
            while len(buffer) - at >= _PRELUDE:
                total = _check_prelude(view[at:], self._offset + at)
                if len(buffer) - at < total:
                    break
                frames.append(_frame(view[at : at + total], self._offset + at))
                at += total
        finally:
            view.release()
        del buffer[:at]
        self._offset += at
        return frames

    def close(self) -> None:
        """End of stream: ``EventStreamError`` if bytes of a frame are left over."""
        if self._buffer:
            raise EventStreamError(
                self._offset, f"the stream ends inside a frame ({len(self._buffer)} bytes)"
            )


def decode_frames(data: bytes) -> list[Frame]:
    """Every frame of a complete event-stream body."""
    decoder = EventStreamDecoder()
    frames = decoder.feed(data)
    decoder.close()
    return frames


def encode_frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One frame with string ``headers``: what a service sends (recordings, tests)."""
    block = b"".join(
        bytes([len(name.encode())])
        + name.encode()
        + b"\x07"
        + struct.pack(">H", len(value.encode()))
        + value.encode()
        for name, value in headers.items()
    )
    total = _MINIMUM + len(block) + len(payload)
    prelude = struct.pack(">II", total, len(block))
    prelude += _u32.pack(zlib.crc32(prelude))
    body = prelude + block + payload
    return body + _u32.pack(zlib.crc32(body))
