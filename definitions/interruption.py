"""The ``interruption`` kind: a run was cut, or left debris, at this point.

Event vocabulary (``type`` is the tag; ``id`` names the interruption)::

    {"type": "interruption.mark", "id": "i1", "cause": "user",
                                  "text": "[Request interrupted by user]"}
    {"type": "interruption.mark", "id": "i2", "cause": "cut", "tool_call_id": "c7"}
    {"type": "interruption.mark", "id": "i3", "cause": "retry_error",
                                  "text": "API Error: Request timed out"}

One event is the whole fact, and it is final: a second mark for the same id is
an error. ``cause`` says what happened:

- ``"user"``: the person stopped the run (the harness's own interruption record);
- ``"cut"``: the run ended or moved on while tool call ``tool_call_id`` had no
  result (a crash, a kill, a lost connection): the call is left unanswered;
- ``"retry_error"``: a synthetic error the harness wrote while retrying a
  failed model call; debris, not conversation.

``text`` is what the harness recorded, if anything. An importer emits these from
a format's structural markers (see ``replay._transcripts``), never from matching
free text. The kinds are unaware of each other: a cut call's ``tool_call`` node
stays without an outcome; the model context pairs it with a neutral result.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias

import msgspec

from engine import Node, Reader

from ._render import line
from ._vocabulary import Vocabulary

__all__ = ["DEFINITION", "Event", "InterruptionDefinition", "InterruptionState", "Mark"]

Cause: TypeAlias = Literal["user", "cut", "retry_error"]


class Mark(msgspec.Struct, frozen=True, tag_field="type", tag="interruption.mark"):
    """The run was interrupted (``cause``), at tool call ``tool_call_id`` when given."""

    id: str
    cause: Cause
    tool_call_id: str | None = None
    text: str = ""


Event: TypeAlias = Mark
"""The interruption event, for typed decoding: ``msgspec.json.Decoder(interruption.Event)``."""

_VOCABULARY: Final = Vocabulary(Mark, opens="interruption.mark")


class InterruptionState(msgspec.Struct, frozen=True):
    """An interruption node's state: the mark's fields."""

    cause: Cause
    tool_call_id: str | None = None
    text: str = ""


_typed: Final = _VOCABULARY.typed

_LABELS: Final[dict[str, str]] = {
    "user": "interrupted by the user",
    "cut": "cut off: the tool call got no result",
    "retry_error": "retry debris",
}


class InterruptionDefinition:
    """Folds ``interruption.mark`` events into ``InterruptionState`` nodes keyed by id."""

    kind: Final = "interruption"
    event_types: Final = frozenset(_VOCABULARY.structs)
    publication: Final = "immediate"

    # Claim by ``id``; the mark opens the node (a second mark reopens it: rule 4).
    match: Final = staticmethod(_VOCABULARY.claim)

    def start(self, event: Event | dict[str, Any], reader: Reader) -> InterruptionState:
        """The interruption as marked."""
        typed = _typed(event)
        assert isinstance(typed, Mark)
        return InterruptionState(typed.cause, typed.tool_call_id, typed.text)

    def update(self, state: InterruptionState, event: Event | dict[str, Any]) -> InterruptionState:
        """A mark is final: nothing updates it."""
        raise ValueError(f"an interruption is final: cannot update it with {_typed(event)!r}")

    def render_text(self, node: Node) -> str:
        """``interruption [call]: label (text)``."""
        state: InterruptionState = node.state
        target = f" at {state.tool_call_id}" if state.tool_call_id else ""
        text = f"interruption{target}: {_LABELS[state.cause]}"
        return f"{text} ({state.text})" if state.text else text

    def render_html(self, node: Node) -> str:
        """The cause, the call and the recorded text, every piece escaped."""
        state: InterruptionState = node.state
        return line(
            "interruption",
            ("label", _LABELS[state.cause]),
            ("tool-call-id", state.tool_call_id),
            ("text", state.text),
            status=state.cause,
        )

    def render_json(self, node: Node) -> dict[str, Any]:
        """The state's fields as a dict."""
        return msgspec.structs.asdict(node.state)


DEFINITION: Final = InterruptionDefinition()
"""The interruption definition to register."""
