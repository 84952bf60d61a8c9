"""OpenAI Responses API streaming: fold ``response.*`` events.

Theory of operation
-------------------
A recording holds several responses in a row (agent loops). Item events name
their item by ``output_index`` (and ``item_id``), never the response they belong
to, and some providers rotate every id on every event. Which response an event
belongs to is decided outside the pure ``match`` by ``prepare(events)``, a small pure
pre-pass that wraps each raw event, without copying it, in an envelope (``Envelope``)
holding the id that the latest ``response.created`` carried and the claim that
follows from it. The envelope's class names the definition that takes it (the
engine routes on it: ``event_type`` is ``type``), and ``match`` returns its claim:

- ``openai_response`` (node id: the response id) starts on ``response.created``
  and takes the other lifecycle events (``in_progress``, ``queued``,
  ``completed``, ``failed``, ``incomplete``) and ``error``;
- ``openai_response_item`` (node id: ``"<response id>/<output_index>"``) starts on
  ``response.output_item.added`` and takes every event that carries its
  ``output_index``: content parts, text/argument/summary deltas, ``done``.

Items are addressed by position, as the SDK does: ``item_id`` and ``call_id`` are
payload, so ids rotating on every event, or a ``call_id`` that changes between
``added`` and ``done``, do not split or misplace an item. The scope depends only on
the events before it, so a replay scopes a log the same way every time. Events
before the first ``response.created`` a preparer saw (a window cut mid-response, or
a recording whose first line is unreadable) are claimed by no definition: no
content is attributed to a response whose start is not in view. Live users push
the SDK's events into ``PROTOCOL.engine()`` (a ``Preparer`` per stream, as its push
hook), or push ``preparer(event)`` themselves.

Per delta the work is one envelope, which the preparer makes with the item's claim
(one shared object per item, so the engine knows an item's run of deltas by
identity) and what the delta appends (its text, and which text of the item it goes
to), read from the event once. The engine hands the run to ``update_many``
together, and consecutive deltas into one text make one ``StreamedText`` append,
joined (see ``_fold_item``). Item events that change nothing (progress, the
``done`` of a text or part, annotations) ride along in the run. JSON is never
parsed while folding.

Rebuild (``responses(nodes)`` and ``snapshots(nodes)``) gives plain dicts in the
shape of the SDK's ``ResponseStreamState`` (openai 3.57), as ``to_dict(mode="json")``
prints them: the fields present in the events, numbers the SDK types as ``float``
coerced to float, ``parsed``/``parsed_arguments`` null on completion.

Corrections to ``ResponseStreamState`` (tested in the conformance suite):
reasoning summary parts and deltas are folded into the live snapshot (the SDK
leaves ``summary`` empty until ``done``); each response of a log is its own object;
a lifecycle event whose response id differs from ``response.created``'s (ids
rotating per event) continues the current response instead of failing; an item's
``done`` payload replaces its ``added`` one even when its ``call_id`` changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from operator import attrgetter
from typing import Any, Final

import msgspec

from engine import Claim, Node

from ._protocol import UNREADABLE, ProtocolSet, old_names
from ._routing import ByType
from ._runs import fold_run
from ._text import StreamedText

__all__ = [
    "DEFINITIONS",
    "PROTOCOL",
    "Envelope",
    "ItemDefinition",
    "ItemState",
    "PartState",
    "Preparer",
    "ResponseDefinition",
    "ResponseState",
    "detect",
    "event_type",
    "prepare",
    "responses",
    "snapshots",
]

_EMPTY = StreamedText()


class Envelope(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """A raw Responses event, the id of the response it belongs to, and its claim.

    ``prepare`` (or a ``Preparer``) makes them: its class says which definition takes the
    event (the engine routes on it, ``event_type``) and ``claim`` what for. A plain
    ``Envelope`` (``claim`` None) is claimed by no definition: an event before the first
    ``response.created`` the preparer saw (``response_id`` None), of a type neither
    definition takes, or an item event without an int ``output_index``.

    For an item's delta, and an item event that changes no item, the preparer also reads
    what it appends: ``field``, the text (``"parts"``, ``"arguments"``, ``"summary"``,
    ``"pending"``, or ``"none"`` for no text), ``at`` its part index and ``text`` the
    delta. ``field`` is ``""`` when the event is left to ``update`` to read (an odd
    index or delta, or an envelope not made by a preparer).
    """

    response_id: str | None
    event: dict[str, Any]
    claim: Claim | None = None
    field: str = ""
    at: int = 0
    text: str = ""


class _ToResponse(Envelope, frozen=True):
    """A lifecycle or ``error`` event, claimed by ``openai_response`` (its claim is
    ``response_claim``: ``claim`` is the item definition's, None here)."""

    response_claim: Claim | None = None


class _ToItem(Envelope, frozen=True):
    """An item event other than a delta, claimed by ``openai_response_item``."""


class _ItemDelta(Envelope, frozen=True):
    """An item's delta, or an item event that changes no item, claimed by
    ``openai_response_item`` (published at a frame)."""


def _created_id(event: dict[str, Any]) -> str:
    response = event.get("response")
    if not isinstance(response, dict):
        raise ValueError("response.created has no 'response' object")
    return str(response.get("id") or "")


def _bad_type(kind: object) -> ValueError:
    return ValueError(f"a Responses event's type must be a str, not {kind!r}")


# A response's item update claims are made once per output index, so the engine
# knows an item's run of events by the claim's identity (and making one, its id
# joining two parts, costs more than the rest of the envelope). At most this many
# indexes of one response are kept.
_CLAIM_CACHE_SIZE: Final = 4096


class Preparer:
    """Names the response of each event of one stream, in order (see ``prepare``)."""

    __slots__ = ("_items", "_update", "response_id")

    def __init__(self) -> None:
        self.response_id: str | None = None
        self._update: Claim | None = None  # the current response's update claim
        self._items: dict[int, Claim] = {}  # its items' update claims, by output index

    def __call__(self, event: Any) -> Envelope:
        """The envelope of ``event`` (a dict or the SDK's typed event); a
        ``response.created`` makes its id the scope."""
        if not isinstance(event, dict):  # a dict subclass as it is, as in prepare
            event = PROTOCOL.as_dict(event)
        return self._scoped(event, event.get("type"))

    def _scoped(self, event: dict[str, Any], kind: Any) -> Envelope:
        """``self(event)``, of an event whose type is ``kind``."""
        try:
            target = _TARGETS.get(kind)
        except TypeError:  # an unhashable type
            raise _bad_type(kind) from None
        response_id = self.response_id
        if target is _ToResponse:
            if kind == "response.created":
                response_id = self.response_id = _created_id(event)
                self._update = Claim(response_id, "update")
                self._items = {}
                start = Claim(response_id, "start")
                return _ToResponse(response_id, event, None, "", 0, "", start)
            if self._update is not None:
                return _ToResponse(response_id, event, None, "", 0, "", self._update)
        elif target is not None and response_id is not None:
            index = event.get("output_index")
            if type(index) is int:
                claim = self._items.get(index)
                if kind == "response.output_item.added":
                    if event.get("item") is None:  # the SDK skips an empty added event too
                        return Envelope(response_id, event)
                    item_id = f"{response_id}/{index}"
                    if claim is None:  # its updates' claim, made with the start's
                        self._item_update(index, Claim(item_id, "update"))
                    return _ToItem(response_id, event, Claim(item_id, "start"))
                if claim is None:
                    claim = self._item_update(index, Claim(f"{response_id}/{index}", "update"))
                if target is _ItemDelta:
                    return _delta(response_id, event, claim, _READS[kind])
                return _ToItem(response_id, event, claim)
        return Envelope(response_id, event)

    def _item_update(self, index: int, claim: Claim) -> Claim:
        """Keep ``claim``, the update claim of item ``index`` (unless there are many)."""
        items = self._items
        if len(items) < _CLAIM_CACHE_SIZE:
            items[index] = claim
        return claim


def _delta(
    response_id: str | None, event: dict[str, Any], claim: Claim, reads: tuple[str, str | None]
) -> _ItemDelta:
    """The envelope of a delta, or an event that changes no item (``prepare`` inlines it)."""
    field, at_key = reads
    if field == _NONE:
        return _ItemDelta(response_id, event, claim, field)
    at = 0 if at_key is None else event.get(at_key)
    text = event.get("delta")
    if type(text) is str and type(at) is int:
        return _ItemDelta(response_id, event, claim, field, at, text)
    return _ItemDelta(response_id, event, claim)  # odd: update reads it


def prepare(events: Iterable[Any]) -> Iterator[Envelope]:
    """Each raw event of one stream in its envelope (the pure pre-pass), in order:
    dicts (a dict subclass too, as it is) or the SDK's typed events.

    Lazy: an event that cannot be scoped (a ``response.created`` without a response
    object, an unhashable type) raises when it is reached, after the ones before it.
    """
    scoper = Preparer()
    scoped = scoper._scoped
    all_reads = _READS
    no_reads = _NO_READS
    item_delta = _ItemDelta
    none = _NONE
    items = scoper._items  # the preparer's, after the event before
    response_id = None
    get = dict.get  # raises TypeError for what is not a dict: no type test per event
    for position, event in enumerate(PROTOCOL.dicts(events)):
        try:
            try:
                kind = get(event, "type")
            except TypeError:  # a typed event in a stream of dicts (plain names anything else)
                event = PROTOCOL.as_dict(event)
                kind = event.get("type")
            # Most events: _delta() inline, of an item whose claim is made (every event
            # through scoped() instead: 0.806x the fold's events per instruction on the
            # recordings, ab_protocol_sets.py --instructions).
            try:
                field, at_key = all_reads.get(kind, no_reads)
                if field is not None and type(index := event["output_index"]) is int:
                    claim = items[index]
                    if field == none:
                        yield item_delta(response_id, event, claim, field)
                        continue
                    at = 0 if at_key is None else event[at_key]
                    text = event["delta"]
                    if type(text) is str and type(at) is int:
                        yield item_delta(response_id, event, claim, field, at, text)
                        continue
            except (KeyError, TypeError):  # TypeError: an unhashable type
                pass
            yield scoped(event, kind)
            items = scoper._items
            response_id = scoper.response_id
        except UNREADABLE as exc:  # an event of the wrong shape
            raise PROTOCOL.unreadable(position, event, exc) from exc


def detect(event: Mapping[str, Any]) -> bool:
    """Whether a plain event dict is a Responses stream event (``response.*``)."""
    kind = event.get("type")
    return type(kind) is str and kind.startswith("response.")


# -- states -------------------------------------------------------------------------


class ResponseState(msgspec.Struct, frozen=True, gc=False):
    """One response: ``response.created``'s payload and the lifecycle events after it."""

    created: dict[str, Any]
    #: the latest lifecycle event's type and response payload
    status: str = "response.created"
    latest: dict[str, Any] | None = None
    #: ``response.completed``'s payload, what the SDK's final response is made of
    completed: dict[str, Any] | None = None
    #: ``response.failed`` / ``response.incomplete``: (type, payload)
    ended: tuple[str, dict[str, Any]] | None = None
    #: the payload of an ``error`` event inside this response
    error: Any = None


class PartState(msgspec.Struct, frozen=True, gc=False):
    """A content part (message) or summary part (reasoning) and the text streamed into it."""

    part: dict[str, Any]
    text: StreamedText = _EMPTY


class ItemState(msgspec.Struct, frozen=True, gc=False):
    """One output item of a response, at its ``output_index``."""

    response_id: str
    output_index: int
    #: the ``output_item.added`` payload
    item: dict[str, Any]
    #: message content parts, from the added item's ``content`` and ``content_part.added``
    parts: tuple[PartState, ...] = ()
    #: function call arguments streamed after the added item's ``arguments``
    arguments: StreamedText = _EMPTY
    #: reasoning summary parts, from the added item's ``summary`` and summary events
    summary: tuple[PartState, ...] = ()
    #: other streamed text of the item (tool input, code, command), for rendering only
    pending: StreamedText = _EMPTY
    #: the ``output_item.done`` payload
    done: dict[str, Any] | None = None


# -- definitions --------------------------------------------------------------------

_LIFECYCLE: Final = frozenset(
    {
        "response.created",
        "response.in_progress",
        "response.queued",
        "response.completed",
        "response.failed",
        "response.incomplete",
    }
)
_ENDED: Final = frozenset({"response.failed", "response.incomplete"})

# Every item event of the SDK's ResponseStreamEvent union (they carry output_index).
_ITEM_TYPES: Final = frozenset(
    {
        "response.output_item.added",
        "response.output_item.done",
        "response.content_part.added",
        "response.content_part.done",
        "response.output_text.delta",
        "response.output_text.done",
        "response.output_text.annotation.added",
        "response.refusal.delta",
        "response.refusal.done",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_part.done",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_text.delta",
        "response.reasoning_text.done",
        "response.custom_tool_call_input.delta",
        "response.custom_tool_call_input.done",
        "response.code_interpreter_call.in_progress",
        "response.code_interpreter_call.interpreting",
        "response.code_interpreter_call.completed",
        "response.code_interpreter_call_code.delta",
        "response.code_interpreter_call_code.done",
        "response.compaction.compacting",
        "response.file_search_call.in_progress",
        "response.file_search_call.searching",
        "response.file_search_call.completed",
        "response.web_search_call.in_progress",
        "response.web_search_call.searching",
        "response.web_search_call.completed",
        "response.image_generation_call.in_progress",
        "response.image_generation_call.generating",
        "response.image_generation_call.partial_image",
        "response.image_generation_call.completed",
        "response.mcp_call.in_progress",
        "response.mcp_call.completed",
        "response.mcp_call.failed",
        "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.done",
        "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.completed",
        "response.mcp_list_tools.failed",
        "response.shell_call_command.added",
        "response.shell_call_command.delta",
        "response.shell_call_command.done",
        "response.shell_call_output_content.delta",
        "response.shell_call_output_content.done",
        "response.apply_patch_call_operation_diff.delta",
        "response.apply_patch_call_operation_diff.done",
    }
)
# Deltas the SDK's snapshot does not fold: kept as ``pending`` text for renderers.
_PENDING: Final = frozenset(t for t in _ITEM_TYPES if t.endswith(".delta")) - {
    "response.output_text.delta",
    "response.function_call_arguments.delta",
    "response.reasoning_summary_text.delta",
}
_replace: Final = msgspec.structs.replace


# The item events that change an item other than by appending text to it.
_CHANGES: Final = frozenset(
    {
        "response.output_item.added",
        "response.output_item.done",
        "response.content_part.added",
        "response.reasoning_summary_part.added",
    }
)
# What the preparer reads of the other item events (the deltas and those that change
# no item, see _item_updated): the text a delta appends to and the key of its part
# index (None: 0). Keys are the `field` values _appended takes; _NONE: no text.
_NONE: Final = "none"
_NO_READS: Final = (None, None)  # what the preparer reads of any other event
_READS: Final[dict[Any, tuple[str, str | None]]] = {
    **dict.fromkeys(_ITEM_TYPES - _CHANGES, (_NONE, None)),
    **dict.fromkeys(_PENDING, ("pending", None)),
    "response.output_text.delta": ("parts", "content_index"),
    "response.function_call_arguments.delta": ("arguments", None),
    "response.reasoning_summary_text.delta": ("summary", "summary_index"),
}
# The deltas that append to an item's own text (the others are pending text).
_TEXT_DELTAS: Final = {
    kind: _READS[kind]
    for kind in (
        "response.output_text.delta",
        "response.function_call_arguments.delta",
        "response.reasoning_summary_text.delta",
    )
}
# The envelope class of each type a definition takes.
_TARGETS: Final[dict[Any, type[Envelope]]] = {
    **dict.fromkeys(_LIFECYCLE | {"error"}, _ToResponse),
    **dict.fromkeys(_CHANGES, _ToItem),
    **dict.fromkeys(_READS, _ItemDelta),
}
event_type: Final = type
"""Routing key for ``create_conversation_engine(event_type=...)``: the envelope's
class (``prepare``'s envelopes name their definition by class; ``type``, a C call). A
raw event dict is routed to the response definition, whose ``match`` names the fix."""

# Deltas wait for a frame (as do the events that change nothing: they are never
# published); an item's start, content parts and end are published at once.
_ITEM_PUBLICATION: Final = ByType({_ItemDelta: "animation-frame"}, type)


class ResponseDefinition:
    """Kind ``openai_response``: one node per response, id = ``response.created``'s id."""

    kind = "openai_response"
    event_types = frozenset({_ToResponse})
    publication = "immediate"

    def match(self, event: object) -> Claim | None:
        """Start on ``response.created``, update on the other lifecycle events and
        ``error`` (the preparer's claim)."""
        if type(event) is _ToResponse:
            return event.response_claim
        return None  # an item's envelope (an engine without routing)

    def start(self, event: Envelope, reader: object) -> ResponseState:
        """The response as ``response.created`` announced it."""
        return ResponseState(event.event["response"])

    def update(self, state: ResponseState, event: Envelope) -> ResponseState:
        """Record a lifecycle event (its response payload) or an ``error`` event."""
        raw = event.event
        kind = raw["type"]
        if kind == "error":
            return msgspec.structs.replace(state, error=raw.get("error", raw))
        response = raw.get("response")
        if not isinstance(response, dict):
            raise ValueError(f"{kind} has no 'response' object")
        if kind == "response.completed":
            return msgspec.structs.replace(state, status=kind, latest=response, completed=response)
        if kind in _ENDED:
            return msgspec.structs.replace(
                state, status=kind, latest=response, ended=(kind, response)
            )
        return msgspec.structs.replace(state, status=kind, latest=response)

    def render_text(self, node: Node) -> str:
        """``assistant (model) [status]`` (unless completed), and the error if any."""
        from ._render_protocols import responses_heading

        state: ResponseState = node.state
        payload = state.latest or state.created
        error = state.error or payload.get("error")
        return responses_heading({**payload, "error": error} if error else payload)

    def render_html(self, node: Node) -> str:
        """A metadata row: status (when not completed), model, token counts, error."""
        from ._render_protocols import responses_response

        state: ResponseState = node.state
        payload = state.latest or state.created
        return responses_response(payload, state.error or payload.get("error"))


def _pad(parts: tuple[PartState, ...], index: int, kind: str) -> tuple[PartState, ...]:
    """``parts`` long enough to hold ``index`` (a delta whose part.added was lost)."""
    if index < len(parts):
        return parts
    missing = index + 1 - len(parts)
    return parts + tuple(PartState({"type": kind, "text": ""}) for _ in range(missing))


def _item_updated(state: ItemState, raw: dict[str, Any]) -> ItemState:
    """The item after any one raw item event (``update``): folded the way the SDK does,
    plus reasoning summaries. A run goes through ``_fold_item``."""
    kind = raw["type"]
    reads = _TEXT_DELTAS.get(kind)
    if reads is not None:  # a delta appending to the item's text: read as the preparer does
        field, at_key = reads
        index = 0 if at_key is None else raw.get(at_key)
        if type(index) is not int:
            return state
        delta: Any = raw.get("delta")  # not a str: appending it raises, if the item takes it
        return _delta_appended(state, field, index, delta)
    item_type = state.item.get("type")
    if kind == "response.output_item.done":
        item = raw.get("item")
        if not isinstance(item, dict):
            raise ValueError("response.output_item.done has no 'item' object")
        return msgspec.structs.replace(state, done=item)
    if kind == "response.content_part.added":
        if item_type != "message":
            return state
        return msgspec.structs.replace(state, parts=(*state.parts, PartState(raw["part"])))
    if kind == "response.reasoning_summary_part.added":
        index = raw.get("summary_index")
        if item_type != "reasoning" or type(index) is not int or index < 0:
            return state
        summary = _pad(state.summary, index - 1, "summary_text") if index else state.summary
        new = PartState(raw["part"])
        summary = (*summary[:index], new, *summary[index + 1 :])
        return msgspec.structs.replace(state, summary=summary)
    if kind in _PENDING:
        delta = raw.get("delta")
        if type(delta) is str:
            return _delta_appended(state, "pending", 0, delta)
    return state  # progress and *.done events: the done item carries the result


def _appended(state: ItemState, field: str, index: int, text: str) -> ItemState:
    """``state`` with ``text`` appended to ``field``: ``"parts"`` or ``"summary"`` (the
    text of part ``index``, which is there), ``"arguments"`` or ``"pending"``."""
    if field == "parts":
        parts = state.parts
        part = parts[index]
        new = PartState(part.part, part.text.append(text))
        # replace() builds the 8-field state in C: cheaper than passing every field
        if len(parts) == 1:
            return _replace(state, parts=(new,))
        return _replace(state, parts=(*parts[:index], new, *parts[index + 1 :]))
    if field == "arguments":
        return _replace(state, arguments=state.arguments.append(text))
    if field == "summary":
        summary = state.summary
        part = summary[index]
        new = PartState(part.part, part.text.append(text))
        return _replace(state, summary=(*summary[:index], new, *summary[index + 1 :]))
    assert field == "pending"
    return _replace(state, pending=state.pending.append(text))


def _delta_appended(state: ItemState, field: str, index: int, text: str) -> ItemState:
    """What ``_item_updated`` makes of a delta appending ``text`` to ``field`` (part
    ``index``, an int), in any state: appended when the item takes it (a summary part
    not there yet padded first), else the state itself. An empty delta changes
    nothing (rule 6: the state itself, so it is neither a change nor published), as
    an event that changes no item does; a run's such events are its empty pieces."""
    if text == "":  # not `not text`: a delta that is no str (or none) raises, if taken
        return state
    item_type = state.item.get("type")
    if field == "parts":
        parts = state.parts
        if (
            item_type != "message"
            or not 0 <= index < len(parts)
            or parts[index].part.get("type") != "output_text"
        ):
            return state
    elif field == "arguments":
        if item_type != "function_call":
            return state
    elif field == "summary":
        if item_type != "reasoning" or index < 0:
            return state
        if index >= len(state.summary):  # a delta whose part.added was lost
            state = _replace(state, summary=_pad(state.summary, index, "summary_text"))
    return _appended(state, field, index, text)


def _fold_item(state: ItemState, events: Sequence[Envelope]) -> ItemState:
    """``state`` after the events of ``events``, one after the other (``update_many``,
    through ``definitions._runs.fold_run``).

    Nearly every item event of a run is a delta appending to one text of the item (its
    *field*, see ``_appended``, and part index), which the preparer read off the event
    once (``Envelope.field``, ``at``, ``text``). The deltas into the text the run's first
    delta names are its pieces, each stretch joined and appended at once
    (``_delta_appended``, which checks what ``_item_updated`` checks). An event that
    changes no item (progress, a text's ``done``) is an empty piece, which changes
    nothing either: it joins the stretch around it. Every other event (another text's
    delta, a part added, an envelope not made by a preparer) goes to ``_item_updated``.
    """
    none = _NONE
    for first in events:
        field = first.field
        if field and field != none:
            break
    else:  # no delta: each event as update folds it
        for event in events:
            state = _item_updated(state, event.event)
        return state
    at = first.at
    pieces = [
        e.text if e.field == field and e.at == at else "" if e.field == none else None
        for e in events
    ]
    return fold_run(
        state, events, pieces, lambda s, text: _delta_appended(s, field, at, text), _update
    )


def _update(state: ItemState, event: Envelope) -> ItemState:
    return _item_updated(state, event.event)


# Items whose text renders while streaming; any other shows what is pending.
_TEXT_ITEMS: Final = frozenset({"message", "function_call", "reasoning"})


class ItemDefinition:
    """Kind ``openai_response_item``: one node per output item, id ``<response>/<index>``."""

    kind = "openai_response_item"
    event_types = frozenset({_ToItem, _ItemDelta})

    # A mapping from envelope class: the engine resolves it once per route (no call per
    # delta); engines without event_type= call it.
    publication: Final = _ITEM_PUBLICATION

    # Start on ``output_item.added``; update on events carrying its ``output_index``:
    # the preparer's claim, None in the other envelopes. A C function: the engine calls
    # it once per delta.
    match: Final[Callable[[Envelope], Claim | None]] = attrgetter("claim")

    def start(self, event: Envelope, reader: object) -> ItemState:
        """The item as ``output_item.added`` announced it."""
        raw = event.event
        item = raw["item"]
        if not isinstance(item, dict):
            raise ValueError("response.output_item.added has an 'item' that is not an object")
        assert event.response_id is not None
        kind = item.get("type")
        parts: tuple[PartState, ...] = ()
        summary: tuple[PartState, ...] = ()
        if kind == "message":
            parts = tuple(PartState(p) for p in item.get("content") or ())
        elif kind == "reasoning":
            summary = tuple(PartState(p) for p in item.get("summary") or ())
        return ItemState(event.response_id, raw["output_index"], item, parts, _EMPTY, summary)

    def update(self, state: ItemState, event: Envelope) -> ItemState:
        """Fold one item event the way the SDK does, plus reasoning summaries."""
        return _item_updated(state, event.event)

    def update_many(self, state: ItemState, events: list[Envelope]) -> ItemState:
        """``update`` over a run of item events (the engine hands an item's deltas over
        together): consecutive deltas into one text append it once, joined."""
        return _fold_item(state, events)

    def render_text(self, node: Node) -> str:
        """Message text, calls as tool lines, the summary for reasoning."""
        from ._render_protocols import responses_item_text

        state: ItemState = node.state
        item = state.done if state.done is not None else _snapshot_item(state)
        if state.done is None and state.pending and item.get("type") not in _TEXT_ITEMS:
            return f"[{item.get('type')}] {state.pending}"
        return responses_item_text(item)

    def tool_calls(self, node: Node) -> tuple[str, ...]:
        """The call id of a function call item."""
        from ._render_protocols import responses_calls

        state: ItemState = node.state
        return responses_calls(state.done if state.done is not None else _snapshot_item(state))

    def render_html(self, node: Node) -> str:
        """Messages as Markdown bubbles, calls as tool cards, reasoning folded."""
        from ._render_protocols import responses_item

        state: ItemState = node.state
        return responses_item(state.done if state.done is not None else _snapshot_item(state))


RESPONSE: Final = ResponseDefinition()
ITEM: Final = ItemDefinition()


# -- rebuild ------------------------------------------------------------------------

# Where the SDK's models type a number as float (construct_type turns 1 into 1.0),
# as a schema: the conformance tests check it against the SDK's models, and the
# walk below (one function per shape) against a generic walk of it. Values of other
# types, and ints no float equals, are left as they are. Copy on write: what
# changes is copied, never the events' own dicts (the response excepted: a copy of
# ours).
_F: Final = "float"
_LOGPROB: Final = {"logprob": _F, "top_logprobs": [{"logprob": _F}]}
_RANKING: Final = {
    "score_threshold": _F,
    "hybrid_search": {"embedding_weight": _F, "text_weight": _F},
}
_TOOL_FLOATS: Final = {"ranking_options": _RANKING}
_ITEM_FLOATS: Final = {
    "content": [{"logprobs": [_LOGPROB]}],
    "results": [{"score": _F}],
    "tools": [_TOOL_FLOATS],
}
_RESPONSE_FLOATS: Final = {
    "created_at": _F,
    "completed_at": _F,
    "temperature": _F,
    "top_p": _F,
    "tools": [_TOOL_FLOATS],
    "output": [_ITEM_FLOATS],
}
_RESPONSE_NUMBERS: Final = tuple(k for k, v in _RESPONSE_FLOATS.items() if v is _F)


def _float(value: int) -> float | int:
    number = float(value)
    return number if number == value else value


def _response_floats(response: dict[str, Any]) -> dict[str, Any]:
    """``response`` (a copy: changed in place) with the SDK's float fields as floats."""
    for key in _RESPONSE_NUMBERS:
        value = response.get(key)
        if type(value) is int:
            number = float(value)
            if number == value:
                response[key] = number
    tools = response.get("tools")
    if type(tools) is list and tools:
        response["tools"] = [_tool_floats(tool) for tool in tools]
    output = response.get("output")
    if type(output) is list and output:
        response["output"] = [_item_floats(item) for item in output]
    return response


def _each(values: list[Any], floats: Callable[[Any], Any]) -> list[Any]:
    """``values`` with ``floats`` of each (copied if one changed)."""
    copied = None
    for index, old in enumerate(values):
        new = floats(old)
        if new is not old:
            if copied is None:
                copied = list(values)
            copied[index] = new
    return values if copied is None else copied


def _tool_floats(tool: Any) -> Any:
    if type(tool) is not dict:
        return tool
    ranking = tool.get("ranking_options")
    if type(ranking) is not dict:
        return tool
    out = None
    value = ranking.get("score_threshold")
    if type(value) is int and (number := _float(value)) is not value:
        out = {**ranking, "score_threshold": number}
    hybrid = ranking.get("hybrid_search")
    if type(hybrid) is dict:
        new = _numbers(hybrid, ("embedding_weight", "text_weight"))
        if new is not hybrid:
            out = {**(ranking if out is None else out), "hybrid_search": new}
    return tool if out is None else {**tool, "ranking_options": out}


def _numbers(value: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """``value`` with the ints at ``keys`` as floats (copied if one changed)."""
    out = None
    for key in keys:
        number = value.get(key)
        if type(number) is int and (coerced := _float(number)) is not number:
            if out is None:
                out = dict(value)
            out[key] = coerced
    return value if out is None else out


def _item_floats(item: Any) -> Any:
    if type(item) is not dict:
        return item
    out = None
    for key, floats in _ITEM_LISTS:
        old = item.get(key)
        if type(old) is list and old:
            new = _each(old, floats)
            if new is not old:
                if out is None:
                    out = dict(item)
                out[key] = new
    return item if out is None else out


def _part_floats(part: Any) -> Any:
    if type(part) is not dict:
        return part
    logprobs = part.get("logprobs")
    if type(logprobs) is not list or not logprobs:
        return part
    new = _each(logprobs, _logprob_floats)
    return part if new is logprobs else {**part, "logprobs": new}


def _logprob_floats(logprob: Any) -> Any:
    if type(logprob) is not dict:
        return logprob
    out = _numbers(logprob, ("logprob",))
    top = logprob.get("top_logprobs")
    if type(top) is list and top:
        new = _each(top, _top_logprob_floats)
        if new is not top:
            out = {**out, "top_logprobs": new}
    return out


def _top_logprob_floats(top: Any) -> Any:
    return _numbers(top, ("logprob",)) if type(top) is dict else top


def _result_floats(result: Any) -> Any:
    return _numbers(result, ("score",)) if type(result) is dict else result


_ITEM_LISTS: Final = (
    ("content", _part_floats),
    ("results", _result_floats),
    ("tools", _tool_floats),
)


def _part(part: PartState) -> dict[str, Any]:
    if not part.text:
        return part.part
    return {**part.part, "text": str(part.part.get("text") or "") + str(part.text)}


def _snapshot_item(state: ItemState) -> dict[str, Any]:
    """The item as the live snapshot holds it: added payload plus folded deltas."""
    item = state.item
    kind = item.get("type")
    if kind == "message":
        if state.parts or "content" in item:
            return {**item, "content": [_part(p) for p in state.parts]}
    elif kind == "function_call":
        if state.arguments:
            return {**item, "arguments": str(item.get("arguments") or "") + str(state.arguments)}
    elif kind == "reasoning" and (state.summary or "summary" in item):
        return {**item, "summary": [_part(p) for p in state.summary]}
    return item


def _parsed_item(item: dict[str, Any]) -> dict[str, Any]:
    """``parse_response`` without a text format or input tools: null ``parsed`` fields."""
    kind = item.get("type")
    if kind == "message":
        content = [
            {**p, "parsed": None} if p.get("type") == "output_text" else p
            for p in item.get("content") or ()
        ]
        return {**item, "content": content}
    if kind == "function_call":
        return {**item, "parsed_arguments": None}
    return item


# A response's state and those of its items, in the order they were added.
_Collected = tuple[ResponseState, list[ItemState]]


def _collect(nodes: Sequence[Node]) -> list[_Collected]:
    out: list[_Collected] = []
    by_id: dict[str, list[ItemState]] = {}
    response_kind = ResponseDefinition.kind
    item_kind = ItemDefinition.kind
    for node in nodes:
        kind = node.kind
        if kind == response_kind:
            items = by_id[node.id] = []
            out.append((node.state, items))
        elif kind == item_kind:
            owner = by_id.get(node.state.response_id)
            if owner is not None:
                owner.append(node.state)
    return out


def _snapshot(collected: _Collected) -> dict[str, Any]:
    state, items = collected
    response = dict(state.created)
    output = list(response.get("output") or ())
    output.extend(_snapshot_item(item) for item in items)
    response["output"] = output
    return _response_floats(response)


def _finished_output(items: list[ItemState]) -> list[dict[str, Any]]:
    """The items by ``output_index``: each ``done`` payload, else its live snapshot."""
    items = sorted(items, key=lambda s: s.output_index)
    return [s.done if s.done is not None else _snapshot_item(s) for s in items]


def _response(collected: _Collected) -> dict[str, Any]:
    state, items = collected
    if state.completed is not None:
        response = dict(state.completed)
        if response.get("output") is None:
            response["output"] = _finished_output(items)
        response["output"] = [_parsed_item(item) for item in response["output"]]
        return _response_floats(response)
    if state.ended is not None:
        response = dict(state.ended[1])
        if response.get("output") is None:
            response["output"] = _finished_output(items)
        return _response_floats(response)
    return _snapshot(collected)


def responses(nodes: Sequence[Node]) -> list[dict[str, Any]]:
    """The SDK's result for each response the nodes hold, in log order.

    A completed response is what ``ResponseStream.get_final_response()`` returns; a
    failed or incomplete one is the response of the ``response.failed`` /
    ``response.incomplete`` event the SDK's stream yields (output recovered from the
    items when the event omits it); one still streaming (or cut off) is its live
    snapshot (see ``snapshots``). Items whose response node is absent are left out.
    """
    return [_response(c) for c in _collect(nodes)]


def snapshots(nodes: Sequence[Node]) -> list[dict[str, Any]]:
    """Each response as folded from its deltas so far (the SDK's current snapshot).

    ``response.created``'s payload with every added item and the text, arguments and
    reasoning summaries streamed into them, in the order the items were added.
    """
    return [_snapshot(c) for c in _collect(nodes)]


PROTOCOL: Final = ProtocolSet.of_module(
    globals(),
    name="openai_responses",
    title="OpenAI Responses",
    definitions=(RESPONSE, ITEM),
    rebuild=responses,
)
"""The Responses protocol set (``definitions.ProtocolSet``)."""

DEFINITIONS: Final = PROTOCOL.definitions
"""The Responses definitions to register: the set's guard (``PROTOCOL.envelope``),
then responses, then their output items."""


# The names of one release ago (every set now says prepare, Preparer, Envelope).
__getattr__ = old_names(globals(), {"scope": "prepare", "Scoper": "Preparer", "Scoped": "Envelope"})
