"""Recordings as they come: our log, SSE text, JSON arrays, JSON Lines of raw events,
and raw AWS event-stream bodies (Bedrock's ``application/vnd.amazon.eventstream``).

``load_events`` detects the format from the first bytes and returns the raw events
in order, as plain Python objects, the same lists the provider SDKs' readers hand to
their accumulators (the reference oracles in ``../shared/oracles``), or, for an agent
session file (Claude Code, Codex CLI, OpenHands, SWE-agent; ``TranscriptFormat``), the
built-in events of its primary conversation (``replay.logs.sessions``):

- SSE: frames end at a blank line (LF, CRLF or CR); ``:`` lines are comments;
  ``data:`` lines of one frame are joined with ``"\\n"``; ``ping`` frames, frames
  without data and ``data: [DONE]`` are dropped; a named frame whose JSON object has
  no ``"type"`` gets the frame's name as its type (as openai's reader does).
- every raw provider format: ``{"type": "ping"}`` keep-alives are dropped (as
  anthropic's reader does); everything else passes through untouched.
- our own log (``{"position": ..., "event": ...}`` lines): the events, untouched.
- an event-stream body (binary frames; detected by a first frame whose prelude CRC
  holds): the ConverseStream events its frames carry
  (``definitions.bedrock.events_from_eventstream``); a bad frame always raises.
- a VCR.py or pytest-recording cassette (YAML, or the JSON serializer's object; an
  ``interactions`` list): each interaction with a model API (its URL's path:
  ``definitions._requests_read.api_of_url``; others are left out) is one call of a
  recording (``definitions.recorded``), as the recorder writes it: ``recording/request``
  (the body decoded, the URL without key parameters, only harmless headers),
  ``recording/response``, the body's SSE frames (with their ``event:`` names as
  ``sse``, ``[DONE]`` as ``done``), event-stream frames or JSON array elements as
  ``recording/event``s, or the whole JSON body as ``recording/body``, then
  ``recording/end``. YAML needs PyYAML (the ``test`` extra): without it, a
  ``LogError`` says what to install. A cassette is read whole, in time linear in its
  size, and bounded: YAML aliases are refused (a kilobyte of aliases can stand for
  gigabytes), a gzip body may inflate to 256 MiB at most, and an interaction whose
  fields have the wrong shape (``request`` a list, ``status.code`` a string) is a
  ``LogError`` naming the file and the interaction.

One deliberate difference from the SDKs: a last SSE frame with no blank line after
it is kept when its data is complete JSON. A live stream must discard it (the
connection may have dropped mid-frame), but a file that simply lacks the final blank
line is a complete recording; when its JSON is cut short it is reported as a
truncated line instead.

Every event of every format is a JSON object: a line, frame or array element holding
another JSON value (``42``, ``"hello"``) is a bad line like a syntax error, named by
file and line and skipped with ``lenient``. A JSON array cut short (a broken download)
gives, with ``lenient``, the complete elements before the cut.

With an event vocabulary (``types``, e.g. ``definitions.builtin.Event``) the events of
its tags come out as its Structs and all others as plain objects (see
``replay.logs._jsonl``). JSON Lines and our log decode typed; SSE frames and JSON arrays are
decoded plain and their events of the vocabulary's tags converted (``msgspec.convert``),
which is slower but those formats are rare for the tagged vocabularies.

Reading in pieces: ``Recording`` reads a file about a megabyte at a time, cut after a
line (after a frame's blank line for SSE; a JSON array is one piece), and each piece
is decoded as a whole file would be, its line numbers counted from the piece's first
line. A log of any size is so folded or stored in bounded memory; ``load_events`` is
the same decoding on one piece holding everything.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import zlib
from collections.abc import Iterator
from typing import IO, Any, Final, Literal, cast, get_args

import attrs
import msgspec

from definitions._requests_read import api_of_url
from definitions.bedrock import EventStreamError, events_from_eventstream, is_eventstream

from .._errors import LogError
from ._jsonl import (
    EventTypes,
    Source,
    decode_lines,
    event_types,
    line_error,
    object_decoder,
    parse_log,
    read_source,
)
from ._secrets import kept_headers, kept_url
from .sessions import TranscriptFormat, read_transcript
from .sessions import detect as detect_session

__all__ = ["Format", "Loaded", "Recording", "load_events", "parse_piece"]

Format = Literal["log", "sse", "json", "jsonl", "eventstream", "cassette"]
_SESSIONS: frozenset[str] = frozenset(get_args(TranscriptFormat))

_BOM = b"\xef\xbb\xbf"
_SSE_FIELD = re.compile(rb"(event|data|id|retry)?:")
_any_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder()


class _Probe(msgspec.Struct):
    # What tells our envelope from a raw provider event: an integer position and an event.
    position: int
    event: msgspec.Raw


_probe_decoder = msgspec.json.Decoder(_Probe)
_array_decoder = msgspec.json.Decoder(list[dict[str, Any]])
_CHUNK = 1 << 20  # bytes read at a time by Recording: pieces of 1 MiB or a little more
_DETECT = 1 << 16  # bytes read at least before the format is told


@attrs.frozen(kw_only=True)
class Loaded:
    """What ``load_events`` read: the detected ``format``, the ``events`` in order, and
    the bad lines or frames it skipped (``problems``; see ``load_events``)."""

    path: str | None
    format: Format | TranscriptFormat
    events: list[Any]
    problems: tuple[LogError, ...] = ()


def load_events(source: Source, *, lenient: bool = False, types: Any = None) -> Loaded:
    """Read a recording in any supported format (detected) and return its raw events.

    Raises ``LogError`` for the first bad line, frame or array unless ``lenient``,
    which skips each bad line or frame and lists it in ``Loaded.problems``. In both
    modes an unterminated bad last line or frame (a crash while writing) is skipped
    and listed. A JSON array is one value: a bad array always raises. A UTF-8 BOM is
    ignored. ``OSError`` passes through.

    ``types``, an event vocabulary (a tagged msgspec Struct or a union of them, such as
    ``definitions.builtin.Event``), decodes the events of its tags to its Structs, for
    definitions that fold those faster; other events stay plain. An event of its tags
    with bad fields is a bad line. ``TypeError`` when ``types`` is not a vocabulary.
    """
    data, path = read_source(source)
    return parse_events(data, path=path, lenient=lenient, types=types)


def parse_events(
    data: bytes, *, path: str | None, lenient: bool = False, types: Any = None
) -> Loaded:
    """``load_events`` on bytes already read; ``path`` names them in messages."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    fmt = _detect(data)
    events, problems = parse_piece(data, fmt, path=path, lenient=lenient, types=types)
    return Loaded(path=path, format=fmt, events=events, problems=tuple(problems))


def parse_piece(
    data: bytes,
    fmt: Format | TranscriptFormat,
    *,
    path: str | None,
    lenient: bool,
    types: Any = None,
    first_line: int = 1,
    final: bool = True,
) -> tuple[list[Any], list[LogError]]:
    """The events and skipped problems of ``data``, a recording in format ``fmt`` or
    a piece of one (from ``Recording.pieces``) starting at line ``first_line``;
    ``final`` is false for a piece that more of the file follows."""
    if fmt == "eventstream":  # binary frames: read whole (Recording cuts no pieces)
        return _load_eventstream(data, path), []
    if fmt == "cassette":  # one document: read whole (Recording cuts no pieces)
        return _load_cassette(data, path), []
    typed = None if types is None else event_types(types)
    if fmt in _SESSIONS:  # an agent session file, imported whole (replay.logs.sessions._thread)
        session = read_transcript(data, path=path, lenient=lenient, format=cast(Any, fmt))
        events: list[Any] = [] if session is None else session.events
        if typed is not None:
            events = [typed.convert(event) for event in events]
        return events, [] if session is None else list(session.problems)
    problems: list[LogError]
    if fmt == "log":
        log = parse_log(
            data, path=path, lenient=lenient, types=types, objects=True, first_line=first_line
        )
        events, problems = log.events(), list(log.problems)
    elif fmt == "json":
        events, problems = _load_array(data, path, lenient, typed)
    elif fmt == "sse":
        events, problems = _load_sse(data, path, lenient, typed, first_line, final)
    else:
        events, problems = decode_lines(
            data,
            object_decoder if typed is None else typed.events,
            path=path,
            lenient=lenient,
            what="JSON event",
            decode=None if typed is None else typed.decode_event,
            first_line=first_line,
        )
    if fmt != "log" and b"ping" in data:  # a byte scan spares most files the check
        events = [e for e in events if not _is_keepalive(e)]
    return events, problems


class Recording:
    """A recording opened to be read in pieces (see the module docstring).

    ``format`` is detected from the first bytes and ``head`` is the first piece, for
    a look at the first events before the whole is read (``detect_protocol``).
    ``pieces()`` gives every piece once, ``head`` first; ``size`` is the file's size
    in bytes when known. ``OSError`` passes through. Close it, or use it as a context
    manager (an open binary file given is not closed).
    """

    def __init__(self, source: Source, *, chunk: int | None = None) -> None:
        self.path: str | None
        self._file: IO[bytes]
        if isinstance(source, str | bytes | os.PathLike):
            self.path = os.fsdecode(source)
            self._file = open(self.path, "rb")  # noqa: SIM115 (closed in close())
            self._owned = True
        else:
            name = getattr(source, "name", None)
            self.path = name if isinstance(name, str) else None
            self._file = source
            self._owned = False
        try:
            self.size: int | None = os.fstat(self._file.fileno()).st_size
        except (OSError, ValueError, io.UnsupportedOperation):
            self.size = None
        chunk = _CHUNK if chunk is None else chunk
        self._chunk = chunk
        self._eof = False
        # Enough for _detect, which looks for the first line that decodes: a line at
        # least, and whatever is read is kept for the first piece.
        self._rest = b""
        while not self._eof and (len(self._rest) < _DETECT or b"\n" not in self._rest):
            more = self._file.read(max(chunk, _DETECT))
            self._rest += more
            self._eof = not more
        if self._rest.startswith(_BOM):
            self._rest = self._rest[len(_BOM) :]
        if _one_value(self._rest):
            # A JSON array or a multi-line object (a .traj) is one piece anyway, and
            # which format it is (a recording, an OpenHands or SWE-agent session)
            # shows only in the whole: read it before telling.
            while not self._eof:
                more = self._file.read(chunk)
                self._rest += more
                self._eof = not more
        self.format: Format | TranscriptFormat = _detect(self._rest)
        self.head = self._next_piece()
        self.whole = self._eof and not self._rest
        """Whether ``head`` is the whole recording."""
        self._read = False

    def pieces(self) -> Iterator[tuple[bytes, int, bool]]:
        """``(data, first_line, final)`` for each piece in order: give them to
        ``parse_piece``. Once only (a pipe cannot be read twice)."""
        if self._read:
            raise RuntimeError("a Recording's pieces are read once")
        self._read = True
        piece, line = self.head, 1
        while True:
            final = self._eof and not self._rest
            yield piece, line, final
            if final:
                return
            line += len(_LINE_BREAK.findall(piece)) if self.format == "sse" else piece.count(b"\n")
            piece = self._next_piece()

    def _next_piece(self) -> bytes:
        # At least one chunk (or the rest of the file), cut after its last boundary.
        buffer = self._rest
        cut = 0
        while not self._eof and not (cut := self._cut(buffer)):
            more = self._file.read(self._chunk)
            if more:
                buffer += more
            else:
                self._eof = True
        if self._eof:
            self._rest = b""
            return buffer
        self._rest = buffer[cut:]
        return buffer[:cut]

    def _cut(self, buffer: bytes) -> int:
        # The first boundary from the chunk size on, so that pieces stay near it.
        start = max(0, self._chunk - 4)
        if self.format in ("json", "eventstream", "cassette") or self.format in _SESSIONS:
            return 0  # one value, binary frames or a session (its chains): one piece
        if self.format == "sse":
            # After a blank line ending in LF (a CR-only file is read as one piece).
            found = [
                at + len(end)
                for end in (b"\n\n", b"\r\n\r\n")
                if (at := buffer.find(end, start)) >= 0
            ]
            return min(found, default=0)
        return buffer.find(b"\n", start) + 1

    def close(self) -> None:
        """Close the file if the recording opened it; idempotent."""
        if self._owned:
            self._file.close()

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _one_value(data: bytes) -> bool:
    """Whether ``data`` opens one JSON value spanning lines (an array, or an object
    whose first line is not a whole JSON Lines record)."""
    if is_eventstream(data):
        return False
    start = data.lstrip()
    if start.startswith(b"[") or _is_cassette(data):
        return True
    if not start.startswith(b"{"):
        return False
    try:
        _any_decoder.decode(start.split(b"\n", 1)[0])
    except (msgspec.DecodeError, RecursionError):
        return True
    return False


def _detect(data: bytes) -> Format | TranscriptFormat:
    # A cassette first (a YAML one is no other format); then our own log; an agent
    # session (its records) before a plain stream.
    if _is_cassette(data):
        return "cassette"
    fmt = _detect_stream(data)
    if fmt != "log":
        return detect_session(data) or fmt
    return fmt


def _detect_stream(data: bytes) -> Format:
    if is_eventstream(data):  # binary frames: checked before any text format
        return "eventstream"
    start = data.lstrip()
    if start.startswith(b"["):
        return "json"
    if _SSE_FIELD.match(start):
        return "sse"
    # JSON Lines: ours when the first line that decodes at all is an envelope. Looking
    # past undecodable lines matters: a recording may open with a cut-off line. Lines
    # are read one at a time: splitting the whole file cost as much as decoding a third.
    for text in io.BytesIO(start):  # each line keeps its b"\n": whitespace to JSON
        try:
            _any_decoder.decode(text)
        except msgspec.DecodeError:
            continue
        try:
            _probe_decoder.decode(text)
        except msgspec.DecodeError:
            return "jsonl"
        return "log"
    return "jsonl"


def _load_eventstream(data: bytes, path: str | None) -> list[Any]:
    try:
        return events_from_eventstream(data)
    except EventStreamError as exc:  # a binary body has no lines: the column is the byte
        where = path or "<bytes>"
        raise LogError(f"{where}: {exc}", path=path, line=1, column=exc.offset + 1) from exc


def _is_keepalive(event: Any) -> bool:
    return type(event) is dict and event.get("type") == "ping"


def _load_array(
    data: bytes, path: str | None, lenient: bool, typed: EventTypes | None
) -> tuple[list[Any], list[LogError]]:
    try:
        events = _array_decoder.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:
        if not lenient:
            raise line_error(exc, data, path=path, line=1, what="JSON array recording") from exc
        return _salvage_array(data, path, typed)
    if typed is None:
        return events, []
    problems: list[LogError] = []
    kept: list[Any] = []
    for index, event in enumerate(events):
        try:
            kept.append(typed.convert(event))
        except msgspec.ValidationError as exc:
            what = f"JSON array recording (event {index})"
            error = line_error(exc, data, path=path, line=1, what=what)
            if not lenient:
                raise error from exc
            problems.append(error)
    return kept, problems


_SPACE = re.compile(r"[ \t\r\n]*")


def _salvage_array(
    data: bytes, path: str | None, typed: EventTypes | None
) -> tuple[list[Any], list[LogError]]:
    """Lenient reading of a bad JSON array: element by element, each bad element
    skipped and reported, and everything before a cut (the input ends inside an
    element) kept, as the complete lines before a torn last line are. A syntax error
    between elements ends the reading there, reported."""
    text = data.decode("utf-8", "replace")
    scan = json.JSONDecoder().raw_decode  # only finds where each element ends
    events: list[Any] = []
    problems: list[LogError] = []

    def skip(at: int) -> int:
        return _SPACE.match(text, at).end()  # type: ignore[union-attr]  # matches ""

    def report(exc: msgspec.DecodeError | RecursionError, at: int, what: str) -> None:
        line = text.count("\n", 0, at) + 1
        column = at - (text.rfind("\n", 0, at) + 1) + 1
        rest = text[at:].encode()
        problems.append(line_error(exc, rest, path=path, line=line, column=column, what=what))

    at = skip(skip(0) + 1)  # past "["
    index = 0
    while not text.startswith("]", at):
        what = f"JSON array recording (event {index})"
        try:
            _, end = scan(text, at)
        except (json.JSONDecodeError, RecursionError):
            try:  # cut short or broken: msgspec's decode of the rest says which
                object_decoder.decode(text[at:])
            except (msgspec.DecodeError, RecursionError) as exc:
                report(exc, at, what)
            break
        try:
            event = object_decoder.decode(text[at:end])
            events.append(event if typed is None else typed.convert(event))
        except (msgspec.DecodeError, RecursionError) as exc:
            report(exc, at, what)
        index += 1
        at = skip(end)
        if text.startswith(",", at):
            at = skip(at + 1)
        elif not text.startswith("]", at):
            found = repr(text[at]) if at < len(text) else "the end of the input"
            problem = msgspec.DecodeError(f"expected ',' or ']' after an element, found {found}")
            report(problem, at, f"JSON array recording (after event {index - 1})")
            break
    return events, problems


_LINE_BREAK = re.compile(rb"\r\n|\r|\n")


def _sse_frames(
    data: bytes, first_line: int = 1, final: bool = True
) -> Iterator[tuple[str | None, bytes, tuple[int, int], int, bool]]:
    """Each frame of an SSE text with data: ``(name, data, (line, column) where the
    data starts, line of its end, truncated)``; ``data:`` lines joined with ``"\\n"``.
    Frames without data (comments, a name alone) are not dispatched."""
    name: str | None = None
    payload: list[bytes] = []
    first = (0, 1)
    lines = _LINE_BREAK.split(data)
    for number, raw in enumerate(lines, start=first_line):
        if not raw:
            if payload:
                yield name, b"\n".join(payload), first, number, False
            name, payload = None, []
            continue
        if raw.startswith(b":"):
            continue
        field, _, value = raw.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if field == b"data":
            if not payload:
                first = (number, len(raw) - len(value) + 1)
            payload.append(value)
        elif field == b"event":
            name = value.decode("utf-8", "replace")
        # id, retry and unknown fields do not change the events.
    if payload:
        # No blank line after the last frame: see the module docstring. (A piece that
        # more follows ends after a blank line: never here.)
        yield name, b"\n".join(payload), first, first_line + len(lines) - 1, final


def _load_sse(
    data: bytes,
    path: str | None,
    lenient: bool,
    typed: EventTypes | None,
    first_line: int = 1,
    final: bool = True,
) -> tuple[list[Any], list[LogError]]:
    events: list[Any] = []
    problems: list[LogError] = []
    for name, text, first, line, truncated in _sse_frames(data, first_line, final):
        if not text or text.startswith(b"[DONE]") or name == "ping":
            continue
        try:
            event = object_decoder.decode(text)
            if name and "type" not in event:
                event["type"] = name
            if typed is not None:
                event = typed.convert(event)  # after naming: the name may be its tag
        except (msgspec.DecodeError, RecursionError) as exc:  # ValidationError too
            error = line_error(
                exc,
                text,
                path=path,
                line=first[0],
                column=first[1],
                what=f"SSE frame data (frame ending at line {line})",
                truncated=truncated,
            )
            if not (lenient or truncated):
                raise error from exc
            problems.append(error)
            continue
        events.append(event)
    return events, problems


# -- VCR cassettes --------------------------------------------------------------------

_YAML_CASSETTE = re.compile(rb"\A(?:\s*(?:#[^\n]*)?\n)*(?:---\s*\n)?interactions:")
_JSON_CASSETTE = re.compile(rb'\A\s*\{\s*"(?:interactions|version)"')


def _is_cassette(data: bytes) -> bool:
    """Whether ``data`` opens a VCR cassette: YAML whose first key is
    ``interactions``, or the JSON serializer's object (which pytest-recording writes
    with ``interactions`` and ``version``)."""
    head = data[:_DETECT]
    if _YAML_CASSETTE.match(head):
        return True
    return bool(_JSON_CASSETTE.match(head)) and b'"interactions"' in data


def _cassette(data: bytes, path: str | None) -> Any:
    where = path or "<bytes>"
    if data.lstrip().startswith(b"{"):
        try:
            return _any_decoder.decode(data)
        except (msgspec.DecodeError, RecursionError) as exc:  # nested too deep: RecursionError
            raise line_error(exc, data, path=path, line=1, what="JSON cassette") from exc
    try:
        import yaml  # type: ignore[import-untyped, unused-ignore]
    except ImportError:  # optional: only the test extra installs it
        raise LogError(
            f"{where}: reading a YAML cassette needs PyYAML: pip install pyyaml "
            "(or the test extra: pip install 'convo-engine[test]')",
            path=path,
            line=1,
            column=1,
        ) from None
    try:
        return yaml.load(data, Loader=_yaml_loader(yaml))  # safe: see _yaml_loader
    except RecursionError:
        raise LogError(
            f"{where}: not a YAML cassette: nested too deep", path=path, line=1, column=1
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        raise LogError(
            f"{where}:{line}: not a YAML cassette: {exc}", path=path, line=line, column=1
        ) from exc


_LOADER: list[Any] = []  # the loader class, made once PyYAML is imported


def _yaml_loader(yaml: Any) -> Any:
    """PyYAML's safe loader (its C parser where built) refusing aliases: an alias makes
    one node stand for a copy of another, and a few hundred bytes of aliases of aliases
    (a "billion laughs") stand for more data than any machine holds. VCR.py writes none
    for the interactions it records, each built afresh."""
    if not _LOADER:
        base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

        class Loader(base):  # type: ignore[misc, valid-type]
            def construct_object(self, node: Any, deep: bool = False) -> Any:
                # A node met a second time is an alias (or a recursive one): refused.
                if node in self.constructed_objects or node in self.recursive_objects:
                    raise yaml.constructor.ConstructorError(
                        None,
                        None,
                        "a YAML alias (*name) is not read in a cassette (it could stand "
                        "for more data than fits in memory)",
                        node.start_mark,
                    )
                return super().construct_object(node, deep)

        _LOADER.append(Loader)
    return _LOADER[0]


def _load_cassette(data: bytes, path: str | None) -> list[Any]:
    """The recording events of a cassette's model calls (see the module docstring)."""
    document = _cassette(data, path)
    interactions = document.get("interactions") if isinstance(document, dict) else None
    where = path or "<bytes>"
    if not isinstance(interactions, list):
        raise LogError(
            f"{where}: a cassette needs an 'interactions' list", path=path, line=1, column=1
        )
    events: list[Any] = []
    call = 0
    for index, interaction in enumerate(interactions):
        try:
            records = _interaction(interaction, call)
        except _Malformed as exc:
            raise LogError(
                f"{where}: interaction {index}: {exc}", path=path, line=1, column=1
            ) from None
        call += bool(records)
        events += records
    return events


class _Malformed(Exception):
    """What is wrong with an interaction (the caller names the file and interaction)."""


def _field(mapping: dict[str, Any], key: str, kinds: type | tuple[type, ...], what: str) -> Any:
    """``mapping[key]`` when absent, null or of ``kinds``; else ``_Malformed``."""
    value = mapping.get(key)
    if value is None or (isinstance(value, kinds) and not isinstance(value, bool)):
        return value
    raise _Malformed(f"{what}.{key} is {type(value).__name__} {_short(value)}, not {_kinds(kinds)}")


def _kinds(kinds: type | tuple[type, ...]) -> str:
    names = {dict: "a mapping", str: "a string", bytes: "bytes", int: "an integer"}
    each = kinds if isinstance(kinds, tuple) else (kinds,)
    return " or ".join(names.get(kind, kind.__name__) for kind in each)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _str(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


_INFLATED_MAX = 256 << 20
"""The most bytes a cassette's gzip body may inflate to: a few megabytes of zeros
inflate to gigabytes (a "gzip bomb"); no model answer comes near this."""


def _bytes(body: Any, what: str) -> bytes:
    """A cassette body (a string, bytes, or ``{"string": ...}``, ``{"base64_string":
    ...}``) as bytes, gunzipped (at most ``_INFLATED_MAX`` bytes)."""
    if isinstance(body, dict):
        if body.get("base64_string") is not None:
            encoded = _field(body, "base64_string", (str, bytes), f"{what}.body")
            try:
                body = base64.b64decode(encoded)
            except ValueError as exc:
                raise _Malformed(f"{what}.body.base64_string is not base64: {exc}") from None
        else:
            body = _field(body, "string", (str, bytes), f"{what}.body")
    elif body is not None and not isinstance(body, str | bytes):
        raise _Malformed(f"{what}.body is {type(body).__name__}, not a string, bytes or mapping")
    if body is None:
        return b""
    raw = body if isinstance(body, bytes) else body.encode("utf-8", "surrogatepass")
    if raw.startswith(b"\x1f\x8b"):
        inflate = zlib.decompressobj(wbits=31)
        try:
            raw = inflate.decompress(raw, _INFLATED_MAX)
        except zlib.error as exc:
            raise _Malformed(f"{what}.body is not valid gzip: {exc}") from None
        if inflate.unconsumed_tail:
            raise _Malformed(
                f"{what}.body inflates to more than {_INFLATED_MAX >> 20} MiB (a gzip bomb?)"
            )
    return raw


def _decoded(raw: bytes) -> Any:
    try:
        return _any_decoder.decode(raw) if raw.strip() else None
    except (msgspec.DecodeError, RecursionError):
        return _NOT_JSON


_NOT_JSON: Final = object()


def _interaction(interaction: Any, call: int) -> list[dict[str, Any]]:
    """The records of one interaction as call ``call``, or none when it is not a model
    call; ``_Malformed`` when a field has the wrong shape."""
    if not isinstance(interaction, dict):
        raise _Malformed(f"is {type(interaction).__name__}, not a mapping")
    request = _field(interaction, "request", dict, "interaction") or {}
    response = _field(interaction, "response", dict, "interaction") or {}
    url = _field(request, "uri", str, "request") or _field(request, "url", str, "request") or ""
    api = api_of_url(url)
    if api is None:
        return []  # not a model call (a token fetch, a file upload)
    body = request.get("parsed_body")
    if body is None:
        decoded = _decoded(_bytes(request.get("body"), "request"))
        body = None if decoded is _NOT_JSON else decoded
    stream = bool(isinstance(body, dict) and body.get("stream")) or url.split("?")[0].endswith(
        (":streamGenerateContent", "/converse-stream")
    )
    out: list[dict[str, Any]] = [
        {
            "type": "recording/request",
            "call": call,
            "api": api,
            "method": _str(_field(request, "method", (str, bytes), "request") or "POST"),
            "url": kept_url(url),
            "headers": kept_headers(_field(request, "headers", dict, "request"), response=False),
            "body": body,
            "stream": stream,
        }
    ]
    status = response.get("status")
    code = (
        _field(status, "code", int, "response.status")
        if isinstance(status, dict)
        else _field(response, "status", int, "response")
    )
    headers = kept_headers(_field(response, "headers", dict, "response"), response=True)
    out.append({"type": "recording/response", "call": call, "status": code, "headers": headers})
    raw = _bytes(response.get("body"), "response")
    kind = headers.get("content-type", "")
    parsed = response.get("parsed_body")  # a serializer that stores the JSON parsed
    if isinstance(parsed, dict | list) and not raw.strip():
        raw = msgspec.json.encode(parsed)
    if "event-stream" in kind and not raw.lstrip().startswith((b"{", b"[")):
        out += _sse_records(raw, call)
    elif is_eventstream(raw):
        try:
            frames = events_from_eventstream(raw)
        except EventStreamError as exc:  # the call shows as cut there, not the file as bad
            error = f"EventStreamError: {exc}"
            out.append({"type": "recording/end", "call": call, "complete": False, "error": error})
            return out
        out += [{"type": "recording/event", "call": call, "event": e} for e in frames]
    else:
        decoded = _decoded(raw)
        if decoded is _NOT_JSON:
            out.append(
                {"type": "recording/body", "call": call, "text": raw.decode("utf-8", "replace")}
            )
        elif isinstance(decoded, list) and stream and (code or 200) < 400:
            out += [{"type": "recording/event", "call": call, "event": e} for e in decoded]
        elif decoded is not None:
            out.append({"type": "recording/body", "call": call, "body": decoded})
    out.append({"type": "recording/end", "call": call, "complete": True})
    return out


def _sse_records(raw: bytes, call: int) -> list[dict[str, Any]]:
    """An SSE body's frames as ``recording/event`` records, as the recorder writes
    them: the event's JSON with its ``event:`` name (``sse``; the Anthropic SDK skips an
    unnamed event), ``done`` for ``[DONE]``, ``text`` for data that is not JSON."""
    records: list[dict[str, Any]] = []
    for name, text, _, _, _ in _sse_frames(raw):
        record: dict[str, Any] = {"type": "recording/event", "call": call}
        if text == b"[DONE]":
            record["done"] = True
        else:
            event = _decoded(text)
            if event is _NOT_JSON:
                record["text"] = text.decode("utf-8", "replace")
            else:
                record["event"] = event
        if name:
            record["sse"] = name
        records.append(record)
    return records
