"""The model-context projection of a log: the provider request for each model call.

Theory of operation
-------------------
``requests(events, provider, options=...)`` projects a recording (any format
``load_events`` reads) to the requests a model would get:

1. The log's own definition set (``detect_protocol``) folds the events to nodes;
   ``definitions.conversation.conversation_messages`` reads them as generic
   messages.
2. A ``Feeder`` hands a ``CoopContext`` what the conversation added since the
   previous call (docs/context.md, rule 4), closing calls the log moved past without a
   result (``answer_unanswered``, on by default: ``ContextOptions``).
3. Each model turn of the log is a call: before it, ``render()`` runs and the
   gateway builds the request from the context. The last request (``final``) is
   the one that would be sent after the whole log.

Prompt replay (rule 7): a live agent that renders with areas writes each
``RenderRecord`` into the log as a ``context.render`` event (``render_event``).
A log holding such events is projected from them instead: call N is rebuilt
from the records and the conversation at each record's position, without the
area objects, byte for byte (``request_bytes``). Records are left out of the
events the definitions fold.

Beside the conversation (rule 8): every request carries the model, tools, tool
choice and settings of a recorded request (``carried``:
``definitions.gateways.carry``, verbatim to the provider that recorded them,
translated to another, what cannot cross named in ``Carried.notes``): the request
before a recorded call, its own request's (``carried_by_call``); the one after the
log, the last request's; in an agent session, which records no request, the model
it names last (``replay.logs.sessions.MODEL_EVENT``, to that model's provider).
``ContextOptions.model`` / ``max_tokens`` override them. ``next_request`` is the
one request after the log, refused (``ValueError``) where it could not be sent: a
log with no conversation, or no model known.

Where policies plug in: ``ContextOptions`` is the one options record every entry
point takes (``requests``, ``convo context``); a policy acts on the generic
messages between the ``Feeder`` and ``CoopContext.extend`` (``Feeder.feed`` is the
single place messages enter a context), so every request still passes through
the gateway and its validator (``Call.problems``).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

import attrs
import msgspec

from definitions import ProtocolSet, recorded
from definitions._requests_read import PROVIDERS, api_of, model_of_url
from definitions._settings import limited
from definitions.conversation import answer_unanswered, conversation_messages
from definitions.gateways import Carried, Gateway, Problem, carry, crossing, declared, gateway
from engine import (
    Context,
    CoopContext,
    Message,
    Node,
    RenderRecord,
    Role,
    compaction_of,
    is_summary,
    since_compaction,
    without_compactions,
)

from ..logs.sessions import MODEL_EVENT
from ..protocols._detect import detect_protocol, protocol_definitions

__all__ = [
    "RENDER_EVENT",
    "Call",
    "ContextOptions",
    "Feeder",
    "NextRequest",
    "Prefix",
    "build",
    "carried",
    "carried_by_call",
    "check_requests",
    "conversation_items",
    "definition_set_of",
    "is_record",
    "is_recorded_request",
    "next_request",
    "render_event",
    "request_bytes",
    "requests",
]

RENDER_EVENT: Final = "context.render"
"""The ``type`` of the log event that records one render (prompt replay)."""

_record_decoder: Final = msgspec.json.Decoder(RenderRecord)


@attrs.frozen(kw_only=True)
class ContextOptions:
    """How a log is projected to requests.

    ``model``/``max_tokens`` override the recorded ones in each request (empty /
    ``None``: as recorded; Anthropic's request needs a ``max_tokens``, 4096 when
    none is known); ``answer_unanswered`` gives a call the log moved past without a
    result a neutral error result (a provider refuses the request otherwise).
    """

    model: str = ""
    max_tokens: int | None = None
    answer_unanswered: bool = True
    compaction: bool = True
    """Start each request at the latest compaction before it (``False``: the
    counterfactual, as if nothing had been compacted)."""


@attrs.frozen(kw_only=True)
class Call:
    """One model call: ``index`` counts calls from 0, ``position`` is how many log
    events came before it (``None`` for a call placed by the conversation rather
    than by a record), ``request`` the payload, ``problems`` what its gateway's
    validator found (empty: the provider would accept it)."""

    index: int
    position: int | None
    request: dict[str, Any]
    problems: tuple[Problem, ...]
    notes: tuple[str, ...] = ()
    """What the request could not carry as recorded (another provider's compaction
    item sent as its summary text), for a warning."""


def request_bytes(request: dict[str, Any]) -> bytes:
    """The request as the canonical JSON compared byte for byte (keys in order)."""
    return msgspec.json.encode(request)


def render_event(record: RenderRecord) -> dict[str, Any]:
    """The log event recording one render (``type`` ``context.render``)."""
    return {"type": RENDER_EVENT, "record": msgspec.to_builtins(record)}


def is_record(event: Any) -> bool:
    """Whether ``event`` records one render (prompt replay), not conversation."""
    return isinstance(event, dict) and event.get("type") == RENDER_EVENT


class Feeder:
    """Hands a context what the conversation added since the last call.

    ``feed(messages)`` takes the conversation so far (``conversation_messages``
    of the current nodes) and returns the messages not yet handed over, with
    unanswered calls closed when ``options.answer_unanswered``. The one place
    conversation messages enter a context: policies act here.
    """

    def __init__(self, options: ContextOptions) -> None:
        self._options = options
        self._fed = 0
        self._answered: set[str] = set()

    def feed(self, messages: Sequence[Message], stop: int | None = None) -> list[Message]:
        """The messages of ``messages[:stop]`` not fed before (a prefix of it was);
        O(new messages)."""
        stop = len(messages) if stop is None else stop
        new = list(messages[self._fed : stop])
        self._fed = stop
        if self._options.answer_unanswered:
            new = answer_unanswered(new, self._answered)
        return new

    def restart(self, messages: Sequence[Message], stop: int) -> list[Message]:
        """What a fresh context holds after the compaction at ``messages[stop - 1]``
        (``since_compaction``); feeding goes on after it. O(stop)."""
        self._fed = stop
        self._answered = set()
        new = since_compaction(messages[:stop])
        if self._options.answer_unanswered:
            new = answer_unanswered(new, self._answered)
        return new


_CONVERSATION_KEYS: Final = ("messages", "input", "contents")


def conversation_items(payload: dict[str, Any]) -> tuple[str | None, list[Any]]:
    """The key of a request's conversation (``messages``, ``input``, ``contents``) and
    its items (none: ``(None, [])``)."""
    for key in _CONVERSATION_KEYS:
        value = payload.get(key)
        if isinstance(value, list):
            return key, value
    return None, []


def carried(events: Iterable[Any], provider: str, options: ContextOptions) -> Carried:
    """What a request for ``provider`` carries beside the conversation: the model,
    tools, tool choice and settings of the last request ``events`` recorded
    (``definitions.gateways.carry``), then ``options``' overrides."""
    last: dict[str, Any] | None = None
    session: dict[str, Any] | None = None  # an agent session's latest model
    for event in events:
        if is_recorded_request(event):
            last = event
        elif isinstance(event, dict) and event.get("type") == MODEL_EVENT:
            session = event
    if last is not None:
        return _carried(last, provider, options)
    found = Carried(provider=provider) if session is None else _session_model(session, provider)
    return _overridden(found, provider, options)


def _session_model(event: dict[str, Any], provider: str) -> Carried:
    """What a session's model event (``replay.logs.sessions.MODEL_EVENT``) carries to
    ``provider``: its model, when it is a model of ``provider`` (or the session does
    not say whose it is)."""
    model = event.get("model")
    model = model if isinstance(model, str) else ""
    whose = event.get("provider")
    if whose and whose != provider:
        return Carried(provider=provider, recorded=model)
    return Carried(provider=provider, model=model, recorded=model)


def carried_by_call(
    events: Iterable[Any], provider: str, options: ContextOptions
) -> dict[int, Carried]:
    """What the request before each recorded call carries (``carried`` of the request
    recorded for it), by call number: an agent's calls need not share their model or
    settings (a cheaper model to title the chat, more tokens for the last answer)."""
    return {
        event["call"]: _carried(event, provider, options)
        for event in filter(is_recorded_request, events)
        if type(event.get("call")) is int
    }


def is_recorded_request(event: Any) -> bool:
    """Whether ``event`` is a ``recording/request`` to a provider API, with a JSON body."""
    return (
        isinstance(event, dict)
        and event.get("type") == "recording/request"
        and isinstance(event.get("body"), dict)
        and api_of(event) in PROVIDERS
    )


def _carried(request: dict[str, Any], provider: str, options: ContextOptions) -> Carried:
    """What a recorded ``request`` carries to ``provider``, then ``options``' overrides."""
    url = request.get("url")
    found = carry(
        provider,
        PROVIDERS[str(api_of(request))],
        request["body"],
        model=model_of_url(url) if isinstance(url, str) else "",
    )
    return _overridden(found, provider, options)


def _overridden(found: Carried, provider: str, options: ContextOptions) -> Carried:
    """``found`` with ``options``' model and output limit in their place."""
    model = options.model or found.model
    settings = found.options
    if options.max_tokens is not None:
        settings = limited(provider, settings, options.max_tokens)
    return attrs.evolve(found, model=model, options=settings)


def build(target: Gateway, items: Iterable[Any], head: Carried) -> dict[str, Any]:
    """The request of ``items`` for ``target``, carrying ``head`` (model, tools,
    settings); the tools its history calls declared where the provider wants them
    (``definitions.gateways.declared``)."""
    return declared(target.name, target.request(items, model=head.model, **head.options))


def _call(
    index: int,
    position: int | None,
    target: Gateway,
    context: Context,
    head: Carried,
    notes: tuple[str, ...] = (),
) -> Call:
    request = build(target, context, head)
    return Call(
        index=index,
        position=position,
        request=request,
        problems=tuple(target.validate(request)),
        notes=notes,
    )


def definition_set_of(events: Sequence[Any]) -> ProtocolSet:
    """The definition set of the protocol ``events`` speak (detected)."""
    return protocol_definitions(detect_protocol(events).protocol)


def requests(
    events: Iterable[Any],
    provider: str,
    *,
    options: ContextOptions | None = None,
    prefix: Prefix | None = None,
    progress: Callable[[], None] | None = None,
    head: Carried | None = None,
) -> list[Call]:
    """The request before every model call of the log, then the one after it.

    Without ``context.render`` events: one call before each model turn of the
    conversation, and a last one after the whole log. With them: one call per
    record, rebuilt from the records (prompt replay), then one after the log (the
    record's context plus the conversation since, before any area renders).
    ``prefix`` folds the log's (non-record) events as they come; the default is a
    live engine of the log's own definition set (``check_requests`` passes other
    folds). ``progress`` is called as each request is built. ``head`` is what each
    request carries beside the conversation (default: ``carried``); in a recording,
    the request before a recorded call carries what that call's request did
    (``carried_by_call``), ``head`` the rest (the request after the log). ``ValueError``
    for an unknown provider or a record that does not fit the log.
    """
    listed = list(events)
    target = gateway(provider)
    options = options or ContextOptions()
    head = head or carried(listed, provider, options)
    plain = [e for e in listed if not is_record(e)]
    if prefix is None:
        prefix = Prefix(definition_set_of(plain))
    if any(is_record(e) for e in listed):
        return _replayed(listed, target, options, head, prefix, progress or _nothing)
    heads = carried_by_call(listed, provider, options)
    return _projected(prefix.extend(plain), target, options, head, heads, progress or _nothing)


@attrs.frozen(kw_only=True)
class NextRequest:
    """The request an agent would send after a log: ``request`` (the provider
    payload), what its validator found (``problems``) and what the recorded request
    had that could not be carried to this provider (``notes``)."""

    request: dict[str, Any]
    problems: tuple[Problem, ...]
    notes: tuple[str, ...]


def next_request(
    events: Iterable[Any], provider: str, *, options: ContextOptions | None = None
) -> NextRequest:
    """The request ``provider`` would be sent after the log: its model, tools, tool
    choice and settings those of the last recorded request (translated for another
    provider), its messages the conversation then the last answer (``requests``).
    ``ValueError`` where no request could be sent: no conversation in the log, or
    no model known (none recorded for this provider and none in ``options``)."""
    listed = list(events)
    options = options or ContextOptions()
    head = carried(listed, provider, options)
    last = requests(listed, provider, options=options, head=head)[-1]
    require_sendable(last.request, head, len(listed))
    return NextRequest(request=last.request, problems=last.problems, notes=head.notes)


def require_sendable(request: dict[str, Any], head: Carried, count: int) -> None:
    """``ValueError`` unless ``request`` has a conversation and a model."""
    if not conversation_items(request)[1]:
        raise ValueError(f"no conversation to continue in the log's {count} events")
    if not head.model:
        why = (
            f"the log's model {head.recorded!r} is not {head.provider}'s"
            if head.recorded
            else "the log records no request naming one"
        )
        raise ValueError(f"no model known for {head.provider} ({why}): name one with --model")


def _nothing() -> None:
    pass


class Prefix:
    """The log's events so far, folded as they come (``extend``): a live engine of
    the set takes each event once, in ``push_many`` batches of ``batch()`` events
    (all at once without it); ``refold`` replays the whole prefix instead, the batch
    path, at each extension."""

    def __init__(
        self,
        definition_set: ProtocolSet,
        *,
        batch: Callable[[], int] | None = None,
        refold: bool = False,
    ) -> None:
        self._set = definition_set
        self._batch = batch
        self._engine = None if refold else definition_set.engine()
        self._events: list[Any] = []

    def extend(self, events: Sequence[Any]) -> tuple[Node, ...]:
        """Fold ``events`` after those before; the nodes of the whole prefix."""
        if self._engine is None:
            self._events += events
            return self._set.replay(self._events)
        start = 0
        while start < len(events):
            step = len(events) if self._batch is None else max(1, self._batch())
            self._engine.push_many(events[start : start + step])
            start += step
        return self._engine.nodes()


def _projected(
    nodes: tuple[Node, ...],
    target: Gateway,
    options: ContextOptions,
    head: Carried,
    heads: Mapping[int, Carried],
    progress: Callable[[], None],
) -> list[Call]:
    # The call before a model turn carries what the request behind the turn carried
    # (by the turn's identity: dropping compactions keeps every model turn's object).
    made_by: dict[int, Carried] = {}
    if heads and any(node.kind == "recorded_request" for node in nodes):
        conversation, behind = recorded.conversation_calls(nodes)
        made_by = {
            id(m): heads.get(call, head) for m, call in zip(conversation, behind, strict=True)
        }
    else:
        conversation = conversation_messages(nodes)
    if not options.compaction:
        conversation = without_compactions(conversation)
    coop = CoopContext(Context(target))
    feeder = Feeder(options)
    calls: list[Call] = []
    notes: tuple[str, ...] = ()
    echoed = 0  # messages before it repeat history a compaction kept (Compaction.echo)
    for index, message in enumerate(conversation):
        if message.role is Role.assistant and not is_summary(message) and index >= echoed:
            # each model turn answers one call (a turn repeated after a compaction, none)
            coop.extend(feeder.feed(conversation, index))
            coop.render()
            made = made_by.get(id(message), head)
            calls.append(_call(len(calls), None, target, coop.context, made, notes))
            progress()
        found = compaction_of(message)
        if found is not None:  # the next call starts at it
            echoed = max(echoed, index + 1 + found.echo)
            coop = CoopContext(Context(target))
            coop.extend(feeder.restart(conversation, index + 1))
            note = crossing(found, target.name)
            notes = () if note is None else (note,)
    coop.extend(feeder.feed(conversation))
    coop.render()
    calls.append(_call(len(calls), None, target, coop.context, head, notes))
    return calls


def _replayed(
    listed: Sequence[Any],
    target: Gateway,
    options: ContextOptions,
    head: Carried,
    prefix: Prefix,
    progress: Callable[[], None],
) -> list[Call]:
    context = Context(target)
    feeder = Feeder(options)
    new: list[Any] = []  # events since the previous record
    nodes: tuple[Node, ...] = ()
    calls: list[Call] = []
    for position, event in enumerate(listed):
        if not is_record(event):
            new.append(event)
            continue
        try:
            record = _record_decoder.decode(msgspec.json.encode(event.get("record")))
        except msgspec.ValidationError as exc:
            raise ValueError(f"event #{position}: a bad {RENDER_EVENT} record: {exc}") from exc
        if record.call != len(calls):
            raise ValueError(
                f"event #{position}: render record of call {record.call}, expected "
                f"call {len(calls)}"
            )
        nodes = prefix.extend(new) if new else nodes
        new = []
        try:
            context.apply(record, feeder.feed(conversation_messages(nodes)))
        except ValueError as exc:
            raise ValueError(f"event #{position}: {exc}") from exc
        calls.append(_call(len(calls), position, target, context, head))
        progress()
    # After the log: what the next render would append before any area speaks.
    nodes = prefix.extend(new) if new else nodes
    for message in feeder.feed(conversation_messages(nodes)):
        context.emplace_message(message)
    calls.append(_call(len(calls), len(listed), target, context, head))
    return calls


def check_requests(
    events: Iterable[Any], provider: str, *, seed: int = 0, rounds: int = 3
) -> str | None:
    """Whether every way of folding the log gives byte-identical requests.

    Each round folds every prefix the projection reads in random batches
    (``replay(batch=...)``); the requests' bytes must equal those of the plain
    fold. Returns ``None`` when they agree, else a sentence naming the first call
    that differs and the round's seed.
    """
    listed = list(events)
    definition_set = definition_set_of([e for e in listed if not is_record(e)])
    # The baseline replays each prefix whole (the batch path); each round folds the
    # log once, live, in random batches.
    plain_calls = requests(listed, provider, prefix=Prefix(definition_set, refold=True))
    baseline = [request_bytes(c.request) for c in plain_calls]
    for round_ in range(rounds):
        rng = random.Random(f"{seed}/context/{round_}")
        batched = Prefix(definition_set, batch=functools.partial(rng.randint, 1, 8))
        got = [request_bytes(c.request) for c in requests(listed, provider, prefix=batched)]
        for index, (want, have) in enumerate(zip(baseline, got, strict=False)):
            if want != have:
                return f"call {index} differs when the log is folded in batches ({seed}/{round_})"
        if len(got) != len(baseline):
            return f"{len(got)} calls instead of {len(baseline)} (seed={seed}/{round_})"
    return None
