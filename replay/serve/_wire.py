"""Other front-ends' wire formats for the live view: the AI SDK's UI message stream
and AG-UI's event stream, encoded incrementally from the view's nodes.

Each client of these routes has its own encoder, which remembers what it sent of every
node (how much text, which tool-call facts) and, on each notification, emits only what
is new: a streamed text costs its delta, not its length. Nodes are compared by identity
with the ones last seen (the engine hands out the same frozen ``Node`` until it
changes), so an unchanged long conversation costs one pass in C per notification.

Only the built-in kinds are encoded (``message``, ``reasoning``, ``tool_call``,
``status``); nodes of other kinds are left out, since neither protocol has a place for
an unknown kind that its readers would show.

Each SSE message's ``id`` is the log position it brings the client to. The UI message
stream always starts over from ``start`` with the whole message so far (its text parts
are not addressable across connections, and ``useChat`` with ``resume: true`` replays
the active stream from its start). AG-UI opens with ``RUN_STARTED`` and a
``MESSAGES_SNAPSHOT`` of the finished messages, or, for a client resuming a store's
conversation at position P, with the view at P refolded from the log (``view_at``) taken
as sent, so it gets only what it missed.

May import: ``engine``, ``definitions``, msgspec (no Starlette: ``_app`` owns routes).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable
from itertools import compress
from operator import is_not
from typing import Any, Protocol

import msgspec

from engine import Node

__all__ = ["AGUI_HEADERS", "UI_STREAM_HEADERS", "AgUiEncoder", "UIMessageEncoder", "wire_frames"]

_encode = msgspec.json.Encoder().encode

UI_STREAM_HEADERS = {"x-vercel-ai-ui-message-stream": "v1", "cache-control": "no-cache"}
"""The header the AI SDK's ``DefaultChatTransport`` expects on a UI message stream."""
AGUI_HEADERS = {"cache-control": "no-cache"}


def _text(value: Any) -> str:
    return str(value) if value is not None else ""


def _output(value: Any) -> str:
    """A tool result as AG-UI's string ``content``: strings as they are, else JSON."""
    return value if isinstance(value, str) else _encode(value).decode()


class _Sent:
    """What one client has of one node: text length, and the tool-call facts sent."""

    __slots__ = ("args", "ended", "input", "outcome", "text")

    def __init__(self) -> None:
        self.text = 0  # characters of the text (or of the arguments) sent
        self.ended = False
        self.args = 0
        self.input = False
        self.outcome = False


class _Encoder:
    """Diffs the view against what this client has and asks the subclass for chunks."""

    def __init__(self, conversation: str) -> None:
        self.conversation = conversation
        self._nodes: tuple[Node, ...] = ()
        self._sent: dict[str, _Sent] = {}

    def opening(self) -> list[dict[str, Any]]:
        """The chunks a stream starts with."""
        return []

    def update(self, nodes: tuple[Node, ...]) -> list[dict[str, Any]]:
        """The chunks that bring this client from the nodes it saw last to ``nodes``."""
        previous = self._nodes
        changed = [nodes[i] for i in compress(range(len(previous)), map(is_not, nodes, previous))]
        changed += nodes[len(previous) :]
        self._nodes = nodes
        chunks: list[dict[str, Any]] = []
        for node in changed:
            sent = self._sent.get(node.key)
            if sent is None:
                sent = self._sent[node.key] = _Sent()
            self.node(node, sent, chunks)
        return chunks

    def node(self, node: Node, sent: _Sent, out: list[dict[str, Any]]) -> None:
        raise NotImplementedError


class UIMessageEncoder(_Encoder):
    """The AI SDK's UI message stream (``ai`` 5 and later): the whole conversation as
    one assistant ``UIMessage`` whose parts are, in view order, ``text`` parts (the
    assistant's messages), ``reasoning`` parts, ``dynamic-tool`` parts (tool calls
    with their input and output or error), ``data-status`` parts (statuses, replaced
    in place by id) and ``data-message`` parts for other roles' messages (the user's:
    ``{"role", "text"}``, replaced in place as they grow)."""

    def opening(self) -> list[dict[str, Any]]:
        return [{"type": "start", "messageId": self.conversation}]

    def node(self, node: Node, sent: _Sent, out: list[dict[str, Any]]) -> None:
        kind, state, key = node.kind, node.state, node.key
        if kind == "message" and state.role != "assistant":
            data = {"role": state.role, "text": str(state.text)}
            out.append({"type": "data-message", "id": key, "data": data})
        elif kind in ("message", "reasoning"):
            prefix = "text" if kind == "message" else "reasoning"
            text = str(state.text)
            if sent.ended:
                return
            if not sent.input:  # the part is open
                sent.input = True
                out.append({"type": f"{prefix}-start", "id": key})
            if len(text) > sent.text:
                out.append({"type": f"{prefix}-delta", "id": key, "delta": text[sent.text :]})
                sent.text = len(text)
            done = state.status != "streaming" if kind == "message" else state.done
            if done:
                sent.ended = True
                out.append({"type": f"{prefix}-end", "id": key})
        elif kind == "tool_call":
            self._tool_call(node, sent, out)
        elif kind == "status":
            data = {
                "status": state.status,
                "label": state.label,
                "progress": None if state.progress is None else float(state.progress),
                "completed": state.completed,
                "total": state.total,
            }
            out.append({"type": "data-status", "id": node.id, "data": data})

    @staticmethod
    def _tool_call(node: Node, sent: _Sent, out: list[dict[str, Any]]) -> None:
        state, call = node.state, node.id
        base = {"toolCallId": call, "toolName": state.name, "dynamic": True}
        if not sent.ended:
            sent.ended = True
            out.append({"type": "tool-input-start", **base})
        if not sent.input:
            arguments = str(state.arguments)
            if len(arguments) > sent.args:
                delta = arguments[sent.args :]
                out.append(
                    {"type": "tool-input-delta", "toolCallId": call, "inputTextDelta": delta}
                )
                sent.args = len(arguments)
            if state.arguments_done:
                sent.input = True
                if state.input_error is not None:
                    out.append(
                        {
                            "type": "tool-input-error",
                            **base,
                            "input": arguments,
                            "errorText": state.input_error,
                        }
                    )
                else:
                    out.append({"type": "tool-input-available", **base, "input": state.input})
        if sent.outcome or state.status not in ("done", "failed", "denied"):
            return
        if not sent.input:  # an outcome before the arguments ended: say what is known
            sent.input = True
            out.append({"type": "tool-input-available", **base, "input": state.preview})
        sent.outcome = True
        if state.status == "done":
            out.append(
                {"type": "tool-output-available", "toolCallId": call, "output": state.output}
            )
        else:
            error = state.error if state.status == "failed" else f"denied: {state.reason or ''}"
            out.append({"type": "tool-output-error", "toolCallId": call, "errorText": error})


class AgUiEncoder(_Encoder):
    """AG-UI's event stream: messages as ``TEXT_MESSAGE_*`` (their role kept), tool
    calls as ``TOOL_CALL_*`` with a ``TOOL_CALL_RESULT`` (a failure or denial is the
    result's text), statuses in the shared state, ``{"statuses": {id: row}}`` (a
    ``STATE_SNAPSHOT`` with the first, then a ``STATE_DELTA`` per change). A stream
    opens with ``RUN_STARTED`` and a ``MESSAGES_SNAPSHOT`` of the finished messages
    and calls; reasoning is left out (AG-UI clients keep it apart from the
    conversation's messages)."""

    def __init__(self, conversation: str) -> None:
        super().__init__(conversation)
        self._statuses: dict[str, Any] = {}

    def opening(self) -> list[dict[str, Any]]:
        return [{"type": "RUN_STARTED", "threadId": self.conversation, "runId": "live"}]

    def snapshot(self, nodes: tuple[Node, ...]) -> list[dict[str, Any]]:
        """The opening ``MESSAGES_SNAPSHOT`` of ``nodes`` that are finished, marked
        as sent; the unfinished ones then stream by ``update``."""
        messages: list[dict[str, Any]] = []
        finished: list[Node] = []
        for node in nodes:
            state = node.state
            if node.kind == "message" and state.status != "streaming":
                role = state.role if state.role in ("user", "system", "developer") else "assistant"
                messages.append({"id": node.key, "role": role, "content": str(state.text)})
            elif node.kind == "tool_call" and state.status in ("done", "failed", "denied"):
                arguments = str(state.arguments)
                function = {"name": state.name, "arguments": arguments}
                messages.append(
                    {
                        "id": node.key,
                        "role": "assistant",
                        "toolCalls": [{"id": node.id, "type": "function", "function": function}],
                    }
                )
                messages.append(
                    {
                        "id": f"{node.key}:result",
                        "role": "tool",
                        "toolCallId": node.id,
                        "content": self._result(state),
                    }
                )
            else:
                continue
            finished.append(node)
            sent = self._sent[node.key] = _Sent()
            sent.ended = sent.input = sent.outcome = True
        return [{"type": "MESSAGES_SNAPSHOT", "messages": messages}]

    def resume(self, nodes: tuple[Node, ...]) -> None:
        """Take ``nodes`` (the view at the client's last position) as sent, instead
        of a snapshot: a message or call still open there is started again (the
        client's reducer keeps the one it has) and continued from where it was."""
        for node in nodes:
            sent = self._sent[node.key] = _Sent()
            self.node(node, sent, [])
            if node.kind == "message" and not sent.ended:
                sent.input = False
            elif node.kind == "tool_call" and not sent.input:
                sent.ended = False

    @staticmethod
    def _result(state: Any) -> str:
        if state.status == "done":
            return _output(state.output)
        if state.status == "failed":
            return f"error: {state.error}"
        return f"denied: {state.reason or ''}"

    def node(self, node: Node, sent: _Sent, out: list[dict[str, Any]]) -> None:
        kind, state, key = node.kind, node.state, node.key
        if kind == "message":
            if sent.ended:
                return
            if not sent.input:
                sent.input = True
                role = state.role if state.role in ("user", "system", "developer") else "assistant"
                out.append({"type": "TEXT_MESSAGE_START", "messageId": key, "role": role})
            text = str(state.text)
            if len(text) > sent.text:
                out.append(
                    {"type": "TEXT_MESSAGE_CONTENT", "messageId": key, "delta": text[sent.text :]}
                )
                sent.text = len(text)
            if state.status != "streaming":
                sent.ended = True
                out.append({"type": "TEXT_MESSAGE_END", "messageId": key})
        elif kind == "tool_call":
            if sent.outcome:
                return
            if not sent.ended:
                sent.ended = True
                out.append(
                    {
                        "type": "TOOL_CALL_START",
                        "toolCallId": node.id,
                        "toolCallName": state.name,
                        "parentMessageId": key,
                    }
                )
            if not sent.input:
                arguments = str(state.arguments)
                if len(arguments) > sent.args:
                    out.append(
                        {
                            "type": "TOOL_CALL_ARGS",
                            "toolCallId": node.id,
                            "delta": arguments[sent.args :],
                        }
                    )
                    sent.args = len(arguments)
                if state.arguments_done or state.status in ("done", "failed", "denied"):
                    sent.input = True
                    out.append({"type": "TOOL_CALL_END", "toolCallId": node.id})
            if state.status in ("done", "failed", "denied"):
                sent.outcome = True
                out.append(
                    {
                        "type": "TOOL_CALL_RESULT",
                        "messageId": f"{key}:result",
                        "toolCallId": node.id,
                        "role": "tool",
                        "content": self._result(state),
                    }
                )
        elif kind == "status":
            first = not self._statuses
            row = self._statuses[node.id] = {
                "status": state.status,
                "label": state.label,
                "progress": None if state.progress is None else float(state.progress),
                "completed": state.completed,
                "total": state.total,
            }
            if first:
                out.append({"type": "STATE_SNAPSHOT", "snapshot": {"statuses": {node.id: row}}})
            else:  # one row, not all of them: JSON Patch's "add" sets a member
                pointer = "/statuses/" + node.id.replace("~", "~0").replace("/", "~1")
                patch = [{"op": "add", "path": pointer, "value": row}]
                out.append({"type": "STATE_DELTA", "delta": patch})


class _Hub(Protocol):
    """What ``wire_frames`` needs of an open conversation (``_app._Conversation``)."""

    nodes: tuple[Node, ...]
    notified: int
    closed: bool
    clients: Any
    last_used: float


class _Client:
    __slots__ = ("wake",)

    def __init__(self) -> None:
        self.wake = asyncio.Event()


def _frame(chunks: Iterable[dict[str, Any]], position: int) -> bytes:
    """One SSE message per chunk (readers parse each ``data`` as one JSON value), the
    last one carrying the log position as its ``id``."""
    parts = [b"data: %s\n\n" % _encode(chunk) for chunk in chunks]
    # The id after the data (SSE fields may come in any order): a stream then
    # starts with "data:", as some readers of saved streams expect.
    parts[-1] = b"%sid: %d\n\n" % (parts[-1][:-1], position)
    return b"".join(parts)


async def view_at(hub: Any, store: Any, position: int) -> tuple[Node, ...] | None:
    """The nodes a client that was sent position ``position`` of a store's
    conversation has (the prefix refolded), or ``None`` where they cannot be known
    (no store, nothing folded yet, a position the view has not reached)."""
    chosen = getattr(hub, "chosen", None)
    if store is None or chosen is None or not 0 < position <= hub.notified:
        return None
    events = await asyncio.to_thread(store.read, hub.id, 0, position)
    try:
        nodes: tuple[Node, ...] = chosen.replay(events)
    except Exception:  # an event the live fold skipped: start over instead
        return None
    return nodes


async def wire_frames(
    hub: _Hub, encoder: UIMessageEncoder | AgUiEncoder, resumed: tuple[Node, ...] | None = None
) -> AsyncIterator[bytes]:
    """The SSE body of one wire-format client: the view so far, then what each
    notification changed, until the server stops or the client goes."""
    waiter = _Client()
    hub.clients.add(waiter)
    try:
        chunks = encoder.opening()
        if isinstance(encoder, AgUiEncoder):
            if resumed is not None:
                encoder.resume(resumed)
            else:
                chunks += encoder.snapshot(hub.nodes)
        while True:
            waiter.wake.clear()
            chunks += encoder.update(hub.nodes)
            if chunks:
                yield _frame(chunks, hub.notified)
                chunks = []
            if hub.closed:
                return
            await waiter.wake.wait()
    finally:
        hub.clients.discard(waiter)
        hub.last_used = time.monotonic()
