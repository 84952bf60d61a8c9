"""OpenAI Chat Completions streaming: fold ``chat.completion.chunk`` events.

Theory of operation
-------------------
Every chunk carries its completion's ``id``, but a recording of an agent loop
holds several completions in a row, a provider may send a preamble chunk with an
empty id (Azure's ``prompt_filter_results``), and a paginated window may start in
the middle of a completion. Which completion a chunk belongs to, and whether it
opens one, is decided outside the pure ``match`` by ``scope(events)``, a small pure
pre-pass that wraps each chunk (without copying it) in
``ScopedChunk(completion, opens, chunk)``:

- a chunk opens a completion when its id differs from the current one and it
  looks like a first chunk (a choice delta carrying ``role``, or an empty id, the
  preamble); the current completion keeps later chunks whose id is new only if it
  is the empty-id preamble (the SDK keeps the preamble's top-level fields too);
- a chunk that neither opens nor continues a completion is scoped to ``None`` and
  dropped: a window cut mid-completion shows nothing of it.

One definition, ``openai_chat_completion`` (node id: the completion scope), holds
the choices. Content, refusal and tool-call arguments are ``StreamedText``; the
rare other message fields are kept as a persistent list of ``(key, value)`` pairs
and merged once, when ``completions()`` rebuilds, with the SDK's
``accumulate_delta`` rules. Tool arguments are not parsed (the SDK leaves
``parsed_arguments`` null without strict input tools).

Corrections to the SDK's ``ChatCompletionStreamState`` (tested):
``id``, ``type`` and ``function.name`` of a tool call and the message ``role`` are
set once, not concatenated when a provider repeats them on every chunk; tool calls
are placed by their ``index``, so index 1 arriving before index 0 is fine; each
completion in a log is its own object.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final

import msgspec

from engine import Claim, Node, create_conversation_engine

from ._cons import Cons, items
from ._text import StreamedText

__all__ = [
    "DEFINITIONS",
    "ChoiceState",
    "CompletionDefinition",
    "CompletionState",
    "ScopedChunk",
    "ToolCallState",
    "completions",
    "event_type",
    "fold",
    "scope",
]

_EMPTY = StreamedText()
_replace: Final = msgspec.structs.replace


class ScopedChunk(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """A raw chunk, the completion it belongs to (``None``: dropped), and whether it
    opens that completion."""

    completion: str | None
    opens: bool
    chunk: dict[str, Any]


def _opens(chunk: dict[str, Any]) -> bool:
    if not chunk.get("id"):
        return True
    return any("role" in (choice.get("delta") or ()) for choice in chunk.get("choices") or ())


def scope(events: Iterable[dict[str, Any]]) -> Iterator[ScopedChunk]:
    """Wrap each chunk of one stream in ``ScopedChunk`` (the pure pre-pass)."""
    current: str | None = None
    for chunk in events:
        chunk_id = chunk.get("id") or ""
        if current is not None and (chunk_id == current or current == ""):
            yield ScopedChunk(current, False, chunk)
        elif _opens(chunk):
            current = chunk_id
            yield ScopedChunk(current, True, chunk)
        else:
            current = None
            yield ScopedChunk(None, False, chunk)


def event_type(event: object) -> str:
    """Routing key for ``create_conversation_engine(event_type=...)``."""
    return "chat.completion.chunk"


# -- states -------------------------------------------------------------------------


class ToolCallState(msgspec.Struct, frozen=True, gc=False):
    """One tool call of a choice, by its ``index``."""

    index: int
    id: str | None = None
    type: str | None = None
    name: str | None = None
    arguments: StreamedText = _EMPTY
    has_function: bool = False
    extra: Cons = None  # other tool call fields, merged at rebuild


class ChoiceState(msgspec.Struct, frozen=True, gc=False):
    """One choice: its first appearance and the message folded from its deltas."""

    first: dict[str, Any]
    finish_reason: Any = None
    role: str | None = None
    content: StreamedText | None = None
    refusal: StreamedText | None = None
    tool_calls: tuple[ToolCallState, ...] = ()
    extra: Cons = None  # other message fields (reasoning_content, audio, ...)
    logprobs: tuple[Any, ...] | None = None  # (content list | None, refusal list | None)
    has_message: tuple[str, ...] = ()  # message keys seen, in order


class CompletionState(msgspec.Struct, frozen=True, gc=False):
    """One completion: its first chunk, the choices, and the last chunk's usage."""

    first: dict[str, Any]
    choices: tuple[ChoiceState | None, ...] = ()
    chunks: int = 1
    usage: Any = None
    system_fingerprint: Any = None


# -- the fold -----------------------------------------------------------------------


def _tool_call(calls: tuple[ToolCallState, ...], delta: dict[str, Any]) -> ToolCallState:
    index = delta["index"]
    for call in calls:
        if call.index == index:
            break
    else:
        call = ToolCallState(index)
    function = delta.get("function")
    arguments = call.arguments
    name = call.name
    if function:
        piece = function.get("arguments")
        if type(piece) is str:
            arguments = arguments.append(piece)
        if not name and function.get("name"):
            name = function["name"]
    extra = call.extra
    for key, value in delta.items():
        if key not in ("index", "id", "type", "function"):
            extra = ((key, value), extra)
    return ToolCallState(
        index,
        call.id or delta.get("id") or None,
        call.type or delta.get("type") or None,
        name,
        arguments,
        call.has_function or function is not None,
        extra,
    )


def _choice(state: ChoiceState | None, choice: dict[str, Any]) -> ChoiceState:
    if state is None:
        state = ChoiceState({k: v for k, v in choice.items() if k != "delta"})
        logprobs = choice.get("logprobs")
        if logprobs is not None:
            state = msgspec.structs.replace(
                state, logprobs=(logprobs.get("content"), logprobs.get("refusal"))
            )
    elif choice.get("logprobs") is not None:
        new = choice["logprobs"]
        old = state.logprobs
        if old is None:
            merged = (new.get("content"), new.get("refusal"))
        else:
            merged = (
                [*(old[0] or ()), *new["content"]] if new.get("content") else old[0],
                [*(old[1] or ()), *new["refusal"]] if new.get("refusal") else old[1],
            )
        state = msgspec.structs.replace(state, logprobs=merged)
    finish_reason = choice.get("finish_reason") or state.finish_reason
    delta = choice.get("delta") or {}
    role, content, refusal = state.role, state.content, state.refusal
    tool_calls, extra, seen = state.tool_calls, state.extra, state.has_message
    for key, value in delta.items():
        if key not in seen:
            seen = (*seen, key)
        if key == "content":
            if type(value) is str:
                content = (
                    (content or _EMPTY) + value if content is not None else StreamedText(value)
                )
        elif key == "refusal":
            if type(value) is str:
                refusal = (
                    (refusal or _EMPTY) + value if refusal is not None else StreamedText(value)
                )
        elif key == "role":
            role = role or value
        elif key == "tool_calls" and value:
            calls = tool_calls
            for call_delta in value:
                call = _tool_call(calls, call_delta)
                calls = (*(c for c in calls if c.index != call.index), call)
            tool_calls = calls
        else:
            extra = ((key, value), extra)
    return ChoiceState(
        state.first,
        finish_reason,
        role,
        content,
        refusal,
        tool_calls,
        extra,
        state.logprobs,
        seen,
    )


def _fold_choices(
    choices: tuple[ChoiceState | None, ...], chunk: dict[str, Any]
) -> tuple[ChoiceState | None, ...]:
    for choice in chunk.get("choices") or ():
        index = choice["index"]
        if index >= len(choices):
            choices = (*choices, *([None] * (index + 1 - len(choices))))
        new = _choice(choices[index], choice)
        choices = (*choices[:index], new, *choices[index + 1 :])
    return choices


class CompletionDefinition:
    """Kind ``openai_chat_completion``: one node per completion (see ``scope``)."""

    kind = "openai_chat_completion"
    event_types = frozenset({"chat.completion.chunk", ScopedChunk})
    publication = "animation-frame"

    def match(self, event: ScopedChunk) -> Claim | None:
        """Start on the chunk that opens a completion, update on the rest."""
        completion = event.completion
        if completion is None:
            return None
        return Claim(completion, "start" if event.opens else "update")

    def start(self, event: ScopedChunk, reader: object) -> CompletionState:
        """The completion as its first chunk announces it."""
        chunk = event.chunk
        return CompletionState(
            chunk,
            _fold_choices((), chunk),
            1,
            chunk.get("usage"),
            chunk.get("system_fingerprint"),
        )

    def update(self, state: CompletionState, event: ScopedChunk) -> CompletionState:
        """Fold one more chunk: its choices' deltas, its usage and fingerprint."""
        chunk = event.chunk
        choices = state.choices
        raw = chunk.get("choices")
        # The common chunk, inline: one choice appending content to a one-choice
        # completion (what _choice does for it, without its general bookkeeping).
        if type(raw) is list and len(raw) == 1 and len(choices) == 1:
            choice = raw[0]
            old = choices[0]
            if old is not None and type(choice) is dict:
                delta = choice.get("delta")
                if (
                    type(delta) is dict
                    and len(delta) == 1
                    and choice.get("index") == 0
                    and choice.get("logprobs") is None
                    and not choice.get("finish_reason")
                ):
                    value = delta.get("content")
                    content = old.content  # not None: "content" is in has_message
                    if type(value) is str and content is not None:
                        return CompletionState(
                            state.first,
                            (_replace(old, content=content.append(value)),),
                            state.chunks + 1,
                            chunk.get("usage"),
                            chunk.get("system_fingerprint"),
                        )
        return CompletionState(
            state.first,
            _fold_choices(state.choices, chunk),
            state.chunks + 1,
            chunk.get("usage"),
            chunk.get("system_fingerprint"),
        )

    def render_text(self, node: Node) -> str:
        """Each choice's text, then its tool calls as ``name(arguments)``."""
        lines = []
        for choice in node.state.choices:
            if choice is None:
                continue
            if choice.content:
                lines.append(str(choice.content))
            if choice.refusal:
                lines.append(f"[refusal] {choice.refusal}")
            lines.extend(f"{c.name}({c.arguments})" for c in choice.tool_calls)
        return "\n".join(lines)

    def render_html(self, node: Node) -> str:
        """The text and tool calls, escaped."""
        body = html.escape(self.render_text(node), quote=True)
        return f'<div class="openai-chat-completion">{body}</div>'


COMPLETION: Final = CompletionDefinition()
DEFINITIONS: Final = (COMPLETION,)
"""The Chat Completions definitions to register."""


# -- rebuild ------------------------------------------------------------------------


def _addable(old: Any, value: Any) -> bool:
    """Strings concatenate and numbers add in ``accumulate_delta``."""
    if isinstance(old, str):
        return isinstance(value, str)
    return isinstance(old, int | float) and isinstance(value, int | float)


def _accumulate(acc: dict[Any, Any], key: Any, value: Any) -> None:
    """One step of the SDK's ``accumulate_delta`` (openai.lib.streaming._deltas)."""
    if key not in acc or acc[key] is None:
        if isinstance(value, list) and any(isinstance(v, dict) and "index" in v for v in value):
            acc[key] = []
        else:
            acc[key] = value
            return
    old = acc[key]
    if key in ("index", "type"):
        acc[key] = value
    elif _addable(old, value):
        acc[key] = old + value
    elif isinstance(old, dict) and isinstance(value, dict):
        merged = dict(old)
        for k, v in value.items():
            _accumulate(merged, k, v)
        acc[key] = merged
    elif isinstance(old, list) and isinstance(value, list):
        acc[key] = [*old, *value]


def _message(choice: ChoiceState) -> dict[str, Any]:
    message: dict[str, Any] = {}
    for key in choice.has_message:
        message[key] = None
    for key, value in items(choice.extra):
        _accumulate(message, key, value)
    if choice.role is not None or "role" in choice.has_message:
        message["role"] = choice.role
    message["content"] = None if choice.content is None else str(choice.content)
    message["refusal"] = None if choice.refusal is None else str(choice.refusal)
    for name in ("annotations", "audio", "function_call"):
        message.setdefault(name, None)
    calls = []
    for call in sorted(choice.tool_calls, key=lambda c: c.index):
        out: dict[str, Any] = {}
        for key, value in items(call.extra):
            _accumulate(out, key, value)
        if call.id is not None:
            out["id"] = call.id
        out["function"] = {
            "arguments": str(call.arguments),
            "name": call.name,
            "parsed_arguments": None,
        }
        out["type"] = call.type if call.type is not None else "function"
        out["index"] = call.index
        calls.append(out)
    message["tool_calls"] = calls or None
    message["parsed"] = None
    return message


def _completion(state: CompletionState) -> dict[str, Any]:
    out = {k: v for k, v in state.first.items() if k not in ("obfuscation", "choices")}
    out["object"] = "chat.completion"
    if state.chunks > 1 or "system_fingerprint" not in out:
        out["system_fingerprint"] = state.system_fingerprint
    if state.chunks > 1:
        out["usage"] = state.usage
    choices = []
    for choice in state.choices:
        if choice is None:
            continue
        item = dict(choice.first)
        if choice.finish_reason:
            item["finish_reason"] = choice.finish_reason
        if choice.logprobs is not None:
            item["logprobs"] = {"content": choice.logprobs[0], "refusal": choice.logprobs[1]}
        item["message"] = _message(choice)
        choices.append(item)
    out["choices"] = choices
    return out


def completions(nodes: Sequence[Node]) -> list[dict[str, Any]]:
    """The SDK's final ``ChatCompletion`` dicts, one per completion, in log order."""
    return [_completion(node.state) for node in nodes if node.kind == CompletionDefinition.kind]


def fold(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The final completions of one recording's raw chunks (in order)."""
    engine = create_conversation_engine(DEFINITIONS, event_type=event_type)
    engine.push_many(scope(events))
    return completions(engine.nodes())
