"""Anthropic Messages streaming: fold ``message_*`` / ``content_block_*`` events.

Theory of operation
-------------------
A recording holds several messages in a row (agent loops), but
``content_block_delta`` carries only the block's ``index``, not the message it
belongs to. The engine's ``match`` must be pure, so the message an event belongs
to cannot be remembered by a definition. It is named outside the fold instead:
``prepare(events)`` is a small pure pre-pass that wraps each raw event, without
copying it, in ``Envelope(message_id, event)``, where ``message_id`` is the id of
the latest ``message_start`` before it. Definitions match on that envelope:

- ``anthropic_message`` (node id: the message id) starts on ``message_start``
  and takes ``message_delta`` / ``message_stop``;
- ``anthropic_block`` (node id: ``"<message id>/<index>"``) starts on
  ``content_block_start`` and takes ``content_block_delta`` / ``_stop``; a
  message's first ``compaction`` block takes its ``message_delta`` too, for the
  compaction iteration's tokens in ``usage.iterations`` (its row shows them).

The annotation depends only on the events before it in the same stream, so a
replay of one log always scopes it the same way (deterministic). A paginated
window that starts mid-message has no ``message_start`` for the cut-off message:
its events are scoped to ``None``, which no definition claims, so its deltas are
dropped rather than attributed to a wrong block; the next ``message_start`` scopes
everything after it correctly. A repeated ``message_start`` with the same id
restarts that message in place (engine rule 4).

The set is declared by ``PROTOCOL`` (``definitions.ProtocolSet``). Live users push
what ``client.messages.stream(...)`` yields into ``PROTOCOL.engine()``: raw events
and the SDK's typed ones alike, the ``MessageStream`` helper's derived events
(``TextEvent``, ``InputJsonEvent``, ...) skipped, as they repeat the raw deltas.
By hand: ``engine.push_many(prepare(events))``, or one ``Preparer`` called per event,
routed with ``event_type=anthropic.event_type`` (the inner event's type): the block
definition's publication is a mapping from that type, which the engine resolves
once per type, and which needs the engine's ``event_type``.

Per delta the work is one envelope, of a ``Envelope`` subclass per event type whose
class names the type (routing it is one attribute read) and which carries the
block's claim (made once per block by the preparer, found by an identity check on the
index while the deltas stay on one block), one attribute read to claim it, and a
share of the run the engine hands ``update_many``: the block's own pieces joined and
appended to its ``StreamedText`` at once (a citation or a signature before or after
them folded apart). Tool input JSON is parsed once, when ``messages()`` rebuilds
(``definitions._partial_json``, jiter's partial-mode semantics).

``messages(nodes)`` rebuilds the SDK's ``Message`` dicts (as
``accumulate_event`` + ``to_dict(mode="json")`` give them), one per message in
log order. Unlike the SDK accumulator, a second ``message_start`` begins a new
message instead of being ignored with its blocks appended to the first.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Final, cast

import msgspec

from engine import Claim, Node, Publication, Reader

from ._partial_json import PartialJSONError, parse_partial_json
from ._protocol import UNREADABLE, ProtocolSet, old_names
from ._render import text_follows
from ._runs import fold_run
from ._text import StreamedText

__all__ = [
    "DEFINITIONS",
    "PROTOCOL",
    "BlockDefinition",
    "BlockState",
    "Envelope",
    "MessageDefinition",
    "MessageState",
    "Preparer",
    "detect",
    "event_type",
    "messages",
    "prepare",
]

_EMPTY = StreamedText()
_NO_INDEX: Final = object()  # no block event seen in the current scope
# Block types whose input the SDK rebuilds from input_json_delta (TRACKS_TOOL_INPUT).
_TRACKS_INPUT: Final = frozenset({"tool_use", "server_tool_use"})


class Envelope(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """A raw Anthropic event and the id of the message it belongs to.

    ``message_id`` is ``None`` for events before the first ``message_start`` the
    preparer saw (a window cut mid-message): no definition claims those. ``block`` is
    the block definition's claim for a ``content_block_*`` event with an int
    ``index`` in a scoped message, made once per block by the preparer (a delta's
    claim is then one attribute read, with no id formatted per delta), and for a
    ``message_delta`` the claim of its message's first compaction block; ``None``
    otherwise, and ``match`` works the claim out from the event.

    ``prepare`` and ``Preparer`` make instances of a private subclass per event type,
    which ``event_type`` routes without reading the event; one built by hand is
    routed, claimed and folded the same.
    """

    message_id: str | None
    event: dict[str, Any]
    block: Claim | None = None


# The envelopes prepare() makes are of a subclass per event type, which names the
# type, so routing one is an attribute read (event_type); a Envelope built by hand is
# routed by its event's type, as these are.
class _MessageStart(Envelope, frozen=True):
    _anthropic_type: ClassVar = "message_start"


class _MessageDelta(Envelope, frozen=True):
    _anthropic_type: ClassVar = "message_delta"


class _MessageStop(Envelope, frozen=True):
    _anthropic_type: ClassVar = "message_stop"


class _BlockStart(Envelope, frozen=True):
    _anthropic_type: ClassVar = "content_block_start"


class _BlockDelta(Envelope, frozen=True):
    _anthropic_type: ClassVar = "content_block_delta"


class _BlockStop(Envelope, frozen=True):
    _anthropic_type: ClassVar = "content_block_stop"


_ENVELOPES: Final[dict[object, type[Envelope]]] = {
    cls._anthropic_type: cls
    for cls in (_MessageStart, _MessageDelta, _MessageStop, _BlockStart, _BlockDelta, _BlockStop)
}


def _envelope(kind: object) -> type[Envelope]:
    """The envelope class of an event of type ``kind`` (``Envelope`` for other types)."""
    return _ENVELOPES.get(kind, Envelope) if type(kind) is str else Envelope


class Preparer:
    """Names the message of each event of one stream, in order (see ``prepare``)."""

    __slots__ = ("_claims", "_compaction", "message_id")

    def __init__(self) -> None:
        self.message_id: str | None = None
        # the current message's block update claims by index
        self._claims: dict[int, Claim] = {}
        # the update claim of the current message's first compaction block
        self._compaction: Claim | None = None

    def __call__(self, event: Any) -> Envelope | None:
        """Wrap ``event`` (a dict or an SDK event; ``None`` for a ``MessageStream``
        helper's derived event); a ``message_start`` makes its id the current scope."""
        if not isinstance(event, dict):  # a dict subclass as it is, as in prepare
            event = PROTOCOL.plain(event)
            if event is None:
                return None
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message") or {}
            self.message_id = str(message.get("id") or "")
            self._claims = {}
            self._compaction = None
        message_id = self.message_id
        new = _envelope(kind)
        if message_id is not None:
            if kind == "content_block_delta" or kind == "content_block_stop":
                index = event.get("index")
                if type(index) is int:  # other indexes are left to match (and its errors)
                    return new(message_id, event, _update_claim(self._claims, message_id, index))
            elif kind == "content_block_start":
                index = event.get("index")
                if type(index) is int:
                    claim = _start_claim(self._claims, message_id, index)
                    if self._compaction is None and _is_compaction(event):
                        self._compaction = self._claims[index]
                    return new(message_id, event, claim)
            elif kind == "message_delta" and self._compaction is not None:
                return new(message_id, event, self._compaction)
        return new(message_id, event)


def _is_compaction(start: dict[str, Any]) -> bool:
    """Whether a ``content_block_start`` starts a compaction block."""
    block = start.get("content_block")
    return type(block) is dict and block.get("type") == "compaction"


def _update_claim(claims: dict[int, Claim], message_id: str, index: int) -> Claim:
    """The update claim of block ``index`` of the current message, made once."""
    claim = claims.get(index)
    if claim is None:
        claim = claims[index] = Claim(f"{message_id}/{index}", "update")
    return claim


def _start_claim(claims: dict[int, Claim], message_id: str, index: int) -> Claim:
    """The start claim of block ``index``; its update claim, made now, shares its id
    string, whose hash the engine's lookups then reuse."""
    update = claims[index] = Claim(f"{message_id}/{index}", "update")
    return Claim(update.id, "start")


def prepare(events: Iterable[Any]) -> Iterator[Envelope]:
    """Wrap each raw event of one stream in ``Envelope`` (the pure pre-pass).

    Takes dicts (a dict subclass too, as it is) and the SDK's typed events
    (``PROTOCOL.plain``, which copies any other mapping); ``ping`` events and
    the ``MessageStream`` helper's derived events are dropped (the SDK drops pings
    before folding too). Gives the envelopes ``Preparer`` gives, one event at a time.
    """
    message_id: str | None = None
    claims: dict[int, Claim] = {}
    compaction: Claim | None = None  # as Preparer's _compaction
    # The block of the latest block event and its update claim: a delta of the same
    # block (small ints are shared objects, so ``is`` finds it) needs no lookup.
    # Reset whenever the scope changes; another index goes through ``claims``. (Without
    # it, through _update_claim / _start_claim as Preparer: 0.905x the fold's events per
    # instruction on the recordings, ab_protocol_sets.py --instructions.)
    last_index: object = _NO_INDEX
    last_claim: Claim | None = None
    get = dict.get  # raises TypeError for what is not a dict: no type test per event
    for position, event in enumerate(PROTOCOL.dicts(events)):
        try:
            try:
                kind = get(event, "type")
            except TypeError:  # a typed event in a stream of dicts (plain names anything else)
                event = PROTOCOL.plain(event)
                if event is None:
                    continue
                kind = event.get("type")
            if kind == "content_block_delta" or kind == "content_block_stop":
                new = _BlockDelta if kind == "content_block_delta" else _BlockStop
                index = event.get("index")
                if index is last_index:  # the hot path
                    yield new(message_id, event, last_claim)
                    continue
                if message_id is not None and type(index) is int:
                    last_index = index
                    last_claim = _update_claim(claims, message_id, index)
                    yield new(message_id, event, last_claim)
                    continue
                yield new(message_id, event)
            elif kind == "content_block_start":
                index = event.get("index")
                if message_id is not None and type(index) is int:
                    # the block's claims, made now (as _start_claim makes them), share an id
                    last_index = index
                    last_claim = claims[index] = Claim(f"{message_id}/{index}", "update")
                    if compaction is None and _is_compaction(event):
                        compaction = last_claim
                    yield _BlockStart(message_id, event, Claim(last_claim.id, "start"))
                    continue
                yield _BlockStart(message_id, event)
            elif kind == "message_start":
                message = event.get("message") or {}
                message_id = str(message.get("id") or "")
                claims = {}
                compaction = None
                last_index = _NO_INDEX
                yield _MessageStart(message_id, event)
            elif kind == "message_stop":
                yield _MessageStop(message_id, event)
            elif kind == "message_delta":
                yield _MessageDelta(message_id, event, compaction)
            elif kind != "ping":
                yield _envelope(kind)(message_id, event)
        except UNREADABLE as exc:  # an event of the wrong shape
            raise PROTOCOL.unreadable(position, event, exc) from exc


def event_type(event: object) -> Hashable:
    """Routing key for ``create_conversation_engine(event_type=...)``: the inner type.

    Anything but an envelope (a raw event pushed without the pre-pass) is routed by
    its class: to the set's guard, which names the fix.
    """
    try:
        return event._anthropic_type  # type: ignore[attr-defined, no-any-return]
    except AttributeError:  # not an envelope prepare() made
        if isinstance(event, Envelope):
            return event.event.get("type")
        return cast(Hashable, type(event))  # mypy sees no class as Hashable


def detect(event: Mapping[str, Any]) -> bool:
    """Whether a plain event dict is an Anthropic Messages stream event."""
    return event.get("type") in _TYPES


# -- states -------------------------------------------------------------------------


class MessageState(msgspec.Struct, frozen=True, gc=False):
    """One message: the ``message_start`` payload and what ``message_delta`` set."""

    message: dict[str, Any]
    #: fields ``message_delta`` set on the message (stop_reason, ...), in order
    delta: tuple[tuple[str, Any], ...] = ()
    #: usage fields ``message_delta`` overwrote
    usage: tuple[tuple[str, Any], ...] = ()
    stopped: bool = False


class BlockState(msgspec.Struct, frozen=True, gc=False):
    """One content block: its start payload and the deltas folded into it."""

    message_id: str
    index: int
    block: dict[str, Any]
    text: StreamedText = _EMPTY  # text_delta (text) or thinking_delta (thinking)
    partial_json: StreamedText = _EMPTY
    citations: tuple[Any, ...] = ()
    signature: str | None = None
    stopped: bool = False
    #: A compaction block's own usage: its message's compaction iteration
    #: (``usage.iterations``, which its ``message_delta`` brings), for its row only.
    usage: dict[str, Any] | None = None
    #: A text block's list marker, for rendering only: the previous text block of the
    #: message ended with it on a line of its own (a citation split the list item's
    #: text off into this block).
    marker: str = ""
    #: A text block that goes on the line of the text block before it (that one ended
    #: mid-line: a citation split the sentence into blocks), for rendering only.
    inline: bool = False


# -- definitions --------------------------------------------------------------------

_MESSAGE_TYPES: Final = frozenset({"message_start", "message_delta", "message_stop"})
_BLOCK_TYPES: Final = frozenset(
    {"content_block_start", "content_block_delta", "content_block_stop"}
)
_TYPES: Final = _MESSAGE_TYPES | _BLOCK_TYPES
_replace: Final = msgspec.structs.replace
_BLOCK_PUBLICATION: Final[dict[Hashable, Publication]] = {
    "content_block_start": "immediate",
    "content_block_delta": "animation-frame",
    "content_block_stop": "immediate",
    "message_delta": "immediate",  # to a compaction block: its tokens
}


def _append_text(state: BlockState, text: str) -> BlockState:
    """``state`` with ``text`` appended to its text (a text or thinking block's)."""
    return _replace(state, text=state.text.append(text))


def _append_json(state: BlockState, text: str) -> BlockState:
    """``state`` with ``text`` appended to its tool input JSON."""
    return _replace(state, partial_json=state.partial_json.append(text))


# Per block type, its own deltas, which a run folds at once: (delta type, delta key,
# the append). Any other event of a run (a citation, a signature, a stop) goes to update.
_RUN_FOLDS: Final[dict[object, tuple[str, str, Callable[[BlockState, str], BlockState]]]] = {
    "text": ("text_delta", "text", _append_text),
    "thinking": ("thinking_delta", "thinking", _append_text),
    "tool_use": ("input_json_delta", "partial_json", _append_json),
    "server_tool_use": ("input_json_delta", "partial_json", _append_json),
}


class MessageDefinition:
    """Kind ``anthropic_message``: one node per message, id = the message id."""

    kind = "anthropic_message"
    event_types = _MESSAGE_TYPES | {Envelope, *_ENVELOPES.values()}
    publication = "immediate"

    def match(self, event: Envelope) -> Claim | None:
        """Start on ``message_start``, update on ``message_delta``/``message_stop``."""
        message_id = event.message_id
        if message_id is None:
            return None
        kind = event.event.get("type")
        if kind == "message_start":
            return Claim(message_id, "start")
        if kind in _MESSAGE_TYPES:
            return Claim(message_id, "update")
        return None

    def start(self, event: Envelope, reader: object) -> MessageState:
        """The message as ``message_start`` announced it."""
        message = event.event.get("message")
        if not isinstance(message, dict):
            raise ValueError("message_start has no 'message' object")
        return MessageState(message)

    def update(self, state: MessageState, event: Envelope) -> MessageState:
        """Apply ``message_delta`` (stop reason, container, cumulative usage)."""
        raw = event.event
        if raw["type"] == "message_stop":
            return _replace(state, stopped=True)
        delta = raw.get("delta") or {}
        fields = dict(state.delta)
        fields["stop_reason"] = delta.get("stop_reason")
        fields["stop_sequence"] = delta.get("stop_sequence")
        fields["stop_details"] = delta.get("stop_details")
        if delta.get("container") is not None:
            fields["container"] = delta["container"]
        usage = dict(state.usage)
        raw_usage = raw.get("usage") or {}
        usage["output_tokens"] = raw_usage.get("output_tokens")
        # Cumulative totals overwrite; an omitted (or null) one keeps the start value.
        # ``iterations`` (per-iteration usage, a compaction's among them) is kept as the
        # SDK's beta accumulator keeps it: the stable one drops it.
        for name in (
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
            "server_tool_use",
            "output_tokens_details",
            "iterations",
        ):
            value = raw_usage.get(name)
            if value is not None:
                usage[name] = value
        return MessageState(state.message, tuple(fields.items()), tuple(usage.items()))

    def render_text(self, node: Node) -> str:
        """``assistant (model) [stop_reason]``."""
        from ._render_protocols import heading_text

        state: MessageState = node.state
        message = state.message
        stop = dict(state.delta).get("stop_reason")
        return heading_text(message.get("role"), message.get("model"), stop)

    def render_html(self, node: Node) -> str:
        """A metadata row: model, stop reason (when not end_turn), token counts."""
        from ._render_protocols import anthropic_message

        state: MessageState = node.state
        usage = {**(state.message.get("usage") or {}), **dict(state.usage)}
        return anthropic_message(state.message, dict(state.delta).get("stop_reason"), usage)


def _after_text(previous: Node | None, message_id: str, index: int) -> tuple[str, bool]:
    """How a text block at ``index`` follows the block before it: the list marker it
    takes from it (see ``BlockState.marker``) and whether it goes on its line
    (``BlockState.inline``). Neither unless that block is the message's text block
    at ``index - 1``; a marker when its last line is a marker alone, else inline when
    it ended mid-line."""
    if previous is None:
        return "", False
    state: BlockState = previous.state
    if state.message_id != message_id or state.index != index - 1:
        return "", False
    if state.block.get("type") != "text":
        return "", False
    return text_follows(str(state.block.get("text", "")) + str(state.text))


class BlockDefinition:
    """Kind ``anthropic_block``: one node per content block, id ``<message>/<index>``."""

    kind = "anthropic_block"
    event_types = _BLOCK_TYPES | {"message_delta", Envelope, *_ENVELOPES.values()}

    # Per event type, resolved by the engine once per route: no call per delta. It
    # needs the engine's event_type (anthropic.event_type, as accumulate() and replay pass).
    publication: Final = _BLOCK_PUBLICATION

    @staticmethod
    def match(event: Envelope) -> Claim | None:
        """Start on ``content_block_start``; update on its deltas and stop."""
        claim = event.block
        if claim is not None:  # made by the preparer
            return claim
        message_id = event.message_id
        if message_id is None:
            return None
        raw = event.event
        kind = raw.get("type")
        if kind == "content_block_delta" or kind == "content_block_stop":
            return Claim(f"{message_id}/{raw['index']}", "update")
        if kind == "content_block_start":
            return Claim(f"{message_id}/{raw['index']}", "start")
        return None

    def start(self, event: Envelope, reader: Reader) -> BlockState:
        """The block as ``content_block_start`` announced it."""
        raw = event.event
        block = raw.get("content_block")
        if not isinstance(block, dict):
            raise ValueError("content_block_start has no 'content_block' object")
        message_id = event.message_id
        assert message_id is not None
        index = raw["index"]
        # Only a text block after a text block (a citation splits a sentence or a
        # list item into blocks) reads the one before it: other starts read nothing.
        if index and block.get("type") == "text":
            marker, inline = _after_text(reader.previous(self.kind), message_id, index)
            # Only a cited block starts a list item a citation split off (its start
            # declares the citations).
            marker = marker if "citations" in block else ""
            if marker or inline:
                return BlockState(message_id, index, block, marker=marker, inline=inline)
        return BlockState(message_id, index, block)

    def update(self, state: BlockState, event: Envelope) -> BlockState:
        """Fold one delta the way the SDK does (deltas of another block type are ignored);
        a compaction block takes its message's compaction iteration from ``message_delta``."""
        raw = event.event
        if raw["type"] == "content_block_stop":
            return _replace(state, stopped=True)
        if raw["type"] == "message_delta":
            from ._render_protocols import compaction_usage

            usage = compaction_usage(raw.get("usage"))
            return state if usage is None else _replace(state, usage=usage)
        delta = raw["delta"]
        kind = delta["type"]
        block_type = state.block.get("type")
        # replace() builds the 8-field state in C: cheaper than passing every field.
        # The kinds a block's first delta has, most often first.
        if kind == "text_delta":
            if block_type != "text":
                return state
            return _replace(state, text=state.text.append(delta["text"]))
        if kind == "citations_delta":
            if block_type != "text":
                return state
            return _replace(state, citations=(*state.citations, delta["citation"]))
        if kind == "input_json_delta":
            if block_type not in _TRACKS_INPUT:
                return state
            return _replace(state, partial_json=state.partial_json.append(delta["partial_json"]))
        if kind == "thinking_delta":
            if block_type != "thinking":
                return state
            return _replace(state, text=state.text.append(delta["thinking"]))
        if kind == "signature_delta":
            if block_type != "thinking":
                return state
            return _replace(state, signature=delta["signature"])
        if kind == "compaction_delta":
            # The SDK's (beta) accumulator sets both fields from the delta, replacing.
            if block_type != "compaction":
                return state
            block = {
                **state.block,
                "content": delta.get("content"),
                "encrypted_content": delta.get("encrypted_content"),
            }
            return _replace(state, block=block)
        return state  # a delta type the SDK does not fold either

    def update_many(self, state: BlockState, events: list[Envelope]) -> BlockState:
        """``update`` over a run (``definitions._runs.fold_run``): the block's own text,
        thinking or input JSON deltas, each stretch joined and appended at once."""
        try:
            own = _RUN_FOLDS.get(state.block.get("type"))
        except TypeError:  # an unhashable block type, which update may trip on: its way
            own = None
        if own is None:
            return fold_run(state, events, [None] * len(events), _append_text, self.update)
        own_type, key, append = own
        # A piece of another type than str makes the join raise: the engine then folds
        # the run one event at a time, and update raises as StreamedText.append does.
        pieces = [
            delta[key]
            if (raw := event.event)["type"] == "content_block_delta"
            and (delta := raw["delta"])["type"] == own_type
            else None
            for event in events
        ]
        return fold_run(state, events, pieces, append, self.update)

    def render_text(self, node: Node) -> str:
        """Text (its sources after it) and thinking as text, calls as tool lines with
        their joined result, search results as links."""
        from ._render_protocols import anthropic_block_text

        state: BlockState = node.state
        return anthropic_block_text(
            _block(state), state.marker, stopped=state.stopped, usage=state.usage
        )

    def continues(self, node: Node) -> bool:
        """Whether this text block goes on the line of the block before it."""
        state: BlockState = node.state
        return state.inline

    def joins(self, node: Node) -> bool:
        """Whether this text block goes on from the text block before it on the page:
        on its line, or as the list item a citation split off (``marker``)."""
        state: BlockState = node.state
        return state.inline or bool(state.marker)

    def text_piece(self, node: Node) -> tuple[str, str] | None:
        """A text block as a piece of the text a citation split (the HTML view joins
        the blocks that ``join`` one): its text and citations."""
        from ._render_protocols import anthropic_text_piece

        state: BlockState = node.state
        if state.block.get("type") != "text":
            return None
        return anthropic_text_piece(_block(state))

    def tool_calls(self, node: Node) -> tuple[str, ...]:
        """The id of the tool (or server tool) use this block is, if it is one."""
        from ._render_protocols import anthropic_calls

        return anthropic_calls(node.state.block)

    def tool_results(self, node: Node) -> tuple[tuple[str, Any], ...]:
        """A server tool's result block as its call's outcome."""
        from ._render_protocols import anthropic_results

        if not str(node.state.block.get("type")).endswith("_tool_result"):
            return ()
        return anthropic_results(_block(node.state))

    def render_html(self, node: Node) -> str:
        """Text as a Markdown bubble with its citations, calls as tool cards, thinking
        folded, search results as links."""
        from ._render_protocols import anthropic_block

        state: BlockState = node.state
        # The streamed text itself when the start carried none: rendered incrementally.
        started = state.block.get("text") or state.block.get("thinking")
        streamed = None if started else state.text
        return anthropic_block(
            _block(state),
            stopped=state.stopped,
            streamed=streamed,
            marker=state.marker,
            usage=state.usage,
        )


MESSAGE: Final = MessageDefinition()
BLOCK: Final = BlockDefinition()


# -- rebuild ------------------------------------------------------------------------


def _block(state: BlockState) -> dict[str, Any]:
    block = {**state.block}  # a plain dict, as dict() makes (and a little faster)
    kind = block.get("type")
    if kind == "text":
        if state.text is not _EMPTY and (text := str(state.text)):
            block["text"] = str(block.get("text", "")) + text
        if state.citations:
            block["citations"] = [*(block.get("citations") or ()), *state.citations]
    elif kind == "thinking":
        if state.text is not _EMPTY and (text := str(state.text)):
            block["thinking"] = str(block.get("thinking", "")) + text
        if state.signature is not None:
            block["signature"] = state.signature
    elif kind in _TRACKS_INPUT and state.partial_json is not _EMPTY:
        buffer = str(state.partial_json)
        if buffer:
            try:
                block["input"] = parse_partial_json(buffer)
            except PartialJSONError as exc:
                raise ValueError(f"unable to parse tool input JSON {buffer!r}: {exc}") from exc
    return block


def messages(nodes: Sequence[Node]) -> list[dict[str, Any]]:
    """The SDK ``Message`` dicts the nodes hold, one per message, in log order.

    Blocks are placed in their message in start order. Blocks whose message node
    is absent (not registered, or outside the window) are left out.
    """
    out: list[dict[str, Any]] = []
    contents: dict[str, list[dict[str, Any]]] = {}  # each message's content, by id
    for node in nodes:
        kind = node.kind
        if kind == "anthropic_block":
            block_state: BlockState = node.state
            content = contents.get(block_state.message_id)
            if content is not None:
                content.append(_block(block_state))
        elif kind == "anthropic_message":
            state: MessageState = node.state
            message = {**state.message}
            content = contents[node.id] = list(message.get("content") or ())
            message["content"] = content
            message.update(state.delta)
            if state.usage:
                message["usage"] = {**(message.get("usage") or {}), **dict(state.usage)}
            out.append(message)
    return out


PROTOCOL: Final = ProtocolSet.of_module(
    globals(),
    name="anthropic",
    title="Anthropic Messages",
    definitions=(MESSAGE, BLOCK),
    rebuild=messages,
    # What the SDK's MessageStream derives from each delta and yields beside it.
    derived=frozenset({"text", "input_json", "citation", "thinking", "signature"}),
)
"""The Anthropic Messages protocol set (``definitions.ProtocolSet``)."""

DEFINITIONS: Final = PROTOCOL.definitions
"""The Anthropic definitions to register: the set's guard (``PROTOCOL.envelope``),
then messages, then their content blocks."""


# The names of one release ago (every set now says prepare, Preparer, Envelope).
__getattr__ = old_names(globals(), {"scope": "prepare", "Scoper": "Preparer", "Scoped": "Envelope"})
