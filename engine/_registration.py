"""Registration: definitions validated once, and what each event type is offered to.

A ``_Registered`` entry holds one definition's members, read and checked once (a
definition changed after it was registered is not looked at again). A ``_Slot`` is
what the fold needs of one entry for events of one type (its bound members, its
publication level or function, its ``update_many``); a ``_Route`` is the slots, in
registration order, that an event of one type is offered to. With an
``event_type`` function a route leaves out the entries whose ``event_types`` cannot
claim the type, which is observably the same as calling their ``match``; a type
that no entry *admits* (no ``event_types`` of None or holding it) but those declared
``fallback`` goes to every ``fallback`` entry, so an event nobody expects reaches a
definition that can say so. Both are decided once per type, when its route is made.
Entries and routes hold no engine's state, so a ``Registration`` may serve many
engines.
"""

from __future__ import annotations

import difflib
import enum
import inspect
import types
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, Final

from ._errors import RegistrationError
from ._types import Claim


class Level(enum.IntEnum):
    """How urgently subscribers hear of a change; the most urgent of a batch wins."""

    NOT_ACCEPTED = -1  # no change: below every publication
    NONE = 0
    FRAME = 1
    IMMEDIATE = 2


NOT_ACCEPTED: Final = Level.NOT_ACCEPTED
NONE: Final = Level.NONE
FRAME: Final = Level.FRAME
IMMEDIATE: Final = Level.IMMEDIATE

LEVELS: Final[dict[object, Level]] = {
    "none": NONE,
    "animation-frame": FRAME,
    "immediate": IMMEDIATE,
}

# Routes a registration keeps (one per event type); past it they are made again.
_ROUTES_MAX: Final = 4096
# Functions and methods: publication values that need no Mapping check (an ABC check).
_PLAIN_CALLABLES: Final = (
    types.FunctionType,
    types.MethodType,
    types.BuiltinFunctionType,
    types.BuiltinMethodType,
)
_REQUIRED: Final = ("kind", "match", "start", "update")


class _Absent:
    """The value of a definition member that is not there."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<absent>"


_ABSENT: Final = _Absent()


class _Registered:
    """One definition's members, read and validated once."""

    __slots__ = (
        "definition",
        "event_types",
        "fallback",
        "index",
        "kind",
        "match",
        "publication",
        "publication_level",
        "publication_levels",
        "start",
        "update",
        "update_many",
    )

    def __init__(self, definition: Any, index: int) -> None:
        _reject_a_class(definition, index)
        # Each member read once: reading a method makes a new bound method object.
        members: dict[str, Any] = {name: getattr(definition, name, _ABSENT) for name in _REQUIRED}
        missing = [name for name, member in members.items() if member is _ABSENT]
        if missing:
            raise RegistrationError(_missing_message(definition, index, missing))
        kind = _checked_kind(members["kind"], definition, index)
        for name in ("match", "start", "update"):
            if not callable(members[name]):
                raise RegistrationError(
                    f"definition {kind!r}: {name} is {members[name]!r}, "
                    f"not a callable; define {name}() as a function or method"
                )
        self.definition = definition
        self.kind: str = kind
        self.index = index  # its open nodes are Fold.opens[index]
        self.match: Callable[[Any], Claim | None] = members["match"]
        self.start: Callable[[Any, Any], Any] = members["start"]
        self.update: Callable[[Any, Any], Any] = members["update"]
        self.update_many: Callable[[Any, list[Any]], Any] | None = getattr(
            definition, "update_many", None
        )
        if self.update_many is not None and not callable(self.update_many):
            raise RegistrationError(
                f"definition {kind!r}: update_many is {self.update_many!r}, not a callable; "
                "define update_many(state, events) or leave it out"
            )
        self.publication: Callable[[Any], object] | None = None
        self.publication_level = IMMEDIATE
        self.publication_levels: dict[Hashable, Level] | None = None
        self._read_publication(getattr(definition, "publication", None))
        self.event_types = _checked_event_types(getattr(definition, "event_types", None), kind)
        self.fallback: bool = getattr(definition, "fallback", False)
        if type(self.fallback) is not bool:
            raise RegistrationError(
                f"definition {kind!r}: fallback is {self.fallback!r}; it must be True (also "
                "take the event types no other definition admits) or False"
            )

    def admits(self, event_type: Hashable) -> bool:
        """Whether ``event_types`` lets events of ``event_type`` reach ``match``."""
        return self.event_types is None or event_type in self.event_types

    def _read_publication(self, publication: object) -> None:
        """A function, a mapping from event type, or a constant (see ``Definition``)."""
        kind = self.kind
        if publication is None:
            return
        if type(publication) is not dict and isinstance(publication, _PLAIN_CALLABLES):
            self.publication = publication  # the common case, without the Mapping ABC check
        # A dict (or subclass) first: the Mapping ABC check costs a microsecond.
        elif isinstance(publication, dict) or isinstance(publication, Mapping):  # noqa: SIM101
            levels: dict[Hashable, Level] = {}
            for key, value in publication.items():
                level = LEVELS.get(value)
                if level is None:
                    raise RegistrationError(
                        f"definition {kind!r}: publication maps to {value!r}; use one of "
                        "'animation-frame', 'immediate' or 'none'"
                    )
                levels[key] = level
            self.publication_levels = levels
            if callable(publication):  # also a function: what an unrouted engine calls
                self.publication = publication
        elif isinstance(publication, str):
            level = LEVELS.get(publication)
            if level is None:
                raise RegistrationError(
                    f"definition {kind!r}: publication is {publication!r}; use one of "
                    "'animation-frame', 'immediate' or 'none' (or a function of the event "
                    "returning one)"
                )
            self.publication_level = level
        elif callable(publication):
            self.publication = publication
        else:
            raise RegistrationError(
                f"definition {kind!r}: publication is {publication!r}; it must be a "
                "function of the event, a mapping from event type to publication, or one "
                "of 'animation-frame', 'immediate', 'none'"
            )

    def slot(self, event_type: Hashable, routed: bool) -> _Slot:
        """What the fold needs of this entry for events of one type, resolved once."""
        if routed and self.publication_levels is not None:
            return _Slot(self, self.publication_levels.get(event_type, IMMEDIATE), None, routed)
        return _Slot(self, self.publication_level, self.publication, routed)


class _Slot:
    """One definition as events of one type meet it: its bound members, and either a
    constant publication ``level`` or a ``publication`` function to call."""

    __slots__ = (
        "index",
        "kind",
        "level",
        "many",
        "match",
        "publication",
        "runs",
        "start",
        "update",
    )

    def __init__(
        self,
        entry: _Registered,
        level: Level,
        publication: Callable[[Any], object] | None,
        routed: bool,
    ) -> None:
        self.kind = entry.kind
        self.index = entry.index  # its open nodes are Fold.opens[index]
        self.match = entry.match
        self.start = entry.start
        self.update = entry.update
        # Runs need a route: only then are a run's events all of one type.
        self.runs = routed
        self.many = entry.update_many if routed else None
        self.level = level  # used when publication is None
        self.publication = publication

    def __repr__(self) -> str:
        return f"<slot of {self.kind!r}>"


class _Route:
    """The slots an event of one type is offered to, in registration order (rule 1);
    ``single`` is the slot when there is exactly one (most routes), else None."""

    __slots__ = ("matches", "single", "slots")

    def __init__(self, slots: tuple[_Slot, ...]) -> None:
        self.slots = slots
        self.single = slots[0] if len(slots) == 1 else None
        # (match, slot) for each slot: unpacking a pair costs less than reading
        # slot.match, a tenth of Fold._event's own time for five definitions.
        self.matches = tuple((slot.match, slot) for slot in slots)

    def __repr__(self) -> str:
        return f"<route to {', '.join(slot.kind for slot in self.slots) or 'nobody'}>"


class Registration:
    """Definitions registered once, for any number of engines.

    ``create_conversation_engine(definitions)`` validates the definitions and works
    out, per event type, which of them an event can reach (its *route*). Both depend
    on the definitions alone, so an application making many engines of the same
    definitions (one per conversation, per request, per recording) can do it once:
    ``create_conversation_engine(Registration(definitions, event_type=...))``. Engines
    made from one registration share its validated members and its routes (made as
    event types first come, by whichever engine meets them first) and nothing else:
    each has its own nodes. Read the members once: a definition changed after it was
    registered is not looked at again.

    Raises ``RegistrationError`` as ``create_conversation_engine`` does.
    """

    __slots__ = ("_entries", "_route_all", "_routes", "definitions", "event_type")

    def __init__(
        self,
        definitions: Iterable[Any],
        *,
        event_type: Callable[[Any], Hashable] | None = None,
    ) -> None:
        # A tuple or list needs no ABC check (about half a microsecond).
        if type(definitions) not in (tuple, list) and (
            isinstance(definitions, str | bytes) or not isinstance(definitions, Iterable)
        ):
            raise RegistrationError(
                f"definitions must be an iterable of definitions, not {definitions!r}"
            )
        if event_type is not None and not callable(event_type):
            raise RegistrationError(
                f"event_type must be a function of the event, not {event_type!r}"
            )
        registered: list[_Registered] = []
        seen: dict[str, int] = {}
        for index, definition in enumerate(definitions):
            entry = _Registered(definition, index)
            if entry.kind in seen:
                raise RegistrationError(
                    f"definitions #{seen[entry.kind]} and #{index} both have kind "
                    f"{entry.kind!r}; kinds must be unique — rename one of them"
                )
            seen[entry.kind] = index
            registered.append(entry)
        if event_type is None:
            _check_unrouted(registered)
        self.definitions: tuple[Any, ...] = tuple(entry.definition for entry in registered)
        """The definitions, in registration order."""
        self.event_type = event_type
        """The routing function engines of this registration use (None: unrouted)."""
        self._entries: tuple[_Registered, ...] = tuple(registered)
        # Unrouted, every event takes this route; routed, none does.
        self._route_all: _Route | None = None
        if event_type is None:
            self._route_all = _Route(tuple(entry.slot(None, False) for entry in registered))
        self._routes: dict[Hashable, _Route] = {}

    def _route(self, event_type: Hashable) -> _Route:
        """The route of ``event_type``, made once (shared by this registration's engines)."""
        route = self._routes.get(event_type)
        if route is None:
            entries = [entry for entry in self._entries if entry.admits(event_type)]
            if all(entry.fallback for entry in entries):  # no other definition admits it
                entries = [e for e in self._entries if e.fallback or e.admits(event_type)]
            route = _Route(tuple(entry.slot(event_type, True) for entry in entries))
            routes = self._routes
            if len(routes) >= _ROUTES_MAX:  # an event_type with unbounded values
                routes.clear()
            routes[event_type] = route
        return route

    def __repr__(self) -> str:
        kinds = ", ".join(entry.kind for entry in self._entries)
        return f"<Registration of {kinds or 'no definitions'}>"


def _reject_a_class(definition: object, index: int) -> None:
    """A class whose members are instance methods would fail at the first push."""
    if isinstance(definition, type) and any(
        isinstance(inspect.getattr_static(definition, name, None), types.FunctionType)
        for name in ("match", "start", "update")
    ):
        name = definition.__qualname__
        raise RegistrationError(
            f"definition #{index} is a class ({name}), whose methods need an instance; "
            f"register an instance: {name}()"
        )


def _checked_kind(kind: object, definition: object, index: int) -> str:
    if not isinstance(kind, str) or not kind:
        raise RegistrationError(
            f"definition #{index} ({definition!r}) has kind {kind!r}; kind must be a non-empty str"
        )
    if ":" in kind:
        raise RegistrationError(
            f"definition #{index} has kind {kind!r}, which contains ':'; node keys are "
            "'kind:id', so a kind may not contain ':' — rename it"
        )
    return kind


def _checked_event_types(event_types: object, kind: str) -> frozenset[Hashable] | None:
    if event_types is None or type(event_types) is frozenset:
        return event_types
    if isinstance(event_types, str | bytes) or not isinstance(event_types, Iterable):
        raise RegistrationError(
            f"definition {kind!r}: event_types is {event_types!r}; it must be a "
            "collection of event types, e.g. frozenset({'message/delta'})"
        )
    try:
        return frozenset(event_types)
    except TypeError as exc:
        raise RegistrationError(
            f"definition {kind!r}: event_types must hold hashable event types"
        ) from exc


def _check_unrouted(registered: list[_Registered]) -> None:
    for entry in registered:
        if entry.publication_levels is not None and entry.publication is None:
            raise RegistrationError(
                f"definition {entry.kind!r}: publication is a mapping from event "
                "type, which needs the engine's event_type= function; pass "
                "create_conversation_engine(..., event_type=...), or make the "
                "mapping callable (a function of the event) for engines without one"
            )


def _missing_message(definition: object, index: int, missing: list[str]) -> str:
    kind = getattr(definition, "kind", None)
    who = f"definition {kind!r}" if isinstance(kind, str) else f"definition #{index}"
    hints = []
    names = [name for name in dir(definition) if not name.startswith("__")]
    for name in missing:
        close = difflib.get_close_matches(name, names, n=1)
        if close:
            hints.append(f"did you mean to name {close[0]!r} {name!r}?")
    message = (
        f"{who} ({definition!r}) has no {', '.join(repr(m) for m in missing)}; a definition "
        "needs kind, match, start and update (publication and event_types are optional)"
    )
    return message + ("; " + " ".join(hints) if hints else "")
