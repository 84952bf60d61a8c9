"""The fold: how events become nodes.

Theory of operation
-------------------
Each registered definition becomes a ``_Registered`` entry holding its bound
members; a ``Fold`` keeps the open nodes of each entry's kind (``id -> _Record``) in
``opens``, by the entry's index. ``apply(events)`` offers each event to every entry
in registration order (rule 1: it never stops at the first claim), so one event may
drive several nodes, at most one per definition. With an ``event_type`` function, the
entries offered an event are those whose ``event_types`` admit its type: a *route* (a
tuple of slots: the entry's bound members, its index and its publication level for
that type), made once per type. Skipping a ``match`` that cannot claim is observably
the same as calling it. Entries and routes hold no engine's state, so they live in a
``Registration``, which any number of engines may share.

A start claim for an id with no open node creates a ``_Record`` whose ``seq`` is
the number of nodes started so far (rule 2). Records are never removed, so the list
of records *is* the seq order and ``seq`` is the index; updates and reopens replace
``record.state`` in place and never move a record. A start claim for an open id
reopens it: ``start`` runs again and its result replaces the old state, whose
``seq`` is kept (rule 4). An update claim for an id with no open record is counted
and dropped (rule 3).

``start`` gets a ``_Reader`` bound to the starting node's ``seq``;
``previous(kind)`` bisects that kind's records (kept in seq order) for the greatest
``seq`` below it, so a reader never sees a node started later (rule 5). Within one
event the entries run in order, so a definition registered later sees what an
earlier one started for the same event, exactly as a one-at-a-time replay would.
The reader is closed when ``start`` returns.

Events are atomic (rule 7). A route with one slot (most events: one definition can
claim them) is folded inline by ``_apply`` with nothing to undo: every call that can
raise (``match``, ``update`` or ``start``, ``publication``) comes before the slot's one
change. A route with several slots goes through ``_fold_slots``, which logs each
change and undoes the log in reverse if a later slot raises. Either way the error is
raised as ``DefinitionError`` naming the event, and events before it in the batch
stay folded. A list or tuple of events is iterated as it is, its positions read off
its iterator (counting per event would allocate an int per event); any other
iterable is read in chunks of ``_CHUNK``.

A definition may fold a *run* at once (``update_many``): with a route, the update
claims of one type on one node that follow an update of it folded inline are
gathered (a lone update never pays for a run), and folded as soon as anything else
comes (before it changes anything: a start's reader sees the run) or the batch
ends. Runs are contiguous, so a run's positions are those just before the event that
ended it; if ``update_many`` raises, the run is folded again one event at a time, so
failures are named and atomic exactly as without it. The built-in kinds use it for
streamed text: one append per run instead of one per delta.

Nodes are frozen values made lazily (rule 6): a change drops the record's cached
``Node`` (putting the record on the dirty list) and the cached tuple; ``nodes()``
refreezes dirty records only and makes a new tuple, so the tuple returned stays the
same object until the next accepted event. An update that returns the identical
state object is no change.

Publication levels are small ints so the engine can take the most urgent with
``max``: ``NONE < FRAME < IMMEDIATE``, and ``NOT_ACCEPTED`` below them all. ``level``
keeps the most urgent since the engine last looked. A slot whose publication is a
function has the level ``_CALL``, above them all, so one comparison per streamed event
both skips levels already reached and finds the calls to make.
"""

from __future__ import annotations

import difflib
import inspect
import types
from bisect import bisect_left
from collections.abc import Callable, Hashable, Iterable, Mapping
from itertools import islice
from operator import length_hint
from typing import Any, Final

from ._errors import (
    ConversationError,
    DefinitionError,
    EventError,
    RegistrationError,
    UsageError,
)
from ._types import Claim, Node

NOT_ACCEPTED: Final = -1
NONE: Final = 0
FRAME: Final = 1
IMMEDIATE: Final = 2

LEVELS: Final[dict[object, int]] = {
    "none": NONE,
    "animation-frame": FRAME,
    "immediate": IMMEDIATE,
}

_MISSING: Final = object()  # a definition member that is not there
_NEW: Final = object()  # the "old state" of a record that this event created
_NO_RUN: Final = object()  # the claim and record of no run: no match() returns it
# Functions and methods: publication values that need no Mapping check (an ABC check).
_PLAIN_CALLABLES: Final = (
    types.FunctionType,
    types.MethodType,
    types.BuiltinFunctionType,
    types.BuiltinMethodType,
)


class _Record:
    """The engine's mutable view of one node; ``node`` caches its frozen form."""

    __slots__ = ("id", "key", "kind", "node", "seq", "state")

    def __init__(self, kind: str, id: str, seq: int, state: Any) -> None:
        self.key = f"{kind}:{id}"
        self.kind = kind
        self.id = id
        self.seq = seq
        self.state = state
        # The frozen form, made lazily; None means "changed since last frozen" and
        # such a record is in Fold.dirty (possibly twice: harmless).
        self.node: Node | None = None

    def materialize(self) -> Node:
        node = self.node
        if node is None:
            node = self.node = Node(self.key, self.kind, self.id, self.seq, self.state)
        return node


def _seq_of(record: _Record) -> int:
    return record.seq


class _Registered:
    __slots__ = (
        "definition",
        "event_types",
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
        if isinstance(definition, type) and any(
            isinstance(inspect.getattr_static(definition, name, None), types.FunctionType)
            for name in ("match", "start", "update")
        ):  # its methods want an instance: every push would fail
            name = definition.__qualname__
            raise RegistrationError(
                f"definition #{index} is a class ({name}), whose methods need an instance; "
                f"register an instance: {name}()"
            )
        # Each member read once: reading a method makes a new bound method object.
        kind = getattr(definition, "kind", _MISSING)
        match = getattr(definition, "match", _MISSING)
        start = getattr(definition, "start", _MISSING)
        update = getattr(definition, "update", _MISSING)
        members = {"kind": kind, "match": match, "start": start, "update": update}
        if _MISSING in members.values():
            missing = [name for name, member in members.items() if member is _MISSING]
            raise RegistrationError(_missing_message(definition, index, missing))
        if not isinstance(kind, str) or not kind:
            raise RegistrationError(
                f"definition #{index} ({definition!r}) has kind {kind!r}; "
                "kind must be a non-empty str"
            )
        if ":" in kind:
            raise RegistrationError(
                f"definition #{index} has kind {kind!r}, which contains ':'; node keys are "
                "'kind:id', so a kind may not contain ':' — rename it"
            )
        for name in ("match", "start", "update"):
            if not callable(members[name]):
                raise RegistrationError(
                    f"definition {kind!r}: {name} is {members[name]!r}, "
                    f"not a callable; define {name}() as a function or method"
                )
        self.definition = definition
        self.kind: str = kind
        self.match: Callable[[Any], Claim | None] = match  # type: ignore[assignment]
        self.start: Callable[[Any, _Reader], Any] = start  # type: ignore[assignment]
        self.update: Callable[[Any, Any], Any] = update  # type: ignore[assignment]
        self.update_many: Callable[[Any, list[Any]], Any] | None = getattr(
            definition, "update_many", None
        )
        if self.update_many is not None and not callable(self.update_many):
            raise RegistrationError(
                f"definition {kind!r}: update_many is {self.update_many!r}, not a callable; "
                "define update_many(state, events) or leave it out"
            )
        self.index = index  # its open nodes are Fold.opens[index]

        publication = getattr(definition, "publication", None)
        self.publication: Callable[[Any], object] | None = None
        self.publication_level = IMMEDIATE
        self.publication_levels: dict[Hashable, int] | None = None
        if publication is None:
            pass
        elif type(publication) is not dict and isinstance(publication, _PLAIN_CALLABLES):
            self.publication = publication  # the common case, without the Mapping ABC check
        # A dict (or subclass) first: the Mapping ABC check costs a microsecond.
        elif isinstance(publication, dict) or isinstance(publication, Mapping):  # noqa: SIM101
            levels: dict[Hashable, int] = {}
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

        event_types = getattr(definition, "event_types", None)
        self.event_types: frozenset[Hashable] | None = None
        if type(event_types) is frozenset:
            self.event_types = event_types
        elif event_types is not None:
            if isinstance(event_types, str | bytes) or not isinstance(event_types, Iterable):
                raise RegistrationError(
                    f"definition {kind!r}: event_types is {event_types!r}; it must be a "
                    "collection of event types, e.g. frozenset({'message/delta'})"
                )
            try:
                self.event_types = frozenset(event_types)
            except TypeError as exc:
                raise RegistrationError(
                    f"definition {kind!r}: event_types must hold hashable event types"
                ) from exc

    def slot(self, event_type: Hashable, routed: bool) -> _Slot:
        """What the fold needs of this entry for events of one type, resolved once
        (shared by every engine of a ``Registration``: it holds no engine's state)."""
        if routed and self.publication_levels is not None:
            level = self.publication_levels.get(event_type, IMMEDIATE)
        elif self.publication is not None:
            level = _CALL
        else:
            level = self.publication_level
        # Runs need a route: only then are a run's events all of one type.
        many = self.update_many if routed else None
        return (self.match, self.update, self.index, self, level, many)


_CALL: Final = 3  # a slot's level when publication(event) must be called: above all levels
_CHUNK: Final = 1024  # events taken at a time from an iterable that is not a list
# Routes a registration keeps (one per event type); past it they are made again.
_ROUTES_MAX: Final = 4096
_Slot = tuple[
    Callable[[Any], Claim | None],
    Callable[[Any, Any], Any],
    int,  # the entry's index: its open nodes are Fold.opens[index]
    _Registered,
    int,
    Callable[[Any, list[Any]], Any] | None,
]
# A route is the one slot of its type's entries, folded inline by _apply(), or, for
# no slot or several, (None, None, None, slots, NOT_ACCEPTED, None) for _fold_slots().
_Route = tuple[Any, Any, Any, Any, int, Any]


def _route_of(slots: tuple[_Slot, ...]) -> _Route:
    return slots[0] if len(slots) == 1 else (None, None, None, slots, NOT_ACCEPTED, None)


def _publication(entry: _Registered, event: object) -> int:
    """The level of ``entry.publication(event)``, checked."""
    value = entry.publication(event)  # type: ignore[misc]
    level = LEVELS.get(value, NOT_ACCEPTED)
    if level < 0:
        raise _bad_publication(value)
    return level


def _bad_publication(value: object) -> _BadClaim:
    return _BadClaim(
        f"publication() returned {value!r}; it must return 'animation-frame', 'immediate' or 'none'"
    )


def _bad_id(id: object) -> _BadClaim:
    return _BadClaim(f"match() returned a Claim whose id is {id!r}; ids must be str")


def _bad_role(role: object) -> _BadClaim:
    return _BadClaim(
        f"match() returned a Claim with role {role!r}; the role must be 'start' or 'update'"
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


class _Reader:
    """The ``Reader`` handed to one ``start`` call; closed when it returns."""

    __slots__ = ("_fold", "_seq")

    def __init__(self, fold: Fold, seq: int) -> None:
        self._fold = fold
        self._seq = seq

    def previous(self, kind: str, /) -> Node | None:
        seq = self._seq
        if seq < 0:
            raise UsageError(
                "reader.previous() was called after start() returned; a reader is valid "
                "only during the start() call it was given to (read what you need there)"
            )
        records = self._fold.by_kind.get(kind)
        if not records:
            return None
        index = bisect_left(records, seq, key=_seq_of)
        return records[index - 1].materialize() if index else None

    def __repr__(self) -> str:
        return f"<Reader at seq {self._seq}>" if self._seq >= 0 else "<Reader (closed)>"


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

    __slots__ = ("_entries", "_index_of", "_route_all", "_routes", "definitions", "event_type")

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
        if event_type is not None and not callable(event_type):
            raise RegistrationError(
                f"event_type must be a function of the event, not {event_type!r}"
            )
        if event_type is None:
            for entry in registered:
                if entry.publication_levels is not None and entry.publication is None:
                    raise RegistrationError(
                        f"definition {entry.kind!r}: publication is a mapping from event "
                        "type, which needs the engine's event_type= function; pass "
                        "create_conversation_engine(..., event_type=...), or make the "
                        "mapping callable (a function of the event) for engines without one"
                    )
        self.definitions: tuple[Any, ...] = tuple(entry.definition for entry in registered)
        """The definitions, in registration order."""
        self.event_type = event_type
        """The routing function engines of this registration use (None: unrouted)."""
        self._entries: tuple[_Registered, ...] = tuple(registered)
        self._index_of = seen
        self._route_all = _route_of(tuple(entry.slot(None, False) for entry in registered))
        self._routes: dict[Hashable, _Route] = {}

    def _route(self, event_type: Hashable) -> _Route:
        """The route of ``event_type``, made once (shared by this registration's engines)."""
        route = self._routes.get(event_type)
        if route is None:
            route = _route_of(
                tuple(
                    entry.slot(event_type, True)
                    for entry in self._entries
                    if entry.event_types is None or event_type in entry.event_types
                )
            )
            routes = self._routes
            if len(routes) >= _ROUTES_MAX:  # an event_type with unbounded values
                routes.clear()
            routes[event_type] = route
        return route

    def __repr__(self) -> str:
        kinds = ", ".join(entry.kind for entry in self._entries)
        return f"<Registration of {kinds or 'no definitions'}>"


class Fold:
    """Registered definitions and the records they made. Not thread-safe: the engine
    serializes access."""

    def __init__(
        self,
        definitions: Iterable[Any] | Registration,
        event_type: Callable[[Any], Hashable] | None = None,
    ) -> None:
        if isinstance(definitions, Registration):
            if event_type is not None and event_type is not definitions.event_type:
                raise RegistrationError(
                    f"event_type={event_type!r} was passed beside a Registration made "
                    f"with event_type={definitions.event_type!r}; a registration's "
                    "engines route with its own: pass event_type to Registration only"
                )
            registration = definitions
        else:
            registration = Registration(definitions, event_type=event_type)
        entries = registration._entries
        self.registration = registration
        self.event_type = registration.event_type
        # Each entry's open nodes (id -> record), by the entry's index.
        self.opens: list[dict[str, _Record]] = [{} for _ in entries]
        self.records: list[_Record] = []
        self.by_kind: dict[str, list[_Record]] = {entry.kind: [] for entry in entries}
        self.nodes_list: list[Node | None] = []
        self.dirty: list[_Record] = []
        self.cached: tuple[Node, ...] | None = ()
        self.position = 0  # events handed to apply() or skipped so far
        self.version = 0  # accepted events so far
        self.level = NOT_ACCEPTED  # most urgent publication since the engine last looked
        self.dropped = 0
        self.unclaimed = 0  # events no definition claimed (no start or update claim)
        self.busy = False  # inside apply(): definitions are running

    # -- routing -------------------------------------------------------------------

    def _route(self, event: object) -> _Route:
        """The route of ``event``'s type (see ``Registration``). What ``event_type``
        raises goes up as it is: the caller knows the position."""
        assert self.event_type is not None
        return self.registration._route(self.event_type(event))

    # -- the fold ------------------------------------------------------------------

    def apply(self, events: Iterable[object]) -> None:
        """Fold events in order, each atomically; raise ``level`` to the most urgent
        publication level among the accepted ones.

        On a failure, the events before it stay folded, the failing one leaves no
        trace, and the error is raised. A list or tuple is folded as it is; other
        iterables in chunks of ``_CHUNK`` (``list.extend`` keeps what it got before
        the iterable raised, so an error from the events' source goes up as it is,
        after the events before it are folded).
        """
        if type(events) is list or type(events) is tuple:
            self._apply(events)
            return
        iterator = iter(events)
        while True:
            chunk: list[object] = []
            try:
                chunk.extend(islice(iterator, _CHUNK))
            except BaseException:
                self._apply(chunk)
                raise
            self._apply(chunk)
            if len(chunk) < _CHUNK:
                return

    def _apply(self, events: list[object] | tuple[object, ...]) -> None:
        """``apply`` for a list or tuple. This is the hot path: everything it touches
        per event lives in locals, and positions are read off the list's iterator
        (how many items it has left) rather than counted. An event whose route has
        one slot (the common case) is folded inline and needs no undo: every call
        that can raise comes before its one change. Other routes go through
        ``_fold_slots``. Streams are mostly accepted events, so the loop counts the
        events it rejects.

        The update claims on a node that follow its inline update, through the same
        route (whose definition has ``update_many``), are gathered into a *run*,
        folded by ``_fold_run`` as soon as any other event comes (before that event
        changes anything) or the batch ends. A run is contiguous, so its events'
        positions are the ones just before the event that ended it.
        """
        registration = self.registration
        route_all = registration._route_all
        routes = registration._routes  # shared with the registration's other engines
        event_type = self.event_type
        opens = self.opens
        dirty = self.dirty
        records = self.records
        nodes_list = self.nodes_list
        by_kind = self.by_kind
        levels = LEVELS
        first = self.position
        size = len(events)
        iterator = iter(events)
        rejected = 0
        level = NOT_ACCEPTED
        entry: Any = None
        method = ""
        claim: Any = None  # what match() returned: checked as it is used
        record: _Record | None = None
        route: _Route
        run: list[object] = []  # a run's events, not yet folded
        # The node whose updates gather into a run: the last one updated inline
        # through a route with update_many. No claim or record is _NO_RUN.
        run_record: Any = _NO_RUN
        run_route: Any = None  # no route is None: the first check below fails
        run_match: Any = None
        run_claim: Any = _NO_RUN
        back = 0  # events taken from the iterator but not consumed (a run failed)
        failure: BaseException | None = None
        whole = False  # every event was looked at
        self.busy = True
        try:
            for event in iterator:
                try:
                    method = "event_type"
                    if event_type is None:
                        route = route_all
                    else:
                        try:
                            route = routes[event_type(event)]
                        except KeyError:  # a new type (or a KeyError in event_type)
                            route = self._route(event)
                    claim = None  # until match() returns: an error names no old claim
                    if route is run_route:  # the run's slot: one match to call
                        method = "match"
                        claim = run_match(event)
                        # A definition that caches its update claims gives the run's
                        # own claim again: its record is the run's (records stay open).
                        if claim is run_claim:
                            run.append(event)
                            continue
                        match, update, index, entry, entry_level, many = route
                    else:
                        match, update, index, entry, entry_level, many = route
                        if match is None:  # no slot, or several: entry holds the slots
                            if run:
                                run, level, rejected = self._fold_run(
                                    run, run_record, run_route, level, rejected
                                )
                            if not entry:  # a type no definition takes (a ping)
                                rejected += 1
                                self.unclaimed += 1
                                continue
                            method = "slots"
                            changed = self._fold_slots(entry, event)
                            if changed is None:
                                rejected += 1
                            elif changed[1] > level:
                                level = changed[1]
                            continue
                        method = "match"
                        claim = match(event)
                    if claim is None:
                        if run:
                            run, level, rejected = self._fold_run(
                                run, run_record, run_route, level, rejected
                            )
                        rejected += 1
                        self.unclaimed += 1
                        continue
                    record = opens[index].get(claim.id)
                    if claim.role == "update":
                        if record is run_record and route is run_route:
                            run.append(event)
                            continue
                        if run:
                            run, level, rejected = self._fold_run(
                                run, run_record, run_route, level, rejected
                            )
                        if record is None:
                            self.dropped += 1
                            rejected += 1
                            continue
                        if many is not None:
                            # This update is folded now; the ones that follow it on the
                            # same node gather into a run (a lone update costs nothing more).
                            run_record = record
                            run_route = route
                            run_match = match
                            run_claim = claim
                        method = "update"
                        new = update(record.state, event)
                        if new is record.state:
                            rejected += 1
                            continue
                        # One test in the common case (a constant level no more urgent
                        # than the batch's so far): _CALL is above every level.
                        if entry_level > level:
                            if entry_level == _CALL:  # inline: streamed deltas come here
                                method = "publication"
                                value = entry.publication(event)
                                entry_level = levels.get(value, NOT_ACCEPTED)
                                if entry_level < 0:
                                    raise _bad_publication(value)
                                if entry_level > level:
                                    level = entry_level
                            else:
                                level = entry_level
                        record.state = new  # Fold._set, inline: the hot path
                        if record.node is not None:
                            record.node = None
                            dirty.append(record)
                    elif claim.role == "start":
                        if run:
                            run, level, rejected = self._fold_run(
                                run, run_record, run_route, level, rejected
                            )
                        if entry_level == _CALL:
                            method = "publication"
                            entry_level = _publication(entry, event)
                        method = "start"
                        if record is not None:  # a reopen
                            record = self._start(entry, claim, record, event)
                        else:  # Fold._start, inline: a node per few events in short streams
                            id = claim.id
                            if type(id) is not str:
                                raise _bad_id(id)
                            seq = len(records)
                            reader = _Reader(self, seq)
                            try:
                                state = entry.start(event, reader)
                            finally:
                                reader._seq = -1
                            record = _Record(entry.kind, id, seq, state)
                            records.append(record)
                            nodes_list.append(None)
                            by_kind[entry.kind].append(record)
                            dirty.append(record)
                            opens[index][id] = record
                        if entry_level > level:
                            level = entry_level
                    else:
                        raise _bad_role(claim.role)
                except BaseException as exc:
                    failure = exc
                    if type(exc) is _RunFailed:  # a run's event failed; this one was not folded
                        run = []
                        level, rejected, back = exc.level, exc.rejected, exc.after + 1
                    else:
                        rejected += 1
                    break
            else:
                whole = True
        finally:
            # One commit for every way out. A failed event is consumed and changed
            # nothing; an exception between two events (KeyboardInterrupt) goes up as
            # it is, after the events before it are committed. (Asking the iterator
            # how many it has left costs more than folding one event: only done when
            # the loop stopped early.)
            if run:  # the run the batch (or a failure) ended: it came first
                try:
                    _, level, rejected = self._fold_run(run, run_record, run_route, level, rejected)
                except _RunFailed as exc:
                    level, rejected, back = exc.level, exc.rejected, exc.after
                    if failure is not None:  # the event after the run failed: not consumed
                        back += 1
                        rejected -= 1
                    failure = exc
            self.busy = False
            taken = (size if whole else size - length_hint(iterator)) - back
            self.position = first + taken
            accepted = taken - rejected
            if accepted:
                self.version += accepted
                self.cached = None
                if level > self.level:
                    self.level = level
        if failure is not None:
            if isinstance(failure, _Failed):  # from _fold_slots or _fold_run: says who failed
                failure, entry, method, claim, record = failure.args
            raise _failure(failure, entry, method, self.position - 1, claim, record)

    def _fold_run(
        self, run: list[object], record: _Record, route: _Route, level: int, rejected: int
    ) -> tuple[list[object], int, int]:
        """Fold a run of update claims on ``record`` through ``route`` and return
        ``([], level, rejected)`` updated (the caller's next run, and its counts).

        A run of several events goes to the definition's ``update_many`` at once;
        should it (or a ``publication`` call) raise, the events are folded again one
        at a time, so those before the failing one stay folded and the error names
        the failing event, as if there were no ``update_many``. A run that changed
        its node counts all its events as accepted. Raises ``_RunFailed``.
        """
        _, update, _, entry, entry_level, many = route
        state = record.state
        if len(run) > 1:
            try:
                new = many(state, run)
                if new is state:
                    return [], level, rejected + len(run)
                if entry_level == _CALL:
                    publication = entry.publication
                    levels = LEVELS
                    for event in run:
                        event_level = levels.get(publication(event), NOT_ACCEPTED)
                        if event_level > level:
                            level = event_level
                        elif event_level < 0:  # a bad value: named below, one at a time
                            raise _BadClaim
                elif entry_level > level:
                    level = entry_level
            except Exception:  # folded again one at a time below, to name the event
                pass
            except BaseException as exc:  # KeyboardInterrupt: nothing of the run is folded
                raise _run_failed(exc, entry, "update", record, level, rejected, len(run)) from None
            else:
                self._set(record, new)
                return [], level, rejected
        method = "update"
        index = 0
        try:
            for index, event in enumerate(run):  # noqa: B007 - index names the failure
                method = "update"
                old = record.state
                new = update(old, event)
                if new is old:
                    rejected += 1
                    continue
                event_level = entry_level
                if event_level == _CALL:
                    method = "publication"
                    event_level = _publication(entry, event)
                if event_level > level:
                    level = event_level
                self._set(record, new)
        except BaseException as exc:
            after = len(run) - index - 1
            raise _run_failed(exc, entry, method, record, level, rejected + 1, after) from None
        return [], level, rejected

    def apply_one(self, event: object) -> tuple[str, ...]:
        """Fold one event as ``apply`` does; the keys of the nodes it changed (for push
        hooks' ``ctx.changed``)."""
        position = self.position
        changed = None
        failure: BaseException | None = None
        self.busy = True
        try:
            try:
                if self.event_type is None:
                    route = self.registration._route_all
                else:
                    route = self._route(event)
            except BaseException as exc:
                failure = _failure(exc, None, "event_type", position, None, None)
            else:
                slots: tuple[_Slot, ...] = route[3] if route[0] is None else (route,)
                changed = self._fold_slots(slots, event)
        except _Failed as failed:
            error, entry, method, claim, record = failed.args
            failure = _failure(error, entry, method, position, claim, record)
        finally:
            self.busy = False
            self.position = position + 1
        if failure is not None:
            raise failure
        if changed is None:
            return ()
        records, level = changed
        self.version += 1
        self.cached = None
        if level > self.level:
            self.level = level
        return tuple(record.key for record in records)

    def _fold_slots(
        self, slots: tuple[_Slot, ...], event: object
    ) -> tuple[tuple[_Record, ...], int] | None:
        """Fold one event through several slots (or none): the changed records and
        the most urgent level, or None if nothing changed. Changes are logged and
        undone in reverse if a slot raises; then ``_Failed`` is raised, saying who
        failed (the caller knows the position)."""
        changes: list[tuple[_Record, Any, Node | None]] = []
        event_level = NOT_ACCEPTED
        entry: _Registered | None = None
        method = "match"
        claim: object = None
        record: _Record | None = None
        failure: BaseException | None = None
        claimed = False
        try:
            for match, update, index, entry, entry_level, _many in slots:
                method = "match"
                claim = None
                claim = match(event)
                if claim is None:
                    continue
                claimed = True
                record = self.opens[index].get(claim.id)
                role = claim.role
                if role == "update":
                    if record is None:
                        self.dropped += 1
                        continue
                    method = "update"
                    old = record.state
                    new = update(old, event)
                    if new is old:
                        continue
                    old_node = record.node
                    if entry_level == _CALL:
                        method = "publication"
                        entry_level = _publication(entry, event)
                    changes.append((record, old, old_node))
                    self._set(record, new)
                elif role == "start":
                    if entry_level == _CALL:
                        method = "publication"
                        entry_level = _publication(entry, event)
                    method = "start"
                    # Logged once start returned: until then nothing has changed.
                    old, old_node = (_NEW, None) if record is None else (record.state, record.node)
                    record = self._start(entry, claim, record, event)
                    changes.append((record, old, old_node))
                else:
                    raise _bad_role(role)
                if entry_level > event_level:
                    event_level = entry_level
        except BaseException as exc:
            for change in reversed(changes):
                self._undo(*change)
            failure = exc
        if failure is not None:
            raise _Failed(failure, entry, method, claim, record)
        if not claimed:
            self.unclaimed += 1
        if not changes:
            return None
        return tuple(change[0] for change in changes), event_level

    def _start(
        self, entry: _Registered, claim: Claim, record: _Record | None, event: object
    ) -> _Record:
        """Start a node for ``claim`` (``record`` None) or reopen ``record``; either way
        nothing changes unless ``start`` returns."""
        if record is not None:
            self._set(record, self._call_start(entry, event, record.seq))
            return record
        id = claim.id
        if type(id) is not str:
            raise _bad_id(id)
        seq = len(self.records)
        record = _Record(entry.kind, id, seq, self._call_start(entry, event, seq))
        self.records.append(record)
        self.nodes_list.append(None)
        self.by_kind[entry.kind].append(record)
        self.dirty.append(record)
        self.opens[entry.index][id] = record
        return record

    def _set(self, record: _Record, state: Any) -> None:
        """``record``'s new state: its cached node is dropped and it goes on the dirty
        list (``_apply`` does the same inline for the common update)."""
        record.state = state
        if record.node is not None:
            record.node = None
            self.dirty.append(record)

    def _call_start(self, entry: _Registered, event: object, seq: int) -> Any:
        """``entry.start`` with a reader of the nodes before ``seq``, closed after."""
        reader = _Reader(self, seq)
        try:
            return entry.start(event, reader)
        finally:
            reader._seq = -1

    def _undo(self, record: _Record, old: Any, node: Node | None) -> None:
        if old is _NEW:
            self.records.pop()
            self.nodes_list.pop()
            self.by_kind[record.kind].pop()
            del self.opens[self.registration._index_of[record.kind]][record.id]
        else:
            record.state = old
            record.node = node

    def nodes(self) -> tuple[Node, ...]:
        cached = self.cached
        if cached is not None:
            return cached
        nodes_list = self.nodes_list
        for record in self.dirty:
            node = record.node  # _Record.materialize, inline: once per changed node
            seq = record.seq
            if node is None:
                node = record.node = Node(record.key, record.kind, record.id, seq, record.state)
            nodes_list[seq] = node
        self.dirty.clear()
        cached = self.cached = tuple(nodes_list)  # type: ignore[arg-type]
        return cached


def _failure(
    exc: BaseException,
    entry: _Registered | None,
    method: str,
    position: int,
    claim: object,
    record: _Record | None,
) -> BaseException:
    """The exception to raise for ``exc``, raised while folding event ``position``."""
    if not isinstance(exc, Exception):
        return exc  # KeyboardInterrupt and the like go up as they are
    error: ConversationError
    if entry is None or method == "event_type":  # routing failed: no definition ran
        if isinstance(exc, EventError):
            return exc
        error = EventError(f"event_type() failed for event #{position}: {exc!r}", position=position)
    else:
        error = _definition_error(exc, entry, method, position, claim, record)
        if isinstance(exc, _BadClaim):
            return error  # the message says it all; the internal class is no cause
    error.__cause__ = exc
    return error


class _Failed(Exception):
    """Raised by ``_fold_slots`` once undone: (exception, entry, method, claim, record)."""


class _RunFailed(_Failed):
    """Raised by ``_fold_run``: a ``_Failed`` that also carries the batch's ``level``
    and ``rejected`` count so far and how many of the run's events come ``after`` the
    failing one (not consumed)."""

    level: int
    rejected: int
    after: int


def _run_failed(
    exc: BaseException,
    entry: _Registered,
    method: str,
    record: _Record,
    level: int,
    rejected: int,
    after: int,
) -> _RunFailed:
    failed = _RunFailed(exc, entry, method, Claim(record.id, "update"), record)
    failed.level, failed.rejected, failed.after = level, rejected, after
    return failed


class _BadClaim(Exception):
    """A definition returned a value outside its contract."""


def _definition_error(
    exc: Exception,
    entry: _Registered,
    method: str,
    position: int,
    claim: object,
    record: _Record | None,
) -> DefinitionError:
    kind = entry.kind
    key: str | None = None
    if isinstance(claim, Claim):
        key = record.key if record is not None else f"{kind}:{claim.id}"
    if isinstance(exc, _BadClaim):
        what = str(exc)
    elif method == "match" and claim is not None and not isinstance(claim, Claim):
        what = f"match() returned {claim!r}; it must return Claim(id, role) or None"
        exc = _BadClaim(what)
    else:
        what = f"{method}() raised {type(exc).__name__}: {exc}"
    where = f" at event #{position}" + (f", key {key}" if key else "")
    message = f"definition {kind!r} {what}{where}"
    return DefinitionError(message, kind=kind, method=method, position=position, key=key)
