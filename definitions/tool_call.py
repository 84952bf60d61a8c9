"""The ``tool_call`` kind: a tool invocation with streamed JSON arguments and its outcome.

Event vocabulary (``type`` is the tag; every event carries the tool call ``id``)::

    {"type": "tool_call.start",           "id": "c1", "name": "read_file"}
    {"type": "tool_call.arguments_delta", "id": "c1", "text": "{\\"path\\": \\"RE"}
    {"type": "tool_call.arguments_end",   "id": "c1"}
    {"type": "tool_call.result",          "id": "c1", "output": {"lines": 12}}
    {"type": "tool_call.error",           "id": "c1", "message": "file not found"}
    {"type": "tool_call.denied",          "id": "c1", "reason": "the user said no"}

Lifecycle (``ToolCallState.status``)::

    streaming --arguments_end--> ready         (the arguments parsed)
              \\--arguments_end--> invalid       (malformed JSON: shown, not raised)
    streaming | ready | invalid --result--> done
                                --error---> failed
                                --denied--> denied

While the arguments stream, ``state.preview`` is the value read so far, from an
incremental parser (``definitions._json.PartialJson``) kept in the state: each
delta is parsed once, so arguments stay linear however many deltas arrive. At
``arguments_end`` the parser's final answer becomes ``state.input`` or, for
malformed text, ``state.input_error`` (the raw text stays in ``state.arguments``).
An outcome ends the call: any later event for the id is an error; a repeated
``start`` reopens it. Arguments events after ``arguments_end`` are errors too.

Events may be the Structs below or plain dicts with the same fields. Argument
deltas read their fields straight from the dict; the rest go through
``msgspec.convert``.
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal, TypeAlias

import msgspec

from engine import Node, Publication, Reader

from ._json import PartialJson
from ._routing import ByType, event_type
from ._runs import fold_run
from ._text import StreamedText
from ._vocabulary import Vocabulary, delta_pieces

__all__ = [
    "DEFINITION",
    "ArgumentsDelta",
    "ArgumentsEnd",
    "Denied",
    "Error",
    "Event",
    "Result",
    "Start",
    "ToolCallDefinition",
    "ToolCallState",
]


class Start(msgspec.Struct, frozen=True, tag_field="type", tag="tool_call.start"):
    """Open tool call ``id`` of tool ``name``."""

    id: str
    name: str


class ArgumentsDelta(
    msgspec.Struct, frozen=True, tag_field="type", tag="tool_call.arguments_delta"
):
    """Append ``text`` to the call's JSON arguments (any split, even mid-token)."""

    id: str
    text: str


class ArgumentsEnd(msgspec.Struct, frozen=True, tag_field="type", tag="tool_call.arguments_end"):
    """The arguments are complete: parse them."""

    id: str


class Result(msgspec.Struct, frozen=True, tag_field="type", tag="tool_call.result"):
    """The tool returned ``output`` (any JSON value)."""

    id: str
    output: Any = None


class Error(msgspec.Struct, frozen=True, tag_field="type", tag="tool_call.error"):
    """The tool (or the call) failed with ``message``."""

    id: str
    message: str


class Denied(msgspec.Struct, frozen=True, tag_field="type", tag="tool_call.denied"):
    """The call was not run: permission was refused, for ``reason``."""

    id: str
    reason: str = ""


Event: TypeAlias = Start | ArgumentsDelta | ArgumentsEnd | Result | Error | Denied
"""Any tool call event, for typed decoding: ``msgspec.json.Decoder(tool_call.Event)``."""

_VOCABULARY: Final = Vocabulary(
    Start, ArgumentsDelta, ArgumentsEnd, Result, Error, Denied, opens="tool_call.start"
)
_TAGS: Final = _VOCABULARY.tags
_DELTA: Final = "tool_call.arguments_delta"
_PUBLICATION: Final[dict[str, Publication]] = {_DELTA: "animation-frame"}

Status: TypeAlias = Literal["streaming", "ready", "invalid", "done", "failed", "denied"]
_FINAL: Final = frozenset({"done", "failed", "denied"})


class ToolCallState(msgspec.Struct, frozen=True):
    """A tool call node's state.

    ``arguments`` is the raw JSON text so far and ``parser`` the incremental parse of
    it; ``input`` the parsed arguments once ``status`` left ``"streaming"`` (or
    ``input_error`` when they were malformed). ``output``, ``error`` and ``reason``
    hold the outcome of a ``done``, ``failed`` or ``denied`` call.
    """

    name: str
    arguments: StreamedText
    parser: PartialJson
    status: Status = "streaming"
    arguments_done: bool = False
    input: Any = None
    input_error: str | None = None
    output: Any = None
    error: str | None = None
    reason: str | None = None

    @property
    def preview(self) -> Any:
        """The arguments as known so far: the partial parse while streaming (``None``
        before anything is known), then the parsed input."""
        return self.input if self.arguments_done else self.parser.preview


_typed: Final = _VOCABULARY.typed


class ToolCallDefinition:
    """Folds the ``tool_call.*`` events into ``ToolCallState`` nodes keyed by call id."""

    kind: Final = "tool_call"
    event_types: Final = frozenset(_VOCABULARY.structs)

    # Claim by ``id``; 'tool_call.start' opens the node. An attribute, not a method: the
    # engine calls the vocabulary's claim directly, one call less per event.
    match: Final = staticmethod(_VOCABULARY.claim)

    def start(self, event: Event | dict[str, Any], reader: Reader) -> ToolCallState:
        """A call of the named tool whose arguments are about to stream."""
        typed = _typed(event)
        assert isinstance(typed, Start)
        return ToolCallState(typed.name, StreamedText(), PartialJson())

    def update(self, state: ToolCallState, event: Event | dict[str, Any]) -> ToolCallState:
        """Extend or finish the arguments, or record the outcome."""
        # An arguments delta of a streaming call is the hot path: checked inline.
        cls = type(event)
        if cls is dict:
            if event["type"] == _DELTA:  # type: ignore[index]
                text = event.get("text")  # type: ignore[union-attr]
                if type(text) is str and state.status == "streaming":
                    if not text:
                        return state
                    return ToolCallState(
                        state.name, state.arguments.append(text), state.parser.feed(text)
                    )
                return _append(state, text)  # raises, naming the problem
            typed = _typed(event)
        elif cls is ArgumentsDelta:
            return _append(state, event.text)  # type: ignore[union-attr]
        else:
            typed = event
        tag = _TAGS[type(typed)]
        if state.status in _FINAL:
            raise ValueError(f"{tag} for a tool call that is already {state.status}")
        if isinstance(typed, ArgumentsEnd):
            if state.arguments_done:
                raise ValueError("tool_call.arguments_end for arguments that already ended")
            parser = state.parser.finish()
            if parser.error is None:
                return msgspec.structs.replace(
                    state, parser=parser, status="ready", arguments_done=True, input=parser.value
                )
            return msgspec.structs.replace(
                state,
                parser=parser,
                status="invalid",
                arguments_done=True,
                input_error=f"malformed JSON arguments: {parser.error}",
            )
        if isinstance(typed, Result):
            return msgspec.structs.replace(state, status="done", output=typed.output)
        if isinstance(typed, Error):
            return msgspec.structs.replace(state, status="failed", error=typed.message)
        if isinstance(typed, Denied):
            return msgspec.structs.replace(state, status="denied", reason=typed.reason)
        raise ValueError(f"cannot update a tool call with {typed!r}")

    def update_many(
        self, state: ToolCallState, events: list[Event | dict[str, Any]]
    ) -> ToolCallState:
        """``update`` over a run of events, each stretch of
        argument deltas appended and fed to the parser once (the engine hands a call's
        streamed deltas over together)."""
        return fold_run(
            state, events, delta_pieces(events, _DELTA, ArgumentsDelta), _append, self.update
        )

    # Argument deltas wait for the next animation frame; the rest is immediate.
    # A mapping the engine resolves once per event type (with event_type=); also a
    # function of the event, for engines without one.
    publication: Final = ByType(_PUBLICATION, event_type)

    def render_text(self, node: Node) -> str:
        """A header line (tool, id, status), then the arguments and the outcome."""
        state: ToolCallState = node.state
        lines = [f"tool {state.name} [{node.id}] {state.status}"]
        if state.input_error is not None:
            lines.append(f"  arguments (raw): {state.arguments}")
            lines.append(f"  {state.input_error}")
        elif state.preview is not None:
            lines.append(f"  arguments: {_dump(state.preview)}")
        lines.extend(f"  {label}: {text}" for label, text in _outcome(state))
        return "\n".join(lines)

    def render_html(self, node: Node) -> str:
        """A collapsible card: name, arguments, result or error, status."""
        from ._render import tool_card

        state: ToolCallState = node.state
        raw = state.input_error is not None or state.preview is None
        error = state.input_error
        if state.status == "failed":
            error = state.error or "failed"
        elif state.status == "denied":
            error = state.reason or "permission refused"
        return tool_card(
            state.name,
            state.status,
            arguments=str(state.arguments) if raw else state.preview,
            result=state.output if state.status == "done" else None,
            error=error,
        )

    def render_json(self, node: Node) -> dict[str, Any]:
        """Name, status, raw and parsed arguments (the preview while streaming), outcome."""
        state: ToolCallState = node.state
        return {
            "name": state.name,
            "status": state.status,
            "arguments": str(state.arguments),
            "input": state.preview,
            "input_error": state.input_error,
            "output": state.output,
            "error": state.error,
            "reason": state.reason,
        }


def _append(state: ToolCallState, text: object) -> ToolCallState:
    if type(text) is not str:
        raise TypeError(f"tool_call.arguments_delta needs a 'text' str, got {text!r}")
    if state.arguments_done or state.status in _FINAL:
        raise ValueError(
            "tool_call.arguments_delta for arguments that already ended "
            f"(the call is {state.status})"
        )
    if not text:
        return state
    return ToolCallState(state.name, state.arguments.append(text), state.parser.feed(text))


def _dump(value: Any, indent: int | None = None) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=indent)
    except (TypeError, ValueError):  # Struct events may carry non-JSON outputs
        return repr(value)


def _outcome(state: ToolCallState) -> list[tuple[str, str]]:
    if state.status == "done":
        output = state.output
        from ._render import long_text

        return [("output", long_text(output if isinstance(output, str) else _dump(output)))]
    if state.status == "failed":
        return [("error", state.error or "")]
    if state.status == "denied":
        return [("denied", state.reason or "permission refused")]
    return []


DEFINITION: Final = ToolCallDefinition()
"""The tool call definition to register."""
