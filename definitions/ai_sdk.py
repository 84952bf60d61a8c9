"""The AI SDK UI message stream (``ai`` 6 ``UIMessageChunk``s) folded into UI messages.

Theory of operation
-------------------
The reference (``readUIMessageStream``, built on ``processUIMessageStream``) keeps
one message and finds a chunk's target through state the chunk does not carry:
``text-delta`` names a part id that is only unique among the parts open *now* (a
``text-start`` may reuse an id, and every message of an agent loop restarts at
``"0"``), tool chunks search the current step first, a ``start`` with a new
``messageId`` begins a new message, and ``finish-step`` closes open text parts. The
engine's ``match`` must be pure, so a small **preparer** runs in front of it:
``Preparer()(chunk)`` wraps each raw chunk dict in a ``Envelope`` envelope naming the node
it starts or updates, and its ``route``: a row of the one table ``ROUTES`` saying which
definitions see it, how soon it shows and whether the reference yields a snapshot for
it (``definitions._envelope``; the engine routes on it). Node ids are positional
(``"<message>"`` and ``"<message>/<part>"``, counted from the start of the log), so a
reused part id never reopens an older part. The preparer never copies a chunk and keeps
only the lookup tables the reference consults (open parts, tool calls of the message,
data parts); the definitions fold the content. ``PROTOCOL.accumulate()`` applies it; live users
push raw chunks into ``PROTOCOL.engine()`` (the set's ``definitions.ProtocolSet``: the common live
path, with its errors), or call a ``Preparer`` per chunk.

A window cut mid-message has no ``start`` for the message and no ``*-start`` for
its open parts: their deltas are routed nowhere (no node), and parts that start
inside the window belong to the message the preparer saw last (``""`` if none, as
the reference's initial message), never to an earlier message.

Kinds: ``ai_sdk_message`` (id, metadata, finish reason, abort, errors),
``ai_sdk_text``, ``ai_sdk_reasoning``, ``ai_sdk_tool`` (static ``tool-<name>`` and
``dynamic-tool`` parts, approval, denial), ``ai_sdk_step`` (step-start parts, shown
once a later chunk of the message yields a snapshot, as in the reference) and
``ai_sdk_part`` (data-*, file, source-url, source-document). ``ui_messages(nodes)``
rebuilds the final ``UIMessage`` of each message, as the last snapshot
``readUIMessageStream`` yields.

Tool input deltas are kept as raw text and parsed once, in the rebuild, with the
reference's partial-JSON repair (``fixJson``), never per delta.

Where we differ from the reference on purpose: it stops the stream at the first
chunk it cannot attribute (an orphan delta, an output for an unknown tool call);
we drop that chunk and keep folding, as a view should show what arrived.
"""

from __future__ import annotations

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
    "UNSET",
    "Envelope",
    "MessageState",
    "PartState",
    "Preparer",
    "StepState",
    "TextPartState",
    "ToolPartState",
    "detect",
    "event_type",
    "fix_json",
    "parse_partial_json",
    "prepare",
    "ui_messages",
]

_FRAME: Final = "animation-frame"
_NOW: Final = "immediate"
_MESSAGE: Final = "ai_sdk_message"
_TEXT: Final = "ai_sdk_text"
_REASONING: Final = "ai_sdk_reasoning"
_TOOL: Final = "ai_sdk_tool"
_PART: Final = "ai_sdk_part"
_STEP: Final = "ai_sdk_step"
_PART_KINDS: Final = frozenset({_TEXT, _REASONING, _TOOL, _PART})


# The routing table: every route an envelope can take, declared once. A route names
# the definitions the envelope reaches, their publication for it, and whether the
# reference yields a snapshot for the chunk (``writes``); each definition's
# ``event_types`` and ``publication`` are read off it. A part's first chunk may also
# start its message (``+ai_sdk_message``), and a chunk that writes may also show the
# start-steps waiting for a snapshot (``+ai_sdk_step``): those are the same routes
# ``plus`` the other definition, rows of the table like the rest.
_NOWHERE: Final = Route("nowhere", frozenset())
_TO_MESSAGE: Final = Route("message", frozenset({_MESSAGE}), writes=True)
_TO_MESSAGE_QUIET: Final = Route("message-quiet", frozenset({_MESSAGE}))
_TO_TEXT: Final = Route("text", frozenset({_TEXT}), writes=True)
_TEXT_DELTA: Final = Route("text-delta", frozenset({_TEXT}), _FRAME, writes=True)
_TO_REASONING: Final = Route("reasoning", frozenset({_REASONING}), writes=True)
_REASONING_DELTA: Final = Route("reasoning-delta", frozenset({_REASONING}), _FRAME, writes=True)
_TO_TOOL: Final = Route("tool", frozenset({_TOOL}), writes=True)
_TOOL_DELTA: Final = Route("tool-delta", frozenset({_TOOL}), _FRAME, writes=True)
_TO_PART: Final = Route("part", frozenset({_PART}), writes=True)
_PART_STARTS: Final = (_TO_TEXT, _TO_REASONING, _TO_TOOL, _TO_PART)  # may start the message
_ROUTES_BY_CHUNK: Final = (
    _TO_MESSAGE,
    _TO_MESSAGE_QUIET,
    _TO_TEXT,
    _TEXT_DELTA,
    _TO_REASONING,
    _REASONING_DELTA,
    _TO_TOOL,
    _TOOL_DELTA,
    _TO_PART,
    *(route.plus(_MESSAGE) for route in _PART_STARTS),
)
ROUTES: Final[tuple[Route, ...]] = (
    _NOWHERE,
    *_ROUTES_BY_CHUNK,
    *(route.plus(_STEP) for route in _ROUTES_BY_CHUNK if route.writes),
)
"""The AI SDK routing table: every ``Route`` a ``Envelope`` envelope can take."""


class Envelope(msgspec.Struct, gc=False, eq=False):
    """One raw chunk plus the claims the preparer decided for it.

    ``event`` is the original dict (never copied). ``route`` is the row of ``ROUTES``
    it takes: the engine routes on it (``event_type``), so each chunk reaches only
    the definitions it concerns. Each definition reads its own claim field
    (``message``, ``text``, ``reasoning``, ``tool``, ``part``, ``step``; ``None``
    where the chunk is not its): a part's first chunk also starts its message, and a
    chunk the reference yields a snapshot for also shows the start-steps before it
    (``steps`` of them), which the reference pushes without yielding one. A bare
    envelope (route ``nowhere``) concerns no node.

    Made per event, so a Struct (``definitions._envelope`` says why).
    """

    event: Mapping[str, Any]
    route: Route = _NOWHERE
    # The part kinds' claims first: a delta is made positionally (the preparer's hot path).
    text: Claim | None = None
    reasoning: Claim | None = None
    tool: Claim | None = None
    part: Claim | None = None
    message: Claim | None = None
    step: Claim | None = None
    steps: int = 0

    @property
    def type(self) -> Any:
        """The raw chunk's ``type``."""
        return self.event.get("type")

    def __repr__(self) -> str:
        return describe(self, ("text", "reasoning", "tool", "part", "message", "step"))


def _message_of(part: Claim) -> str:
    """The message node of a part's node (``"<message>/<part>"``)."""
    return part.id.rpartition("/")[0]


class _Message:
    """The preparer's lookup tables for one message (what the reference searches)."""

    __slots__ = (
        "claim",
        "data",
        "id",
        "node",
        "partial",
        "parts",
        "pending_steps",
        "step_tools",
        "text",
        "tools",
    )

    def __init__(self, node: str, message_id: str) -> None:
        self.node = node
        self.id = message_id
        self.claim: Claim | None = None  # the message node's update claim, once started
        self.parts = 0
        self.pending_steps = 0  # start-steps no snapshot has shown yet
        self.text: dict[str, Claim] = {}  # open text parts by chunk id
        self.partial: dict[str, Claim] = {}  # tool calls with streaming input, by id
        self.tools: dict[str, Claim] = {}  # latest tool part of each call in the message
        self.step_tools: dict[tuple[str, bool], Claim] = {}  # (id, dynamic) in this step
        self.data: dict[tuple[str, str], Claim] = {}


class Preparer:
    """Decides, per raw UI message chunk, which node it starts or updates.

    Call it on each chunk in log order (``preparer(chunk) -> Envelope``), or use
    ``prepare(chunks)``; ``PROTOCOL.engine()`` runs it as its live pre-pass. One
    preparer per log.
    """

    def __init__(self) -> None:
        self._count = 0
        self._current = _Message("0", "")
        self._reasoning: dict[str, Claim] = {}

    def __call__(self, event: Any) -> Envelope:
        """The envelope of ``event`` (a chunk dict, or a typed chunk by its shape); a
        chunk that concerns no node gets a bare one."""
        if not isinstance(event, dict):  # a dict subclass is folded as it is, as by prepare
            event = PROTOCOL.as_dict(event)
        kind = event.get("type")
        handler = _HANDLERS.get(kind)
        if handler is not None:
            routed = handler(self, event)
        elif type(kind) is str and kind.startswith("data-"):
            routed = self._data(event)
        else:
            return Envelope(event)
        current = self._current
        route = routed.route
        if current.pending_steps and route.writes:
            current.parts += 1
            routed.route = route.plus(_STEP)
            routed.step = Claim(f"{current.node}/{current.parts}", "start")
            routed.steps = current.pending_steps
            current.pending_steps = 0
        return routed

    def prepare(self, events: Iterable[Any]) -> Iterator[Envelope]:
        """Envelopes of ``events``, in order."""
        handlers = _HANDLERS
        delta_keys = _DELTA_KEYS
        route_one = self.__call__
        # The last delta routed to a part: its type, the chunk key naming the part and
        # its value there, its route and claims. Only other chunks change the tables a
        # delta is routed by (and any other chunk forgets it), so the next delta of
        # that type naming the same part is routed the same: most of a stream takes
        # this one comparison and a get.
        last_type: Any = _ABSENT
        last_key = ""
        last_part: Any = _ABSENT
        last_route = _NOWHERE
        last_text = last_reasoning = last_tool = None
        get = dict.get  # raises TypeError for what is not a dict: no type test per event
        for position, event in enumerate(PROTOCOL.dicts(events)):
            try:
                try:
                    kind = get(event, "type")
                except TypeError:  # a typed event in a stream of dicts (plain names anything else)
                    event = PROTOCOL.as_dict(event)
                    kind = event.get("type")
                if kind == last_type and get(event, last_key, _ABSENT) == last_part:
                    yield Envelope(event, last_route, last_text, last_reasoning, last_tool)
                    continue
                # The common case inline (a known chunk, no pending step); else the full path.
                handler = handlers.get(kind)
                if handler is None or self._current.pending_steps:
                    routed = route_one(event)
                else:
                    routed = handler(self, event)
                last_route = routed.route
                last_key = delta_keys.get(last_route, "")
                if last_key:  # a delta routed to its part with no step to show
                    last_type = kind
                    last_part = event[last_key]
                    last_text, last_reasoning = routed.text, routed.reasoning
                    last_tool = routed.tool
                else:
                    last_type = _ABSENT
                yield routed
            except UNREADABLE as exc:  # an event of the wrong shape
                raise PROTOCOL.unreadable(position, event, exc) from exc

    # -- messages ----------------------------------------------------------------------

    def _message_claim(self, message: _Message) -> Claim | None:
        """The claim that starts the message node if this is its first chunk."""
        if message.claim is None:
            message.claim = Claim(message.node, "update")
            return Claim(message.node, "start")
        return None

    def _start(self, event: Mapping[str, Any]) -> Envelope:
        message_id = event.get("messageId")
        current = self._current
        if message_id is not None and message_id != current.id:
            # readUIMessageStream(resetStateOnMessageIdChange): a new message.
            self._count += 1
            current = self._current = _Message(str(self._count), message_id)
            self._reasoning = {}
        start = self._message_claim(current)
        route = _TO_MESSAGE
        if message_id is None and event.get("messageMetadata") is None:
            route = _TO_MESSAGE_QUIET
        return Envelope(event, route, message=start or current.claim)

    def _message_update(self, event: Mapping[str, Any]) -> Envelope:
        current = self._current
        start = self._message_claim(current)
        route = _TO_MESSAGE
        if event["type"] in ("abort", "error") or event.get("messageMetadata") is None:
            route = _TO_MESSAGE_QUIET
        return Envelope(event, route, message=start or current.claim)

    def _new_part(
        self, event: Mapping[str, Any], route: Route, field: str
    ) -> tuple[Envelope, Claim]:
        """The envelope starting a new part of the current message (``route``, its
        claim in ``field``; it starts the message too if nothing did yet), and the
        part's update claim."""
        current = self._current
        current.parts += 1
        node = f"{current.node}/{current.parts}"
        message_start = self._message_claim(current)
        if message_start is not None:
            route = route.plus(_MESSAGE)
        routed = Envelope(event, route, message=message_start)
        setattr(routed, field, Claim(node, "start"))
        return routed, Claim(node, "update")

    def _text_start(self, event: Mapping[str, Any]) -> Envelope:
        routed, update = self._new_part(event, _TO_TEXT, "text")
        self._current.text[event["id"]] = update
        return routed

    def _text_delta(self, event: Mapping[str, Any]) -> Envelope:
        claim = self._current.text.get(event["id"])
        return Envelope(event) if claim is None else Envelope(event, _TEXT_DELTA, claim)

    def _text_end(self, event: Mapping[str, Any]) -> Envelope:
        claim = self._current.text.pop(event["id"], None)
        return Envelope(event) if claim is None else Envelope(event, _TO_TEXT, claim)

    def _reasoning_start(self, event: Mapping[str, Any]) -> Envelope:
        routed, update = self._new_part(event, _TO_REASONING, "reasoning")
        self._reasoning[event["id"]] = update
        return routed

    def _reasoning_delta(self, event: Mapping[str, Any]) -> Envelope:
        claim = self._reasoning.get(event["id"])
        return Envelope(event) if claim is None else Envelope(event, _REASONING_DELTA, None, claim)

    def _reasoning_end(self, event: Mapping[str, Any]) -> Envelope:
        claim = self._reasoning.pop(event["id"], None)
        return Envelope(event) if claim is None else Envelope(event, _TO_REASONING, reasoning=claim)

    # -- tools ---------------------------------------------------------------------------

    def _tool_part(self, event: Mapping[str, Any], dynamic: bool) -> Envelope:
        """updateToolPart/updateDynamicToolPart: the call's part in this step, or a new one."""
        current = self._current
        tool_call_id = event["toolCallId"]
        claim = current.step_tools.get((tool_call_id, dynamic))
        if claim is not None:
            return Envelope(event, _TO_TOOL, tool=claim)
        routed, update = self._new_part(event, _TO_TOOL, "tool")
        current.step_tools[(tool_call_id, dynamic)] = update
        current.tools[tool_call_id] = update
        return routed

    def _tool_start(self, event: Mapping[str, Any]) -> Envelope:
        dynamic = bool(event.get("dynamic"))
        routed = self._tool_part(event, dynamic)
        # The input deltas update the part with its one cached update claim.
        current = self._current
        tool_call_id = event["toolCallId"]
        current.partial[tool_call_id] = current.step_tools[(tool_call_id, dynamic)]
        return routed

    def _tool_delta(self, event: Mapping[str, Any]) -> Envelope:
        claim = self._current.partial.get(event["toolCallId"])
        return Envelope(event) if claim is None else Envelope(event, _TOOL_DELTA, None, None, claim)

    def _tool_input(self, event: Mapping[str, Any]) -> Envelope:
        dynamic = bool(event.get("dynamic"))
        if event["type"] == "tool-input-error":
            # The reference keeps the kind of a part already in this step.
            tool_call_id = event["toolCallId"]
            if (tool_call_id, not dynamic) in self._current.step_tools:
                dynamic = not dynamic
        return self._tool_part(event, dynamic)

    def _tool_output(self, event: Mapping[str, Any]) -> Envelope:
        # getToolInvocation: this step's part first, else the latest in the message.
        current = self._current
        tool_call_id = event["toolCallId"]
        claim = (
            current.step_tools.get((tool_call_id, False))
            or current.step_tools.get((tool_call_id, True))
            or current.tools.get(tool_call_id)
        )
        return Envelope(event) if claim is None else Envelope(event, _TO_TOOL, tool=claim)

    # -- steps and other parts --------------------------------------------------------

    def _start_step(self, event: Mapping[str, Any]) -> Envelope:
        self._current.step_tools = {}
        self._current.pending_steps += 1
        return Envelope(event)

    def _finish_step(self, event: Mapping[str, Any]) -> Envelope:
        self._current.text = {}
        self._reasoning = {}
        return Envelope(event)

    def _part(self, event: Mapping[str, Any]) -> Envelope:
        return self._new_part(event, _TO_PART, "part")[0]

    def _data(self, event: Mapping[str, Any]) -> Envelope:
        if event.get("transient"):
            return Envelope(event)  # delivered to onData only, never a part
        data_id = event.get("id")
        if data_id is not None:
            claim = self._current.data.get((event["type"], data_id))
            if claim is not None:
                return Envelope(event, _TO_PART, part=claim)
        routed, update = self._new_part(event, _TO_PART, "part")
        if data_id is not None:
            self._current.data[(event["type"], data_id)] = update
        return routed


# The preparer's handler of each chunk type (data-* aside): plain functions of (preparer,
# chunk), in one table for all preparers (a preparer is made per log, and many are short).
_HANDLERS: Final[dict[Any, Callable[[Preparer, Mapping[str, Any]], Envelope]]] = {
    "start": Preparer._start,
    "finish": Preparer._message_update,
    "message-metadata": Preparer._message_update,
    "abort": Preparer._message_update,
    "error": Preparer._message_update,
    "text-start": Preparer._text_start,
    "text-delta": Preparer._text_delta,
    "text-end": Preparer._text_end,
    "reasoning-start": Preparer._reasoning_start,
    "reasoning-delta": Preparer._reasoning_delta,
    "reasoning-end": Preparer._reasoning_end,
    "tool-input-start": Preparer._tool_start,
    "tool-input-delta": Preparer._tool_delta,
    "tool-input-available": Preparer._tool_input,
    "tool-input-error": Preparer._tool_input,
    "tool-output-available": Preparer._tool_output,
    "tool-output-error": Preparer._tool_output,
    "tool-approval-request": Preparer._tool_output,
    "tool-output-denied": Preparer._tool_output,
    "start-step": Preparer._start_step,
    "finish-step": Preparer._finish_step,
    "file": Preparer._part,
    "source-url": Preparer._part,
    "source-document": Preparer._part,
}


# The delta routes (with no step to show) and the chunk key naming their part.
_DELTA_KEYS: Final[dict[Route, str]] = {
    _TEXT_DELTA: "id",
    _REASONING_DELTA: "id",
    _TOOL_DELTA: "toolCallId",
}
_ABSENT: Final = object()  # no chunk type or part id is this

# -- states -------------------------------------------------------------------------------


class MessageState(msgspec.Struct, frozen=True):
    """One UI message: its id, merged metadata, finish reason, abort and error texts."""

    id: str
    metadata: Any = None
    finish_reason: str | None = None
    aborted: bool = False
    finished: bool = False
    errors: tuple[str, ...] = ()


class TextPartState(msgspec.Struct, frozen=True):
    """A text or reasoning part (``id`` is the chunk id; only reasoning parts show it)."""

    message: str
    id: str
    text: StreamedText
    done: bool = False
    provider_metadata: Any = None


class _Unset:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = _Unset()
"""A field the reference leaves ``undefined`` (absent from the JSON)."""
_PARTIAL: Final = "\x00partial"  # input = the partial parse of ``raw``


class ToolPartState(msgspec.Struct, frozen=True):
    """A tool invocation part (static ``tool-<name>`` or ``dynamic-tool``).

    ``raw`` is the streamed input text; ``input`` is the value, or ``"\\x00partial"``
    meaning "the partial parse of ``raw``", computed by the rebuild only. ``raw_input``
    is ``True`` when the part shows ``raw`` as ``rawInput``, else the value to show.
    """

    message: str
    tool_call_id: str
    tool_name: str
    dynamic: bool
    state: str
    raw: StreamedText = msgspec.field(default_factory=StreamedText)
    input: Any = UNSET
    raw_input: Any = UNSET
    output: Any = UNSET
    error_text: Any = UNSET
    provider_executed: Any = UNSET
    preliminary: Any = UNSET
    title: Any = UNSET
    tool_metadata: Any = UNSET
    input_encoding: Any = UNSET
    call_provider_metadata: Any = UNSET
    result_provider_metadata: Any = UNSET
    approval: Any = UNSET


class PartState(msgspec.Struct, frozen=True):
    """A discrete part: step-start, data-*, file, source-url or source-document.

    ``fields`` is the part as the reference shows it (a data part's ``data`` is
    replaced by a later chunk with the same type and id)."""

    message: str
    type: str
    fields: Any


# -- definitions --------------------------------------------------------------------------


def _merge(existing: Any, incoming: Any) -> Any:
    """mergeObjects: a deep merge of plain objects, other values replaced."""
    if not isinstance(existing, dict) or not isinstance(incoming, dict):
        return incoming
    merged = dict(existing)
    for key, value in incoming.items():
        merged[key] = _merge(merged[key], value) if key in merged else value
    return merged


class _MessageDefinition:
    """One node per message: id, metadata, finish, abort, errors."""

    # A part's start may start its message too; deltas never do.
    kind, event_types, publication, match = on_routes(_MESSAGE, "message", ROUTES)

    @staticmethod
    def start(routed: Envelope, reader: Reader) -> MessageState:
        event = routed.event
        message_id = event.get("messageId") if event.get("type") == "start" else None
        state = MessageState(message_id if message_id is not None else "")
        if routed.route.kinds & _PART_KINDS:  # a part's first chunk: the part folds it
            return state
        return _MessageDefinition.update(state, routed)

    @staticmethod
    def update(state: MessageState, routed: Envelope) -> MessageState:
        event = routed.event
        kind = event.get("type")
        metadata = event.get("messageMetadata")
        if metadata is not None:
            merged = metadata if state.metadata is None else _merge(state.metadata, metadata)
            state = msgspec.structs.replace(state, metadata=merged)
        if kind == "finish":
            reason = event.get("finishReason")
            state = msgspec.structs.replace(
                state,
                finished=True,
                finish_reason=state.finish_reason if reason is None else reason,
            )
        elif kind == "abort":
            state = msgspec.structs.replace(state, aborted=True)
        elif kind == "error":
            state = msgspec.structs.replace(
                state, errors=(*state.errors, str(event.get("errorText")))
            )
        return state

    @staticmethod
    def render_text(node: Node) -> str:
        """Nothing for a message that ended normally (its parts show it); else the
        finish reason, the abort and the errors."""
        state: MessageState = node.state
        reason = state.finish_reason if state.finish_reason not in (None, "stop") else ""
        lines = [f"finished: {reason}"] if reason else []
        if state.aborted:
            lines.append("(aborted)")
        return "\n".join([*lines, *(f"error: {error}" for error in state.errors)])

    @staticmethod
    def render_html(node: Node) -> str:
        """Nothing for a message that ended normally (its parts show it); else a row
        with the finish reason, the abort and the errors."""
        from ._render import line

        state: MessageState = node.state
        reason = state.finish_reason if state.finish_reason not in (None, "stop") else ""
        if not (reason or state.aborted or state.errors):
            return ""
        return line(
            "meta",
            ("decision", "aborted" if state.aborted else reason),
            *(("error", error) for error in state.errors),
            status="error" if state.errors or state.aborted else "",
        )


def _text_appended(part: TextPartState, text: str) -> TextPartState:
    """``part`` with ``text`` appended (what ``update`` makes of a delta chunk without
    providerMetadata)."""
    return TextPartState(
        part.message, part.id, part.text.append(text), part.done, part.provider_metadata
    )


def _input_appended(part: ToolPartState, text: str) -> ToolPartState:
    """``part`` with ``text`` appended to its raw input (what ``update`` makes of a
    ``tool-input-delta``)."""
    return msgspec.structs.replace(part, raw=part.raw.append(text), input=_PARTIAL, raw_input=True)


class _TextDefinition:
    """Text parts: streamed text, done, provider metadata."""

    # Deltas wait for the next animation frame; the rest is immediate.
    kind, event_types, publication, match = on_routes(_TEXT, "text", ROUTES)
    label = "text"

    @classmethod
    def start(cls, routed: Envelope, reader: Reader) -> TextPartState:
        event = routed.event
        claim = cls.match(routed)  # the text's claim, or the reasoning's
        assert claim is not None  # match claimed it
        return TextPartState(
            _message_of(claim), event["id"], StreamedText(), False, event.get("providerMetadata")
        )

    @staticmethod
    def update(part: TextPartState, routed: Envelope) -> TextPartState:
        event = routed.event
        metadata = event.get("providerMetadata")
        delta = event.get("delta")
        if delta is not None:
            return TextPartState(
                part.message,
                part.id,
                part.text.append(delta),
                part.done,
                part.provider_metadata if metadata is None else metadata,
            )
        return TextPartState(
            part.message,
            part.id,
            part.text,
            True,
            part.provider_metadata if metadata is None else metadata,
        )

    @staticmethod
    def update_many(part: TextPartState, run: list[Envelope]) -> TextPartState:
        """``update`` over a run (``fold_run``): a part's streamed deltas, which the
        engine hands over together, make one append. A chunk with providerMetadata,
        or without a delta, goes to ``update``; a delta of another type than str makes
        the join raise, and the engine folds the run one event at a time (``update``
        raises as ``StreamedText.append`` does)."""
        pieces = [
            None if "providerMetadata" in (event := routed.event) else event.get("delta")
            for routed in run
        ]
        return fold_run(part, run, pieces, _text_appended, _TextDefinition.update)

    @classmethod
    def render_text(cls, node: Node) -> str:
        """``assistant: text`` or ``reasoning: text``."""
        label = "assistant" if cls.label == "text" else cls.label
        return f"{label}: {node.state.text}"

    @classmethod
    def render_html(cls, node: Node) -> str:
        """Text as a Markdown bubble; reasoning folded."""
        from ._render import bubble, folded, markdown

        part: TextPartState = node.state
        if cls.label == "reasoning":
            summary = "Reasoning" if part.done else "Reasoning …"
            return folded(summary, markdown(part.text), cls="reasoning")
        return bubble("assistant", markdown(part.text)) if str(part.text) else ""


class _ReasoningDefinition(_TextDefinition):
    """Reasoning parts (a text part that shows its id)."""

    kind, event_types, publication, match = on_routes(_REASONING, "reasoning", ROUTES)
    label = "reasoning"


_OUTPUT_STATES: Final = {
    "tool-output-available": "output-available",
    "tool-output-error": "output-error",
}


class _ToolDefinition:
    """Tool invocation parts through input, output, approval and denial."""

    kind, event_types, publication, match = on_routes(_TOOL, "tool", ROUTES)

    @staticmethod
    def start(routed: Envelope, reader: Reader) -> ToolPartState:
        event = routed.event
        dynamic = bool(event.get("dynamic"))
        assert routed.tool is not None  # match claimed it
        part = ToolPartState(
            _message_of(routed.tool),
            event["toolCallId"],
            event.get("toolName") or "",
            dynamic,
            "",
            _EMPTY_TEXT,  # the default, without a call of its factory
        )
        return _ToolDefinition.update(part, routed)

    @staticmethod
    def update(part: ToolPartState, routed: Envelope) -> ToolPartState:
        event = routed.event
        kind = event["type"]
        if kind == "tool-input-delta":
            return msgspec.structs.replace(
                part,
                raw=part.raw + event.get("inputTextDelta", ""),
                input=_PARTIAL,
                raw_input=True,
            )
        # Each phase makes the new part positionally: replace() with a dozen keywords
        # costs several times as much, and a call has a start and an output or two.
        if kind in _INPUT_KINDS:
            return _input_phase(part, event, kind)
        if kind in _OUTPUT_STATES:
            return _output_phase(part, event, kind)
        if kind == "tool-approval-request":
            approval: dict[str, Any] = {"id": event.get("approvalId")}
            if event.get("approvalDescriptor") is not None:
                approval["descriptor"] = event["approvalDescriptor"]
            if "inputSchemaInput" in event:
                approval["inputSchemaInput"] = event["inputSchemaInput"]
            if event.get("signature") is not None:
                approval["signature"] = event["signature"]
            return msgspec.structs.replace(part, state="approval-requested", approval=approval)
        if kind == "tool-output-denied":
            return msgspec.structs.replace(part, state="output-denied")
        return part

    @staticmethod
    def update_many(part: ToolPartState, run: list[Envelope]) -> ToolPartState:
        """``update`` over a run (``fold_run``): a call's streamed input makes one
        append; any other chunk goes to ``update``."""
        pieces = [
            event.get("inputTextDelta", "")
            if (event := routed.event)["type"] == "tool-input-delta"
            else None
            for routed in run
        ]
        return fold_run(part, run, pieces, _input_appended, _ToolDefinition.update)

    @staticmethod
    def render_json(node: Node) -> object:
        """The part as the reference shows it (undefined fields absent), and its message."""
        return {"message": node.state.message, "part": _tool_dict(node.state)}

    @staticmethod
    def render_text(node: Node) -> str:
        part: ToolPartState = node.state
        text = f"tool {part.tool_name} [{part.state}] {part.raw or _json(part.input)}"
        if part.output is not UNSET:
            text += f"\n-> {_json(part.output)}"
        if part.error_text is not UNSET:
            text += f"\nerror: {part.error_text}"
        return text

    @staticmethod
    def render_html(node: Node) -> str:
        """A tool card: name, input, output or error, the part's state."""
        from ._render import tool_card

        part: ToolPartState = node.state
        arguments = str(part.raw) if str(part.raw) or part.input is _PARTIAL else part.input
        return tool_card(
            part.tool_name,
            part.state,
            arguments=None if arguments is UNSET else arguments,
            result=None if part.output is UNSET else part.output,
            error=None if part.error_text is UNSET else part.error_text,
        )


_INPUT_KINDS: Final = frozenset({"tool-input-start", "tool-input-available", "tool-input-error"})
_EMPTY_TEXT: Final = StreamedText()


def _input_phase(part: ToolPartState, event: Mapping[str, Any], kind: str) -> ToolPartState:
    """updateToolPart with the chunk's own fields: the fields the chunk lacks become
    undefined, except providerExecuted, title and toolMetadata (kept when absent or
    null); providerMetadata (unless absent or null) is the call's, or the result's for
    an input error."""
    get = event.get
    raw = part.raw
    value = raw_input = error_text = UNSET
    if kind == "tool-input-start":
        state = "input-streaming"
        raw = _EMPTY_TEXT
    elif kind == "tool-input-available":
        state = "input-available"
        value = get("input", UNSET)
    else:  # tool-input-error: a static tool shows the bad input as rawInput
        state = "output-error"
        if part.dynamic:
            value = get("input", UNSET)
        else:
            raw_input = get("input", UNSET)
        error_text = get("errorText", UNSET)
    call_metadata = part.call_provider_metadata
    result_metadata = part.result_provider_metadata
    provider_metadata = get("providerMetadata")
    if provider_metadata is not None:
        if kind == "tool-input-error":
            result_metadata = provider_metadata
        else:
            call_metadata = provider_metadata
    provider_executed = get("providerExecuted")
    title = get("title")
    tool_metadata = get("toolMetadata")
    return ToolPartState(
        part.message,
        part.tool_call_id,
        get("toolName", part.tool_name),
        part.dynamic,
        state,
        raw,
        value,
        raw_input,
        UNSET,  # output
        error_text,
        part.provider_executed if provider_executed is None else provider_executed,
        UNSET,  # preliminary
        part.title if title is None else title,
        part.tool_metadata if tool_metadata is None else tool_metadata,
        get("inputEncoding", UNSET),
        call_metadata,
        result_metadata,
        part.approval,
    )


def _output_phase(part: ToolPartState, event: Mapping[str, Any], kind: str) -> ToolPartState:
    """An output or output error: the input encoding becomes undefined, and so does
    rawInput unless a static tool's input error left it; providerExecuted is the
    chunk's if it has the key (null included); toolMetadata and providerMetadata (the
    result's) unless absent or null."""
    get = event.get
    if kind == "tool-output-available":
        output = get("output", UNSET)
        preliminary = get("preliminary", UNSET)
        error_text = UNSET
    else:
        output = preliminary = UNSET
        error_text = get("errorText", UNSET)
    raw_input = UNSET if kind == "tool-output-available" or part.dynamic else part.raw_input
    tool_metadata = get("toolMetadata")
    provider_metadata = get("providerMetadata")
    return ToolPartState(
        part.message,
        part.tool_call_id,
        part.tool_name,
        part.dynamic,
        _OUTPUT_STATES[kind],
        part.raw,
        part.input,
        raw_input,
        output,
        error_text,
        get("providerExecuted", part.provider_executed),
        preliminary,
        part.title,
        part.tool_metadata if tool_metadata is None else tool_metadata,
        UNSET,  # input_encoding
        part.call_provider_metadata,
        part.result_provider_metadata if provider_metadata is None else provider_metadata,
        part.approval,
    )


def _json(value: Any) -> str:
    if value is UNSET:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


class StepState(msgspec.Struct, frozen=True):
    """``count`` step-start parts (consecutive start-steps shown by one snapshot)."""

    message: str
    count: int


class _StepDefinition:
    """StepState-start parts, started when a later chunk's snapshot shows them."""

    kind, event_types, publication, match = on_routes(_STEP, "step", ROUTES)

    @staticmethod
    def start(routed: Envelope, reader: Reader) -> StepState:
        claim = routed.step
        assert claim is not None  # match claimed it
        return StepState(_message_of(claim), routed.steps)

    @staticmethod
    def update(step: StepState, routed: Envelope) -> StepState:
        return step

    @staticmethod
    def render_text(node: Node) -> str:
        """Nothing: a step only groups parts."""
        return ""

    @staticmethod
    def render_html(node: Node) -> str:
        """Nothing: a step only groups parts."""
        return ""


_PART_FIELDS: Final = {
    "file": ("mediaType", "url", "providerMetadata"),
    "source-url": ("sourceId", "url", "title", "providerMetadata"),
    "source-document": ("sourceId", "mediaType", "title", "filename", "providerMetadata"),
}


class _PartDefinition:
    """Discrete parts: data-*, file, source-url, source-document."""

    kind, event_types, publication, match = on_routes(_PART, "part", ROUTES)

    @staticmethod
    def start(routed: Envelope, reader: Reader) -> PartState:
        event = routed.event
        kind = event["type"]
        assert routed.part is not None  # match claimed it
        message = _message_of(routed.part)
        # An absent field is the reference's undefined (dropped); a JSON null is kept.
        if kind.startswith("data-"):
            return PartState(message, kind, dict(event))  # the chunk itself is the part
        fields = {"type": kind}
        for key in _PART_FIELDS[kind]:
            if key in event:
                fields[key] = event[key]
        if kind == "file" and fields.get("providerMetadata", 0) is None:
            del fields["providerMetadata"]  # spread only when != null
        return PartState(message, kind, fields)

    @staticmethod
    def update(part: PartState, routed: Envelope) -> PartState:
        event = routed.event
        fields = {key: value for key, value in part.fields.items() if key != "data"}
        if "data" in event:
            fields["data"] = event["data"]
        return PartState(part.message, part.type, fields)

    @staticmethod
    def render_text(node: Node) -> str:
        part: PartState = node.state
        if part.type == "step-start":
            return ""
        fields = {k: v for k, v in part.fields.items() if k != "type"}
        return f"{part.type} {payload(fields)}"

    @staticmethod
    def render_html(node: Node) -> str:
        """Sources as links, files as a row, data parts folded as JSON."""
        from ._render import code, folded, line, payload, sources

        part: PartState = node.state
        fields = part.fields
        if part.type == "step-start":
            return ""
        if part.type == "source-url":
            return sources([(fields.get("url"), fields.get("title"), "")])
        if part.type in ("file", "source-document"):
            name = fields.get("filename") or fields.get("title") or ""
            return line(
                "meta", ("decision", part.type), ("label", name), ("model", fields.get("mediaType"))
            )
        data = {k: v for k, v in fields.items() if k != "type"}
        return folded(part.type, code(payload(data, indent=2), "json"), cls="results")


# The matches are C attrgetters: a raw chunk dict (or any object but an envelope) goes
# to this guard instead, which names the fix (the engine routes it by its class).


# -- partial JSON (the reference's fixJson) --------------------------------------------


def fix_json(text: str) -> str:
    """``text`` completed into parseable JSON the way the AI SDK's ``fixJson`` does it.

    A port of ``fixJson`` from ``ai`` (``src/util/fix-json.ts``): keep the longest
    valid prefix, then close open strings, objects and arrays and complete a cut-off
    ``true``/``false``/``null``. One pass, O(len(text)).
    """
    stack = ["ROOT"]
    last_valid = -1
    literal_start = 0
    unicode_digits = 0

    def value_start(char: str, i: int, swap: str) -> None:
        nonlocal last_valid, literal_start
        nxt = _VALUE_START.get(char)
        if nxt is None:
            return
        if char != "-":
            last_valid = i
        if char in "ftn":
            literal_start = i
        stack.pop()
        stack.append(swap)
        stack.append(nxt)

    def after_object_value(char: str, i: int) -> None:
        nonlocal last_valid
        if char == ",":
            stack.pop()
            stack.append("INSIDE_OBJECT_AFTER_COMMA")
        elif char == "}":
            last_valid = i
            stack.pop()

    def after_array_value(char: str, i: int) -> None:
        nonlocal last_valid
        if char == ",":
            stack.pop()
            stack.append("INSIDE_ARRAY_AFTER_COMMA")
        elif char == "]":
            last_valid = i
            stack.pop()

    for i, char in enumerate(text):
        state = stack[-1]
        if state == "ROOT":
            value_start(char, i, "FINISH")
        elif state == "INSIDE_OBJECT_START":
            if char == '"':
                stack.pop()
                stack.append("INSIDE_OBJECT_KEY")
            elif char == "}":
                last_valid = i
                stack.pop()
        elif state == "INSIDE_OBJECT_AFTER_COMMA":
            if char == '"':
                stack.pop()
                stack.append("INSIDE_OBJECT_KEY")
        elif state == "INSIDE_OBJECT_KEY":
            if char == '"':
                stack.pop()
                stack.append("INSIDE_OBJECT_AFTER_KEY")
        elif state == "INSIDE_OBJECT_AFTER_KEY":
            if char == ":":
                stack.pop()
                stack.append("INSIDE_OBJECT_BEFORE_VALUE")
        elif state == "INSIDE_OBJECT_BEFORE_VALUE":
            value_start(char, i, "INSIDE_OBJECT_AFTER_VALUE")
        elif state == "INSIDE_OBJECT_AFTER_VALUE":
            after_object_value(char, i)
        elif state == "INSIDE_STRING":
            if char == '"':
                stack.pop()
                last_valid = i
            elif char == "\\":
                stack.append("INSIDE_STRING_ESCAPE")
            else:
                last_valid = i
        elif state == "INSIDE_ARRAY_START":
            if char == "]":
                last_valid = i
                stack.pop()
            else:
                last_valid = i
                value_start(char, i, "INSIDE_ARRAY_AFTER_VALUE")
        elif state == "INSIDE_ARRAY_AFTER_VALUE":
            if char == ",":
                stack.pop()
                stack.append("INSIDE_ARRAY_AFTER_COMMA")
            elif char == "]":
                last_valid = i
                stack.pop()
            else:
                last_valid = i
        elif state == "INSIDE_ARRAY_AFTER_COMMA":
            value_start(char, i, "INSIDE_ARRAY_AFTER_VALUE")
        elif state == "INSIDE_STRING_ESCAPE":
            stack.pop()
            if char == "u":
                unicode_digits = 0
                stack.append("INSIDE_STRING_UNICODE_ESCAPE")
            else:
                last_valid = i
        elif state == "INSIDE_STRING_UNICODE_ESCAPE":
            if char in _HEX:
                unicode_digits += 1
                if unicode_digits == 4:
                    stack.pop()
                    last_valid = i
        elif state == "INSIDE_NUMBER":
            if char in "0123456789":
                last_valid = i
            elif char in "eE-.":
                pass
            elif char == ",":
                stack.pop()
                if stack[-1] == "INSIDE_ARRAY_AFTER_VALUE":
                    after_array_value(char, i)
                if stack[-1] == "INSIDE_OBJECT_AFTER_VALUE":
                    after_object_value(char, i)
            elif char == "}":
                stack.pop()
                if stack[-1] == "INSIDE_OBJECT_AFTER_VALUE":
                    after_object_value(char, i)
            elif char == "]":
                stack.pop()
                if stack[-1] == "INSIDE_ARRAY_AFTER_VALUE":
                    after_array_value(char, i)
            else:
                stack.pop()
        elif state == "INSIDE_LITERAL":
            partial = text[literal_start : i + 1]
            if not any(word.startswith(partial) for word in ("false", "true", "null")):
                stack.pop()
                if stack[-1] == "INSIDE_OBJECT_AFTER_VALUE":
                    after_object_value(char, i)
                elif stack[-1] == "INSIDE_ARRAY_AFTER_VALUE":
                    after_array_value(char, i)
            else:
                last_valid = i
    result = text[: last_valid + 1]
    for state in reversed(stack):
        if state == "INSIDE_STRING":
            result += '"'
        elif state.startswith("INSIDE_OBJECT"):
            result += "}"
        elif state.startswith("INSIDE_ARRAY"):
            result += "]"
        elif state == "INSIDE_LITERAL":
            partial = text[literal_start:]
            for word in ("true", "false", "null"):
                if word.startswith(partial):
                    result += word[len(partial) :]
                    break
    return result


_VALUE_START: Final = {
    '"': "INSIDE_STRING",
    "f": "INSIDE_LITERAL",
    "t": "INSIDE_LITERAL",
    "n": "INSIDE_LITERAL",
    "-": "INSIDE_NUMBER",
    **dict.fromkeys("0123456789", "INSIDE_NUMBER"),
    "{": "INSIDE_OBJECT_START",
    "[": "INSIDE_ARRAY_START",
}
_HEX: Final = frozenset("0123456789abcdefABCDEF")


def parse_partial_json(text: str) -> Any:
    """``parsePartialJson(text).value``: the parse, else the parse of ``fix_json(text)``,
    else ``UNSET`` (the reference's ``undefined``)."""
    try:
        return _loads(text)
    except ValueError:
        pass
    try:
        return _loads(fix_json(text))
    except ValueError:
        return UNSET


_decode: Final = msgspec.json.Decoder().decode


def _loads(text: str) -> Any:
    """``json.loads(text)``, a few times faster on what msgspec takes (a valid document
    with finite numbers, where it gives the same values); the rest (NaN, Infinity,
    1e400, lone surrogates, invalid text) goes to ``json.loads`` as before."""
    try:
        return _decode(text)
    except Exception:  # json.loads says what the text is
        return json.loads(text)


# -- rebuild ------------------------------------------------------------------------------


def _tool_dict(part: ToolPartState) -> dict[str, Any]:
    out: dict[str, Any]
    if part.dynamic:
        out = {"type": "dynamic-tool", "toolName": part.tool_name}
    else:
        out = {"type": f"tool-{part.tool_name}"}
    out["toolCallId"] = part.tool_call_id
    out["state"] = part.state
    value = part.input
    if value is _PARTIAL:
        value = (
            str(part.raw) if part.input_encoding == "text" else parse_partial_json(str(part.raw))
        )
    # UNSET is the reference's undefined (absent from the JSON); None is a JSON null.
    if value is not UNSET:
        out["input"] = value
    raw = part.raw_input
    if raw is True:
        out["rawInput"] = str(part.raw)
    elif raw is not UNSET:
        out["rawInput"] = raw
    # The optional fields, each shown unless undefined (unrolled: a loop over the ten
    # of them costs several times as much, and nearly all are undefined).
    if part.title is not UNSET:
        out["title"] = part.title
    if part.tool_metadata is not UNSET:
        out["toolMetadata"] = part.tool_metadata
    if part.output is not UNSET:
        out["output"] = part.output
    if part.error_text is not UNSET:
        out["errorText"] = part.error_text
    if part.provider_executed is not UNSET:
        out["providerExecuted"] = part.provider_executed
    if part.preliminary is not UNSET:
        out["preliminary"] = part.preliminary
    if part.input_encoding is not UNSET:
        out["inputEncoding"] = part.input_encoding
    if part.call_provider_metadata is not UNSET:
        out["callProviderMetadata"] = part.call_provider_metadata
    if part.result_provider_metadata is not UNSET:
        out["resultProviderMetadata"] = part.result_provider_metadata
    if part.approval is not UNSET:
        out["approval"] = part.approval
    return out


def ui_messages(nodes: Iterable[Node]) -> list[dict[str, Any]]:
    """The final ``UIMessage`` of each message in the log, in order, as JSON-ready dicts.

    A message is what ``readUIMessageStream`` yields last before a ``start`` with a new
    ``messageId`` (or the end); parts appear in the order they started.
    """
    messages: dict[str, dict[str, Any]] = {}
    for node in nodes:
        kind = node.kind
        state = node.state
        if kind == _MESSAGE:
            message = messages.get(node.id)
            if message is None:
                message = messages[node.id] = {"id": state.id, "role": "assistant", "parts": []}
            message["id"] = state.id
            if state.metadata is not None:
                message["metadata"] = state.metadata
            continue
        message = messages.get(state.message)
        if message is None:  # parts before any message node: the reference's "" message
            message = messages[state.message] = {"id": "", "role": "assistant", "parts": []}
        if kind in (_TEXT, _REASONING):
            part: dict[str, Any] = {"type": "text", "text": str(state.text)}
            if kind == _REASONING:
                part = {"type": "reasoning", "id": state.id, "text": part["text"]}
            if state.provider_metadata is not None:
                part["providerMetadata"] = state.provider_metadata
            part["state"] = "done" if state.done else "streaming"
        elif kind == _TOOL:
            part = _tool_dict(state)
        elif kind == _STEP:
            message["parts"] += [{"type": "step-start"} for _ in range(state.count)]
            continue
        else:
            part = dict(state.fields)
        message["parts"].append(part)
    return list(messages.values())


# The types of the protocol's events, for detection.
_WIRE_TYPES: Final = frozenset(
    {
        "start",
        "finish",
        "abort",
        "message-metadata",
        "text-start",
        "text-delta",
        "text-end",
        "reasoning-start",
        "reasoning-delta",
        "reasoning-end",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-available",
        "tool-input-error",
        "tool-output-available",
        "tool-output-error",
        "tool-approval-request",
        "tool-output-denied",
        "start-step",
        "finish-step",
        "file",
        "source-url",
        "source-document",
    }
)


def detect(event: Mapping[str, Any]) -> bool:
    """Whether a plain event dict is a UI message stream chunk (its ``type``)."""
    kind = event.get("type")
    return type(kind) is str and (kind in _WIRE_TYPES or kind.startswith("data-"))


def prepare(events: Iterable[Any]) -> Iterator[Envelope]:
    """The envelopes of one stream's raw chunks (the pre-pass: one ``Preparer``, fresh)."""
    return Preparer().prepare(events)


event_type: Final = route_of
"""Routing key for ``create_conversation_engine(event_type=...)``: the shared
``_envelope.route_of`` (an envelope's ``route``, a row of ``ROUTES``)."""

PROTOCOL: Final = ProtocolSet.of_module(
    globals(),
    name="ai_sdk",
    title="AI SDK UI message stream",
    definitions=(
        _MessageDefinition(),
        _StepDefinition(),
        _TextDefinition(),
        _ReasoningDefinition(),
        _ToolDefinition(),
        _PartDefinition(),
    ),
    rebuild=ui_messages,
)
"""The AI SDK UI message stream protocol set (``definitions.ProtocolSet``)."""

DEFINITIONS: Final = PROTOCOL.definitions
"""The AI SDK definition set, in registration order: the set's guard
(``PROTOCOL.envelope``), a message before its parts, and a step-start before the
part whose chunk makes it visible (one event may start both)."""

# The names of one release ago (every set now says prepare, Preparer, Envelope).
__getattr__ = old_names(
    globals(),
    {
        **ROUTED_NAMES,
        "TextPart": "TextPartState",
        "ToolPart": "ToolPartState",
        "Part": "PartState",
        "Step": "StepState",
    },
)
