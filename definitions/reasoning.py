"""The ``reasoning`` kind: a model's streamed thinking, possibly redacted or encrypted.

Event vocabulary (``type`` is the tag; every event carries the reasoning ``id``)::

    {"type": "reasoning.start",    "id": "r1"}
    {"type": "reasoning.delta",    "id": "r1", "text": "Let me check"}
    {"type": "reasoning.redacted", "id": "r1", "variant": "encrypted", "data": "gAAAA..."}
    {"type": "reasoning.end",      "id": "r1"}

``reasoning.redacted`` marks the content as not shown: ``variant`` is
``"redacted"`` (the provider withheld it, e.g. Anthropic's ``redacted_thinking``)
or ``"encrypted"`` (an opaque blob to send back, e.g. OpenAI's
``encrypted_content``); ``data`` is kept in the state, never rendered, and the
renderers show a placeholder saying so. It may come at any point before the end,
next to visible (summary) text. ``end`` is final: a later event for the id is an
error (a repeated ``start`` reopens).

Events may be the Structs below or plain dicts with the same fields. Deltas read
their fields straight from the dict; the rest go through ``msgspec.convert``.
"""

from __future__ import annotations

import html
from typing import Any, Final, Literal, TypeAlias

import msgspec

from engine import Node, Publication, Reader

from ._routing import ByType, event_type
from ._runs import fold_run
from ._text import StreamedText
from ._vocabulary import Vocabulary, delta_pieces

__all__ = [
    "DEFINITION",
    "Delta",
    "End",
    "Event",
    "ReasoningDefinition",
    "ReasoningState",
    "Redacted",
    "Start",
]

Variant: TypeAlias = Literal["redacted", "encrypted"]


class Start(msgspec.Struct, frozen=True, tag_field="type", tag="reasoning.start"):
    """Open reasoning block ``id``."""

    id: str


class Delta(msgspec.Struct, frozen=True, tag_field="type", tag="reasoning.delta"):
    """Append visible reasoning ``text``."""

    id: str
    text: str


class Redacted(msgspec.Struct, frozen=True, tag_field="type", tag="reasoning.redacted"):
    """The content is not shown: withheld (``"redacted"``) or an opaque ``data`` blob."""

    id: str
    variant: Variant = "redacted"
    data: str = ""


class End(msgspec.Struct, frozen=True, tag_field="type", tag="reasoning.end"):
    """Reasoning block ``id`` is complete."""

    id: str


Event: TypeAlias = Start | Delta | Redacted | End
"""Any reasoning event, for typed decoding: ``msgspec.json.Decoder(reasoning.Event)``."""

_VOCABULARY: Final = Vocabulary(Start, Delta, Redacted, End, opens="reasoning.start")
_TAGS: Final = _VOCABULARY.tags
_DELTA: Final = "reasoning.delta"
_PUBLICATION: Final[dict[str, Publication]] = {_DELTA: "animation-frame"}

PLACEHOLDERS: Final[dict[str, str]] = {
    "redacted": "[reasoning redacted by the provider: content not shown]",
    "encrypted": "[reasoning encrypted: content not shown]",
}
"""What the renderers show in place of redacted or encrypted content."""


class ReasoningState(msgspec.Struct, frozen=True):
    """A reasoning node's state: visible ``text``, and ``redacted`` when content is
    hidden (``data`` the opaque payload, never rendered)."""

    text: StreamedText
    done: bool = False
    redacted: Variant | None = None
    data: str = ""


_typed: Final = _VOCABULARY.typed


class ReasoningDefinition:
    """Folds the ``reasoning.*`` events into ``ReasoningState`` nodes keyed by id."""

    kind: Final = "reasoning"
    event_types: Final = frozenset(_VOCABULARY.structs)

    # Claim by ``id``; 'reasoning.start' opens the node. An attribute, not a method: the
    # engine calls the vocabulary's claim directly, one call less per event.
    match: Final = staticmethod(_VOCABULARY.claim)

    def start(self, event: Event | dict[str, Any], reader: Reader) -> ReasoningState:
        """An empty, open reasoning block."""
        _typed(event)  # validates
        return ReasoningState(StreamedText())

    def update(self, state: ReasoningState, event: Event | dict[str, Any]) -> ReasoningState:
        """Append a delta, mark the content redacted, or close the block."""
        # The delta of an open block is the hot path: checked inline, one call.
        cls = type(event)
        if cls is dict:
            if event["type"] == _DELTA:  # type: ignore[index]
                text = event.get("text")  # type: ignore[union-attr]
                if type(text) is str and not state.done:
                    if not text:
                        return state
                    return ReasoningState(
                        state.text.append(text), False, state.redacted, state.data
                    )
                return _append(state, text)  # raises, naming the problem
            typed = _typed(event)
        elif cls is Delta:
            return _append(state, event.text)  # type: ignore[union-attr]
        else:
            typed = event
        if state.done:
            raise ValueError(f"{_TAGS[type(typed)]} for a reasoning block that already ended")
        if isinstance(typed, Redacted):
            return ReasoningState(state.text, False, typed.variant, typed.data or state.data)
        if isinstance(typed, End):
            return ReasoningState(state.text, True, state.redacted, state.data)
        raise ValueError(f"cannot update reasoning with {typed!r}")

    def update_many(
        self, state: ReasoningState, events: list[Event | dict[str, Any]]
    ) -> ReasoningState:
        """``update`` over a run of events, one append per
        stretch of deltas (the engine hands a streamed block's deltas over together)."""
        return fold_run(state, events, delta_pieces(events, _DELTA, Delta), _append, self.update)

    # Deltas wait for the next animation frame; the other events are immediate.
    # A mapping the engine resolves once per event type (with event_type=); also a
    # function of the event, for engines without one.
    publication: Final = ByType(_PUBLICATION, event_type)

    def render_text(self, node: Node) -> str:
        """``reasoning: text``, then the placeholder when content is hidden."""
        state: ReasoningState = node.state
        parts = [f"reasoning: {state.text}" if state.text else "reasoning:"]
        if state.redacted is not None:
            parts.append(PLACEHOLDERS[state.redacted])
        if not state.done:
            parts.append("…")
        return " ".join(parts)

    def render_html(self, node: Node) -> str:
        """The visible text escaped, and the placeholder when content is hidden."""
        state: ReasoningState = node.state
        out = f'<div class="reasoning" data-status="{"done" if state.done else "streaming"}">'
        if state.text:
            out += f'<div class="text">{html.escape(str(state.text), quote=True)}</div>'
        if state.redacted is not None:
            out += (
                f'<span class="placeholder" data-variant="{state.redacted}">'
                f"{html.escape(PLACEHOLDERS[state.redacted], quote=True)}</span>"
            )
        return out + "</div>"

    def render_json(self, node: Node) -> dict[str, Any]:
        """``{"text", "done", "redacted", "data_length"}``: the opaque data is left out."""
        state: ReasoningState = node.state
        return {
            "text": str(state.text),
            "done": state.done,
            "redacted": state.redacted,
            "data_length": len(state.data),
        }


def _append(state: ReasoningState, text: object) -> ReasoningState:
    if type(text) is not str:
        raise TypeError(f"reasoning.delta needs a 'text' str, got {text!r}")
    if state.done:
        raise ValueError("reasoning.delta for a reasoning block that already ended")
    if not text:
        return state
    return ReasoningState(state.text.append(text), False, state.redacted, state.data)


DEFINITION: Final = ReasoningDefinition()
"""The reasoning definition to register."""
