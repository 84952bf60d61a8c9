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
- ``prepare(events)`` and ``pre_pass()``: the pre-pass, batch and live (a set
  without one, the built-in kinds or a plug-in's, leaves both out: its events go in
  as they are). Protocols
  leave out who an event belongs to (Anthropic's deltas carry only a block index),
  and ``match`` must be pure, so a small causal pass in front of the engine wraps
  each raw event in an envelope naming its node. ``prepare`` maps a whole stream,
  lazily; ``pre_pass()`` makes a fresh per-stream callable that maps one event at a
  time (``None``: the event is skipped). Both take plain dicts and the official
  SDK's typed objects (see ``plain``); one stream's events always get the same
  envelopes from either. An event either one cannot read (a field missing, null or of
  another type where the pre-pass needs it) raises ``engine.EventError`` naming the
  event and its position (``unreadable``): the live one is counted by ``pre_pass()``,
  a batch one catches ``UNREADABLE`` in its loop (a ``try`` costs nothing unless it
  raises) and counts with ``enumerate`` (an SDK helper's derived events, which a
  typed batch stream leaves out, are not counted there).
- ``event_type``: the routing key of the envelopes for the engine
  (``Registration(definitions, event_type=...)``).
- ``envelope``: the class of the envelopes. The set puts its one guard first among its
  definitions: anything else pushed into an engine of them (a raw dict that skipped
  the pre-pass, an SDK's typed object) raises ``RawEventError`` naming the set and the
  fix. The set checks, when it is built, that its routing sends such an object to the
  guard (``RegistrationError`` if not).
- ``rebuild(nodes)``: the protocol's own final objects (Anthropic ``Message`` dicts,
  ``ChatCompletion`` dicts, ...) from the nodes, as the SDK's accumulator would give
  them (``RebuildError`` for nodes they cannot be made of); ``accumulate(events)`` is
  ``rebuild`` of a replay.
- ``vocabulary``: the tagged msgspec Structs the set's definitions fold fastest
  (``replay.load_events(types=...)``), or ``None``: plain dict events.
- ``derived``: event types an SDK's helper derives from the raw events and yields
  beside them (the Anthropic ``MessageStream``'s ``text``, ``input_json``, ...). They
  repeat what the raw events say, so the pre-pass skips them: nothing is counted
  twice. ``wrapped``: helper events that carry a raw one (OpenAI's chat stream
  helper's ``chunk``): the raw event inside is folded.

A live application never wires a pre-pass by hand: ``PROTOCOL.engine()`` is an
engine of the set's definitions and routing with the pre-pass as its first push hook,
so ``engine.push(event)`` takes whatever the SDK stream yields. Batch work keeps the
faster path: ``engine.push_many(PROTOCOL.prepare(events))`` on an engine of
``PROTOCOL.registration``, which is what ``replay`` and ``accumulate`` do.

Implementing a set (the recipe, step by step: docs/architecture.md): the module
builds its definitions, its ``Envelope`` class, its live pre-pass ``Preparer`` (one per
stream), its batch ``prepare(events)`` and its ``detect`` and ``event_type``, then ends
with ``PROTOCOL = ProtocolSet.of_module(globals(), name=..., ...)`` (which takes those
parts by these names) and ``DEFINITIONS = PROTOCOL.definitions``; its names of one
release ago go through ``old_names``, users reading the batch entry points through the
set (``PROTOCOL.accumulate``, ``PROTOCOL.replay``). The pre-pass turns any event that is not a
dict into one with ``PROTOCOL.plain(event)`` (looked up when called, so it may be
defined last; skip the event when it gives ``None``); a batch pre-pass either maps
``PROTOCOL.pre_pass()`` or, in its own loop, turns ``UNREADABLE`` into
``PROTOCOL.unreadable(position, event, exc)``; when envelopes name their definitions by
a ``route`` from one declared table (``definitions._envelope``: ``ag_ui``, ``ai_sdk``),
route with ``event_type=_envelope.route_of``, or by class with ``event_type=type``;
either way anything but an envelope goes by its class to the guard.
Adding the set to ``replay``'s ``PROTOCOLS`` makes detection and ``convo`` see it.

SDK objects are taken by their shape, never by importing the SDK: a pydantic model
(the Anthropic, OpenAI and AG-UI SDKs' events) or an object with ``to_dict()`` is
turned into the dict its JSON would have decoded to (``plain``): the fields the wire
gave, by their wire names, and its extra fields. A typed stream pays this once per
event, so each pydantic model class gets a converter written for it when its first
model is met (``_converter``); the protocol checks (derived, wrapped, ``detect``) run
on the first event of each model class and ``type``. The dict holds none of the
model's lists or dicts (an SDK's stream helper may change them after the push).
"""

from __future__ import annotations

import collections
import enum
import itertools
import types
import typing
import warnings
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, Protocol

import attrs

from engine import (
    ConversationEngine,
    ConversationError,
    EventError,
    Node,
    Registration,
    RegistrationError,
    create_conversation_engine,
)
from engine._deprecation import renamed

from ._routing import event_type as _shared_key

__all__ = [
    "ROUTED_NAMES",
    "UNREADABLE",
    "PrePass",
    "ProtocolSet",
    "RawEventError",
    "RebuildError",
    "Unrouted",
    "old_names",
]

UNREADABLE: Final = (LookupError, TypeError, AttributeError, ValueError)
"""What a pre-pass raises on an event of the wrong shape (a field missing, null, or of
another type): a batch pre-pass catches these around its loop and raises
``ProtocolSet.unreadable`` instead."""


class PrePass(Protocol):
    """One stream's live pre-pass: called on each raw event in order, it gives the
    envelope the set's definitions take, or ``None`` for an event to skip."""

    def __call__(self, event: Any, /) -> Any: ...


def _tuple(definitions: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(definitions)


def _never(event: Mapping[str, Any]) -> bool:
    """The ``detect`` of a set that takes no part in detection (a plug-in's)."""
    return False


@attrs.frozen(kw_only=True)
class ProtocolSet:
    """One protocol's definition set and how its stream reaches them (see the module
    docstring for each member).

    The built-in kinds and a plug-in's definitions are a set too, with no pre-pass:
    their events go in as they are (``prepare`` and ``pre_pass`` left out), routed by
    the shared key ``definitions.event_type``; they have no final objects of their own
    to rebuild (``rebuilds`` is False)."""

    name: str
    """Key of the protocol (``"anthropic"``): what detection names, ``convo`` shows."""
    title: str = attrs.field(default=attrs.Factory(lambda self: self.name, takes_self=True))
    """The protocol's name for people (``"Anthropic Messages"``); the name by default."""
    detect: Callable[[Mapping[str, Any]], bool] = _never
    """Whether a plain event dict belongs to this protocol (one detection vote). Types
    several protocols share (``error``) answer False: they must not tip detection."""
    definitions: tuple[Any, ...] = attrs.field(converter=_tuple)
    """The definitions to register, in order; with an ``envelope``, the set's guard
    first (made by the set)."""
    prepare: Callable[[Iterable[Any]], Iterable[Any]] | None = None
    """The batch pre-pass: one stream's raw events (dicts or SDK objects) in, the
    envelopes the definitions take out, lazily; ``None``: events go in as they are,
    unless the set has a live ``pre_pass``: then ``mapped``."""
    _pre_pass: Callable[[], PrePass] | None = attrs.field(default=None, alias="pre_pass")
    # The set's own live pre-pass (a class, called once per stream); ``pre_pass()``
    # gives it counted, so that an event it cannot read is named by its position.
    # Left out with a ``prepare``: that generator, driven one event at a time.
    event_type: Callable[[Any], Hashable] = _shared_key
    """The engine's routing key (the shared ``definitions.event_type`` by default). With
    an ``envelope``, anything but an envelope must be routed to the set's guard: by its
    class (``type``), or by a key that gives a non-envelope's class."""
    _rebuild: Callable[[Sequence[Node]], list[dict[str, Any]]] | None = attrs.field(
        default=None, alias="rebuild"
    )
    # The set's own rebuild; ``rebuild()`` raises the library's error for it.
    envelope: type | None = None
    """The class of the envelopes the pre-pass gives. Given, the set puts its one guard
    first among its ``definitions``: anything else pushed into an engine of them (a
    raw dict, an SDK's typed object) raises ``RawEventError`` naming the set and the
    fix; checked when the set is built."""
    vocabulary: Any = None
    """Tagged msgspec Structs to decode events as (``load_events(types=...)``), or
    ``None``: plain dict events."""
    derived: frozenset[str] = frozenset()
    """Event types an SDK helper derives from the raw ones: skipped, never counted twice."""
    wrapped: Mapping[str, str] = attrs.field(factory=dict)
    """SDK helper events that carry a raw event: their type -> the field holding it
    (the OpenAI chat stream helper's ``ChunkEvent``, type ``chunk``, holds the
    ``ChatCompletionChunk`` in ``chunk``). The pre-pass folds the raw event inside."""
    source: str = attrs.field(
        default=attrs.Factory(
            lambda self: self.envelope.__module__ if self.envelope is not None else "",
            takes_self=True,
        )
    )
    """Where the set comes from, for messages: its module (``"definitions.anthropic"``,
    the envelope's by default), or the specs that named it."""
    _registration: Registration | None = attrs.field(init=False, default=None, repr=False)
    # Made when first asked for (at once for a set with a guard, to check it).
    _folded: dict[type, tuple[Callable[[Any], dict[str, Any]], set[object]]] = attrs.field(
        init=False, factory=dict, eq=False, repr=False
    )
    # Model class -> its converter and the types (of the dicts it gives) that ``plain``
    # has found to be this protocol's raw events: their next ones skip the checks.

    @classmethod
    def of_module(cls, namespace: Mapping[str, Any], **members: Any) -> ProtocolSet:
        """The set a protocol module declares (``namespace`` is its ``globals()``): the
        parts every set names alike (docs/architecture.md), ``detect``, ``Envelope`` and
        ``Preparer``, and ``prepare`` and ``event_type`` where it has them, read by
        those names, with ``members`` (``name``, ``title``, ``definitions``,
        ``rebuild``, ...) beside them. A module that names a part otherwise is refused
        (``RegistrationError``): one vocabulary in every set."""
        missing = [name for name in ("detect", "Envelope", "Preparer") if name not in namespace]
        if missing:
            raise RegistrationError(
                f"protocol set {members.get('name')!r} ({namespace.get('__name__')}): a set's "
                f"module names its parts detect, Envelope, Preparer; missing {missing}"
            )
        parts = {name: namespace[name] for name in ("prepare", "event_type") if name in namespace}
        return cls(
            detect=namespace["detect"],
            envelope=namespace["Envelope"],
            pre_pass=namespace["Preparer"],
            **parts,
            **members,
        )

    def __attrs_post_init__(self) -> None:
        if self.envelope is not None and not any(isinstance(d, Unrouted) for d in self.definitions):
            guard = Unrouted(self)
            object.__setattr__(self, "definitions", (guard, *self.definitions))
        if self.prepare is None and self._pre_pass is not None:
            object.__setattr__(self, "prepare", self.mapped)
        if self.envelope is not None:
            self._check_guard()

    @property
    def registration(self) -> Registration:
        """``Registration(definitions, event_type=event_type)``, made once: engines of
        one registration share its routes. ``RegistrationError`` for definitions an
        engine refuses (a set of hand-named definitions is checked when first used)."""
        registration = self._registration
        if registration is None:
            registration = Registration(self.definitions, event_type=self.event_type)
            object.__setattr__(self, "_registration", registration)
        return registration

    def _check_guard(self) -> None:
        """Refuse to build a set whose routing lets a raw event past its guard: one
        pushed into an engine of it must raise ``RawEventError`` (misuse is never
        silent, and never blamed on a definition)."""
        for probe in ({"type": None}, _Probe()):
            engine = create_conversation_engine(self.registration)
            try:
                engine.push(probe)
            except RawEventError:
                continue
            except ConversationError as exc:
                got = f"{type(exc).__name__}: {exc}"
            else:
                got = "it folded"
            raise RegistrationError(
                f"protocol set {self.name!r}: a raw {type(probe).__name__} pushed into an "
                f"engine of its definitions must reach its guard, but {got}; route "
                "anything but an envelope by its class (event_type=type, or a key giving "
                "the object's class)"
            )

    @property
    def label(self) -> str:
        """The set's name for messages: its title and, when known, its source."""
        return f"{self.title} ({self.source})" if self.source else self.title

    @property
    def rebuilds(self) -> bool:
        """Whether the set gives final objects of its own (``rebuild``)."""
        return self._rebuild is not None

    def with_definitions(
        self, definitions: Iterable[Any], *, title: str | None = None
    ) -> ProtocolSet:
        """This set's pre-pass and routing for other ``definitions`` (some of its own, or
        a plug-in's beside them): it rebuilds only when they are exactly its own (only
        those make its nodes). ``title`` names the new set for messages."""
        given = tuple(definitions)
        return attrs.evolve(
            self,
            title=self.title if title is None else title,
            source=self.source if title is None else "",
            definitions=given,
            rebuild=self._rebuild if given == self.definitions else None,
        )

    def mapped(self, events: Iterable[Any]) -> Iterator[Any]:
        """The batch pre-pass of a set whose live one is all it has: one stream's events
        each through a fresh counted ``pre_pass()``, those it skips left out."""
        pre_pass = self.pre_pass()
        assert pre_pass is not None, f"{self.name} has no pre-pass to map"
        for event in events:
            envelope = pre_pass(event)
            if envelope is not None:
                yield envelope

    def feed(self, events: Iterable[Any]) -> Iterable[Any]:
        """``events`` as the definitions take them: through the batch pre-pass, lazily
        (as they are for a set without one)."""
        return events if self.prepare is None else self.prepare(events)

    def pre_pass(self) -> PrePass | None:
        """A new live pre-pass for one stream: one raw event in, its envelope (or
        ``None``, skip it) out. ``EventError`` for an event it cannot read, naming its
        position among the events given to this pre-pass. ``None`` for a set without a
        pre-pass (events go in as they are)."""
        if self._pre_pass is not None:
            return _Counted(self, self._pre_pass())
        if self.prepare is not None:
            return _Counted(self, _Driven(self.prepare))
        return None

    def unreadable(self, position: int, event: object, exc: BaseException) -> EventError:
        """The error for event ``position`` of a stream that the pre-pass could not
        read (it raised ``exc``, kept as ``__cause__``): names the protocol, the
        position, the event and what was wrong with it."""
        text = str(exc)
        reason = text.removeprefix(f"{self.title}: ")
        if reason == text:  # not one of the set's own messages: say what was raised
            reason = f"{type(exc).__name__}: {text}"
        error = EventError(
            f"{self.title}: cannot fold event #{position} ({_what(event)}): {reason}",
            position=position,
        )
        error.__cause__ = exc
        return error

    def rebuild(self, nodes: Sequence[Node]) -> list[dict[str, Any]]:
        """The protocol's own final objects from the nodes, in log order.

        ``RebuildError`` when the nodes hold what those objects cannot be made of (a
        tool input that is not JSON, as the SDK's accumulator refuses it, or a field
        the fold kept as the wire gave it, of another type)."""
        if self._rebuild is None:
            raise RebuildError(f"{self.label}: the set has no final objects of its own")
        try:
            return self._rebuild(nodes)
        except ConversationError:  # a nested set's (``recorded``'s calls), as it is
            raise
        except UNREADABLE as exc:
            raise RebuildError(
                f"{self.title}: cannot rebuild the protocol's objects of the nodes: "
                f"{type(exc).__name__}: {exc}"
            ) from exc

    def engine(self, *, hooks: Iterable[object] = (), **options: Any) -> ConversationEngine:
        """A live engine of this set: ``push(event)`` takes the stream's raw events as
        the SDK yields them (dicts or typed objects), the pre-pass running as the first
        push hook. ``options`` go to ``create_conversation_engine`` (``scheduler``,
        ``clock``). One engine per stream: the pre-pass remembers that stream only."""
        pre_pass = self.pre_pass()
        if pre_pass is not None:
            hooks = (_PrePassHook(self.name, pre_pass), *hooks)
        return create_conversation_engine(self.registration, hooks=hooks, **options)

    def folded(self, events: Iterable[Any]) -> ConversationEngine:
        """An engine of ``registration`` that has folded one stream's raw events (the
        batch path: ``feed``, then ``push_many``), for its nodes and statistics."""
        engine = create_conversation_engine(self.registration)
        engine.push_many(self.feed(events))
        return engine

    def replay(self, events: Iterable[Any]) -> tuple[Node, ...]:
        """The nodes of one stream's raw events (``folded(events).nodes()``)."""
        return self.folded(events).nodes()

    def accumulate(self, events: Iterable[Any]) -> list[dict[str, Any]]:
        """The protocol's final objects of one stream's raw events, as the official SDK's
        accumulator gives them: the stream folded, then ``rebuild``."""
        return self.rebuild(self.replay(events))

    def fold(self, events: Iterable[Any]) -> list[dict[str, Any]]:
        """Deprecated (it goes in the next release): ``accumulate``. A fold gives nodes;
        this gives the protocol's final objects."""
        warnings.warn(
            "ProtocolSet.fold is deprecated and goes in the next release: use "
            "ProtocolSet.accumulate (a fold gives nodes; this gives final objects)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.accumulate(events)

    def dicts(self, events: Iterable[Any]) -> Iterable[Any]:
        """``events`` for a batch pre-pass, whose loop reads each event with
        ``dict.get`` and converts one that is not a dict where it meets it (the
        ``TypeError`` that marks it costs more than a typed event's conversion): a
        stream whose first event is a dict as it is, any other with each event
        through ``plain`` first (those it gives ``None`` for left out; one ``plain``
        refuses as it is, for the loop to meet and name by its position)."""
        if type(events) is list or type(events) is tuple:  # no chain to read through
            if not events or isinstance(events[0], dict):
                return events
            rest: Iterable[Any] = events
        else:
            iterator = iter(events)
            for first in iterator:
                rest = itertools.chain((first,), iterator)
                break
            else:
                return ()
            if isinstance(first, dict):
                return rest
        return self._converted(rest)

    def _converted(self, events: Iterable[Any]) -> Iterator[Any]:
        plain = self.plain
        for event in events:
            try:
                converted = plain(event)
            except UNREADABLE:
                yield event
                continue
            if converted is not None:
                yield converted

    def plain(self, event: object) -> dict[str, Any] | None:
        """``event`` as the plain dict the pre-pass folds, or ``None`` when it is one
        of the SDK helper's ``derived`` events (skipped).

        A dict is returned as it is; an SDK's typed object (a pydantic model, or an
        object with ``to_dict()``) becomes the dict its JSON decodes to; any other
        mapping is copied. Raises ``TypeError`` naming what was pushed and the fix
        for anything else, and for a typed object of another protocol.

        Whether a typed event is skipped, unwrapped or folded, and whether it is this
        protocol's, depends on its class and its ``type``; the checks are made on
        the first event of each pair, and the next ones are only converted.
        """
        if type(event) is dict:
            return event
        folded = self._folded.get(type(event))
        if folded is not None:  # a model class folded before: the common case
            # Converted first, its type checked on the dict: the model's own type is
            # behind its __getattr__ hook, and a class has one type nearly always.
            convert, kinds = folded
            try:
                plain = convert(event)
            except _NotJSON:
                plain = _dumped(event)
            try:
                if plain.get("type") in kinds:
                    return plain
            except TypeError:  # an unhashable type: the checks below say what it is
                pass
        return self._checked(event)

    def as_dict(self, event: object) -> dict[str, Any]:
        """``plain`` of a set whose SDKs derive no events (``derived`` is empty), which
        never skips one: always the event's dict (or ``plain``'s ``TypeError``)."""
        plain = self.plain(event)
        assert plain is not None, f"{self.name} derives events: use plain()"
        return plain

    def _checked(self, event: object) -> dict[str, Any] | None:
        """``plain`` of an event whose class and type it has not folded yet."""
        cls = type(event)
        remember: Callable[[Any], dict[str, Any]] | None = None  # the converter to cache
        convert = _CONVERTERS.get(cls)
        if convert is None and hasattr(cls, "__pydantic_fields__"):  # an SDK's model
            convert = _converter(cls)
        if convert is not None:
            # A model keeps its fields in __dict__: no __getattr__ for a model without one.
            kind = event.__dict__.get("type")
            if isinstance(kind, str):  # before converting: it may carry a whole snapshot
                if kind in self.derived:
                    return None
                inner = self.wrapped.get(kind)
                if inner is not None:
                    return self.plain(getattr(event, inner))
            if kind is None or isinstance(kind, str):
                remember = convert
            try:
                plain = convert(event)
            except _NotJSON:
                plain = _dumped(event)
        elif isinstance(event, Mapping):
            return dict(event)
        else:
            to_dict = None if isinstance(event, type) else getattr(event, "to_dict", None)
            dumped = to_dict() if callable(to_dict) else None
            if type(dumped) is dict:
                plain = dumped
            else:
                raise TypeError(
                    f"{self.title}: cannot fold a {_what(event)}; push the stream's events "
                    "as decoded JSON dicts or as the objects its official SDK yields"
                )
        # ``error`` events are several protocols' (detection gives them no vote).
        if not self.detect(plain):
            if plain.get("type") != "error":
                raise TypeError(
                    f"{self.title}: a {_what(event)} (type {plain.get('type')!r}) is not an "
                    f"event of this protocol; push it into the protocol set of its own SDK "
                    f"(definitions.<protocol>.PROTOCOL)"
                )
        elif remember is not None:
            kind = plain.get("type")
            if kind is None or isinstance(kind, str):
                self._folded.setdefault(cls, (remember, set()))[1].add(kind)
        return plain


ROUTED_NAMES: Final = {
    "project": "PROTOCOL.replay",
    "route": "prepare",
    "Router": "Preparer",
    "Routed": "Envelope",
}
"""The names of one release ago that the sets routing by a table of routes (``ag_ui``,
``ai_sdk``) shared: their replay, and their pre-pass and envelope as they were named."""


def old_names(namespace: Mapping[str, Any], names: Mapping[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of a protocol set's module (``namespace``, its ``globals()``)
    for its names of one release ago: ``names`` (old -> new), and the batch entry points
    every set had at module level, now read through the set (``accumulate`` and its
    older name ``fold``: ``PROTOCOL.accumulate``). Each warns, naming the new one."""
    batch = {"fold": "PROTOCOL.accumulate", "accumulate": "PROTOCOL.accumulate"}
    return renamed(namespace["__name__"], namespace, {**batch, **names})


class RebuildError(ConversationError, ValueError):
    """A protocol set's ``rebuild`` (or ``fold``) met nodes its protocol's final objects
    cannot be made of: the stream folded, but what it said cannot be given back as
    the SDK's objects (the SDK's accumulator would have refused it too). The error
    the set's rebuild raised is ``__cause__``."""


class RawEventError(EventError, TypeError):
    """A raw event (a dict, an SDK's typed object: anything but the set's envelope)
    reached a protocol set's definitions without the set's pre-pass. ``protocol`` names
    the set; the message names the event and the fix. Raised by the one guard a
    ``ProtocolSet`` with an ``envelope`` puts first among its definitions; the engine
    lets it out as itself (the event is at fault, not a definition)."""

    def __init__(self, message: str, *, protocol: str, position: int = -1) -> None:
        super().__init__(message, position=position)
        self.protocol = protocol


class Unrouted:
    """A set's guard: a definition that claims nothing and raises ``RawEventError`` for
    anything but an envelope of the set (``ProtocolSet.envelope``) pushed where
    envelopes belong: a raw dict, an SDK's typed object, anything else.

    Made by the ``ProtocolSet`` itself, first among its definitions. It takes the
    ``dict`` type and, as a ``fallback``, every type no other definition admits
    (decided once per type, nothing per event), so a set that routes its envelopes by
    class (``event_type=type``, a C call per event) never lets another object fold to
    nothing, silently. Envelopes never reach it in a routed engine; without routing it
    lets them pass.
    """

    __slots__ = ("_base", "_fix", "_protocol", "kind")
    event_types: Final = frozenset({dict})
    fallback: Final = True
    publication: Final = "immediate"

    def __init__(self, protocol: ProtocolSet) -> None:
        base = protocol.envelope
        assert base is not None
        module = protocol.source
        self.kind = f"{protocol.name}_unrouted"
        self._base = base
        self._protocol = protocol.name
        self._fix = (
            f"{protocol.title}: the set's definitions fold its {base.__name__} envelopes, "
            f"not raw events: use {module}.PROTOCOL.engine() (its push takes raw events), "
            f"or push {module}.prepare(events) / {module}.Preparer()(event)"
        )

    def __repr__(self) -> str:
        return f"<the {self._protocol} guard>"

    def match(self, event: object) -> None:
        """None for an envelope; ``RawEventError`` naming the fix for anything else."""
        if isinstance(event, self._base):
            return
        raise RawEventError(f"{self._fix}; got {_what(event)}", protocol=self._protocol)

    def start(self, event: object, reader: object) -> None:
        """Never called: ``match`` claims nothing."""
        raise AssertionError("the guard claims nothing")

    def update(self, state: object, event: object) -> None:
        """Never called: ``match`` claims nothing."""
        raise AssertionError("the guard claims nothing")


class _Probe:
    """An object of no protocol: what a set's guard is checked with when it is built."""


class _Driven:
    """A set's batch pre-pass (a generator over the stream) driven one event at a time:
    the live pre-pass of a set that declares only ``prepare``. It works when the
    generator gives one envelope per event; one that does not is refused."""

    def __init__(self, prepare: Callable[[Iterable[Any]], Iterable[Any]]) -> None:
        self._pending: collections.deque[Any] = collections.deque()
        self._out = iter(prepare(self._source()))

    def _source(self) -> Iterator[Any]:
        while self._pending:
            yield self._pending.popleft()

    def __call__(self, event: Any) -> Any:
        self._pending.append(event)
        try:
            envelope = next(self._out)
        except StopIteration:
            raise ValueError(
                "this pre-pass does not give one envelope per event: it cannot feed a live view"
            ) from None
        if self._pending:
            raise ValueError("this pre-pass gives no envelope for some event")
        return envelope


# What JSON gives as it is; any other value of a model is converted.
_PRIMITIVES: Final = frozenset({str, int, float, bool, type(None)})
# Per pydantic model class: the function that turns one of its models into the dict
# its JSON decodes to, written for the class the first time one is met (_converter).
_CONVERTERS: dict[type, Callable[[Any], dict[str, Any]]] = {}
# The same, and lists: how a field's value of each class is converted (_value: others).
_VALUES: dict[type, Callable[[Any], Any]] = {}


def _converter(cls: type) -> Callable[[Any], dict[str, Any]]:
    """The converter of model class ``cls``: the fields it was given (the SDKs build
    their events from the wire, so those are the wire's), by their wire names, then
    its extra fields. A value that is not a JSON primitive by the field's annotation
    goes through the converter of its class (``_value`` for a class without one).

    It is written as the source of one function per class and compiled, as attrs and
    dataclasses write ``__init__``: a typed stream converts every event, and each
    bytecode of it costs about as much as a C call (callgrind): a loop over a class's
    fields costs more than the fold of most events. So a model given every field
    (nearly every event) is one copy of its ``__dict__`` (one C call); one given most
    fields, that copy less the fields left out (no wire names to change); any other
    is built field by field. The model classes a field is annotated with get their
    converters first and are called directly (a class seen in the annotation is the
    common case; any other value goes by its class, ``_value``), and a list of one
    item (a delta's one choice) is made without a loop.

    Written as plain code instead (a closure per class: the ``__dict__`` copy less the
    fields left out, each field that may nest through ``_value``), the typed fold ran
    at 0.72x this one's rate on the recorded Chat streams and 0.90x on Anthropic's
    (``benchmarks/ab_typed.py``, five interleaved rounds; 1.40x and 1.16x the
    instructions per event by ``bench_typed_instructions.py``): one Python frame more
    per nested model and list is most of a chunk's conversion.
    """
    fields: Mapping[str, Any] = getattr(cls, "model_fields", {})
    wires = {
        name: field.serialization_alias or field.alias or name for name, field in fields.items()
    }
    _BUILDING.add(cls)
    try:
        namespace: dict[str, Any] = {
            "FIELDS": frozenset(fields),
            "HALF": len(fields) // 2,
            "PRIMITIVES": _PRIMITIVES,
            "get": _VALUES.get,
            "_value": _value,
            "_list": _list,
        }
        converted = {
            name: _conversion(field.annotation, namespace)
            for name, field in fields.items()
            if not _primitive(field.annotation)
        }
    finally:
        _BUILDING.discard(cls)
    values = {}
    for name in fields:
        read = f"d[{name!r}]"
        if name in converted:  # null, or a value to convert
            read = f"(None if (v := {read}) is None else {converted[name]})"
        values[wires[name]] = read
    if all(wire == name for name, wire in wires.items()):
        # No wire name to change: a copy of the fields (one C call), then the values
        # to convert; a display inserts the fields one by one.
        whole = [
            "        out = d.copy()",
            *(
                f"        if (v := d[{name!r}]) is not None: out[{name!r}] = {conversion}"
                for name, conversion in converted.items()
            ),
        ]
        # Most fields given: the copy less the ones left out (a required field left
        # out is not in __dict__ at all), then the values to convert.
        most = [
            "    elif len(given) > HALF:  # the wire left a few out",
            "        out = d.copy()",
            "        for name in FIELDS - given:",
            "            out.pop(name, None)",
            *(
                f"        if (v := out.get({name!r})) is not None: out[{name!r}] = {conversion}"
                for name, conversion in converted.items()
            ),
        ]
    else:
        every = ", ".join(f"{wire!r}: {value}" for wire, value in values.items())
        whole = [f"        out = {{{every}}}"]
        most = []
    body = [
        "    if given >= FIELDS:",
        *whole,
        *most,
        "    else:  # the wire left some out",
        "        out = {}",
        *(
            f"        if {name!r} in given: out[{wire!r}] = {values[wire]}"
            for name, wire in wires.items()
        ),
    ]
    source = "\n".join(
        [
            "def convert(model):",
            "    d = model.__dict__",
            "    given = model.__pydantic_fields_set__",
            *body,
            "    extra = model.__pydantic_extra__",
            "    if extra:",
            "        for name, item in extra.items():",
            "            out[name] = item if type(item) in PRIMITIVES else _value(item)",
            "    return out",
        ]
    )
    exec(compile(source, f"<converter of {cls.__qualname__}>", "exec"), namespace)
    convert: Callable[[Any], dict[str, Any]] = namespace["convert"]
    _CONVERTERS[cls] = _VALUES[cls] = convert
    return convert


# The model classes whose converters are being written: a field of one of them (a
# class holding itself) is converted by its value's class instead of called directly.
_BUILDING: set[type] = set()
# At most this many model classes of one field's annotation are tried by identity
# before its value goes by its class (``_value``): a delta union's first is the text.
_DIRECT: Final = 3


def _conversion(annotation: Any, namespace: dict[str, Any]) -> str:
    """The expression converting ``v`` (not None) of a field annotated ``annotation``:
    the converters of the model classes it names called directly (bound in
    ``namespace``), a list of one item made without a loop, anything else by its
    class (``get``: the converters, and lists)."""
    models: list[type] = []
    items: list[type] = []
    listed = _classes(annotation, models, items)
    direct = "get(type(v), _value)(v)"
    for convert, model in reversed(_bound(models, namespace)):
        direct = f"{convert}(v) if type(v) is {model} else {direct}"
    if not listed:
        return f"({direct})"
    one = "get(type(i), _value)(i)"
    for convert, model in reversed(_bound(items, namespace)):
        one = f"{convert}(i) if type(i) is {model} else {one}"
    one = f"[{_first(one)}]"
    listing = f"([] if not v else {one} if len(v) == 1 else _list(v)) if type(v) is list"
    return f"({listing} else {direct})"


def _first(expression: str) -> str:
    """``expression`` over ``i`` with ``i`` bound to the list's one item where it is
    first read (a conditional reads its first test first)."""
    return expression.replace("type(i)", "type(i := v[0])", 1)


def _bound(models: list[type], namespace: dict[str, Any]) -> list[tuple[str, str]]:
    """The names (converter, class) that a converter's source calls the first
    ``_DIRECT`` of ``models`` by, their converters written now if need be and bound in
    ``namespace``; a class whose converter is being written is left to ``_value``."""
    names: list[tuple[str, str]] = []
    for model in models:
        if len(names) == _DIRECT:
            break
        if model in _BUILDING:
            continue
        number = len(namespace)
        namespace[f"C{number}"] = _CONVERTERS.get(model) or _converter(model)
        namespace[f"T{number}"] = model
        names.append((f"C{number}", f"T{number}"))
    return names


def _classes(annotation: Any, models: list[type], items: list[type]) -> bool:
    """Collect the model classes ``annotation`` names (``models``) and those of its
    lists' items (``items``), in order; whether it names a list."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _classes(typing.get_args(annotation)[0], models, items)
    if origin is typing.Union or origin is types.UnionType:
        listed = False
        for arg in typing.get_args(annotation):
            listed = _classes(arg, models, items) or listed
        return listed
    if origin is list or annotation is list:
        for arg in typing.get_args(annotation):
            _classes(arg, items, [])
        return True
    model = isinstance(annotation, type) and hasattr(annotation, "__pydantic_fields__")
    if model and annotation not in models:
        models.append(annotation)
    return False


def _primitive(annotation: Any) -> bool:
    """Whether a field of this annotation only ever holds JSON primitives."""
    if annotation in _PRIMITIVES:
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return all(type(arg) in _PRIMITIVES for arg in typing.get_args(annotation))
    if origin is typing.Union or origin is types.UnionType:
        return all(_primitive(arg) for arg in typing.get_args(annotation))
    return False


def _value(value: Any) -> Any:
    """A model's field value as JSON decodes it: models converted, lists and dicts
    walked, enums by their value; ``_NotJSON`` for anything JSON has no form for."""
    cls = type(value)
    if cls in _PRIMITIVES:
        return value
    if cls is list or cls is tuple:
        return [_value(item) for item in value]
    if cls is dict:
        return {key: _value(item) for key, item in value.items()}
    if isinstance(value, enum.Enum):
        return value.value
    if hasattr(cls, "__pydantic_fields__"):
        return (_CONVERTERS.get(cls) or _converter(cls))(value)
    raise _NotJSON


def _list(value: list[Any]) -> list[Any]:
    """A list field's value: its items converted by their class."""
    get = _VALUES.get
    return [get(type(item), _value)(item) for item in value] if value else []


class _NotJSON(Exception):
    """A model holds a value that is not a JSON primitive, list, dict or model."""


_VALUES[list] = _list


def _dumped(model: Any) -> dict[str, Any]:
    """A model holding a value JSON has no form for (a datetime) as pydantic writes it
    in JSON: what the wire had (a timestamp as the API sent it)."""
    dumped: dict[str, Any] = model.model_dump(
        mode="json", by_alias=True, exclude_unset=True, warnings=False
    )
    return dumped


def _what(event: object) -> str:
    """What was pushed, for a message: its class (with its module) and a short repr."""
    cls = type(event)
    module = cls.__module__
    name = cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"
    text = repr(event)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{name} {text}"


class _Counted:
    """A set's live pre-pass that counts the events given to it, so that one it
    cannot read is an ``EventError`` naming its position (``ProtocolSet.unreadable``)."""

    __slots__ = ("_position", "_pre_pass", "_protocol")

    def __init__(self, protocol: ProtocolSet, pre_pass: PrePass) -> None:
        self._protocol = protocol
        self._pre_pass = pre_pass
        self._position = 0

    def __call__(self, event: Any) -> Any:
        position = self._position
        self._position = position + 1
        try:
            return self._pre_pass(event)
        except ConversationError:  # the set's own, naming the event already
            raise
        except UNREADABLE as exc:
            raise self._protocol.unreadable(position, event, exc) from exc


class _PrePassHook:
    """Push-hook form of a live pre-pass: replaces the pushed raw event by its envelope
    (or skips it)."""

    __slots__ = ("_name", "_pre_pass")

    def __init__(self, name: str, pre_pass: PrePass) -> None:
        self._name = name
        self._pre_pass = pre_pass

    def __repr__(self) -> str:
        return f"<the {self._name} pre-pass>"

    def on_push_start(self, ctx: Any) -> None:
        """Hand the definitions the envelope of the event being pushed."""
        envelope = self._pre_pass(ctx.event)
        if envelope is None:
            ctx.skip()
        else:
            ctx.event = envelope
