"""What every session importer shares: threads, the emitter of built-in events, and
the line reader that names the line at fault. See the package docstring for how a
session becomes events."""

from __future__ import annotations

import json
from typing import Any, Final, Literal

import attrs
import msgspec

from ..._errors import LogError
from .._jsonl import describe, each_line

__all__ = [
    "MODEL_EVENT",
    "Emitter",
    "Line",
    "Thread",
    "Transcript",
    "TranscriptFormat",
    "action_of",
    "bad_record",
    "json_lines",
    "reject",
    "text_of",
]

TranscriptFormat = Literal["claude-code", "codex", "openhands", "swe-agent", "chatgpt", "claude-ai"]

any_decoder: Final[msgspec.json.Decoder[Any]] = msgspec.json.Decoder()

MODEL_EVENT: Final = "session.model"
"""The type of the event naming the model a session's next turns were made with
(``model``) and the gateway it is a model of (``provider``: ``anthropic``,
``openai-responses``, ...; "" when the session does not say): written where the
session first names it or names another. No definition folds it (it is not
conversation); ``convo context`` carries the latest one as a recorded request's
model."""


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


# litellm's provider prefix of a model name -> the gateway the model is reached through.
_LITELLM: Final = {
    "anthropic": "anthropic",
    "openai": "openai-chat",
    "azure": "openai-chat",
    "openrouter": "openai-chat",
    "gemini": "gemini",
    "bedrock": "bedrock",
}


class Emitter:
    """Builds one thread's events and keeps the one structural rule every format
    shares: a call left unanswered when the conversation moves on is ``cut``."""

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix
        self.events: list[dict[str, Any]] = []
        self._pending: dict[str, None] = {}  # calls without an outcome, in order
        self._seen: set[str] = set()
        self._marks = 0
        self._model: tuple[str, str] = ("", "")  # the last model named, and its provider

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

    def model(self, name: object, provider: str) -> None:
        """The model the next turns are made with (``MODEL_EVENT``), when it is one
        (a non-empty string) other than the last one named."""
        if not isinstance(name, str) or not name or (name, provider) == self._model:
            return
        self._model = (name, provider)
        self.events.append({"type": MODEL_EVENT, "model": name, "provider": provider})

    def litellm_model(self, model: object) -> None:
        """``model`` as litellm names it (OpenHands', SWE-agent's): the name sent and,
        by its provider prefix (``openai/NAME``: NAME on an OpenAI-compatible
        endpoint), the gateway it goes through; none said for a bare name."""
        if not isinstance(model, str):
            return
        prefix, slash, name = model.partition("/")
        if slash and prefix in _LITELLM:
            self.model(name, _LITELLM[prefix])
        else:
            self.model(model, "")

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

    def compaction(self, id: str, fields: dict[str, Any]) -> None:
        """A ``compaction.mark`` with ``fields`` (``definitions.compaction``); the
        history before it is summarised, so unanswered calls are cut first."""
        self.cut_pending()
        self.events.append({"type": "compaction.mark", "id": self.unique(id), **fields})

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
    ``replay.logs._jsonl.decode_lines`` each value keeps its line number, for the errors a
    reader finds in it later."""
    problems: list[LogError] = []
    numbered = each_line(
        data, any_decoder.decode, problems, path=path, lenient=lenient, what="session record"
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
