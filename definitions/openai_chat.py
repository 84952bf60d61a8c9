"""OpenAI Chat Completions streaming: fold ``chat.completion.chunk`` events.

Theory of operation
-------------------
Every chunk carries its completion's ``id``, but a recording of an agent loop
holds several completions in a row, a provider may send a preamble chunk with an
empty id (Azure's ``prompt_filter_results``), and a paginated window may start in
the middle of a completion. Which completion a chunk belongs to, and whether it
opens one, is decided outside the pure ``match`` by ``prepare(events)``, a small pure
pre-pass that wraps each chunk (without copying it) in
``Envelope(completion, opens, chunk)`` (``Preparer()`` per chunk, live):

- a chunk opens a completion when its id differs from the current one and it
  looks like a first chunk (a choice delta carrying ``role``, or an empty id, the
  preamble); the current completion keeps later chunks whose id is new only if it
  is the empty-id preamble (the SDK keeps the preamble's top-level fields too);
- a chunk that neither opens nor continues a completion is scoped to ``None`` and
  dropped: a window cut mid-completion shows nothing of it.

The pre-pass also hands each chunk its claim (``Envelope.claim``: start, the
completion's one shared update claim, or none), so ``match`` only reads it.

One definition, ``openai_chat_completion`` (node id: the completion scope), holds
the choices. Content, refusal and tool-call arguments are ``StreamedText``; the
rare other message fields are kept as a persistent list of ``(key, value)`` pairs
and merged once, when ``completions()`` rebuilds, with the SDK's
``accumulate_delta`` rules. Tool arguments are not parsed (the SDK leaves
``parsed_arguments`` null without strict input tools).

Nearly every chunk only appends text to one choice's content or refusal, or to one
tool call's arguments. The engine hands a completion's chunks to ``update_many``
together (its update claim is one shared object per completion, so the run is known
by identity), and consecutive appends to one text are joined and appended once; any
other chunk is folded the general way (see ``_fold_chunks``).

Corrections to the SDK's ``ChatCompletionStreamState`` (tested):
``id``, ``type`` and ``function.name`` of a tool call and the message ``role`` are
set once, not concatenated when a provider repeats them on every chunk; tool calls
are placed by their ``index``, so index 1 arriving before index 0 is fine; each
completion in a log is its own object.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

import msgspec

from engine import Claim, Node

from ._cons import Cons, items
from ._protocol import UNREADABLE, ProtocolSet, old_names
from ._text import StreamedText

__all__ = [
    "DEFINITIONS",
    "PROTOCOL",
    "ChoiceState",
    "CompletionDefinition",
    "CompletionState",
    "Envelope",
    "Preparer",
    "ToolCallState",
    "completions",
    "detect",
    "event_type",
    "prepare",
]

_EMPTY = StreamedText()
_replace: Final = msgspec.structs.replace


class Envelope(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """A raw chunk, the completion it belongs to (``None``: dropped), and whether it
    opens that completion."""

    completion: str | None
    opens: bool
    chunk: dict[str, Any]

    @property
    def claim(self) -> Claim | None:
        """What the completion definition's ``match`` returns: start on the chunk that
        opens a completion, update on the rest (``None`` when dropped)."""
        completion = self.completion
        if completion is None:
            return None
        if self.opens:
            return Claim(completion, "start")
        try:
            return _update_claims[completion]
        except KeyError:
            return _update_claim(completion)


class _Scoped(Envelope, frozen=True, array_like=True, gc=False):
    """A ``Envelope`` made by ``prepare``, which knows its claim already: a field here,
    so ``match`` reads it with no Python frame (it is called on every chunk)."""

    claim: Claim | None = None  # the property's value


def _opens(chunk: dict[str, Any]) -> bool:
    if not chunk.get("id"):
        return True
    return any("role" in (choice.get("delta") or ()) for choice in chunk.get("choices") or ())


class Preparer:
    """Names the completion of each chunk of one stream, in order (the live pre-pass;
    ``prepare`` is it over a whole stream)."""

    __slots__ = ("current", "update")

    def __init__(self) -> None:
        self.current: str | None = None
        self.update: Claim | None = None  # the current completion's update claim

    def __call__(self, chunk: Any) -> Envelope | None:
        """Wrap ``chunk`` (a dict or the SDK's ``ChatCompletionChunk``; ``None`` for an
        event the SDK's stream helper derives from a chunk)."""
        if not isinstance(chunk, dict):  # a dict subclass as it is, as in prepare
            chunk = PROTOCOL.plain(chunk)
            if chunk is None:
                return None
        current = self.current
        chunk_id = chunk.get("id") or ""
        if current is not None and (chunk_id == current or current == ""):
            return _Scoped(current, False, chunk, self.update)
        if _opens(chunk):
            self.current = chunk_id
            update = _update_claims.get(chunk_id)
            self.update = _update_claim(chunk_id) if update is None else update
            return _Scoped(chunk_id, True, chunk, Claim(chunk_id, "start"))
        self.current = self.update = None
        return _Scoped(None, False, chunk, None)


def prepare(events: Iterable[Any]) -> Iterator[Envelope]:
    """Wrap each chunk of one stream in ``Envelope`` (the pure pre-pass): dicts (a
    dict subclass too, as it is) or the SDK's typed chunks (its stream helper's
    derived events left out).

    ``Preparer``'s rule over a whole stream, as a generator: a Preparer called per chunk
    (``map``) costs 10% more fold time (in-process A/B, best of 20 interleaved rounds).
    """
    current: str | None = None
    update: Claim | None = None  # the current completion's update claim
    get = dict.get  # raises TypeError for what is not a dict: no type test per chunk
    for position, chunk in enumerate(PROTOCOL.dicts(events)):
        try:
            try:
                chunk_id = get(chunk, "id") or ""
            except TypeError:  # a typed chunk in a stream of dicts (plain names anything else)
                chunk = PROTOCOL.plain(chunk)
                if chunk is None:
                    continue
                chunk_id = chunk.get("id") or ""
            if current is not None and (chunk_id == current or current == ""):
                yield _Scoped(current, False, chunk, update)
            elif _opens(chunk):
                current = chunk_id
                update = _update_claims.get(current)
                if update is None:
                    update = _update_claim(current)
                yield _Scoped(current, True, chunk, Claim(current, "start"))
            else:
                current = update = None
                yield _Scoped(None, False, chunk, None)
        except UNREADABLE as exc:  # an event of the wrong shape
            raise PROTOCOL.unreadable(position, chunk, exc) from exc


event_type: Final = type
"""Routing key for ``create_conversation_engine(event_type=...)``: the envelope's class
(``type``, a C call). A raw chunk dict is routed to the set's guard, which names the fix."""


def detect(event: Mapping[str, Any]) -> bool:
    """Whether a plain event dict is a Chat Completions chunk (they carry no ``type``;
    their ``object`` name, or their shape)."""
    if isinstance(event.get("type"), str):
        return False
    return event.get("object") == "chat.completion.chunk" or ("choices" in event and "id" in event)


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
    if type(index) is not int:  # calls are placed and sorted by it
        raise TypeError(f"a tool call's index is an integer, not {index!r}")
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


# -- chunks that only append text ----------------------------------------------------


def _folded(state: CompletionState, chunk: dict[str, Any]) -> CompletionState:
    """``state`` after any one chunk: its choices' deltas, its usage and fingerprint."""
    return CompletionState(
        state.first,
        _fold_choices(state.choices, chunk),
        state.chunks + 1,
        chunk.get("usage"),
        chunk.get("system_fingerprint"),
    )


_NO_APPEND: Final[tuple[None, str]] = (None, "")


def _fold_chunks(state: CompletionState, events: Iterable[Envelope]) -> CompletionState:
    """``state`` after the chunks of ``events``, one after the other: ``update`` for one,
    ``update_many`` for a run.

    Nearly every chunk only appends text to one choice's ``"content"`` or
    ``"refusal"`` or to the arguments of one of its tool calls (the *field*: the call's
    index): ``_folded`` would rebuild the choice with only that text changed. Whether
    it does depends on the chunk (one choice with an int index, a one-key delta of a
    str text, no logprobs, no finish reason: checked below and by ``_delta_of``) and on
    the completion (the choice there, its text already started or the call already
    made: ``_takes``). Consecutive appends to one field are joined and made once, with
    the last chunk's usage and fingerprint; a chunk that continues them needs only the
    checks of its own fields, since appends change nothing ``_takes`` reads. Any other
    chunk goes through ``_folded``.
    """
    texts: list[str] = []  # the pending appends, all to field `at_field` of choice `at`
    at = 0
    at_field: str | int = ""
    at_text = ""  # at_field while appends to "content" or "refusal" are pending, else ""
    last: Any = None  # the chunk of the last pending append
    index: Any  # read from the chunk: checked before it is used
    text: Any
    for event in events:
        chunk = event.chunk
        if at_text and type(chunk) is dict:
            # The common chunk: one more append to the pending content (or refusal).
            # The test below in fewer steps: a dict's subscript is its get (a missing
            # key raises), any iterable of one dict holds the one choice that
            # _fold_choices would fold, and the index is the pending one's by identity
            # (an int; small ints are singletons, so a bool, a float or an int that is
            # not one fails). Nothing changes before the last check, so whatever fails
            # or raises goes to the test below, which decides as before.
            try:
                [choice] = chunk["choices"]
                if (
                    type(choice) is dict
                    and choice["index"] is at
                    and type(delta := choice["delta"]) is dict
                    and len(delta) == 1
                    and type(text := delta[at_text]) is str
                    and choice.get("logprobs") is None
                    and not choice.get("finish_reason")
                ):
                    texts.append(text)
                    last = chunk
                    continue
            except Exception:  # the test below decides
                pass
        field: str | int | None = None
        if (
            type(chunk) is dict
            and type(raw := chunk.get("choices")) is list
            and len(raw) == 1
            and type(choice := raw[0]) is dict
            and type(index := choice.get("index")) is int
            and type(delta := choice.get("delta")) is dict
            and len(delta) == 1
            and choice.get("logprobs") is None
            and not choice.get("finish_reason")
        ):
            text = delta.get("content")
            if type(text) is str:
                field = "content"
            else:
                field, text = _delta_of(delta)
        if field is not None and texts and index == at and field == at_field:
            texts.append(text)
            last = chunk
            continue
        if texts:
            state = _appended(state, at, at_field, "".join(texts), last, len(texts))
            texts = []
            at_text = ""
        if field is not None and _takes(state, index, field):
            at, at_field, last = index, field, chunk
            at_text = field if type(field) is str else ""
            texts.append(text)
        else:
            state = _folded(state, chunk)
    if texts:
        state = _appended(state, at, at_field, "".join(texts), last, len(texts))
    return state


def _delta_of(delta: dict[str, Any]) -> tuple[str | int | None, str]:
    """The field and text of a one-key delta that is not content: ``"refusal"`` and its
    text, or a call's index and its arguments; ``(None, "")`` for any other delta."""
    text = delta.get("refusal")
    if type(text) is str:
        return "refusal", text
    value = delta.get("tool_calls")
    if (
        type(value) is list
        and len(value) == 1
        and type(call := value[0]) is dict  # {"index": n, "function": {"arguments": text}}
        and len(call) == 2
        and type(number := call.get("index")) is int
        and type(function := call.get("function")) is dict
        and len(function) == 1
        and type(text := function.get("arguments")) is str
    ):
        return number, text
    return _NO_APPEND


def _takes(state: CompletionState, index: int, field: str | int) -> bool:
    """Whether choice ``index`` is there with ``field`` (its content or refusal, or the
    call of that index) to append to: ``_folded`` then does only that."""
    choices = state.choices
    if not 0 <= index < len(choices) or (old := choices[index]) is None:
        return False
    if field == "content":
        return old.content is not None
    if field == "refusal":
        return old.refusal is not None
    return any(c.index == field for c in old.tool_calls)


def _appended(
    state: CompletionState, index: int, field: str | int, text: str, last: Any, count: int
) -> CompletionState:
    """``state`` after ``count`` chunks that appended ``text`` (joined) to ``field`` of
    choice ``index`` (which ``_takes``); ``last`` is the last of them."""
    choices = state.choices
    old = choices[index]
    assert old is not None
    if field == "content":
        assert old.content is not None
        new = _replace(old, content=old.content.append(text))
    elif field == "refusal":
        assert old.refusal is not None
        new = _replace(old, refusal=old.refusal.append(text))
    else:  # a tool call's index: what _tool_call makes of an arguments-only delta
        assert type(field) is int
        calls = old.tool_calls
        call = next(c for c in calls if c.index == field)
        call = ToolCallState(
            field,
            call.id or None,
            call.type or None,
            call.name,
            call.arguments.append(text),
            True,
            call.extra,
        )
        new = _replace(old, tool_calls=(*(c for c in calls if c.index != field), call))
    return CompletionState(
        state.first,
        (new,) if len(choices) == 1 else (*choices[:index], new, *choices[index + 1 :]),
        state.chunks + count,
        last.get("usage"),
        last.get("system_fingerprint"),
    )


# Update claims are shared per completion: the engine then knows a completion's run
# of chunks by the claim's identity, and building a Claim costs about as much as the
# rest of match. The cache is shared by every engine in the process (a Claim is a
# frozen value), so it is emptied when it grows past this many completions.
_CLAIM_CACHE_SIZE: Final = 4096
_update_claims: Final[dict[str, Claim]] = {}


def _update_claim(completion: str) -> Claim:
    if len(_update_claims) >= _CLAIM_CACHE_SIZE:
        _update_claims.clear()
    claim = _update_claims[completion] = Claim(completion, "update")
    return claim


class CompletionDefinition:
    """Kind ``openai_chat_completion``: one node per completion (see ``prepare``)."""

    kind = "openai_chat_completion"
    event_types = frozenset({"chat.completion.chunk", Envelope, _Scoped})
    publication = "animation-frame"

    # Start on the chunk that opens a completion, update on the rest: the chunk's
    # ``claim`` (set by prepare; computed for a Envelope made otherwise).
    match = operator.attrgetter("claim")

    def start(self, event: Envelope, reader: object) -> CompletionState:
        """The completion as its first chunk announces it."""
        chunk = event.chunk
        return CompletionState(
            chunk,
            _fold_choices((), chunk),
            1,
            chunk.get("usage"),
            chunk.get("system_fingerprint"),
        )

    def update(self, state: CompletionState, event: Envelope) -> CompletionState:
        """Fold one more chunk: its choices' deltas, its usage and fingerprint."""
        return _fold_chunks(state, (event,))

    def update_many(self, state: CompletionState, events: list[Envelope]) -> CompletionState:
        """``update`` over a run of chunks (the engine hands a completion's chunks over
        together): consecutive chunks appending to one text append it once, joined."""
        return _fold_chunks(state, events)

    def render_text(self, node: Node) -> str:
        """The heading (model, stop), then each choice (labelled when several): its
        text, refusal and tool calls."""
        from ._render_protocols import chat_text

        return chat_text(node.state.first.get("model"), _choices(node.state))

    def render_html(self, node: Node) -> str:
        """The metadata row, then each choice's text as a Markdown bubble, its
        refusal, its tool calls as cards."""
        from ._render_protocols import chat_html

        state: CompletionState = node.state
        return chat_html(state.first.get("model"), _choices(state), state.usage)

    def tool_calls(self, node: Node) -> list[str]:
        """The ids of the choices' tool calls (each shown as a card)."""
        return [
            call.id
            for choice in node.state.choices
            if choice is not None
            for call in choice.tool_calls
            if call.id
        ]


def _choices(state: CompletionState) -> list[Any]:
    from ._render_protocols import ChatChoice

    return [
        ChatChoice(
            index,
            choice.content,
            choice.refusal,
            [(str(c.name), c.id, str(c.arguments)) for c in choice.tool_calls],
            choice.finish_reason,
        )
        for index, choice in enumerate(state.choices)
        if choice is not None
    ]


COMPLETION: Final = CompletionDefinition()


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


PROTOCOL: Final = ProtocolSet.of_module(
    globals(),
    name="openai_chat",
    title="OpenAI Chat Completions",
    definitions=(COMPLETION,),
    rebuild=completions,
    # What client.chat.completions.stream(...) yields beside each chunk's ChunkEvent.
    derived=frozenset(
        f"{field}.{end}"
        for field in (
            "content",
            "refusal",
            "tool_calls.function.arguments",
            "logprobs.content",
            "logprobs.refusal",
        )
        for end in ("delta", "done")
    ),
    wrapped={"chunk": "chunk"},
)
"""The Chat Completions protocol set (``definitions.ProtocolSet``)."""

DEFINITIONS: Final = PROTOCOL.definitions
"""The Chat Completions definitions to register: the set's guard
(``PROTOCOL.envelope``), then the completions."""


# The names of one release ago (every set now says prepare, Preparer, Envelope).
__getattr__ = old_names(
    globals(), {"scope": "prepare", "Scoper": "Preparer", "ScopedChunk": "Envelope"}
)
