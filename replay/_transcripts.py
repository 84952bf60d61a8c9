"""Real agent sessions as logs: detection, threads, and the events importers emit.

Theory of operation
-------------------
Four harnesses write sessions we read: Claude Code (session JSONL), Codex CLI
(rollout JSONL), OpenHands (event streams) and SWE-agent (``.traj``). Each
importer (``replay._import_*``) turns one file into ``Thread``\\ s of built-in
events, the same kinds a live agent logs (``definitions.builtin``):

- a user or system turn is a ``message`` (start with its text, end);
- a model turn is its ``reasoning`` blocks (a provider signature or encrypted
  payload as ``reasoning.redacted`` with ``variant="encrypted"``), its text as a
  ``message`` and its ``tool_call``\\ s (arguments as one delta of JSON text), in
  the order the harness recorded them;
- a tool's outcome is ``tool_call.result`` (strings and lists as recorded),
  ``tool_call.error``, or, for a refused call, ``approval.request`` +
  ``approval.decision`` (``denied``) + ``tool_call.denied``;
- an interruption is an ``interruption.mark`` (``definitions.interruption``).

Which fields decide a denial or an interruption is said in each importer; every
one of them is a structural marker the harness writes, never a match on free
text. A call still unanswered when the conversation moves on (the next user turn
or model turn) is marked ``cut`` by ``Emitter`` itself: that is structure too.

A file may hold several conversations (Claude Code sub-agents, the runs of an
OpenHands evaluation): each is a ``Thread``; the first is the primary one, the
session the file is about, and ``load_events`` returns its events. Records that
are not conversation (summaries, hook notices, snapshots, token counts, ...)
are left out of every thread, never an error.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final, Literal

import attrs
import msgspec

from ._errors import LogError
from ._log import describe, each_line

__all__ = [
    "Emitter",
    "Line",
    "Thread",
    "Transcript",
    "TranscriptFormat",
    "detect",
    "read_transcript",
]

TranscriptFormat = Literal["claude-code", "codex", "openhands", "swe-agent"]

_any: Final[msgspec.json.Decoder[Any]] = msgspec.json.Decoder()


@attrs.frozen(kw_only=True)
class Thread:
    """One conversation of a session file: its ``name`` and its built-in events."""

    name: str
    events: list[dict[str, Any]]


@attrs.frozen(kw_only=True)
class Transcript:
    """What an importer read: the ``format``, the threads (primary first) and the
    lines it skipped (lenient mode)."""

    path: str | None
    format: TranscriptFormat
    threads: tuple[Thread, ...]
    problems: tuple[LogError, ...] = ()

    @property
    def events(self) -> list[dict[str, Any]]:
        """The primary thread's events (empty for a session with no conversation)."""
        return self.threads[0].events if self.threads else []


class Emitter:
    """Builds one thread's events and keeps the one structural rule every format
    shares: a call left unanswered when the conversation moves on is ``cut``."""

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix
        self.events: list[dict[str, Any]] = []
        self._pending: dict[str, None] = {}  # calls without an outcome, in order
        self._seen: set[str] = set()
        self._marks = 0

    def _id(self, raw: str) -> str:
        return self.prefix + raw

    def unique(self, raw: str) -> str:
        """``raw`` (prefixed), or ``raw#2``, ``raw#3``... when a node of that id exists:
        harnesses repeat ids (a re-sent message), and a repeated start would reopen it."""
        candidate, n = self._id(raw), 1
        while candidate in self._seen:
            n += 1
            candidate = f"{self._id(raw)}#{n}"
        self._seen.add(candidate)
        return candidate

    def cut_pending(self) -> None:
        """Mark every call still without an outcome as cut (the conversation moved on)."""
        for call in list(self._pending):
            self.interruption("cut", tool_call_id=call)
        self._pending.clear()

    def message(self, id: str, role: str, text: str) -> None:
        """A whole message; a user or system turn first cuts unanswered calls."""
        if role != "assistant":
            self.cut_pending()
        node = self.unique(id)
        self.events.append({"type": "message.start", "id": node, "role": role, "text": text})
        self.events.append({"type": "message.end", "id": node})

    def reasoning(
        self, id: str, text: str, *, encrypted: str = "", redacted: str | None = None
    ) -> None:
        """A reasoning block: visible ``text``, an opaque ``encrypted`` payload (a
        signature or encrypted content) or a provider-``redacted`` one."""
        node = self.unique(id)
        self.events.append({"type": "reasoning.start", "id": node})
        if text:
            self.events.append({"type": "reasoning.delta", "id": node, "text": text})
        if redacted is not None:
            self.events.append(
                {"type": "reasoning.redacted", "id": node, "variant": "redacted", "data": redacted}
            )
        elif encrypted:
            self.events.append(
                {
                    "type": "reasoning.redacted",
                    "id": node,
                    "variant": "encrypted",
                    "data": encrypted,
                }
            )
        self.events.append({"type": "reasoning.end", "id": node})

    def call(self, id: str, name: str, arguments: Any) -> str:
        """A tool call; ``arguments`` is JSON text or a value to encode as JSON.
        Returns the call's node id, for its outcome."""
        node = self.unique(id)
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        self.events.append({"type": "tool_call.start", "id": node, "name": name})
        self.events.append({"type": "tool_call.arguments_delta", "id": node, "text": text})
        self.events.append({"type": "tool_call.arguments_end", "id": node})
        self._pending[node] = None
        return node

    def pending(self, node: str) -> bool:
        """Whether call ``node`` is waiting for its outcome."""
        return node in self._pending

    def result(self, node: str, output: Any) -> None:
        """Call ``node`` returned ``output``."""
        self._pending.pop(node, None)
        self.events.append({"type": "tool_call.result", "id": node, "output": output})

    def error(self, node: str, message: str) -> None:
        """Call ``node`` failed with ``message`` (what the model was told)."""
        self._pending.pop(node, None)
        self.events.append({"type": "tool_call.error", "id": node, "message": message})

    def denied(self, node: str, action: str, reason: str, by: str) -> None:
        """Call ``node`` was refused: the approval kind's request and decision, and the
        call's own denial."""
        self._pending.pop(node, None)
        approval = self.unique(f"approval:{node}")
        self.events.append(
            {"type": "approval.request", "id": approval, "action": action, "tool_call_id": node}
        )
        self.events.append(
            {
                "type": "approval.decision",
                "id": approval,
                "decision": "denied",
                "by": by,
                "reason": reason,
            }
        )
        self.events.append({"type": "tool_call.denied", "id": node, "reason": reason})

    def interruption(self, cause: str, *, tool_call_id: str | None = None, text: str = "") -> None:
        """An ``interruption.mark``; a ``user`` interruption cuts unanswered calls."""
        if cause == "user":
            self.cut_pending()
        self._marks += 1
        mark: dict[str, Any] = {
            "type": "interruption.mark",
            "id": self.unique(f"interruption-{self._marks}"),
            "cause": cause,
        }
        if tool_call_id is not None:
            mark["tool_call_id"] = tool_call_id
        if text:
            mark["text"] = text
        self.events.append(mark)


def action_of(name: str, arguments: Any) -> str:
    """What a refused call would have done, for the approval's ``action``: the tool
    and its command or arguments, on one line."""
    if isinstance(arguments, dict):
        command = arguments.get("command")
        if isinstance(command, list):
            command = " ".join(str(part) for part in command)
        if isinstance(command, str):
            return f"{name}: {command}"
        return f"{name} {json.dumps(arguments, ensure_ascii=False)}"
    return f"{name} {arguments}"


def text_of(content: Any) -> str:
    """The text of content given as a string or a list of typed parts (``text``,
    ``input_text``, ``output_text``): other parts are not text and are left out."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = [
        part["text"]
        for part in content
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    ]
    return "\n".join(texts)


# -- reading and detection ----------------------------------------------------------------


class Line(msgspec.Struct, frozen=True):
    """A decoded line of a session file: its ``number`` (from 1) and ``value``."""

    number: int
    value: Any


def json_lines(data: bytes, path: str | None, lenient: bool) -> tuple[list[Line], list[LogError]]:
    """Every non-blank line of ``data`` decoded, with the bad ones as errors: fatal
    unless ``lenient``, except an unterminated last line (a torn write). Unlike
    ``replay._log.decode_lines`` each value keeps its line number, for the errors a
    reader finds in it later."""
    problems: list[LogError] = []
    numbered = each_line(
        data, _any.decode, problems, path=path, lenient=lenient, what="session record"
    )
    return [Line(number, value) for number, value in numbered], problems


def reject(error: LogError, problems: list[LogError], *, lenient: bool) -> None:
    """Raise ``error``, or, when ``lenient``, list it in ``problems`` and go on."""
    if not lenient:
        raise error
    problems.append(error)


def bad_record(path: str | None, line: int, reason: str) -> LogError:
    """A record that decodes as JSON but not as the format says it must be."""
    return LogError(f"{describe(path, line, 1)}: {reason}", path=path, line=line, column=1)


_CLAUDE_TYPES: Final = frozenset({"user", "assistant", "system", "summary", "attachment"})
_CODEX_TYPES: Final = frozenset({"session_meta", "response_item", "event_msg", "turn_context"})
_SCAN: Final = 20


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
    return (
        isinstance(event, dict)
        and "source" in event
        and ("action" in event or "observation" in event)
        and "id" in event
    )


def detect(data: bytes) -> TranscriptFormat | None:
    """The session format of ``data``, or ``None`` when it is none of them (then it
    is a recording ``load_events`` reads as before)."""
    start = data.lstrip()
    if start.startswith(b"{"):
        # One JSON object for the whole file (a .traj); a JSON Lines file fails fast,
        # right after its first line.
        try:
            whole = _any.decode(start)
        except (msgspec.DecodeError, RecursionError):  # deep nesting: not a session
            whole = None
        if isinstance(whole, dict) and isinstance(whole.get("trajectory"), list):
            return "swe-agent"
    if start.startswith(b"["):
        try:
            array = _any.decode(start)
        except (msgspec.DecodeError, RecursionError):  # deep nesting: not a session
            return None
        if isinstance(array, list) and array and _is_openhands_event(array[0]):
            return "openhands"
        return None
    seen = 0
    for text in start.split(b"\n", 200)[:200]:
        if seen >= _SCAN:
            break
        try:
            record = _any.decode(text)
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
        from ._import_claude import read

        return read
    if fmt == "codex":
        from ._import_codex import read

        return read
    if fmt == "openhands":
        from ._import_openhands import read

        return read
    from ._import_sweagent import read

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
