"""AWS Bedrock ``ConverseStream``: fold its events into Converse messages.

Theory of operation
-------------------
A ConverseStream event is a one-key object naming its type::

    {"messageStart": {"role": "assistant"}}
    {"contentBlockStart": {"contentBlockIndex": 1, "start": {"toolUse": {...}}}}
    {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "Hi"}}}
    {"contentBlockStop": {"contentBlockIndex": 0}}
    {"messageStop": {"stopReason": "end_turn"}}
    {"metadata": {"usage": {...}, "metrics": {...}}}

as boto3's ``converse_stream()`` yields them, as the AI SDK's recordings hold them
(JSON Lines), or decoded from the raw ``application/vnd.amazon.eventstream`` body
(``events_from_eventstream``; frames: ``definitions._eventstream``).

Events carry no message id, and a recording may hold several messages (an agent
loop) or none of the ``messageStart`` events (the AI SDK's hand-written cases). The
pre-pass ``prepare(events)`` numbers the messages: a ``messageStart`` opens the next
one, any other event joins the current one, or opens one when there is none yet
(``metadata`` comes after ``messageStop`` and still belongs to its message). Each
event is wrapped, without copying it, in ``Envelope(message, key, body, claim)``.

One definition, ``bedrock_message`` (node id ``"message-<n>"``), holds the message's
blocks by ``contentBlockIndex``: ``contentBlockStart`` is sent only for tool use
(its ``start.toolUse`` names the call); text, tool input fragments and reasoning
(text, signature, redacted content) arrive as deltas and open their block when it
has not started. ``messages(nodes)`` rebuilds the Converse response of each message:
``{"output": {"message": {"role", "content"}}, "stopReason", "usage", "metrics"}``,
tool input parsed from its joined fragments (empty input is ``{}``), blocks in index
order. Redacted reasoning sent in pieces is joined as bytes (the AI SDK's provider
joins the base64 text, which is not base64 of anything once a piece is padded). A
stream exception (``internalServerException``, ``throttlingException``, ...) is kept
on the message and shown; the rebuild lists them under ``"exceptions"``.

The set is declared by ``PROTOCOL`` (``definitions.ProtocolSet``). Live use: push
each event of boto3's ``converse_stream(...)["stream"]`` into ``PROTOCOL.engine()``
(or decode a raw body piece by piece with ``EventStreamDecoder``); by hand,
``engine.push_many(prepare(events))`` or one ``Preparer`` per stream, routed with
``event_type=bedrock.event_type``.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

import msgspec

from engine import Claim, Node

from ._cons import Cons, items
from ._eventstream import EventStreamDecoder, EventStreamError, decode_frames, is_eventstream
from ._partial_json import PartialJSONError, parse_partial_json
from ._protocol import ProtocolSet, old_names
from ._text import StreamedText

__all__ = [
    "DEFINITIONS",
    "EVENT_TYPES",
    "PROTOCOL",
    "BlockState",
    "Envelope",
    "EventStreamDecoder",
    "EventStreamError",
    "MessageDefinition",
    "MessageState",
    "Preparer",
    "detect",
    "event_type",
    "events_from_eventstream",
    "is_eventstream",
    "messages",
    "prepare",
]

EVENT_TYPES: Final = frozenset(
    {
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    }
)
"""The ConverseStream event types (each event's one key)."""

_EXCEPTIONS: Final = frozenset(
    {
        "internalServerException",
        "modelStreamErrorException",
        "validationException",
        "throttlingException",
        "serviceUnavailableException",
    }
)
_EMPTY = StreamedText()
_replace: Final = msgspec.structs.replace


# -- the raw body ---------------------------------------------------------------------

_decode: Final = msgspec.json.Decoder().decode


def _frame_event(headers: dict[str, Any], data: bytes, offset: int) -> dict[str, Any] | None:
    kind = headers.get(":message-type")
    if kind == "error":  # a service error frame: its code and message are headers
        code = str(headers.get(":error-code") or "error")
        return {code: {"message": headers.get(":error-message")}}
    name = headers.get(":event-type") if kind == "event" else headers.get(":exception-type")
    if kind not in ("event", "exception") or not isinstance(name, str):
        return None  # not a ConverseStream event (the AI SDK skips these too)
    try:
        body = _decode(data) if data else {}
    except msgspec.DecodeError as exc:
        raise EventStreamError(offset, f"{name} payload is not JSON ({exc})") from None
    if type(body) is dict:
        # "p" is the service's random-length padding (against length side channels):
        # not part of the event, which boto3 and the AI SDK leave it out of too.
        body.pop("p", None)
    return {name: body}


def events_from_eventstream(data: bytes) -> list[dict[str, Any]]:
    """The ConverseStream events of a raw ``application/vnd.amazon.eventstream`` body:
    ``{":event-type" value: JSON payload}`` per event frame, ``{":exception-type"
    value: payload}`` per exception frame. ``EventStreamError`` (a ``ValueError``
    naming the byte offset) for a bad frame or a payload that is not JSON."""
    out = []
    for frame in decode_frames(data):
        event = _frame_event(frame.headers, frame.payload, frame.offset)
        if event is not None:
            out.append(event)
    return out


# -- the pre-pass ---------------------------------------------------------------------


class Envelope(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """A raw event: its message's node id, its type (the one key), its body, and the
    claim the message definition's ``match`` returns (``None``: not a ConverseStream
    event); a message's first event also carries the model the request named (the
    stream names none)."""

    message: str
    key: str
    body: Any
    claim: Claim | None
    model: str = ""


def _split(event: Any) -> tuple[str, Any]:
    if type(event) is not dict:
        event = PROTOCOL.as_dict(event)  # a mapping is copied; anything else: TypeError
    if len(event) != 1:
        raise ValueError(
            f"a ConverseStream event has exactly one key (its type); got {sorted(event)!r}"
        )
    [(key, body)] = event.items()
    if key == "type":
        raise ValueError(
            f"not a ConverseStream event ({event!r:.60}): an event of another protocol? "
            "Push it into the protocol set of its own SDK"
        )
    return key, body


class Preparer:
    """Numbers the messages of one stream, event by event (see ``prepare``).
    ``model``: the model the request named (its path ``/model/{modelId}/...``), which
    the stream does not carry: each message is headed by it."""

    __slots__ = ("_count", "_model", "_update")

    def __init__(self, model: str = "") -> None:
        self._count = 0  # messages opened
        self._model = model
        self._update: Claim | None = None  # the current message's update claim

    def __call__(self, event: Any) -> Envelope:
        """Wrap ``event``; a ``messageStart`` (or the first event) opens a message."""
        key, body = _split(event)
        update = self._update
        if key not in EVENT_TYPES and key not in _EXCEPTIONS:
            # not a ConverseStream event: claimed by no definition
            return Envelope(update.id if update is not None else "", key, body, None)
        if key == "messageStart" or update is None:
            self._count += 1
            node = f"message-{self._count}"
            self._update = Claim(node, "update")
            return Envelope(node, key, body, Claim(node, "start"), self._model)
        return Envelope(update.id, key, body, update)


def prepare(events: Iterable[Any] | bytes) -> Iterator[Envelope]:
    """Wrap each ConverseStream event of one stream in ``Envelope`` (the pure pre-pass):
    its events, or its raw ``application/vnd.amazon.eventstream`` body (bytes), so
    ``PROTOCOL.accumulate(body)`` takes a recorded body as it is.

    ``engine.EventError`` naming its position for an event that is not a mapping, or
    one without exactly one key (``PROTOCOL.pre_pass()``, the counted ``Preparer``).
    """
    if isinstance(events, bytes | bytearray | memoryview):
        events = events_from_eventstream(bytes(events))
    return PROTOCOL.mapped(events)


# The envelope's class: ``type`` itself, a C call with no Python frame per event.
event_type: Final = type
"""Routing key for ``create_conversation_engine(event_type=...)``: the envelope's
class. A raw dict event (pushed without the pre-pass) reaches ``match``, which raises
a ``TypeError`` naming the fix."""


def detect(event: Mapping[str, Any]) -> bool:
    """Whether a plain event dict is a ConverseStream event (one key, its type)."""
    return len(event) == 1 and next(iter(event)) in EVENT_TYPES


# -- states ---------------------------------------------------------------------------


class BlockState(msgspec.Struct, frozen=True, gc=False):
    """One content block, by ``contentBlockIndex``: what started it and its deltas."""

    index: int
    kind: str | None = None  # "text", "toolUse", "reasoningContent" or another delta key
    start: Any = None  # contentBlockStart's "start" object
    text: StreamedText = _EMPTY  # text, or reasoning text
    input: StreamedText = _EMPTY  # tool input JSON fragments
    signature: str | None = None
    redacted: tuple[Any, ...] = ()  # redactedContent pieces (base64 str or bytes)
    extra: Cons = None  # other deltas (citations, ...) as (key, value), newest first
    stopped: bool = False


class MessageState(msgspec.Struct, frozen=True, gc=False):
    """One message: its role, blocks in arrival order, and how it ended; the model
    the request named, when the stream's reader was told (it is not in a response)."""

    role: str | None = None
    blocks: tuple[BlockState, ...] = ()
    stop: Any = None  # the messageStop body
    metadata: Any = None  # the metadata body
    exceptions: tuple[tuple[str, Any], ...] = ()
    model: str = ""


def _block_of(blocks: tuple[BlockState, ...], index: Any) -> tuple[int, BlockState]:
    if type(index) is not int:
        raise ValueError(f"contentBlockIndex must be an int, got {index!r}")
    for at, block in enumerate(blocks):
        if block.index == index:
            return at, block
    return -1, BlockState(index)


def _with(blocks: tuple[BlockState, ...], at: int, block: BlockState) -> tuple[BlockState, ...]:
    if at < 0:
        return (*blocks, block)
    return (*blocks[:at], block, *blocks[at + 1 :])


def _delta(block: BlockState, delta: Any) -> BlockState:
    if type(delta) is not dict:
        raise ValueError(f"contentBlockDelta's delta must be an object, got {delta!r}")
    for key, value in delta.items():
        if key == "text":
            block = _replace(block, kind=block.kind or "text", text=block.text.append(value))
        elif key == "toolUse":
            piece = value.get("input", "") if type(value) is dict else ""
            block = _replace(block, kind=block.kind or "toolUse", input=block.input.append(piece))
        elif key == "reasoningContent" and type(value) is dict:
            block = _replace(block, kind=block.kind or "reasoningContent")
            if "text" in value:
                block = _replace(block, text=block.text.append(value["text"]))
            if "signature" in value:
                block = _replace(block, signature=value["signature"])
            if "redactedContent" in value:
                block = _replace(block, redacted=(*block.redacted, value["redactedContent"]))
        else:
            block = _replace(block, kind=block.kind or key, extra=((key, value), block.extra))
    return block


def _fold(state: MessageState, key: str, body: Any) -> MessageState:
    if key == "contentBlockDelta":
        at, block = _block_of(state.blocks, body.get("contentBlockIndex"))
        block = _delta(block, body.get("delta"))
        return _replace(state, blocks=_with(state.blocks, at, block))
    if key == "contentBlockStart":
        at, block = _block_of(state.blocks, body.get("contentBlockIndex"))
        start = body.get("start")
        kind = block.kind
        if type(start) is dict and len(start) == 1 and kind is None:
            kind = next(iter(start))
        block = _replace(block, start=start, kind=kind)
        return _replace(state, blocks=_with(state.blocks, at, block))
    if key == "contentBlockStop":
        at, block = _block_of(state.blocks, body.get("contentBlockIndex"))
        block = _replace(block, stopped=True)
        return _replace(state, blocks=_with(state.blocks, at, block))
    if key == "messageStart":
        return _replace(state, role=body.get("role"))
    if key == "messageStop":
        return _replace(state, stop=body)
    if key == "metadata":
        return _replace(state, metadata=body)
    return _replace(state, exceptions=(*state.exceptions, (key, body)))


class MessageDefinition:
    """Kind ``bedrock_message``: one node per Converse message (see ``prepare``)."""

    kind = "bedrock_message"
    # fallback: an envelope of a class built by hand (a raw event goes to the guard)
    event_types = frozenset({Envelope})
    fallback = True
    publication = "animation-frame"

    def match(self, event: Envelope) -> Claim | None:
        """The claim ``prepare`` made (start on a message's first event)."""
        return event.claim

    def start(self, event: Envelope, reader: object) -> MessageState:
        """A message opened by its first event (``messageStart`` or any other)."""
        return self.update(MessageState(model=event.model), event)

    def update(self, state: MessageState, event: Envelope) -> MessageState:
        """Fold one event into the message."""
        body = event.body
        if type(body) is not dict:
            raise ValueError(f"{event.key} event's body must be an object, got {body!r}")
        return _fold(state, event.key, body)

    def render_text(self, node: Node) -> str:
        """The heading (the model, when known, and how it stopped), then the text,
        reasoning and tool calls."""
        from ._render_protocols import converse_text

        return converse_text(_message(node.state), node.state.model)

    def render_html(self, node: Node) -> str:
        """The metadata row, then text as bubbles, reasoning folded, calls as cards."""
        from ._render_protocols import converse_html

        return converse_html(_message(node.state), node.state.model)

    def tool_calls(self, node: Node) -> list[str]:
        """The ids of the message's tool uses."""
        from ._render_protocols import converse_calls

        return converse_calls(_message(node.state))

    def tool_results(self, node: Node) -> list[tuple[str, Any]]:
        """The message's server tool results, as their calls' outcomes."""
        from ._render_protocols import converse_results

        return converse_results(_message(node.state))


MESSAGE: Final = MessageDefinition()


# -- rebuild --------------------------------------------------------------------------


def _ordered(blocks: tuple[BlockState, ...]) -> list[BlockState]:
    return sorted(blocks, key=lambda block: block.index)


def _redacted(pieces: tuple[Any, ...]) -> Any:
    """The redacted content of a block: one piece as it came; several joined (bytes
    joined, base64 text decoded, joined and encoded again)."""
    if len(pieces) == 1:
        return pieces[0]
    if all(type(piece) is bytes for piece in pieces):
        return b"".join(pieces)
    return base64.b64encode(
        b"".join(p if type(p) is bytes else base64.b64decode(p) for p in pieces)
    ).decode("ascii")


def _input(block: BlockState) -> Any:
    text = str(block.input)
    if not text.strip():
        return {}
    try:
        return parse_partial_json(text)
    except PartialJSONError as exc:
        raise ValueError(
            f"tool input of block {block.index} is not JSON: {text!r} ({exc})"
        ) from exc


def _content(block: BlockState) -> dict[str, Any]:
    kind = block.kind
    if kind == "toolUse":
        start = block.start.get("toolUse") if type(block.start) is dict else None
        tool = dict(start) if type(start) is dict else {}
        tool["input"] = _input(block)
        return {"toolUse": tool}
    if kind == "reasoningContent":
        if block.redacted and not block.text and block.signature is None:
            return {"reasoningContent": {"redactedContent": _redacted(block.redacted)}}
        reasoning: dict[str, Any] = {"text": str(block.text)}
        if block.signature is not None:
            reasoning["signature"] = block.signature
        content: dict[str, Any] = {"reasoningText": reasoning}
        if block.redacted:
            content["redactedContent"] = _redacted(block.redacted)
        return {"reasoningContent": content}
    if kind == "text" or kind is None:
        return {"text": str(block.text)}
    if type(block.start) is dict and kind in block.start and not block.extra:
        return {kind: block.start[kind]}
    merged: dict[str, Any] = {}
    for key, value in items(block.extra):
        merged[key] = value
    return merged


def _message(state: MessageState) -> dict[str, Any]:
    content = [_content(block) for block in _ordered(state.blocks)]
    out: dict[str, Any] = {
        "output": {"message": {"role": state.role or "assistant", "content": content}}
    }
    if type(state.stop) is dict:
        out.update(state.stop)
    if type(state.metadata) is dict:
        out.update(state.metadata)
    if state.exceptions:
        out["exceptions"] = [{key: body} for key, body in state.exceptions]
    return out


def messages(nodes: Sequence[Node]) -> list[dict[str, Any]]:
    """The Converse responses the nodes hold, one per message, in log order."""
    return [_message(node.state) for node in nodes if node.kind == MessageDefinition.kind]


PROTOCOL: Final = ProtocolSet.of_module(
    globals(),
    name="bedrock",
    title="AWS Bedrock ConverseStream",
    definitions=(MESSAGE,),
    rebuild=messages,
)
"""The Bedrock ConverseStream protocol set (``definitions.ProtocolSet``)."""

DEFINITIONS: Final = PROTOCOL.definitions
"""The Bedrock ConverseStream definitions to register: the set's guard
(``PROTOCOL.envelope``), then the messages."""


# The names of one release ago (every set now says prepare, Preparer, Envelope).
__getattr__ = old_names(globals(), {"scope": "prepare", "Scoper": "Preparer", "Scoped": "Envelope"})
