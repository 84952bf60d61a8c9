"""The protocol-set contract: what every protocol set declares, member by member.

Theory of operation
-------------------
A protocol set folds one wire protocol's stream events (Anthropic Messages, OpenAI
Chat Completions, ...) into nodes. Every set module ends with one ``PROTOCOL``, a
``ProtocolSet`` record, and everything outside the module (``replay``'s detection and
replays, the CLI, a live application) reads the set through it, never by probing the
module for functions of a particular name.

What a set declares:

- ``name`` / ``title``: its key (``"anthropic"``, the name detection reports) and its
  name for people (``"Anthropic Messages"``).
- ``detect(event)``: whether one plain event dict belongs to the protocol (its
  ``type`` is in the protocol's vocabulary, or, for Chat Completions chunks, which
  have none, its shape). Detection counts these votes over a recording.
- ``definitions``: the definitions to register, in order.
- ``prepare(events)`` and ``pre_pass()``: the pre-pass, batch and live. Protocols
  leave out who an event belongs to (Anthropic's deltas carry only a block index),
  and ``match`` must be pure, so a small causal pass in front of the engine wraps
  each raw event in an envelope naming its node. ``prepare`` maps a whole stream,
  lazily; ``pre_pass()`` makes a fresh per-stream callable that maps one event at a
  time (``None``: the event is skipped). Both take plain dicts and the official
  SDK's typed objects (see ``plain``); one stream's events always get the same
  envelopes from either.
- ``event_type``: the routing key of the envelopes for the engine
  (``Registration(definitions, event_type=...)``). A raw event that did not go
  through the pre-pass makes it raise a ``TypeError`` naming the fix.
- ``rebuild(nodes)``: the protocol's own final objects (Anthropic ``Message`` dicts,
  ``ChatCompletion`` dicts, ...) from the nodes, as the SDK's accumulator would give
  them; ``fold(events)`` is ``rebuild`` of a replay.
- ``vocabulary``: the tagged msgspec Structs the set's definitions fold fastest
  (``replay.load_events(types=...)``), or ``None``: plain dict events.
- ``derived``: event types an SDK's helper derives from the raw events and yields
  beside them (the Anthropic ``MessageStream``'s ``text``, ``input_json``, ...). They
  repeat what the raw events say, so the pre-pass skips them: nothing is counted
  twice.

A live application never wires a pre-pass by hand: ``PROTOCOL.engine()`` is an
engine of the set's definitions and routing with the pre-pass as its first push hook,
so ``engine.push(event)`` takes whatever the SDK stream yields. Batch work keeps the
faster path: ``engine.push_many(PROTOCOL.prepare(events))`` on an engine of
``PROTOCOL.registration``, which is what ``replay`` and ``fold`` do.

SDK objects are taken by their shape, never by importing the SDK: an object with
``to_dict()`` (the Anthropic and OpenAI SDKs' models) or ``model_dump()`` (any pydantic
model) is turned into the dict its JSON would have decoded to (``plain``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, cast

import attrs

from engine import ConversationEngine, Node, Registration, create_conversation_engine

__all__ = ["PrePass", "ProtocolSet", "not_routed", "route_by_class"]


class PrePass(Protocol):
    """One stream's live pre-pass: called on each raw event in order, it gives the
    envelope the set's definitions take, or ``None`` for an event to skip."""

    def __call__(self, event: Any, /) -> Any: ...


@attrs.frozen(kw_only=True)
class ProtocolSet:
    """One protocol's definition set and how its stream reaches them (see the module
    docstring for each member)."""

    name: str
    """Key of the protocol (``"anthropic"``): what detection names, ``convo`` shows."""
    title: str
    """The protocol's name for people (``"Anthropic Messages"``)."""
    detect: Callable[[Mapping[str, Any]], bool]
    """Whether a plain event dict belongs to this protocol (one detection vote)."""
    definitions: tuple[Any, ...]
    """The definitions to register, in order."""
    prepare: Callable[[Iterable[Any]], Iterator[Any]]
    """The batch pre-pass: one stream's raw events (dicts or SDK objects) in, the
    envelopes the definitions take out, lazily."""
    pre_pass: Callable[[], PrePass]
    """A new live pre-pass for one stream (one event in, its envelope or ``None``)."""
    event_type: Callable[[Any], Hashable]
    """The engine's routing key for the envelopes; raises ``TypeError`` (naming the
    fix) for an event that did not go through the pre-pass."""
    rebuild: Callable[[Sequence[Node]], list[dict[str, Any]]]
    """The protocol's own final objects from the nodes, in log order."""
    vocabulary: Any = None
    """Tagged msgspec Structs to decode events as (``load_events(types=...)``), or
    ``None``: plain dict events."""
    derived: frozenset[str] = frozenset()
    """Event types an SDK helper derives from the raw ones: skipped, never counted twice."""
    registration: Registration = attrs.field(init=False)
    """``Registration(definitions, event_type=event_type)``, made once: engines of one
    registration share its routes."""

    def __attrs_post_init__(self) -> None:
        registration = Registration(self.definitions, event_type=self.event_type)
        object.__setattr__(self, "registration", registration)

    def engine(self, *, hooks: Iterable[object] = (), **options: Any) -> ConversationEngine:
        """A live engine of this set: ``push(event)`` takes the stream's raw events as
        the SDK yields them (dicts or typed objects), the pre-pass running as the first
        push hook. ``options`` go to ``create_conversation_engine`` (``scheduler``,
        ``clock``). One engine per stream: the pre-pass remembers that stream only."""
        return create_conversation_engine(
            self.registration, hooks=(_PrePassHook(self.pre_pass()), *hooks), **options
        )

    def replay(self, events: Iterable[Any]) -> tuple[Node, ...]:
        """The nodes of one stream's raw events (the batch path: ``prepare``, then
        ``push_many`` on an engine of ``registration``)."""
        engine = create_conversation_engine(self.registration)
        engine.push_many(self.prepare(events))
        return engine.nodes()

    def fold(self, events: Iterable[Any]) -> list[dict[str, Any]]:
        """The protocol's final objects of one stream's raw events: ``rebuild`` of the
        replay."""
        return self.rebuild(self.replay(events))

    def plain(self, event: object) -> dict[str, Any] | None:
        """``event`` as the plain dict the pre-pass folds, or ``None`` when it is one
        of the SDK helper's ``derived`` events (skipped).

        A dict is returned as it is; an SDK's typed object becomes the dict its JSON
        decodes to (``to_dict(mode="json")``, else pydantic's ``model_dump``); any other
        mapping is copied. Raises ``TypeError`` naming what was pushed and the fix
        for anything else, and for a typed object of another protocol.
        """
        if type(event) is dict:
            return event
        kind = None if isinstance(event, Mapping) else getattr(event, "type", None)
        if isinstance(kind, str) and kind in self.derived:
            return None  # before dumping it: a derived event may carry a whole snapshot
        plain = _as_dict(event)
        if plain is None:
            raise TypeError(
                f"{self.title}: cannot fold a {_what(event)}; push the stream's events "
                "as decoded JSON dicts or as the objects its official SDK yields"
            )
        if not isinstance(event, Mapping) and not self.detect(plain):
            raise TypeError(
                f"{self.title}: a {_what(event)} (type {plain.get('type')!r}) is not an "
                f"event of this protocol; push it into the protocol set of its own SDK "
                f"(definitions.<protocol>.PROTOCOL)"
            )
        return plain


def not_routed(fix: str, event: object) -> TypeError:
    """The error for a raw event given to a set's definitions or routing key without
    the pre-pass: ``fix`` says what to push instead; the message names the event."""
    return TypeError(f"{fix}; got {_what(event)}")


def route_by_class(base: type, fix: str) -> Callable[[Any], Hashable]:
    """The routing key of a set whose envelopes (``base`` and its subclasses) name the
    definition that takes them by their class: that class, or ``not_routed(fix)``
    raised for anything else. One table lookup per event (subclasses made after this
    call are found by ``isinstance`` once, then looked up too)."""
    known: set[type] = set()
    pending = [base]
    while pending:
        cls = pending.pop()
        known.add(cls)
        pending.extend(cls.__subclasses__())

    def event_type(event: object) -> Hashable:
        cls = type(event)
        if cls in known:
            return cast(Hashable, cls)  # mypy does not see a class as Hashable
        if isinstance(event, base):
            known.add(cls)
            return cast(Hashable, cls)
        raise not_routed(fix, event)

    return event_type


def _as_dict(event: object) -> dict[str, Any] | None:
    """The plain dict of a mapping or an SDK model, by its shape; ``None`` otherwise."""
    if isinstance(event, Mapping):
        return dict(event)
    if isinstance(event, type):
        return None
    to_dict = getattr(event, "to_dict", None)
    if callable(to_dict):
        try:
            # The Stainless SDKs' models: the fields their JSON set, by wire names.
            plain = to_dict(mode="json")
        except TypeError:
            plain = None
        if type(plain) is dict:
            return plain
    dump = getattr(event, "model_dump", None)
    if callable(dump):
        # A pydantic model (the AG-UI SDK's events: camelCase wire names by alias).
        plain = dump(mode="json", by_alias=True, exclude_unset=True)
        if type(plain) is dict:
            return plain
    return None


def _what(event: object) -> str:
    """What was pushed, for a message: its class (with its module) and a short repr."""
    cls = type(event)
    module = cls.__module__
    name = cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"
    text = repr(event)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{name} {text}"


class _PrePassHook:
    """Push-hook form of a live pre-pass: replaces the pushed raw event by its envelope
    (or skips it)."""

    __slots__ = ("_pre_pass",)

    def __init__(self, pre_pass: PrePass) -> None:
        self._pre_pass = pre_pass

    def on_push_start(self, ctx: Any) -> None:
        """Hand the definitions the envelope of the event being pushed."""
        envelope = self._pre_pass(ctx.event)
        if envelope is None:
            ctx.skip()
        else:
            ctx.event = envelope
