"""Recordings as they come: our log, SSE text, JSON arrays, JSON Lines of raw events.

``load_events`` detects the format from the first bytes and returns the raw events
in order, as plain Python objects, the same lists the provider SDKs' readers hand to
their accumulators (the reference oracles in ``../shared/oracles``), or, for an agent
session file (Claude Code, Codex CLI, OpenHands, SWE-agent; ``TranscriptFormat``), the
built-in events of its primary conversation (``replay._transcripts``):

- SSE: frames end at a blank line (LF, CRLF or CR); ``:`` lines are comments;
  ``data:`` lines of one frame are joined with ``"\\n"``; ``ping`` frames, frames
  without data and ``data: [DONE]`` are dropped; a named frame whose JSON object has
  no ``"type"`` gets the frame's name as its type (as openai's reader does).
- every raw provider format: ``{"type": "ping"}`` keep-alives are dropped (as
  anthropic's reader does); everything else passes through untouched.
- our own log (``{"position": ..., "event": ...}`` lines): the events, untouched.

One deliberate difference from the SDKs: a last SSE frame with no blank line after
it is kept when its data is complete JSON. A live stream must discard it (the
connection may have dropped mid-frame), but a file that simply lacks the final blank
line is a complete recording; when its JSON is cut short it is reported as a
truncated line instead.

With an event vocabulary (``types``, e.g. ``definitions.builtin.Event``) the events of
its tags come out as its Structs and all others as plain objects (see
``replay._log``). JSON Lines and our log decode typed; SSE frames and JSON arrays are
decoded plain and their events of the vocabulary's tags converted (``msgspec.convert``),
which is slower but those formats are rare for the tagged vocabularies.
"""

from __future__ import annotations

import io
import re
from typing import Any, Literal

import attrs
import msgspec

from ._errors import LogError
from ._log import (
    EventTypes,
    Source,
    decode_lines,
    event_types,
    line_error,
    parse_log,
    read_source,
)
from ._transcripts import TranscriptFormat, read_transcript

__all__ = ["Format", "Loaded", "load_events"]

Format = Literal["log", "sse", "json", "jsonl"]

_BOM = b"\xef\xbb\xbf"
_SSE_FIELD = re.compile(rb"(event|data|id|retry)?:")
_any_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder()


class _Probe(msgspec.Struct):
    # What tells our envelope from a raw provider event: an integer position and an event.
    position: int
    event: msgspec.Raw


_probe_decoder = msgspec.json.Decoder(_Probe)
_array_decoder = msgspec.json.Decoder(list[Any])


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
    typed = None if types is None else event_types(types)
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    fmt = _detect(data)
    if fmt == "log":
        log = parse_log(data, path=path, lenient=lenient, types=types)
        return Loaded(path=path, format=fmt, events=log.events(), problems=log.problems)
    session = read_transcript(data, path=path, lenient=lenient)
    if session is not None:  # an agent session file, imported (replay._transcripts)
        events: list[Any] = session.events
        if typed is not None:
            events = [typed.convert(event) for event in events]
        return Loaded(path=path, format=session.format, events=events, problems=session.problems)
    problems: list[LogError]
    if fmt == "json":
        events = _load_array(data, path, typed)
        problems = []
    elif fmt == "sse":
        events, problems = _load_sse(data, path, lenient, typed)
    else:
        events, problems = decode_lines(
            data,
            _any_decoder if typed is None else typed.events,
            path=path,
            lenient=lenient,
            what="JSON event",
            decode=None if typed is None else typed.decode_event,
        )
    if b"ping" in data:  # a byte scan spares the per-event check in most files
        events = [e for e in events if not _is_keepalive(e)]
    return Loaded(path=path, format=fmt, events=events, problems=tuple(problems))


def _detect(data: bytes) -> Format:
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


def _is_keepalive(event: Any) -> bool:
    return type(event) is dict and event.get("type") == "ping"


def _load_array(data: bytes, path: str | None, typed: EventTypes | None) -> list[Any]:
    try:
        events = _array_decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise line_error(exc, data, path=path, line=1, what="JSON array recording") from exc
    if typed is None:
        return events
    for index, event in enumerate(events):
        try:
            events[index] = typed.convert(event)
        except msgspec.ValidationError as exc:
            what = f"JSON array recording (event {index})"
            raise line_error(exc, data, path=path, line=1, what=what) from exc
    return events


_LINE_BREAK = re.compile(rb"\r\n|\r|\n")


def _load_sse(
    data: bytes, path: str | None, lenient: bool, typed: EventTypes | None
) -> tuple[list[Any], list[LogError]]:
    events: list[Any] = []
    problems: list[LogError] = []
    name: str | None = None
    payload: list[bytes] = []
    first = (0, 1)  # line and column where the frame's data starts

    def dispatch(line: int, truncated: bool) -> None:
        text = b"\n".join(payload)
        if not text or text.startswith(b"[DONE]") or name == "ping":
            return
        try:
            event = _any_decoder.decode(text)
            if name and type(event) is dict and "type" not in event:
                event["type"] = name
            if typed is not None:
                event = typed.convert(event)  # after naming: the name may be its tag
        except msgspec.DecodeError as exc:  # ValidationError from convert too
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
            return
        events.append(event)

    lines = _LINE_BREAK.split(data)
    for number, raw in enumerate(lines, start=1):
        if not raw:
            dispatch(number, truncated=False)
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
        # No blank line after the last frame: see the module docstring.
        dispatch(len(lines), truncated=True)
    return events, problems
