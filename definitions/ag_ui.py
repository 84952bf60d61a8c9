"""AG-UI 1.0 events folded into messages, tool calls, shared state and runs.

Theory of operation
-------------------
AG-UI's reference reducer (``defaultApplyEvents`` in ``@ag-ui/client``) keeps one
list of messages and finds its target *by id* for every event: a
``TEXT_MESSAGE_START`` for an id that already exists continues that message instead
of restarting it, a ``TOOL_CALL_START`` attaches to its ``parentMessageId`` (or makes
an assistant message for it), and the ``*_CHUNK`` forms may omit their id, which
then means "the chunk stream open in this lane". None of that can be decided from
one event alone, and the engine's ``match`` must be pure.

So a small **preparer** runs in front of the engine: ``Preparer()(event)`` wraps each raw
event dict in a ``Envelope`` envelope that names the node each definition should claim
(``Claim(id, "start")`` the first time an id is seen, ``"update"`` afterwards), and
resolves the owner of a tool call; its ``route``, a row of the one table ``ROUTES``,
says which definitions see it and how soon it shows (``definitions._envelope``; the
engine routes on it). The preparer never copies an event: the envelope
holds the original dict plus the claims. Its state is only "which ids exist" (and
the open chunk lane), i.e. what the reference consults, not what it accumulates; the
definitions fold the content. ``PROTOCOL.accumulate()`` applies it; live users push raw events into
``PROTOCOL.engine()`` (the set's ``definitions.ProtocolSet``: the common live path,
with its errors), or call a ``Preparer`` per event. Because the preparer
only knows what it has seen, a window cut mid-message yields no node for the
cut-off message: its deltas are update claims for an id with no open node, which the
engine drops (DESIGN rule 3), instead of being attributed to another message.

Kinds: ``ag_ui_message`` (text, reasoning, tool-result and tool-created assistant
messages), ``ag_ui_tool_call`` (streamed arguments, kept as raw text like the
reference), ``ag_ui_state`` (STATE_SNAPSHOT / RFC 6902 STATE_DELTA), ``ag_ui_run``
(RUN_* with its steps and error) and ``ag_ui_event`` (CUSTOM, RAW, MESSAGES_SNAPSHOT).
``messages(nodes)`` and ``state(nodes)`` rebuild what the reference prints.

Where we differ from the reference on purpose (each has a test):
``verifyEvents`` rejects streams that lack ``RUN_STARTED`` or carry orphan deltas,
and ``transformChunks`` raises on a first chunk without its id; a view shows what
arrived, so we fold them as ``--no-verify`` does and give an id-less chunk with no
open stream (a window's cut-off continuation) no node. Unknown event types (and
THINKING_*, which AG-UI 1.0 dropped) make no node, as ``enforceEvents`` drops them.

Not folded (no fixture or generated stream has them): ACTIVITY_SNAPSHOT/DELTA,
``metadata`` merging, SUBAGENT_* lanes beyond chunk attribution, and deltas for a
message that only a MESSAGES_SNAPSHOT brought (it has no node, so they are dropped).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final

import msgspec

from engine import Claim, Node, Reader

from ._envelope import Route, describe, on_routes, route_of
from ._protocol import ROUTED_NAMES, UNREADABLE, ProtocolSet, old_names
from ._render import payload
from ._runs import fold_run
from ._text import StreamedText

__all__ = [
    "DEFINITIONS",
    "PROTOCOL",
    "ROUTES",
    "Envelope",
    "EventState",
    "MessageState",
    "PatchError",
    "Preparer",
    "RunState",
    "SharedState",
    "ToolCallState",
    "apply_patch",
    "detect",
    "event_type",
    "messages",
    "prepare",
    "state",
]

_FRAME: Final = "animation-frame"
_NOW: Final = "immediate"


_MESSAGE: Final = "ag_ui_message"
_TOOL: Final = "ag_ui_tool_call"

# The routing table: every route an envelope can take, declared once (the definitions'
# ``event_types`` and ``publication`` are read off it). A tool call that makes its
# assistant message is the tool's route ``plus`` the message definition.
_NOWHERE: Final = Route("nowhere", frozenset())
_TO_MESSAGE: Final = Route("message", frozenset({_MESSAGE}))
_MESSAGE_DELTA: Final = Route("message-delta", frozenset({_MESSAGE}), _FRAME)
_TO_TOOL: Final = Route("tool", frozenset({_TOOL}))
_TOOL_DELTA: Final = Route("tool-delta", frozenset({_TOOL}), _FRAME)
_TOOL_AND_OWNER: Final = _TO_TOOL.plus(_MESSAGE)
_TO_STATE: Final = Route("state", frozenset({"ag_ui_state"}))
_TO_RUN: Final = Route("run", frozenset({"ag_ui_run"}))
_TO_OTHER: Final = Route("other", frozenset({"ag_ui_event"}))
ROUTES: Final[tuple[Route, ...]] = (
    _NOWHERE,
    _TO_MESSAGE,
    _MESSAGE_DELTA,
    _TO_TOOL,
    _TOOL_DELTA,
    _TOOL_AND_OWNER,
    _TO_STATE,
    _TO_RUN,
    _TO_OTHER,
)
"""The AG-UI routing table: every ``Route`` a ``Envelope`` envelope can take."""


class Envelope(msgspec.Struct, gc=False, eq=False):
    """One raw AG-UI event plus the claims the preparer decided for it.

    ``event`` is the original dict (never copied). ``route`` is the row of ``ROUTES``
    it takes: the engine routes on it (``event_type``), so each event reaches only
    the definitions it concerns. Each definition reads its own claim field
    (``message``, ``tool_call``, ``state``, ``run``, and ``other`` for the
    ``ag_ui_event`` kind; ``None`` where the event is not its). ``delta`` is the text
    a content, args or chunk event appends. A tool call names ``owner``, the id of its
    assistant message, and claims that message's start in ``message`` when it makes
    it. A bare envelope (route ``nowhere``) concerns no node.

    Made per event, so a Struct (``definitions._envelope`` says why).
    """

    event: Mapping[str, Any]
    route: Route = _NOWHERE
    # The streamed kinds' fields first: a delta is made positionally (the hot path).
    delta: str = ""
    message: Claim | None = None
    tool_call: Claim | None = None
    owner: str | None = None
    state: Claim | None = None
    run: Claim | None = None
    other: Claim | None = None

    @property
    def type(self) -> Any:
        """The raw event's ``type``."""
        return self.event.get("type")

    def __repr__(self) -> str:
        return describe(self, ("message", "tool_call", "state", "run", "other"))


class Preparer:
    """Decides, per raw AG-UI event, which node it starts or updates (no I/O, no clock).

    Call it on each event in log order (``preparer(event) -> Envelope``), or use
    ``prepare(events)``; ``PROTOCOL.engine()`` runs it as its live pre-pass. One
    preparer per log.
    """

    def __init__(self) -> None:
        # What the reference would find by id: message id -> role, and the cached
        # update claims of messages and tool calls (a Claim is a frozen value).
        self._roles: dict[str, str] = {}
        self._message_updates: dict[str, Claim] = {}
        self._tool_updates: dict[str, Claim] = {}
        self._lanes: dict[Any, tuple[str, str]] = {}  # subagent lane -> (kind, id)
        self._has_state = False
        self._run: Claim | None = None
        self._count = 0

    def __call__(self, event: Any) -> Envelope:
        """The envelope of ``event`` (an event dict, or the SDK's typed event by its
        shape); an unknown type gets one that claims nothing."""
        if not isinstance(event, dict):  # a dict subclass is folded as it is, as by prepare
            event = PROTOCOL.as_dict(event)
        handler = _HANDLERS.get(event.get("type"))
        return Envelope(event) if handler is None else handler(self, event)

    def prepare(self, events: Iterable[Any]) -> Iterator[Envelope]:
        """Envelopes of ``events``, in order."""
        handlers = _HANDLERS
        delta_keys = _DELTA_KEYS
        # The last content or args event routed to its node: its type, the key naming
        # the node and its value there, its route and claims. Only other events change
        # the tables those are routed by (and any other event forgets it), so the next
        # one of that type naming the same node is routed the same: most of a stream
        # takes this one comparison and a get.
        last_type: Any = _ABSENT
        last_key = ""
        last_id: Any = _ABSENT
        last_route = _NOWHERE
        last_message = last_tool_call = None
        get = dict.get  # raises TypeError for what is not a dict: no type test per event
        for position, event in enumerate(PROTOCOL.dicts(events)):
            try:
                try:
                    kind = get(event, "type")
                except TypeError:  # a typed event in a stream of dicts (plain names anything else)
                    event = PROTOCOL.as_dict(event)
                    kind = event.get("type")
                if kind == last_type and get(event, last_key, _ABSENT) == last_id:
                    yield Envelope(event, last_route, event["delta"], last_message, last_tool_call)
                    continue
                handler = handlers.get(kind)
                routed = Envelope(event) if handler is None else handler(self, event)
                last_route = routed.route
                last_key = delta_keys.get(kind, "") if last_route is not _NOWHERE else ""
                if last_key:
                    last_type = kind
                    last_id = event[last_key]
                    last_message, last_tool_call = routed.message, routed.tool_call
                else:
                    last_type = _ABSENT
                yield routed
            except UNREADABLE as exc:  # an event of the wrong shape
                raise PROTOCOL.unreadable(position, event, exc) from exc

    # -- messages ---------------------------------------------------------------------

    def _message_start(self, event: Mapping[str, Any]) -> Envelope:
        if self._lanes:
            self._lanes.pop(event.get("subagentRunId"), None)
        message_id = event["messageId"]
        if message_id in self._roles:
            return Envelope(event)  # the reference continues an existing message
        self._new_message(
            message_id, "reasoning" if event["type"][0] == "R" else event.get("role") or "assistant"
        )
        return Envelope(event, _TO_MESSAGE, message=Claim(message_id, "start"))

    def _new_message(self, message_id: str, role: str) -> None:
        self._roles[message_id] = role
        self._message_updates[message_id] = Claim(message_id, "update")

    def _message_content(self, event: Mapping[str, Any]) -> Envelope:
        claim = self._message_updates.get(event["messageId"])
        return (
            Envelope(event)
            if claim is None
            else Envelope(event, _MESSAGE_DELTA, event["delta"], claim)
        )

    def _message_end(self, event: Mapping[str, Any]) -> Envelope:
        if self._lanes:
            self._lanes.pop(event.get("subagentRunId"), None)
        claim = self._message_updates.get(event["messageId"])
        return Envelope(event) if claim is None else Envelope(event, _TO_MESSAGE, message=claim)

    def _text_chunk(self, event: Mapping[str, Any]) -> Envelope:
        # transformChunks: a chunk continues the lane's open stream of its kind when its
        # id is absent or equal; otherwise it closes the lane and opens a new stream.
        kind = "text" if event["type"][0] == "T" else "reasoning"
        lane = event.get("subagentRunId")
        message_id = event.get("messageId")
        delta = event.get("delta") or ""
        open_ = self._lanes.get(lane)
        if open_ is None or open_[0] != kind or message_id not in (None, open_[1]):
            if message_id is None:
                # The reference raises ("First ... must have a messageId"); in a window cut
                # mid-stream this is the continuation of a cut-off message: no node.
                return Envelope(event)
            self._lanes[lane] = (kind, message_id)
            if message_id not in self._roles:
                role = (event.get("role") or "assistant") if kind == "text" else "reasoning"
                self._new_message(message_id, role)
                return Envelope(event, _TO_MESSAGE, delta, Claim(message_id, "start"))
        else:
            message_id = open_[1]
        return Envelope(event, _MESSAGE_DELTA, delta, self._message_updates[message_id])

    # -- tool calls -------------------------------------------------------------------

    def _tool_begin(self, event: Mapping[str, Any], tool_call_id: str, delta: str) -> Envelope:
        update = self._tool_updates.get(tool_call_id)
        if update is not None:  # the reference renames the existing call in place
            return Envelope(event, _TOOL_DELTA if delta else _TO_TOOL, delta, None, update)
        self._tool_updates[tool_call_id] = Claim(tool_call_id, "update")
        # resolveOrCreateAssistantMessage, decided here so the rebuild needs no search.
        parent = event.get("parentMessageId")
        if parent:
            role = self._roles.get(parent)
            if role == "assistant":
                return Envelope(event, _TO_TOOL, delta, None, Claim(tool_call_id, "start"), parent)
            owner = tool_call_id if role is not None else parent
        else:
            owner = tool_call_id
        self._new_message(owner, "assistant")
        start = Claim(tool_call_id, "start")
        return Envelope(event, _TOOL_AND_OWNER, delta, Claim(owner, "start"), start, owner)

    def _tool_start(self, event: Mapping[str, Any]) -> Envelope:
        if self._lanes:
            self._lanes.pop(event.get("subagentRunId"), None)
        return self._tool_begin(event, event["toolCallId"], "")

    def _tool_args(self, event: Mapping[str, Any]) -> Envelope:
        claim = self._tool_updates.get(event["toolCallId"])
        return (
            Envelope(event)
            if claim is None
            else Envelope(event, _TOOL_DELTA, event["delta"], None, claim)
        )

    def _tool_end(self, event: Mapping[str, Any]) -> Envelope:
        if self._lanes:
            self._lanes.pop(event.get("subagentRunId"), None)
        claim = self._tool_updates.get(event["toolCallId"])
        return Envelope(event) if claim is None else Envelope(event, _TO_TOOL, tool_call=claim)

    def _tool_chunk(self, event: Mapping[str, Any]) -> Envelope:
        lane = event.get("subagentRunId")
        tool_call_id = event.get("toolCallId")
        delta = event.get("delta") or ""
        open_ = self._lanes.get(lane)
        if open_ is not None and open_[0] == "tool" and tool_call_id in (None, open_[1]):
            return Envelope(event, _TOOL_DELTA, delta, None, self._tool_updates[open_[1]])
        if tool_call_id is None or (
            event.get("toolCallName") is None and tool_call_id not in self._tool_updates
        ):
            # The reference raises (a first chunk needs both); in a window cut mid-call it
            # is the continuation of a cut-off call: no node.
            return Envelope(event)
        self._lanes[lane] = ("tool", tool_call_id)
        return self._tool_begin(event, tool_call_id, delta)

    def _tool_result(self, event: Mapping[str, Any]) -> Envelope:
        if self._lanes:
            self._lanes.pop(event.get("subagentRunId"), None)
        # The reference appends a new message even when the id is taken (the .NET server
        # reuses the tool call id, which is also its assistant message's id).
        message_id = event["messageId"]
        if message_id in self._roles:
            self._count += 1
            return Envelope(
                event, _TO_MESSAGE, message=Claim(f"{message_id}#{self._count}", "start")
            )
        self._new_message(message_id, event.get("role") or "tool")
        return Envelope(event, _TO_MESSAGE, message=Claim(message_id, "start"))

    def _encrypted(self, event: Mapping[str, Any]) -> Envelope:
        entity = event.get("entityId")
        if event.get("subtype") == "tool-call":
            claim = self._tool_updates.get(entity)  # type: ignore[arg-type]
            return Envelope(event) if claim is None else Envelope(event, _TO_TOOL, tool_call=claim)
        claim = self._message_updates.get(entity)  # type: ignore[arg-type]
        return Envelope(event) if claim is None else Envelope(event, _TO_MESSAGE, message=claim)

    # -- state, runs, the rest ----------------------------------------------------------

    def _state_snapshot(self, event: Mapping[str, Any]) -> Envelope:
        if self._lanes:
            self._lanes.pop(event.get("subagentRunId"), None)
        self._has_state = True
        return Envelope(event, _TO_STATE, state=_STATE_START)

    def _state_delta(self, event: Mapping[str, Any]) -> Envelope:
        if self._lanes:
            self._lanes.pop(event.get("subagentRunId"), None)
        # The reference patches its initial state ({}) when no snapshot came first.
        claim = _STATE_UPDATE if self._has_state else _STATE_START
        self._has_state = True
        return Envelope(event, _TO_STATE, state=claim)

    def _messages_snapshot(self, event: Mapping[str, Any]) -> Envelope:
        self._lanes.clear()
        snapshot = event.get("messages") or []
        keep_reasoning = not any(m.get("role") == "reasoning" for m in snapshot)
        ids = {m.get("id") for m in snapshot}
        # Messages the snapshot drops are gone; those it brings have no node, so later
        # deltas for them are dropped (documented limitation).
        for message_id, role in list(self._roles.items()):
            if message_id not in ids and not (role == "reasoning" and keep_reasoning):
                del self._roles[message_id]
                self._message_updates.pop(message_id, None)
        for message in snapshot:
            self._roles.setdefault(message.get("id"), message.get("role"))
        return self._other(event)

    def _run_started(self, event: Mapping[str, Any]) -> Envelope:
        self._lanes.clear()
        self._count += 1
        run_id = f"{event.get('runId')}#{self._count}"
        self._run = Claim(run_id, "update")
        for message in (event.get("input") or {}).get("messages") or ():
            self._roles.setdefault(message.get("id"), message.get("role"))
        return Envelope(event, _TO_RUN, run=Claim(run_id, "start"))

    def _run_update(self, event: Mapping[str, Any]) -> Envelope:
        self._lanes.clear()
        if self._run is None:  # RUN_ERROR/FINISHED with no RUN_STARTED seen: its own node
            return self._run_started(event)
        return Envelope(event, _TO_RUN, run=self._run)

    def _run_step(self, event: Mapping[str, Any]) -> Envelope:
        if self._lanes:
            self._lanes.pop(event.get("subagentRunId"), None)
        return Envelope(event) if self._run is None else Envelope(event, _TO_RUN, run=self._run)

    def _other(self, event: Mapping[str, Any]) -> Envelope:
        self._count += 1
        claim = Claim(f"{event['type'].lower()}#{self._count}", "start")
        return Envelope(event, _TO_OTHER, other=claim)


# The preparer's handler of each event type: plain functions of (preparer, event), in one
# table for all preparers (a preparer is made per log, and many logs are short).
_HANDLERS: Final[dict[Any, Callable[[Preparer, Mapping[str, Any]], Envelope]]] = {
    "TEXT_MESSAGE_START": Preparer._message_start,
    "TEXT_MESSAGE_CONTENT": Preparer._message_content,
    "TEXT_MESSAGE_END": Preparer._message_end,
    "REASONING_MESSAGE_START": Preparer._message_start,
    "REASONING_MESSAGE_CONTENT": Preparer._message_content,
    "REASONING_MESSAGE_END": Preparer._message_end,
    "TEXT_MESSAGE_CHUNK": Preparer._text_chunk,
    "REASONING_MESSAGE_CHUNK": Preparer._text_chunk,
    "TOOL_CALL_START": Preparer._tool_start,
    "TOOL_CALL_ARGS": Preparer._tool_args,
    "TOOL_CALL_END": Preparer._tool_end,
    "TOOL_CALL_CHUNK": Preparer._tool_chunk,
    "TOOL_CALL_RESULT": Preparer._tool_result,
    "REASONING_ENCRYPTED_VALUE": Preparer._encrypted,
    "STATE_SNAPSHOT": Preparer._state_snapshot,
    "STATE_DELTA": Preparer._state_delta,
    "MESSAGES_SNAPSHOT": Preparer._messages_snapshot,
    "RUN_STARTED": Preparer._run_started,
    "RUN_FINISHED": Preparer._run_update,
    "RUN_ERROR": Preparer._run_update,
    "STEP_STARTED": Preparer._run_step,
    "STEP_FINISHED": Preparer._run_step,
    "CUSTOM": Preparer._other,
    "RAW": Preparer._other,
}

# The delta events routed by one table lookup (``Preparer.prepare`` repeats the last one's
# route for the next event of its type naming the same node) and the key naming it.
_DELTA_KEYS: Final[dict[Any, str]] = {
    "TEXT_MESSAGE_CONTENT": "messageId",
    "REASONING_MESSAGE_CONTENT": "messageId",
    "TOOL_CALL_ARGS": "toolCallId",
}
_ABSENT: Final = object()  # no event type or id is this

_STATE_START: Final = Claim("state", "start")
_STATE_UPDATE: Final = Claim("state", "update")


# -- states ---------------------------------------------------------------------------


class MessageState(msgspec.Struct, frozen=True):
    """A message of the reference's list: ``role`` is assistant/user/system/developer,
    reasoning or tool. ``content`` is ``None`` for an assistant message made by a tool
    call before any text; a tool message's ``content`` is the result as sent."""

    id: str
    role: str
    content: Any = None
    name: str | None = None
    tool_call_id: str | None = None
    encrypted_value: str | None = None
    ended: bool = False


class ToolCallState(msgspec.Struct, frozen=True):
    """A tool call: ``arguments`` is the raw streamed JSON text (the reference keeps it a
    string); ``parent`` is the id of the assistant message holding it."""

    id: str
    name: str
    parent: str
    arguments: StreamedText = msgspec.field(default_factory=StreamedText)
    ended: bool = False
    encrypted_value: str | None = None


class SharedState(msgspec.Struct, frozen=True):
    """The agent's shared state after the latest snapshot and patches.

    ``value`` is never mutated; a patch makes a new value. ``errors`` counts patches
    that failed and were skipped (the reference warns and keeps the old state)."""

    value: Any
    errors: int = 0


class RunState(msgspec.Struct, frozen=True):
    """One run: its ids, status (running, finished, error), steps seen, error text."""

    run_id: str | None
    thread_id: str | None
    status: str = "running"
    steps: tuple[tuple[str, str], ...] = ()
    error: str | None = None
    input_messages: tuple[Any, ...] = ()


class EventState(msgspec.Struct, frozen=True):
    """A CUSTOM, RAW or MESSAGES_SNAPSHOT event, kept whole for views and the rebuild."""

    type: str
    event: Any


# -- definitions ------------------------------------------------------------------------


def _appended(message: MessageState, delta: str) -> MessageState:
    """``message`` with ``delta`` appended to its content, which becomes streamed text
    (a str content is kept; None or any other value starts from "")."""
    content = message.content
    if not isinstance(content, StreamedText):
        content = StreamedText(content if isinstance(content, str) else "")
    return MessageState(
        message.id,
        message.role,
        content.append(delta),
        message.name,
        message.tool_call_id,
        message.encrypted_value,
        message.ended,
    )


def _with_arguments(call: ToolCallState, delta: str) -> ToolCallState:
    """``call`` with ``delta`` appended to its raw arguments."""
    return ToolCallState(
        call.id,
        call.name,
        call.parent,
        call.arguments.append(delta),
        call.ended,
        call.encrypted_value,
    )


def _pieces(run: list[Envelope]) -> list[str | None]:
    """What each event of a run appends, for ``fold_run``: its delta when a non-empty
    str; else None and ``update`` folds it (an empty delta's effect depends on its
    event's type, anything else fails, or not, exactly as ``update`` decides)."""
    return [delta if type(delta := routed.delta) is str and delta else None for routed in run]


class _MessageDefinition:
    """Messages of any role; claims what the preparer names in ``message``."""

    # Deltas wait for the next animation frame; the rest is immediate.
    kind, event_types, publication, match = on_routes(_MESSAGE, "message", ROUTES)

    @staticmethod
    def start(routed: Envelope, reader: Reader) -> MessageState:
        event = routed.event
        kind = event["type"]
        if kind == "TOOL_CALL_RESULT":
            return MessageState(
                event["messageId"],
                event.get("role") or "tool",
                event.get("content"),
                tool_call_id=event.get("toolCallId"),
                ended=True,
            )
        if kind in ("TOOL_CALL_START", "TOOL_CALL_CHUNK"):
            assert routed.owner is not None
            return MessageState(routed.owner, "assistant")
        if kind[0] == "R":  # REASONING_MESSAGE_START / _CHUNK
            return MessageState(event["messageId"], "reasoning", StreamedText(routed.delta))
        return MessageState(
            event["messageId"],
            event.get("role") or "assistant",
            StreamedText(routed.delta),
            event.get("name"),
        )

    @staticmethod
    def update(message: MessageState, routed: Envelope) -> MessageState:
        delta = routed.delta
        if delta:
            return _appended(message, delta)
        kind = routed.event["type"]
        if kind.endswith("_END"):
            return message if message.ended else msgspec.structs.replace(message, ended=True)
        if kind == "REASONING_ENCRYPTED_VALUE":
            return msgspec.structs.replace(
                message, encrypted_value=routed.event.get("encryptedValue")
            )
        if message.content is None and kind.endswith(("_CONTENT", "_CHUNK")):
            # An empty delta still gives a tool-made assistant message its content "".
            return msgspec.structs.replace(message, content=StreamedText())
        return message

    @staticmethod
    def update_many(message: MessageState, run: list[Envelope]) -> MessageState:
        """``update`` over a run (``fold_run``): a streamed message's deltas, which the
        engine hands over together, make one append."""
        return fold_run(message, run, _pieces(run), _appended, _MessageDefinition.update)

    @staticmethod
    def render_text(node: Node) -> str:
        message: MessageState = node.state
        content = message.content
        if content is None:
            return f"{message.role}:"
        if not isinstance(content, str | StreamedText):
            content = json.dumps(content, ensure_ascii=False)
        return f"{message.role}: {content}"

    @staticmethod
    def render_html(node: Node) -> str:
        """A Markdown bubble by role; a tool message as its result; reasoning folded."""
        from ._render import bubble, folded, markdown, payload, tool_card

        message: MessageState = node.state
        content = message.content
        if content is None or content == "":
            return ""
        if not isinstance(content, str | StreamedText):
            content = payload(content, indent=2)
        if message.role == "tool":
            return tool_card("result", "done", result=str(content), preview=str(content))
        if message.role == "reasoning":
            return folded("Reasoning", markdown(content), cls="reasoning")
        return bubble(message.role, markdown(content))


class _ToolCallDefinition:
    """Tool calls: name, raw streamed arguments, owner message, end."""

    kind, event_types, publication, match = on_routes(_TOOL, "tool_call", ROUTES)

    @staticmethod
    def start(routed: Envelope, reader: Reader) -> ToolCallState:
        event = routed.event
        assert routed.owner is not None
        return ToolCallState(
            event["toolCallId"],
            event.get("toolCallName") or "",
            routed.owner,
            StreamedText(routed.delta),
        )

    @staticmethod
    def update(call: ToolCallState, routed: Envelope) -> ToolCallState:
        delta = routed.delta
        if delta:
            return _with_arguments(call, delta)
        event = routed.event
        kind = event["type"]
        if kind == "TOOL_CALL_END":
            return call if call.ended else msgspec.structs.replace(call, ended=True)
        if kind == "TOOL_CALL_START":
            name = event.get("toolCallName")
            return call if name == call.name else msgspec.structs.replace(call, name=name)
        if kind == "REASONING_ENCRYPTED_VALUE":
            return msgspec.structs.replace(call, encrypted_value=event.get("encryptedValue"))
        return call

    @staticmethod
    def update_many(call: ToolCallState, run: list[Envelope]) -> ToolCallState:
        """``update`` over a run (``fold_run``): a call's streamed arguments make one
        append."""
        return fold_run(call, run, _pieces(run), _with_arguments, _ToolCallDefinition.update)

    @staticmethod
    def render_text(node: Node) -> str:
        call: ToolCallState = node.state
        return f"tool call {call.name}({call.arguments})"

    @staticmethod
    def render_html(node: Node) -> str:
        """A tool card: name and arguments (its result is the tool message)."""
        from ._render import tool_card

        call: ToolCallState = node.state
        status = "called" if call.ended else "streaming"
        return tool_card(call.name, status, arguments=str(call.arguments))


class _StateDefinition:
    """The one shared-state node: a snapshot reopens it, a delta patches it."""

    kind, event_types, publication, match = on_routes("ag_ui_state", "state", ROUTES)

    @staticmethod
    def start(routed: Envelope, reader: Reader) -> SharedState:
        event = routed.event
        if event["type"] == "STATE_SNAPSHOT":
            return SharedState(event.get("snapshot"))
        return _StateDefinition.update(SharedState({}), routed)

    @staticmethod
    def update(current: SharedState, routed: Envelope) -> SharedState:
        try:
            value = apply_patch(current.value, routed.event.get("delta") or [])
        except PatchError:
            return SharedState(current.value, current.errors + 1)
        return SharedState(value, current.errors)

    @staticmethod
    def render_text(node: Node) -> str:
        return "state " + payload(node.state.value)

    @staticmethod
    def render_html(node: Node) -> str:
        """The shared state as JSON, folded."""
        from ._render import code, folded

        text = payload(node.state.value, indent=2)
        return folded("Shared state", code(text, "json"), cls="results")


class _RunDefinition:
    """One node per RUN_STARTED: finish or error, and the steps seen."""

    kind, event_types, publication, match = on_routes("ag_ui_run", "run", ROUTES)

    @staticmethod
    def start(routed: Envelope, reader: Reader) -> RunState:
        event = routed.event
        run = RunState(
            event.get("runId"),
            event.get("threadId"),
            input_messages=tuple((event.get("input") or {}).get("messages") or ()),
        )
        return run if event["type"] == "RUN_STARTED" else _RunDefinition.update(run, routed)

    @staticmethod
    def update(run: RunState, routed: Envelope) -> RunState:
        event = routed.event
        kind = event["type"]
        if kind == "RUN_FINISHED":
            return msgspec.structs.replace(run, status="finished")
        if kind == "RUN_ERROR":
            return msgspec.structs.replace(run, status="error", error=event.get("message"))
        step = ("started" if kind == "STEP_STARTED" else "finished", event.get("stepName") or "")
        return msgspec.structs.replace(run, steps=(*run.steps, step))

    @staticmethod
    def render_text(node: Node) -> str:
        """Nothing for a run that runs or finished; ``run error: ...`` for a failed one."""
        run: RunState = node.state
        return f"run error: {run.error}" if run.status == "error" else ""

    @staticmethod
    def render_html(node: Node) -> str:
        """The run's new user turn (the last user message of its input, which the
        stream itself never sends), and a failed run's error as a row."""
        from ._render import bubble, line, markdown, payload

        run: RunState = node.state
        asked = next(
            (
                m
                for m in reversed(run.input_messages)
                if isinstance(m, dict) and m.get("role") == "user"
            ),
            None,
        )
        out = ""
        if asked is not None and asked.get("content"):
            content = asked["content"]
            out = bubble(
                "user", markdown(content if isinstance(content, str) else payload(content))
            )
        if run.status != "error":
            return out
        return out + line(
            "meta", ("decision", f"run {run.status}"), ("error", run.error), status=run.status
        )


class _EventDefinition:
    """One node per CUSTOM, RAW or MESSAGES_SNAPSHOT event."""

    kind, event_types, publication, match = on_routes("ag_ui_event", "other", ROUTES)

    @staticmethod
    def start(routed: Envelope, reader: Reader) -> EventState:
        return EventState(routed.event["type"], routed.event)

    @staticmethod
    def update(node: EventState, routed: Envelope) -> EventState:
        return node

    @staticmethod
    def render_text(node: Node) -> str:
        state: EventState = node.state
        event = state.event
        if state.type == "CUSTOM":
            return f"custom {event.get('name')}: {payload(event.get('value'))}"
        if state.type == "MESSAGES_SNAPSHOT":
            return f"messages snapshot ({len(event.get('messages') or ())} messages)"
        return f"raw {payload(event.get('event'))}"

    @staticmethod
    def render_html(node: Node) -> str:
        """A custom or raw event folded as JSON; a messages snapshot as a row."""
        from ._render import code, folded, line

        state: EventState = node.state
        event = state.event
        if state.type == "MESSAGES_SNAPSHOT":
            count = len(event.get("messages") or ())
            return line("meta", ("decision", "messages snapshot"), ("label", f"{count} messages"))
        label, value = (
            (f"{event.get('name')}", event.get("value"))
            if state.type == "CUSTOM"
            else ("raw event", event.get("event"))
        )
        return folded(label, code(payload(value, indent=2), "json"), cls="results")


# The matches are C attrgetters: a raw event dict (or any object but an envelope) goes
# to this guard instead, which names the fix (the engine routes it by its class).


# -- JSON Patch (RFC 6902) ----------------------------------------------------------------


class PatchError(ValueError):
    """A JSON Patch operation could not be applied (the whole patch is rejected)."""


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"JSON pointer {path!r} does not start with '/'")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(container: list[Any], token: str, *, adding: bool) -> int:
    if token == "-" and adding:
        return len(container)
    if not token.isdigit() or (token != "0" and token.startswith("0")):
        raise PatchError(f"{token!r} is not an array index")
    index = int(token)
    if index > len(container) or (index == len(container) and not adding):
        raise PatchError(f"array index {index} is out of range")
    return index


def _parent(document: Any, tokens: list[str]) -> Any:
    target = document
    for token in tokens[:-1]:
        if isinstance(target, dict):
            if token not in target:
                raise PatchError(f"path segment {token!r} does not exist")
            target = target[token]
        elif isinstance(target, list):
            target = target[_index(target, token, adding=False)]
        else:
            raise PatchError(f"path segment {token!r} goes through a scalar")
    return target


def _get(document: Any, tokens: list[str]) -> Any:
    if not tokens:
        return document
    parent = _parent(document, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"{last!r} does not exist")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, adding=False)]
    raise PatchError(f"{last!r} is inside a scalar")


def _add(document: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent = _parent(document, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, adding=True), value)
    else:
        raise PatchError(f"cannot add {last!r} inside a scalar")
    return document


def _remove(document: Any, tokens: list[str]) -> Any:
    if not tokens:
        raise PatchError("cannot remove the whole document")
    parent = _parent(document, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"cannot remove {last!r}: it does not exist")
        del parent[last]
    elif isinstance(parent, list):
        del parent[_index(parent, last, adding=False)]
    else:
        raise PatchError(f"cannot remove {last!r} inside a scalar")
    return document


def apply_patch(document: Any, operations: Iterable[Mapping[str, Any]]) -> Any:
    """``document`` after the RFC 6902 ``operations``, as a new value.

    ``document`` is not modified (views hold it). Raises ``PatchError`` if any
    operation fails; then nothing is applied, as fast-json-patch with validation.
    """
    result = copy.deepcopy(document)
    for operation in operations:
        op = operation.get("op")
        tokens = _pointer(operation.get("path", ""))
        if op == "add":
            result = _add(result, tokens, copy.deepcopy(operation.get("value")))
        elif op == "remove":
            result = _remove(result, tokens)
        elif op == "replace":
            _get(result, tokens)
            if tokens:
                result = _remove(result, tokens)
            result = _add(result, tokens, copy.deepcopy(operation.get("value")))
        elif op in ("move", "copy"):
            source = _pointer(operation.get("from", ""))
            value = copy.deepcopy(_get(result, source))
            if op == "move":
                result = _remove(result, source)
            result = _add(result, tokens, value)
        elif op == "test":
            if _get(result, tokens) != operation.get("value"):
                raise PatchError(f"test failed at {operation.get('path')!r}")
        else:
            raise PatchError(f"unknown JSON Patch operation {op!r}")
    return result


# -- rebuild ------------------------------------------------------------------------------


def _message_dict(message: MessageState) -> dict[str, Any]:
    if message.role == "tool" or message.tool_call_id is not None:
        out: dict[str, Any] = {
            "id": message.id,
            "toolCallId": message.tool_call_id,
            "role": message.role,
            "content": message.content,
        }
    else:
        out = {"id": message.id, "role": message.role}
        if message.content is not None:
            out["content"] = str(message.content)
        if message.name is not None:
            out["name"] = message.name
    if message.encrypted_value is not None:
        out["encryptedValue"] = message.encrypted_value
    return out


def messages(nodes: Iterable[Node]) -> list[dict[str, Any]]:
    """The message list as ``defaultApplyEvents`` leaves it: JSON-ready dicts, in order.

    Tool results sit right after the assistant message that owns their call (after
    its earlier results); tool calls appear as ``toolCalls`` on their owner.
    """
    out: list[dict[str, Any]] = []
    by_id: dict[Any, dict[str, Any]] = {}
    for node in nodes:
        kind = node.kind
        if kind == "ag_ui_message":
            message = _message_dict(node.state)
            if message.get("toolCallId") is not None and message["role"] == "tool":
                _insert_result(out, message)
            else:
                out.append(message)
            by_id.setdefault(message["id"], message)  # the reference finds the first
        elif kind == "ag_ui_tool_call":
            call: ToolCallState = node.state
            owner = by_id.get(call.parent)
            if owner is None or owner.get("role") != "assistant":
                owner = {"id": call.parent, "role": "assistant", "toolCalls": []}
                out.append(owner)
                by_id[call.parent] = owner
            entry: dict[str, Any] = {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": str(call.arguments)},
            }
            if call.encrypted_value is not None:
                entry["encryptedValue"] = call.encrypted_value
            owner.setdefault("toolCalls", []).append(entry)
        elif kind == "ag_ui_run":
            for message in node.state.input_messages:
                if message.get("id") not in by_id:
                    message = copy.deepcopy(message)
                    out.append(message)
                    by_id[message.get("id")] = message
        elif kind == "ag_ui_event" and node.state.type == "MESSAGES_SNAPSHOT":
            out = _apply_snapshot(out, node.state.event.get("messages") or [])
            by_id = {}
            for message in out:
                by_id.setdefault(message.get("id"), message)
    return out


def _insert_result(out: list[dict[str, Any]], message: dict[str, Any]) -> None:
    tool_call_id = message["toolCallId"]
    for index, owner in enumerate(out):
        if owner.get("role") == "assistant" and any(
            call.get("id") == tool_call_id for call in owner.get("toolCalls") or ()
        ):
            index += 1
            while index < len(out) and out[index].get("role") == "tool":
                index += 1
            out.insert(index, message)
            return
    out.append(message)


def _apply_snapshot(
    current: list[dict[str, Any]], snapshot: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    fresh = []
    for message in snapshot:
        message = copy.deepcopy(message)
        if "subagentRunId" in message and message["subagentRunId"] is None:
            del message["subagentRunId"]
        fresh.append(message)
    by_id = {m.get("id"): m for m in fresh}
    keep_reasoning = not any(m.get("role") == "reasoning" for m in fresh)
    kept = [
        by_id.get(m.get("id"), m)
        for m in current
        if m.get("id") in by_id or (m.get("role") == "reasoning" and keep_reasoning)
    ]
    seen = {m.get("id") for m in kept}
    return kept + [m for m in fresh if m.get("id") not in seen]


def state(nodes: Iterable[Node]) -> Any:
    """The shared state as the reference leaves it (``{}`` when no STATE_* came)."""
    value: Any = {}
    for node in nodes:
        if node.kind == "ag_ui_state":
            value = node.state.value
    return value


# The types of the protocol's events, for detection.
_WIRE_TYPES: Final = frozenset(
    {
        "RUN_STARTED",
        "RUN_FINISHED",
        "RUN_ERROR",
        "STEP_STARTED",
        "STEP_FINISHED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TEXT_MESSAGE_CHUNK",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_CHUNK",
        "TOOL_CALL_RESULT",
        "REASONING_START",
        "REASONING_END",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_MESSAGE_CHUNK",
        "REASONING_ENCRYPTED_VALUE",
        "THINKING_START",
        "THINKING_END",
        "THINKING_TEXT_MESSAGE_START",
        "THINKING_TEXT_MESSAGE_CONTENT",
        "THINKING_TEXT_MESSAGE_END",
        "STATE_SNAPSHOT",
        "STATE_DELTA",
        "MESSAGES_SNAPSHOT",
        "ACTIVITY_SNAPSHOT",
        "ACTIVITY_DELTA",
        "RAW",
        "CUSTOM",
    }
)


def detect(event: Mapping[str, Any]) -> bool:
    """Whether a plain event dict is an AG-UI event (its ``type``)."""
    kind = event.get("type")
    return type(kind) is str and kind in _WIRE_TYPES


def prepare(events: Iterable[Any]) -> Iterator[Envelope]:
    """The envelopes of one stream's raw events (the pre-pass: one ``Preparer``, fresh)."""
    return Preparer().prepare(events)


event_type: Final = route_of
"""Routing key for ``create_conversation_engine(event_type=...)``: the shared
``_envelope.route_of`` (an envelope's ``route``, a row of ``ROUTES``)."""

PROTOCOL: Final = ProtocolSet.of_module(
    globals(),
    name="ag_ui",
    title="AG-UI",
    definitions=(
        _MessageDefinition(),
        _ToolCallDefinition(),
        _StateDefinition(),
        _RunDefinition(),
        _EventDefinition(),
    ),
    rebuild=messages,
)
"""The AG-UI protocol set (``definitions.ProtocolSet``)."""

DEFINITIONS: Final = PROTOCOL.definitions
"""The AG-UI definition set, in registration order: the set's guard
(``PROTOCOL.envelope``), then messages before their tool calls."""

# The names of one release ago (every set now says prepare, Preparer, Envelope).
__getattr__ = old_names(
    globals(),
    {
        **ROUTED_NAMES,
        "Message": "MessageState",
        "ToolCall": "ToolCallState",
        "Run": "RunState",
        "EventNode": "EventState",
    },
)
