"""The ``message`` kind: a chat message with a role and streamed text.

Event vocabulary (``type`` is the tag; every event carries the message ``id``)::

    {"type": "message.start", "id": "m1", "role": "assistant", "text": ""}
    {"type": "message.delta", "id": "m1", "text": "Hel"}       # appended, O(len(text))
    {"type": "message.end",   "id": "m1"}
    {"type": "message.abort", "id": "m1", "reason": "cancelled by the user"}

``role`` is free text; the usual values are ``user``, ``assistant``, ``system``
and ``tool``. A message that arrives whole is a start with ``text`` and an end.
``end`` and ``abort`` are final: a later delta, end or abort for the same id is an
error (a repeated ``start`` reopens the message, per the engine's rule 4).

Events may be the Structs below or plain dicts with the same fields (as read from
a JSONL log). Deltas read their two fields straight from the dict; the rare
discrete events go through ``msgspec.convert``, which validates and fills defaults.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias

import msgspec

from engine import Node, Publication, Reader

from ._routing import ByType, event_type
from ._runs import fold_run
from ._text import StreamedText
from ._vocabulary import Vocabulary, delta_pieces

__all__ = [
    "DEFINITION",
    "Abort",
    "Delta",
    "End",
    "Event",
    "MessageDefinition",
    "MessageState",
    "Start",
]


class Start(msgspec.Struct, frozen=True, tag_field="type", tag="message.start"):
    """Open message ``id`` with ``role`` and optional initial ``text``."""

    id: str
    role: str = "assistant"
    text: str = ""


class Delta(msgspec.Struct, frozen=True, tag_field="type", tag="message.delta"):
    """Append ``text`` to message ``id``."""

    id: str
    text: str


class End(msgspec.Struct, frozen=True, tag_field="type", tag="message.end"):
    """Message ``id`` is complete."""

    id: str


class Abort(msgspec.Struct, frozen=True, tag_field="type", tag="message.abort"):
    """Message ``id`` stopped before completion, for ``reason``."""

    id: str
    reason: str = ""


Event: TypeAlias = Start | Delta | End | Abort
"""Any message event, for typed decoding: ``msgspec.json.Decoder(message.Event)``."""

_VOCABULARY: Final = Vocabulary(Start, Delta, End, Abort, opens="message.start")
_TAGS: Final = _VOCABULARY.tags
_DELTA: Final = "message.delta"
_PUBLICATION: Final[dict[str, Publication]] = {_DELTA: "animation-frame"}

Status: TypeAlias = Literal["streaming", "done", "aborted"]


class MessageState(msgspec.Struct, frozen=True):
    """A message node's state: ``text`` grows while ``status`` is ``"streaming"``."""

    role: str
    text: StreamedText
    status: Status = "streaming"
    reason: str | None = None


_typed: Final = _VOCABULARY.typed


class MessageDefinition:
    """Folds the ``message.*`` events into ``MessageState`` nodes keyed by message id."""

    kind: Final = "message"
    event_types: Final = frozenset(_VOCABULARY.structs)

    # Claim by ``id``; 'message.start' opens the node. An attribute, not a method: the
    # engine calls the vocabulary's claim directly, one call less per event.
    match: Final = staticmethod(_VOCABULARY.claim)

    def start(self, event: Event | dict[str, Any], reader: Reader) -> MessageState:
        """A new streaming message with the start's role and initial text."""
        typed = _typed(event)
        assert isinstance(typed, Start)
        return MessageState(typed.role, StreamedText(typed.text))

    def update(self, state: MessageState, event: Event | dict[str, Any]) -> MessageState:
        """Append a delta, or close the message on end/abort."""
        # The delta of a streaming message is the hot path: checked inline, one call.
        cls = type(event)
        if cls is dict:
            if event["type"] == _DELTA:  # type: ignore[index]
                text = event.get("text")  # type: ignore[union-attr]
                if type(text) is str and state.status == "streaming":
                    return MessageState(state.role, state.text.append(text)) if text else state
                return _append(state, text)  # raises, naming the problem
            typed = _typed(event)
        elif cls is Delta:
            return _append(state, event.text)  # type: ignore[union-attr]
        else:
            typed = event
        if state.status != "streaming":
            raise ValueError(f"{_TAGS[type(typed)]} for a message that is already {state.status}")
        if isinstance(typed, End):
            return MessageState(state.role, state.text, "done")
        if isinstance(typed, Abort):
            return MessageState(state.role, state.text, "aborted", typed.reason)
        raise ValueError(f"cannot update a message with {typed!r}")

    def update_many(
        self, state: MessageState, events: list[Event | dict[str, Any]]
    ) -> MessageState:
        """``update`` over a run of events, one append per
        stretch of deltas (the engine hands a streamed message's deltas over together)."""
        return fold_run(state, events, delta_pieces(events, _DELTA, Delta), _append, self.update)

    # Deltas wait for the next animation frame; start, end and abort are immediate.
    # A mapping the engine resolves once per event type (with event_type=); also a
    # function of the event, for engines without one.
    publication: Final = ByType(_PUBLICATION, event_type)

    def render_text(self, node: Node) -> str:
        """``role: text``, with the abort reason or an ellipsis while streaming."""
        state: MessageState = node.state
        from ._render import long_text

        return f"{state.role}: {long_text(state.text)}{_suffix(state)}"

    def render_html(self, node: Node) -> str:
        """A bubble by role with the text as Markdown (escaped, safe links only)."""
        from ._render import bubble, markdown

        state: MessageState = node.state
        note = _suffix(state).strip()
        return bubble(state.role, markdown(state.text), status=state.status, note=note)

    def render_json(self, node: Node) -> dict[str, Any]:
        """``{"role", "text", "status", "reason"}`` with the text as a str."""
        state: MessageState = node.state
        return {
            "role": state.role,
            "text": str(state.text),
            "status": state.status,
            "reason": state.reason,
        }


def _append(state: MessageState, text: object) -> MessageState:
    if type(text) is not str:
        raise TypeError(f"message.delta needs a 'text' str, got {text!r}")
    if state.status != "streaming":
        raise ValueError(f"message.delta for a message that is already {state.status}")
    if not text:
        return state
    return MessageState(state.role, state.text.append(text))


def _suffix(state: MessageState) -> str:
    if state.status == "streaming":
        return " …"
    if state.status == "aborted":
        return f" [aborted: {state.reason}]" if state.reason else " [aborted]"
    return ""


DEFINITION: Final = MessageDefinition()
"""The message definition to register: ``create_conversation_engine([message.DEFINITION])``."""
