"""Which session format a file is in, and reading it with that format's importer.

The importers are imported on first use, so reading one format loads only its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import msgspec

from ..._errors import LogError
from ._thread import Thread, Transcript, TranscriptFormat, any_decoder

__all__ = ["detect", "read_transcript"]

_CLAUDE_TYPES: Final = frozenset({"user", "assistant", "system", "summary", "attachment"})
_CODEX_TYPES: Final = frozenset({"session_meta", "response_item", "event_msg", "turn_context"})
_SCAN: Final = 20

# OpenHands V1 event classes a conversation's stream holds (its ``kind`` field).
_V1_KINDS: Final = frozenset(
    {"SystemPromptEvent", "MessageEvent", "ActionEvent", "ObservationEvent", "Condensation"}
)


def _classify(record: Any) -> TranscriptFormat | None:
    if not isinstance(record, dict):
        return None
    kind = record.get("type")
    if not isinstance(kind, str | None):
        return None  # a list or object "type" is nobody's record (and unhashable)
    if kind in _CODEX_TYPES and isinstance(record.get("payload"), dict):
        return "codex"
    if "parentUuid" in record or "leafUuid" in record or kind == "file-history-snapshot":
        return "claude-code"
    if kind in _CLAUDE_TYPES and "sessionId" in record:
        return "claude-code"
    history = record.get("history")
    if isinstance(history, list) and history and _is_openhands_event(history[0]):
        return "openhands"
    if _is_openhands_event(record):
        return "openhands"
    return None


def _is_openhands_event(event: Any) -> bool:
    # V0: "action"/"observation" name the event; V1: "kind" names its class.
    return (
        isinstance(event, dict)
        and "source" in event
        and ("action" in event or "observation" in event or _v1_kind(event))
        and "id" in event
    )


def _v1_kind(event: dict[str, Any]) -> bool:
    kind = event.get("kind")
    return isinstance(kind, str) and kind in _V1_KINDS


def _export(conversation: Any) -> TranscriptFormat | None:
    """A chat export's conversation: ChatGPT's (a ``mapping`` tree) or Claude.ai's."""
    if isinstance(conversation, dict):
        if isinstance(conversation.get("mapping"), dict) and "current_node" in conversation:
            return "chatgpt"
        if isinstance(conversation.get("chat_messages"), list):
            return "claude-ai"
    return None


def detect(data: bytes) -> TranscriptFormat | None:
    """The session format of ``data``, or ``None`` when it is none of them (then it
    is a recording ``load_events`` reads as before)."""
    start = data.lstrip()
    if start.startswith(b"{"):
        # One JSON object for the whole file (a .traj); a JSON Lines file fails fast,
        # right after its first line.
        try:
            whole = any_decoder.decode(start)
        except (msgspec.DecodeError, RecursionError):  # deep nesting: not a session
            whole = None
        if isinstance(whole, dict) and isinstance(whole.get("trajectory"), list):
            return "swe-agent"
        if (found := _export(whole)) is not None:
            return found
    if start.startswith(b"["):
        try:
            array = any_decoder.decode(start)
        except (msgspec.DecodeError, RecursionError):  # deep nesting: not a session
            return None
        if isinstance(array, list) and array and _is_openhands_event(array[0]):
            return "openhands"
        return _export(array[0] if isinstance(array, list) and array else None)
    seen = 0
    for text in start.split(b"\n", 200)[:200]:
        if seen >= _SCAN:
            break
        try:
            record = any_decoder.decode(text)
        except (msgspec.DecodeError, RecursionError):  # deep nesting: not a session
            continue
        seen += 1
        found = _classify(record)
        if found is not None:
            return found
    return None


Reader = Callable[[bytes, str | None, bool], tuple[list[Thread], list[LogError]]]


def _reader(fmt: TranscriptFormat) -> Reader:
    if fmt == "claude-code":
        from ._claude import read

        return read
    if fmt == "codex":
        from ._codex import read

        return read
    if fmt == "openhands":
        from ._openhands import read

        return read
    if fmt == "chatgpt":
        from ._exports import read_chatgpt

        return read_chatgpt
    if fmt == "claude-ai":
        from ._exports import read_claude_ai

        return read_claude_ai
    from ._sweagent import read

    return read


def read_transcript(
    data: bytes, *, path: str | None, lenient: bool = False, format: TranscriptFormat | None = None
) -> Transcript | None:
    """``data`` read as an agent session (its format detected unless given), or
    ``None`` when it is not one. Raises ``LogError`` for a bad line (see
    ``json_lines``) or a record the format forbids."""
    fmt = format or detect(data)
    if fmt is None:
        return None
    threads, problems = _reader(fmt)(data, path, lenient)
    return Transcript(path=path, format=fmt, threads=tuple(threads), problems=tuple(problems))
