"""The conversation as generic messages: nodes of the view projection -> ``Message``s.

Reads node states only (never events), for the built-in kinds and for the protocol
sets, in log order:

- built-in kinds: a user or system ``message`` is a caller turn. A model turn is
  the run of assistant messages, reasoning and tool calls between caller turns;
  reasoning or an assistant message after a tool call begins the next model turn
  (the model saw the results first). A call's outcome (``done`` output,
  ``failed`` error, ``denied`` reason, or a denial by the ``approval`` kind's
  decision naming its ``tool_call_id``) is a ``ToolResult`` in the caller turn
  right after its model turn. Built-in reasoning carries no provider signature,
  so gateways leave it out. A ``compaction`` is the messages it restarts the
  conversation with (``_compaction``; one that only cleared tool results, the
  request as it stood with those results as its placeholder: ``_clearing``): every
  message stays in the list, and the projection starts the next request there
  (``engine.since_compaction``).
- ``anthropic``, ``openai_chat``, ``openai_responses``: each response the set
  rebuilds (the SDK's own final message) is one model turn, read back by the
  provider's gateway, so its reasoning state goes back exactly as returned.
- ``ai_sdk``: each ``step-start`` of a UI message begins a model turn; tool parts
  with an output, an error or a denial answer their call after that turn.
- ``ag_ui``: user, system and developer messages are caller turns, assistant
  messages (with ``toolCalls``) model turns, ``tool`` messages results.

- ``recorded`` (a recording of model calls, ``definitions.recorded``): read whole by
  that set, since its calls hold the provider sets' nodes and its own.

Gemini and Bedrock sets are not read here (they are being written elsewhere).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

import msgspec

from engine import (
    Compaction,
    Message,
    Native,
    Node,
    Part,
    Reasoning,
    Role,
    Text,
    ToolCall,
    ToolResult,
    since_compaction,
)

from . import ag_ui, ai_sdk, anthropic, openai_chat, openai_responses, recorded
from ._gateways import DENIED, AnthropicGateway, OpenAIChatGateway, OpenAIResponsesGateway

__all__ = ["answer_unanswered", "calls_of", "conversation_messages"]

_ANTHROPIC: Final = AnthropicGateway()
_CHAT: Final = OpenAIChatGateway()
_RESPONSES: Final = OpenAIResponsesGateway()

NO_RESULT: Final = "No result was recorded for this call."
"""The neutral result ``answer_unanswered`` gives a call the log moved past."""


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return msgspec.json.encode(value).decode()


def _family(kind: str) -> str:
    for prefix in (
        "recorded_",
        "anthropic_",
        "openai_chat_",
        "openai_response",
        "ai_sdk_",
        "ag_ui_",
    ):
        if kind.startswith(prefix):
            return prefix
    return "builtin"


def conversation_messages(nodes: Iterable[Node]) -> list[Message]:
    """The conversation the nodes hold, as generic messages in log order.

    Nodes of kinds no reader knows (status rows, plug-in kinds) are skipped. When
    one log mixes families, each family's messages follow in the order the family
    first appears.
    """
    nodes = tuple(nodes)
    families: dict[str, list[Node]] = {}
    for node in nodes:
        families.setdefault(_family(node.kind), []).append(node)
    if "recorded_" in families:  # a recording: its calls hold every kind, read whole
        return recorded.conversation(nodes)
    out: list[Message] = []
    for family, members in families.items():
        out.extend(_READERS[family](members))
    return out


# -- built-in kinds ------------------------------------------------------------------


class _Turns:
    """Collects a model turn's parts and the results that answer it, then closes it:
    the model turn, then a caller turn of its results."""

    def __init__(self, out: list[Message]) -> None:
        self.out = out
        self.parts: list[Part] = []
        self.results: list[ToolResult] = []
        self.after_call = False

    def close(self) -> None:
        if self.parts:
            self.out.append(Message(role=Role.assistant, content=tuple(self.parts)))
        if self.results:
            self.out.append(Message(role=Role.user, content=tuple(self.results)))
        self.parts = []
        self.results = []
        self.after_call = False


def _builtin(nodes: Sequence[Node]) -> list[Message]:
    if not any(node.kind == "compaction" for node in nodes):
        return _builtin_turns(nodes)
    out: list[Message] = []
    run: list[Node] = []
    for node in nodes:
        if node.kind != "compaction":
            run.append(node)
            continue
        out += _builtin_turns(run)
        run = []
        out += _clearing(node, out) if node.state.clears else _compaction(node, nodes)
    out += _builtin_turns(run)
    return out


def _clearing(node: Node, out: Sequence[Message]) -> list[Message]:
    """A compaction that only cleared tool results (Claude Code's microcompaction) as
    the messages that restart the conversation: an empty compaction, then the
    request as it stood (``since_compaction``, its leading system messages left
    where they are) again, each cleared call's result sent as the mark's
    ``placeholder``. They echo history (``Compaction.echo``), so the counterfactual
    leaves them out and the originals stay as the log has them."""
    state = node.state
    cleared = set(state.cleared)
    now = since_compaction(out)
    lead = next((n for n, m in enumerate(now) if m.role is not Role.system), len(now))
    again = [_cleared(m, cleared, state.placeholder) for m in now[lead:]]
    return [Message(role=Role.user, content=(Compaction(echo=len(again)),)), *again]


def _cleared(message: Message, cleared: set[str], placeholder: str) -> Message:
    """``message`` with the results of the ``cleared`` calls' content ``placeholder``."""
    if isinstance(message.content, str) or not any(
        isinstance(p, ToolResult) and p.call_id in cleared for p in message.content
    ):
        return message
    parts = tuple(
        msgspec.structs.replace(p, content=placeholder)
        if isinstance(p, ToolResult) and p.call_id in cleared
        else p
        for p in message.content
    )
    return Message(role=message.role, content=parts)


def _compaction(node: Node, nodes: Sequence[Node]) -> list[Message]:
    """A compaction node as the messages that restart the conversation (see
    ``definitions.compaction``): the nodes it kept and the messages it preserved
    (carried), the summary, then the nodes after ``through`` again (echoed)."""
    state = node.state
    through = next((n.seq for n in nodes if n.key == state.through), None)
    earlier = [n for n in nodes if n.seq < node.seq and n.kind != "compaction"]
    kept = _builtin_turns([n for n in earlier if n.key in set(state.keep)])
    kept += [Message(role=Role(p.role), content=p.text) for p in state.preserved if p.text]
    tail = [] if through is None else _builtin_turns([n for n in earlier if n.seq > through])
    data = None if state.item is None else msgspec.json.encode(state.item).decode()
    part = Compaction(state.summary, state.provider, data, carried=len(kept), echo=len(tail))
    role = Role.assistant if data is not None else Role.user
    return [*kept, Message(role=role, content=(part,)), *tail]


def _builtin_turns(nodes: Sequence[Node]) -> list[Message]:
    denials = {
        node.state.tool_call_id: node.state.reason
        for node in nodes
        if node.kind == "approval"
        and node.state.status == "denied"
        and node.state.tool_call_id is not None
    }
    out: list[Message] = []
    turn = _Turns(out)
    for node in nodes:
        kind = node.kind
        state = node.state
        if kind == "message":
            text = str(state.text)
            if state.role == "assistant":
                if turn.after_call:
                    turn.close()
                if text:
                    turn.parts.append(Text(text))
            elif state.role in ("user", "system"):
                turn.close()
                if text:
                    out.append(Message(role=Role(state.role), content=text))
        elif kind == "reasoning":
            if turn.after_call:
                turn.close()
            turn.parts.append(Reasoning(str(state.text), encrypted=state.data or None))
        elif kind == "tool_call":
            turn.parts.append(ToolCall(node.id, state.name, str(state.arguments)))
            turn.after_call = True
            result = _outcome(node.id, state, denials)
            if result is not None:
                turn.results.append(result)
    turn.close()
    return out


def _outcome(call_id: str, state: Any, denials: dict[str, str | None]) -> ToolResult | None:
    name = state.name
    if state.status == "done":
        return ToolResult(call_id, _text(state.output), name=name)
    if state.status == "failed":
        return ToolResult(call_id, state.error or "", is_error=True, name=name)
    if state.status == "denied" or call_id in denials:
        reason = state.reason if state.status == "denied" else denials[call_id]
        return ToolResult(call_id, reason or DENIED, is_error=True, denied=True, name=name)
    return None


# -- provider sets ----------------------------------------------------------------------


def _anthropic(nodes: Sequence[Node]) -> list[Message]:
    return [_ANTHROPIC.message(m) for m in anthropic.messages(nodes)]


def _openai_chat(nodes: Sequence[Node]) -> list[Message]:
    return [_CHAT.message(c) for c in openai_chat.completions(nodes)]


def _openai_responses(nodes: Sequence[Node]) -> list[Message]:
    return [_RESPONSES.message(r) for r in openai_responses.responses(nodes)]


def _ai_sdk(nodes: Sequence[Node]) -> list[Message]:
    out: list[Message] = []
    for message in ai_sdk.ui_messages(nodes):
        role = message.get("role")
        if role != "assistant":
            parts = message.get("parts", ())
            text = "".join(p.get("text", "") for p in parts if p.get("type") == "text")
            if text and role in ("user", "system"):
                out.append(Message(role=Role(role), content=text))
            continue
        turn = _Turns(out)
        for part in message.get("parts", ()):
            kind = part.get("type", "")
            if kind == "step-start":
                turn.close()
            elif kind == "text" and part.get("text"):
                turn.parts.append(Text(part["text"]))
            elif kind == "reasoning":
                turn.parts.append(Reasoning(part.get("text", "")))
            elif kind == "dynamic-tool" or kind.startswith("tool-"):
                call_id = str(part.get("toolCallId"))
                name = part.get("toolName") or kind.removeprefix("tool-")
                turn.parts.append(ToolCall(call_id, name, _text(part.get("input", {}))))
                result = _ai_sdk_outcome(call_id, name, part)
                if result is not None:
                    turn.results.append(result)
        turn.close()
    return out


def _ai_sdk_outcome(call_id: str, name: str, part: dict[str, Any]) -> ToolResult | None:
    state = part.get("state")
    if state == "output-available":
        return ToolResult(call_id, _text(part.get("output")), name=name)
    if state == "output-error":
        return ToolResult(call_id, part.get("errorText") or "", is_error=True, name=name)
    if state == "output-denied":
        reason = (part.get("approval") or {}).get("reason") or DENIED
        return ToolResult(call_id, reason, is_error=True, denied=True, name=name)
    return None


def _ag_ui(nodes: Sequence[Node]) -> list[Message]:
    out: list[Message] = []
    names: dict[str, str] = {}
    for message in ag_ui.messages(nodes):
        role = message.get("role")
        content = message.get("content")
        if role in ("user", "system", "developer"):
            text = _text(content) if not isinstance(content, list) else _ag_ui_text(content)
            if text:
                speaker = Role.system if role == "developer" else Role(role)
                out.append(Message(role=speaker, content=text))
        elif role == "assistant":
            parts: list[Part] = [Text(content)] if isinstance(content, str) and content else []
            for call in message.get("toolCalls") or ():
                function = call.get("function") or {}
                call_id, name = str(call.get("id")), function.get("name", "")
                names[call_id] = name
                parts.append(ToolCall(call_id, name, function.get("arguments", "")))
            if parts:
                out.append(Message(role=Role.assistant, content=tuple(parts)))
        elif role == "reasoning":
            if isinstance(content, str) and content:
                out.append(Message(role=Role.assistant, content=(Reasoning(content),)))
        elif role == "tool":
            call_id = str(message.get("toolCallId"))
            error = message.get("error")
            result = ToolResult(
                call_id,
                _text(content) if error is None else str(error),
                is_error=error is not None,
                name=names.get(call_id),
            )
            if (
                out
                and out[-1].role is Role.user
                and all(isinstance(p, ToolResult) for p in out[-1].parts)
            ):
                out[-1] = Message(role=Role.user, content=(*out[-1].parts, result))
            else:
                out.append(Message(role=Role.user, content=(result,)))
    return _join_model_turns(out)


def _ag_ui_text(content: list[Any]) -> str:
    return "".join(p.get("text", "") for p in content if isinstance(p, dict))


def _join_model_turns(messages: list[Message]) -> list[Message]:
    """Consecutive assistant messages (reasoning, then text, then calls) are one turn."""
    out: list[Message] = []
    for message in messages:
        if (
            out
            and message.role is Role.assistant
            and out[-1].role is Role.assistant
            and not any(isinstance(p, ToolCall) for p in out[-1].parts)
        ):
            out[-1] = Message(role=Role.assistant, content=(*out[-1].parts, *message.parts))
        else:
            out.append(message)
    return out


_READERS: Final = {
    "builtin": _builtin,
    "anthropic_": _anthropic,
    "openai_chat_": _openai_chat,
    "openai_response": _openai_responses,
    "ai_sdk_": _ai_sdk,
    "ag_ui_": _ag_ui,
}


# -- pairing at a call ---------------------------------------------------------------------


def answer_unanswered(messages: Sequence[Message], answered: set[str]) -> list[Message]:
    """``messages`` with a neutral result for every call that no result follows.

    Used where a model call happens: a call the log moved past without a result
    (a recording that left tool results out, a run cut short) would make every
    provider refuse the request. The result is an error ``ToolResult`` saying
    ``NO_RESULT``, inserted in the caller turn right after the call's model turn.
    ``answered`` holds the ids already answered in earlier batches and is updated;
    a later result for one of them is dropped (it would be a second result).
    """
    out: list[Message] = []
    pending: dict[str, str] = {}  # call id -> tool name, of the last model turn
    for message in messages:
        results = [] if message.role is Role.assistant else _results(message)
        if not results:  # a model turn, or a turn that answers nothing
            if pending:
                out.append(Message(role=Role.user, content=_answer(pending, answered)))
            if message.role is Role.assistant:
                pending = {c.id: c.name for c in calls_of(message)}
            out.append(message)
            continue
        kept = [
            p for p in message.parts if not (isinstance(p, ToolResult) and p.call_id in answered)
        ]
        for result in results:
            pending.pop(result.call_id, None)
        answered.update(r.call_id for r in results)
        kept[:0] = _answer(pending, answered)
        if kept:
            out.append(Message(role=message.role, content=tuple(kept)))
    if pending:
        out.append(Message(role=Role.user, content=_answer(pending, answered)))
    return out


def _results(message: Message) -> list[ToolResult]:
    return [p for p in message.parts if isinstance(p, ToolResult)]


def _answer(pending: dict[str, str], answered: set[str]) -> tuple[ToolResult, ...]:
    """A neutral result for each of the ``pending`` calls, which are then answered
    (``pending`` is emptied)."""
    answered.update(pending)
    out = tuple(ToolResult(i, NO_RESULT, is_error=True, name=n) for i, n in pending.items())
    pending.clear()
    return out


def calls_of(message: Message) -> list[ToolCall]:
    """The tool calls of a model turn, those inside ``Native`` blocks included."""
    calls: list[ToolCall] = []
    for part in message.parts:
        if isinstance(part, ToolCall):
            calls.append(part)
        elif isinstance(part, Native) and part.call is not None:
            calls.append(part.call)
    return calls
