"""Recorded model calls: a recording (``replay.record``, a VCR cassette) as a conversation.

Theory of operation
-------------------
A recording holds, per model call ``n``, the request the agent sent (its whole
input, every time), the response head, the stream events or the whole body, and
the end (see ``docs/recorded-conversations.md`` for the format)::

    {"type": "recording/request", "call": 0, "api": "anthropic.messages", "body": {...}}
    {"type": "recording/response", "call": 0, "status": 200, "headers": {...}}
    {"type": "recording/event", "call": 0, "event": {"type": "message_start", ...}}
    {"type": "recording/end", "call": 0, "complete": true}

The view shows each request's new input once, then the answer. The pre-pass
(``Preparer``, one per stream; ``prepare`` maps a whole stream through one) does
what no pure ``match`` can, remembering the previous request:

- a ``recording/request`` is read as generic messages (``definitions._requests_read``,
  the inverse of the gateways) and compared with the previous request's: the
  request that continues the conversation repeats it, then sends the previous
  answer back (read in place of that echo: the answer as the model gave it), then
  the new input (the user's turn, tool results). Its envelope carries only that new
  input: one ``recorded_request`` node per call (id ``call-<n>``). A request that
  does not continue the conversation (the agent rewrote its history: compaction,
  pruned thinking, a changed system prompt) carries what follows the part it kept,
  and how much it kept (``kept``), which the view shows;
- a ``recording/event`` goes through the pre-pass of the call's own protocol set
  (``anthropic``, ``openai_chat``, ``openai_responses``, ``gemini``, ``bedrock``: one
  per call, made at its first event) and is folded by that set's definitions,
  registered here wrapped (``InCall``): each claim's node id is scoped by the call
  (``call-<n>/<id>``), since a provider's message ids may repeat across calls and
  Gemini's and Bedrock's count from 0 in every stream;
- a non-streamed ``recording/body`` is one ``recorded_answer`` node, read by the
  provider's gateway (``message(output)``): a whole answer needs no folding;
- an HTTP error status, an error body or stream event, or a ``recording/end`` with
  ``complete: false`` is a ``recorded_error`` row after what the call streamed.

``conversation(nodes)`` reads the nodes back as generic messages
(``definitions.conversation.conversation_messages`` dispatches here): the
conversation as the last request had it, then the last answer, so a recording is
continued with any gateway (``convo context --provider P``). A failed call's
partial answer is left out: an agent retrying it would not send it back.

Events of a call whose request is not in view (a window cut mid-call) are
dropped. Bad input (a call that is not an int, a second request for one call, an API no
set reads) raises ``engine.EventError`` naming the event's position in the stream.

Imports only ``engine`` and the other definitions modules.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Final, cast

import msgspec

from engine import (
    Claim,
    EventError,
    Message,
    Native,
    Node,
    Reader,
    Reasoning,
    Role,
    Text,
    ToolCall,
    ToolResult,
)
from engine._deprecation import renamed

from . import anthropic, bedrock, gemini, openai_chat, openai_responses
from ._protocol import ProtocolSet
from ._render import Outcome, call_card, carried, long_text, tool_text
from ._render_protocols import (
    anthropic_html,
    anthropic_links,
    anthropic_text,
    chat_choices,
    chat_html,
    chat_text,
    converse_calls,
    converse_html,
    converse_results,
    converse_text,
    gemini_calls,
    gemini_html,
    gemini_text,
    responses_calls,
    responses_html,
    responses_text,
)
from ._requests_read import (
    APIS,
    answer_message,
    api_of,
    api_of_url,
    compacted_window,
    continues_previous,
    model_of_url,
    request_messages,
)

__all__ = [
    "DEFINITIONS",
    "PROTOCOL",
    "TYPES",
    "AnswerState",
    "Envelope",
    "ErrorState",
    "InCall",
    "Preparer",
    "RequestState",
    "api_of_url",
    "calls",
    "conversation",
    "conversation_calls",
    "detect",
    "event_type",
    "prepare",
    "request_model",
]

TYPES: Final = frozenset(
    {
        "recording/request",
        "recording/response",
        "recording/event",
        "recording/body",
        "recording/end",
    }
)
"""The event types of a recording."""

_SETS: Final[Mapping[str, ProtocolSet]] = {
    s.name: s
    for s in (
        anthropic.PROTOCOL,
        openai_chat.PROTOCOL,
        openai_responses.PROTOCOL,
        gemini.PROTOCOL,
        bedrock.PROTOCOL,
    )
}


# -- states ---------------------------------------------------------------------------


class RequestState(msgspec.Struct, frozen=True, gc=False):
    """One call's request: what is new in it (``messages``) and how it relates to
    the conversation before it.

    ``echoes`` is the call whose answer this request sent back, ``echo`` that answer
    as the request sent it (not shown: the view shows the answer as the model gave it;
    the conversation reads it as sent, since a client may add to it, such as the ids
    it gives Gemini's calls);
    ``kept`` is ``None`` when the request continues the conversation, else how many
    of its messages it kept (the agent rewrote the rest); ``continued`` marks a
    request carrying only the new input (a provider keeps the rest:
    ``previous_response_id``). ``failed`` says why the call failed, when it did.
    """

    call: int
    api: str
    model: str = ""
    stream: bool = False
    messages: tuple[Message, ...] = ()
    echoes: int | None = None
    kept: int | None = None
    continued: bool = False
    failed: str | None = None
    echo: Message | None = None


class AnswerState(msgspec.Struct, frozen=True, gc=False):
    """A non-streamed answer: its body, and the body read as a generic message;
    ``model`` is the model its request named (a Bedrock answer names none)."""

    call: int
    api: str
    body: Any
    message: Message
    model: str = ""


class ErrorState(msgspec.Struct, frozen=True, gc=False):
    """Why a call failed: an HTTP status and the error's message, or the cut."""

    call: int
    text: str


# -- envelopes ------------------------------------------------------------------------


class Envelope(msgspec.Struct, frozen=True, gc=False):
    """What the pre-pass hands the definitions; ``route`` is the engine's key."""


class InCall(Envelope, frozen=True, array_like=True):
    """A provider set's envelope (``inner``) within call ``prefix`` (``"call-<n>/"``);
    ``route`` is ``(set name, the set's own routing key of inner)``."""

    prefix: str
    route: tuple[str, Hashable]
    inner: Any


class _Request(Envelope, frozen=True):
    route: ClassVar = "recorded/request"
    id: str
    state: RequestState


class _Answer(Envelope, frozen=True):
    route: ClassVar = "recorded/answer"
    id: str
    state: AnswerState


class _Failure(Envelope, frozen=True):
    route: ClassVar = "recorded/failure"
    request: str  # the request node's id
    id: str  # the error row's id
    state: ErrorState


def event_type(event: object) -> Hashable:
    """Routing key for ``create_conversation_engine(event_type=...)``: an envelope's
    ``route``; anything else (a raw event pushed without the pre-pass) is routed by
    its class, to the set's guard, which names the fix."""
    try:
        return event.route  # type: ignore[attr-defined, no-any-return]
    except AttributeError:
        return cast(Hashable, type(event))  # mypy sees no class as Hashable


def detect(event: Mapping[str, Any]) -> bool:
    """Whether a plain event dict is a recording's (``recording/*``)."""
    return event.get("type") in TYPES


# -- the pre-pass ---------------------------------------------------------------------


class _Answered(msgspec.Struct, frozen=True):
    """The place of call ``call``'s answer in the conversation the pre-pass keeps:
    the next request sends it back as an assistant message, whatever its bytes."""

    call: int


class _Call:
    """What the pre-pass knows of one call."""

    __slots__ = (
        "answered",
        "api",
        "failed",
        "model",
        "number",
        "prefix",
        "scoper",
        "set",
        "status",
    )

    def __init__(self, number: int, api: str, model: str) -> None:
        self.number = number
        self.api = api
        self.model = model
        self.set = _SETS[APIS[api]]
        self.prefix = f"call-{number}/"
        self.scoper: Callable[[Any], Any] | None = None
        self.status: int | None = None
        self.answered = False
        self.failed = False


class Preparer:
    """The recorded pre-pass of one stream: each raw recording event in order, its
    envelope out (``None``: nothing to fold). See the module docstring."""

    def __init__(self) -> None:
        self._position = -1
        self._calls: dict[int, _Call] = {}
        self._last: _Call | None = None  # the call requested last
        # The conversation as the last request had it, an answer's place as _Answered.
        self._history: list[Message | _Answered] = []

    def __call__(self, event: Any) -> Envelope | None:
        """The envelope of ``event`` (a dict, or a mapping), or ``None``."""
        self._position += 1
        if not isinstance(event, dict):
            event = PROTOCOL.plain(event)
            if event is None:
                return None
        kind = event.get("type")
        if kind == "recording/event":
            return self._event(event)
        if kind == "recording/request":
            return self._request(event)
        if kind == "recording/response":
            call = self._call(event)
            if call is None:
                return None
            status = event.get("status")
            call.status = status if type(status) is int else None
            return None
        if kind == "recording/body":
            return self._body(event)
        if kind == "recording/end":
            return self._end(event)
        if isinstance(kind, str) and kind.startswith("recording/"):
            raise self._error(f"unknown recording event type {kind!r}")
        return None  # not a recording's: nothing of the conversation

    def _error(self, problem: str) -> EventError:
        return EventError(f"recording event #{self._position}: {problem}", position=self._position)

    def _call(self, event: dict[str, Any]) -> _Call | None:
        """The call ``event`` belongs to; ``None`` for one whose request is not in view
        (a window cut mid-call: nothing of it is shown, as the other sets do)."""
        number = event.get("call")
        if type(number) is not int:
            raise self._error(f"{event.get('type')} needs a 'call' int, got {number!r}")
        return self._calls.get(number)

    def _request(self, event: dict[str, Any]) -> _Request:
        number = event.get("call")
        if type(number) is not int or number < 0:
            raise self._error(f"recording/request needs a 'call' int >= 0, got {number!r}")
        if number in self._calls:
            raise self._error(f"a second recording/request for call {number}")
        api = api_of(event)
        if api is None or api not in APIS:
            raise self._error(
                f"call {number}: unknown api {api!r}; expected one of {', '.join(APIS)}"
            )
        body = event.get("body")
        messages = request_messages(api, body)
        previous = self._last
        history = list(self._history)
        if previous is not None and previous.answered and not previous.failed:
            history.append(_Answered(previous.number))
        echoes: int | None = None
        echo: Message | None = None
        kept: int | None = None
        continued = continues_previous(api, body)
        if continued:
            new = messages
            echoes = history[-1].call if history and isinstance(history[-1], _Answered) else None
            self._history = [*history, *messages]
        else:
            same = _common(history, messages)
            if same == len(history):
                last = history[-1] if history else None
                if isinstance(last, _Answered):
                    echoes, echo = last.call, messages[same - 1]
            else:
                kept = same
            new = messages[same:]
            self._history = list(messages)
        model = request_model(event)
        call = self._calls[number] = _Call(number, api, model)
        self._last = call
        state = RequestState(
            call=number,
            api=api,
            model=model,
            stream=bool(event.get("stream")),
            messages=tuple(new),
            echoes=echoes,
            kept=kept,
            continued=continued,
            echo=echo,
        )
        return _Request(f"call-{number}", state)

    def _event(self, event: dict[str, Any]) -> Envelope | None:
        call = self._call(event)
        if call is None:
            return None
        if event.get("done"):
            return None
        raw = event.get("event")
        if not isinstance(raw, dict):
            raise self._error(f"call {call.number}: recording/event needs an 'event' object")
        problem = _stream_error(call.set.name, raw)
        if problem is not None:
            return self._failure(call, problem)
        call.answered = True
        scoper = call.scoper
        if scoper is None:
            if call.set is bedrock.PROTOCOL:  # its stream names no model: the request's
                scoper = call.scoper = bedrock.Preparer(call.model)
            else:
                scoper = call.scoper = call.set.pre_pass()
            assert scoper is not None  # every provider set has its pre-pass
        inner = scoper(raw)
        if inner is None:
            return None
        return InCall(call.prefix, (call.set.name, call.set.event_type(inner)), inner)

    def _body(self, event: dict[str, Any]) -> Envelope | None:
        call = self._call(event)
        if call is None:
            return None
        body = event.get("body")
        if call.status is not None and call.status >= 400:
            return self._failure(call, _http_error(call.status, body, event.get("text")))
        if isinstance(body, dict) and "error" in body and not _answer_shaped(body):
            return self._failure(call, _http_error(call.status, body, None))
        if isinstance(body, list):  # a stream read whole (Gemini without alt=sse)
            outputs = call.set.accumulate(body)
        elif isinstance(body, dict):
            outputs = [body]
        else:
            text = event.get("text")
            return self._failure(call, f"a body that is not JSON: {_short(text)}")
        call.answered = True
        message = answer_message(call.api, outputs)
        if call.api == _COMPACT and self._last is call:
            # The conversation goes on from its window: the next request echoes it.
            history = self._history
            lead = next(
                (n for n, m in enumerate(history) if getattr(m, "role", None) is not Role.system),
                len(history),
            )
            self._history = [*history[:lead], *compacted_window(outputs)[:-1]]
        state = AnswerState(call.number, call.api, body, message, call.model)
        return _Answer(f"{call.prefix}answer", state)

    def _end(self, event: dict[str, Any]) -> Envelope | None:
        call = self._call(event)
        if call is None:
            return None
        if event.get("complete") is False:
            return self._failure(call, str(event.get("error") or "the response was cut short"))
        if call.status is not None and call.status >= 400 and not call.failed:
            return self._failure(call, _http_error(call.status, None, None))
        return None

    def _failure(self, call: _Call, text: str) -> _Failure:
        call.failed = True
        state = ErrorState(call.number, text)
        return _Failure(f"call-{call.number}", f"{call.prefix}error", state)


def request_model(event: Mapping[str, Any]) -> str:
    """The model a ``recording/request`` names: its body's ``model`` (Bedrock's
    ``modelId``), else its URL's path (Bedrock's ``/model/{modelId}/converse-stream``,
    Gemini's ``/models/{model}:generateContent``, an Azure deployment's), else ``""``."""
    body = event.get("body")
    if isinstance(body, dict):
        named = body.get("model") or body.get("modelId")
        if isinstance(named, str) and named:
            return named
    url = event.get("url")
    return model_of_url(url) if isinstance(url, str) else ""


def _same(kept: Message | _Answered, sent: Message) -> bool:
    if isinstance(kept, _Answered):  # the answer, sent back however the client wrote it
        return sent.role is Role.assistant
    return kept == sent


def _common(history: Sequence[Message | _Answered], messages: Sequence[Message]) -> int:
    """How many leading messages of ``messages`` continue ``history``."""
    count = 0
    for kept, sent in zip(history, messages, strict=False):
        if not _same(kept, sent):
            break
        count += 1
    return count


def _answer_shaped(body: dict[str, Any]) -> bool:
    """Whether a body holding an ``error`` key is still an answer (a Responses object
    carries ``"error": null``)."""
    return body.get("error") is None


def _short(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else msgspec.json.encode(value).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _error_message(body: Any) -> str:
    """What an error body says: its ``error.message`` (every provider nests one),
    a top-level ``message`` (Bedrock), else the body itself."""
    if isinstance(body, list) and body:  # Gemini wraps its error in an array
        body = body[0]
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            kind = error.get("type") or error.get("status") or error.get("code")
            message = error.get("message")
            if message is not None:
                return f"{kind}: {message}" if kind else str(message)
        if isinstance(error, str):
            return error
        if isinstance(body.get("message"), str):
            return str(body["message"])
    return _short(body)


def _http_error(status: int | None, body: Any, text: Any) -> str:
    head = f"HTTP {status}" if status is not None else "error"
    said = _error_message(body) if body is not None else (_short(text) if text else "")
    return f"{head}: {said}" if said else head


def _stream_error(name: str, raw: dict[str, Any]) -> str | None:
    """The message of a stream's error event that its set does not fold (Anthropic's
    ``error`` event, an error object in a Chat or Gemini stream), else ``None``."""
    if name == "anthropic" and raw.get("type") == "error":
        return f"stream error: {_error_message(raw)}"
    shaped = "choices" in raw or "candidates" in raw  # an answer's chunk carrying an error
    if name in ("openai_chat", "gemini") and "error" in raw and not shaped:
        return f"stream error: {_error_message(raw)}"
    return None


def prepare(events: Iterable[Any]) -> Iterator[Envelope]:
    """The batch pre-pass: one stream's raw events through one ``Preparer`` (counted,
    ``PROTOCOL.pre_pass()``: an event it cannot read is an ``EventError``)."""
    return PROTOCOL.mapped(events)


# -- definitions ----------------------------------------------------------------------


class RequestDefinition:
    """Kind ``recorded_request``: one node per call (id ``call-<n>``), the request's
    new input; a failure of the call marks it."""

    kind = "recorded_request"
    event_types = frozenset({_Request.route, _Failure.route})
    publication = "immediate"

    def match(self, event: _Request | _Failure) -> Claim | None:
        """Start on the request; update on the call's failure."""
        if type(event) is _Request:
            return Claim(event.id, "start")
        if type(event) is _Failure:
            return Claim(event.request, "update")
        return None

    def start(self, event: _Request, reader: Reader) -> RequestState:
        """The request as the pre-pass read it."""
        return event.state

    def update(self, state: RequestState, event: _Failure) -> RequestState:
        """The call failed: say why."""
        return msgspec.structs.replace(state, failed=event.state.text)

    def render_text(self, node: Node) -> str:
        """The history note, then each new message (``user: ...``, tool results)."""
        state: RequestState = node.state
        lines = [] if state.kept is None else [_rewritten(state)]
        lines.extend(_message_text(m) for m in state.messages)
        return "\n\n".join(line for line in lines if line)

    def render_html(self, node: Node) -> str:
        """The history note as a row, then each new message as a bubble or a card."""
        from ._render import line

        state: RequestState = node.state
        out = []
        if state.kept is not None:
            out.append(line("status", ("label", _rewritten(state)), status="rewritten"))
        out.extend(_message_html(m) for m in state.messages)
        return "".join(out)

    def tool_calls(self, node: Node) -> list[str]:
        """The ids of the calls its new messages show (a rewritten history's)."""
        return [call_id for m in node.state.messages for call_id, _ in _calls_of(m)]

    def tool_results(self, node: Node) -> list[tuple[str, Outcome]]:
        """Its tool results, each as the outcome of its call."""
        return [
            (part.call_id, _outcome(part))
            for m in node.state.messages
            if not isinstance(m.content, str)
            for part in m.parts
            if isinstance(part, ToolResult)
        ]


def _rewritten(state: RequestState) -> str:
    return (
        f"[history] call {state.call}'s request rewrote the conversation: "
        f"it kept the first {state.kept} messages"
    )


class _Whole:
    """A definition whose node is one envelope's state, whole, as the pre-pass read it:
    each envelope of its class starts it (again: the later word), none updates it."""

    _envelope: ClassVar[type[_Answer | _Failure]]
    publication = "immediate"

    def match(self, event: Any) -> Claim | None:
        """Start on an envelope of the definition's class."""
        return Claim(event.id, "start") if type(event) is self._envelope else None

    def start(self, event: Any, reader: Reader) -> Any:
        """The envelope's state, as the pre-pass (or the call's gateway) read it."""
        return event.state

    def update(self, state: Any, event: object) -> Any:
        """Never called: every envelope is a start."""
        return state


class AnswerDefinition(_Whole):
    """Kind ``recorded_answer``: a non-streamed answer (id ``call-<n>/answer``)."""

    kind = "recorded_answer"
    _envelope = _Answer
    event_types = frozenset({_Answer.route})

    def render_text(self, node: Node) -> str:
        """The answer as the streamed ones read: its heading (role, model, stop),
        then its blocks in the order the body has them."""
        return "\n\n".join(_drawn(node.state, 0))

    def render_html(self, node: Node) -> str:
        """The answer as the streamed ones are drawn: metadata row, bubbles, thinking
        folded, calls as cards, in the body's order."""
        return "".join(_drawn(node.state, 1))

    def tool_calls(self, node: Node) -> list[str]:
        """The ids of the answer's calls."""
        state: AnswerState = node.state
        calls = _ANSWERS[state.api][2]
        return [call_id for output in _outputs(state) for call_id in calls(output)]

    def tool_results(self, node: Node) -> list[tuple[str, Outcome]]:
        """Its server tools' results (Anthropic's, Bedrock's), as their calls' outcomes."""
        state: AnswerState = node.state
        results = _RESULTS.get(state.api)
        if results is None:
            return []
        return [r for output in _outputs(state) for r in results(output)]

    def render_json(self, node: Node) -> dict[str, Any]:
        """The call, the API and the body as recorded."""
        state: AnswerState = node.state
        return {"call": state.call, "api": state.api, "body": state.body}


class ErrorDefinition(_Whole):
    """Kind ``recorded_error``: why a call failed (id ``call-<n>/error``), after
    what it streamed (a later failure of the call restarts it, with the later word)."""

    kind = "recorded_error"
    _envelope = _Failure
    event_types = frozenset({_Failure.route})

    def render_text(self, node: Node) -> str:
        """``[failed] call n: why``."""
        state: ErrorState = node.state
        return f"[failed] call {state.call}: {state.text}"

    def render_html(self, node: Node) -> str:
        """A failed status row."""
        from ._render import line

        state: ErrorState = node.state
        return line(
            "status",
            ("decision", "failed"),
            ("label", f"call {state.call}: {state.text}"),
            status="failed",
        )


class _InCallDefinition:
    """A provider set's definition folding ``InCall`` envelopes: same kind, state and
    rendering; its claims' ids scoped by the call (``call-<n>/<id>``)."""

    def __init__(self, name: str, inner: Any) -> None:
        self.kind: str = inner.kind
        self._match = inner.match
        self._start = inner.start
        self._update = inner.update
        self.event_types = frozenset(
            (name, t)
            for t in inner.event_types
            if t is not dict  # raw dicts: event_type's
        )
        publication = getattr(inner, "publication", None)
        if isinstance(publication, Mapping):
            self.publication: Any = {(name, key): level for key, level in publication.items()}
        elif callable(publication):
            self.publication = lambda event: publication(event.inner)
        else:
            self.publication = publication or "immediate"
        many = getattr(inner, "update_many", None)
        if many is not None:
            self.update_many = lambda state, events: many(state, [e.inner for e in events])
        members = ("render_text", "render_html", "render_json", "continues", "joins", "text_piece")
        for member in (*members, "tool_calls", "tool_results"):
            render = getattr(inner, member, None)
            if render is not None:
                setattr(self, member, render)

    def match(self, event: InCall) -> Claim | None:
        """The inner claim, its id scoped by the call."""
        claim = self._match(event.inner)
        if claim is None:
            return None
        return Claim(event.prefix + claim.id, claim.role)

    def start(self, event: InCall, reader: Reader) -> Any:
        """The inner start."""
        return self._start(event.inner, reader)

    def update(self, state: Any, event: InCall) -> Any:
        """The inner update."""
        return self._update(state, event.inner)


REQUEST: Final = RequestDefinition()
ANSWER: Final = AnswerDefinition()
ERROR: Final = ErrorDefinition()


# -- rendering ------------------------------------------------------------------------

_RESPONSES_ANSWER: Final = (
    responses_text,
    responses_html,
    lambda o: [
        c for item in o.get("output") or () if isinstance(item, dict) for c in responses_calls(item)
    ],
)

# Per API: a whole answer (the non-streamed body, or one object a list body folds to)
# as text and as HTML, and the ids of its calls: drawn as its protocol set draws a
# streamed one, so both read alike.
_ANSWERS: Final[
    Mapping[str, tuple[Callable[[Any], str], Callable[[Any], str], Callable[[Any], Any]]]
] = {
    "anthropic.messages": (anthropic_text, anthropic_html, lambda o: anthropic_links(o)[0]),
    "openai.chat": (
        lambda o: chat_text(o.get("model"), chat_choices(o)),
        lambda o: chat_html(o.get("model"), chat_choices(o), o.get("usage")),
        lambda o: [
            c[1] for choice in chat_choices(o) for c in choice.calls if isinstance(c[1], str)
        ],
    ),
    "openai.responses": _RESPONSES_ANSWER,
    "openai.responses.compact": _RESPONSES_ANSWER,  # responses_text draws its row
    "gemini.generate_content": (gemini_text, gemini_html, gemini_calls),
    "bedrock.converse": (converse_text, converse_html, converse_calls),
}


def _drawn(state: AnswerState, which: int) -> list[str]:
    """The answer's final objects as text (``which`` 0) or HTML (1); a Bedrock
    answer, which names no model, headed by the model its request named."""
    draw: Callable[..., str] = _ANSWERS[state.api][which]
    if state.api == "bedrock.converse":
        return [draw(output, state.model) for output in _outputs(state)]
    return [draw(output) for output in _outputs(state)]


# Per API whose answers carry server tools' results: those results as outcomes.
_RESULTS: Final[Mapping[str, Callable[[Any], list[tuple[str, Outcome]]]]] = {
    "anthropic.messages": lambda o: anthropic_links(o)[1],
    "bedrock.converse": converse_results,
}


def _outputs(state: AnswerState) -> list[dict[str, Any]]:
    """The answer's final objects: the body, or what a list body (a stream read
    whole) folds to."""
    body = state.body
    if isinstance(body, list):
        return [o for o in _SETS[APIS[state.api]].fold(body) if isinstance(o, dict)]
    return [body] if isinstance(body, dict) else []


def _calls_of(message: Message) -> list[tuple[str, ToolCall]]:
    if isinstance(message.content, str):
        return []
    out = []
    for part in message.parts:
        call = part.call if isinstance(part, Native) else part
        if isinstance(call, ToolCall) and call.id:
            out.append((call.id, call))
    return out


def _result_content(result: ToolResult) -> str:
    content = result.content
    if isinstance(content, str):
        return content
    return "".join(p.text if isinstance(p, Text) else f"[{p.media_type}]" for p in content)


def _outcome(result: ToolResult) -> Outcome:
    status = "failed" if result.is_error else "done"
    return Outcome(status, _result_content(result), result.name or "")


def _read(message: Message) -> Iterator[tuple[str, Any]]:
    """A generic message's parts (not its string content) as a reader meets them, for
    both renderings: each run of said text (text parts, natives that are no call)
    joined, ``("said", text)``; then ``("thinking", text)`` for a reasoning part with
    text, ``("call", ToolCall)`` for a call (a native one's too), ``("result",
    ToolResult)`` for a result not shown on its call's card, ``("other", part)``."""
    said: list[str] = []
    for part in message.parts:
        if isinstance(part, Text):
            said.append(part.text)
            continue
        if isinstance(part, Native) and part.call is None:
            if part.text:
                said.append(part.text)
            continue
        if said:
            yield "said", "".join(said)
            said = []
        if isinstance(part, Reasoning):
            if part.text:
                yield "thinking", part.text
        elif isinstance(part, ToolCall | Native):
            call = part if isinstance(part, ToolCall) else part.call
            assert call is not None
            yield "call", call
        elif isinstance(part, ToolResult):
            if not carried(part.call_id):
                yield "result", part
        else:
            yield "other", part
    if said:
        yield "said", "".join(said)


def _message_text(message: Message) -> str:
    """A generic message as text, its parts in order: ``role: text``, thinking, calls
    (their joined results under them), results not shown on their call's card."""
    role = message.role.value
    if isinstance(message.content, str):
        return f"{role}: {long_text(message.content)}"
    lines: list[str] = []
    for what, value in _read(message):
        if what == "said":
            lines.append(f"{role}: {long_text(value)}")
        elif what == "thinking":
            lines.append(f"[thinking] {long_text(value)}")
        elif what == "call":
            lines.append(tool_text(value.name, value.id, "called", value.arguments))
        elif what == "result":
            lines.append(_result_text(value))
        else:
            lines.append(f"[{type(value).__name__.lower()}]")
    return "\n\n".join(lines)


def _result_text(result: ToolResult) -> str:
    name = f" {result.name}" if result.name else ""
    status = "failed" if result.is_error else "done"
    return f"tool result{name} [{result.call_id}] {status}\n{long_text(_result_content(result))}"


def _message_html(message: Message) -> str:
    """A generic message as HTML, its parts in order (see ``_message_text``; a part of
    another kind is not drawn)."""
    from ._render import bubble, collapsed, folded, markdown, plain, tool_card

    role = message.role.value
    if isinstance(message.content, str):
        text = message.content
        return bubble(role, collapsed(text, markdown(text))) if text else ""
    out: list[str] = []
    for what, value in _read(message):
        if what == "said":
            out.append(bubble(role, collapsed(value, markdown(value))))
        elif what == "thinking":
            out.append(folded("thinking", plain(value), cls="thinking"))
        elif what == "call":
            out.append(call_card(value.name, value.id, "called", arguments=value.arguments))
        elif what == "result":
            status = "failed" if value.is_error else "done"
            content = _result_content(value)
            name = value.name or value.call_id
            if value.is_error:
                out.append(tool_card(name, status, error=content, preview=value.call_id))
            else:
                out.append(tool_card(name, status, result=content, preview=value.call_id))
    return "".join(out)


# -- reading back -----------------------------------------------------------------------


def _call_of(node_id: str) -> int | None:
    """The call number of a node id ``call-<n>/...``."""
    if not node_id.startswith("call-"):
        return None
    number, _, _rest = node_id[5:].partition("/")
    return int(number) if number.isdigit() else None


def calls(nodes: Iterable[Node]) -> list[dict[str, Any]]:
    """One dict per call, in request order: ``call``, ``api``, ``model``, the new
    ``input`` (generic messages), ``output`` (the provider's final objects, as its
    set rebuilds them, or the non-streamed body), ``failed`` (why, or ``None``)."""
    requests: dict[int, RequestState] = {}
    streamed: dict[int, list[Node]] = {}
    bodies: dict[int, list[Any]] = {}
    for node in nodes:
        kind = node.kind
        if kind == "recorded_request":
            requests[node.state.call] = node.state
        elif kind == "recorded_answer":
            bodies.setdefault(node.state.call, []).append(node.state.body)
        elif kind != "recorded_error":
            number = _call_of(node.id)
            if number is not None:
                streamed.setdefault(number, []).append(node)
    out = []
    for number, state in requests.items():
        outputs = list(bodies.get(number, ()))
        members = streamed.get(number)
        if members:
            prefix = len(f"call-{number}/")
            unscoped = [
                msgspec.structs.replace(n, id=n.id[prefix:], key=f"{n.kind}:{n.id[prefix:]}")
                for n in members
            ]
            outputs.extend(_SETS[APIS[state.api]].rebuild(unscoped))
        out.append(
            {
                "call": number,
                "api": state.api,
                "model": state.model,
                "input": list(state.messages),
                "output": outputs,
                "failed": state.failed,
            }
        )
    return out


def conversation(nodes: Iterable[Node]) -> list[Message]:
    """The conversation the nodes hold as generic messages: as the last request had
    it (earlier answers as it sent them back), then the last answer (a failed call's
    left out). See the module docstring."""
    return conversation_calls(nodes)[0]


def conversation_calls(nodes: Iterable[Node]) -> tuple[list[Message], list[int]]:
    """``conversation(nodes)`` and, for each of its messages, the call whose request
    is behind it: for an answer, the call that answered it; for anything else, the
    call whose request first sent it. So the call before a model turn is made with
    that request's model and settings (``convo context --calls``)."""
    nodes = tuple(nodes)
    history: list[tuple[Message, int]] = []
    answers: dict[int, list[Message]] = {}
    compacts: set[int] = set()  # the /responses/compact calls: their window is sent back
    for call in calls(nodes):
        answers[call["call"]] = _answer(call["api"], call["output"])
        if call["api"] == _COMPACT:
            compacts.add(call["call"])
    last: RequestState | None = None
    for node in nodes:
        if node.kind != "recorded_request":
            continue
        state: RequestState = node.state
        if state.kept is not None:
            del history[state.kept :]
        elif state.echo is not None and state.echoes in compacts:
            # the window, echoed from its item on
            history.extend((m, state.echoes) for m in answers[state.echoes])
        elif state.echo is not None:
            history.append((state.echo, state.echoes if state.echoes is not None else state.call))
        elif state.echoes is not None:  # a continued request: the answer is not in it
            history.extend((m, state.echoes) for m in answers.get(state.echoes, [_EMPTY_ANSWER]))
        history.extend((message, state.call) for message in state.messages)
        last = state
    if last is not None and last.failed is None:
        history.extend((m, last.call) for m in answers.get(last.call, [_EMPTY_ANSWER]))
    kept = [(m, call) for m, call in history if m.content]
    return [m for m, _ in kept], [call for _, call in kept]


_EMPTY_ANSWER: Final = Message(role=Role.assistant, content=())
_COMPACT: Final = "openai.responses.compact"  # its answer is a window (compacted_window)


def _answer(api: str, outputs: Sequence[Any]) -> list[Message]:
    """A call's answer as the messages it adds to the conversation: one assistant
    message, or a ``/responses/compact`` call's window (its kept user messages and
    its compaction, ``compacted_window``), which the next request starts from."""
    if api == _COMPACT:
        return compacted_window(outputs)
    return [answer_message(api, outputs)]


def _rebuild(nodes: Sequence[Node]) -> list[dict[str, Any]]:
    return calls(nodes)


PROTOCOL: Final = ProtocolSet.of_module(
    globals(),
    name="recorded",
    title="Recorded model calls",
    definitions=(
        REQUEST,
        ANSWER,
        *(
            _InCallDefinition(name, inner)
            for name, protocol in _SETS.items()
            for inner in protocol.definitions
            if not getattr(inner, "fallback", False) or inner.event_types - {dict}
        ),
        ERROR,
    ),
    rebuild=_rebuild,
)
"""The recorded-calls protocol set (``definitions.ProtocolSet``)."""

DEFINITIONS: Final = PROTOCOL.definitions
"""The recorded definitions: the set's guard (``PROTOCOL.envelope``), requests,
non-streamed answers, every provider set's definitions scoped by call, and failures."""


# The names of one release ago (every set now says prepare, Preparer, Envelope).
__getattr__ = renamed(__name__, globals(), {"Recorder": "Preparer"})
