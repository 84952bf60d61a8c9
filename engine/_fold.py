"""The fold: how events become nodes.

Where each rule of DESIGN.md ("Semantics") is implemented, once:

====  ==========================================  ====================================
rule  what                                        where
====  ==========================================  ====================================
1     every definition sees every event           ``Fold._event`` (every slot's match,
                                                  in order) and the one-slot route in
                                                  ``Fold._apply``; ``_Route`` leaves
                                                  out only matches that cannot claim
2     seq counts starts, in event then            ``Fold._claim``
      registration order; kept for life
3     an update with no open node is dropped      ``Fold._claim``
4     a repeated start reopens in place           ``Fold._claim``
5     ``reader.previous`` looks backward only     ``_Reader.previous``
6     identity means no change; frozen nodes,     ``Fold._claim`` (and ``Fold._fold_run``
      the same tuple until a change               for a run); ``Fold.nodes``
7     events are atomic; the error names who,     ``Fold._event`` (an ``_Undo`` log when
      where and why                               several claim), ``Fold._apply`` (one
                                                  commit), ``_error``
====  ==========================================  ====================================

Theory of operation
-------------------
``Fold._claim`` folds one claim of one definition: every call that can raise
(``update`` or ``start``, ``publication``) comes before its one change, so a single
claim needs nothing undone; given an ``_Undo`` it logs the change first. An event
offered to several definitions (``Fold._event``) is matched by every one of them
first (``match`` is pure, so when it is called is not observable); one claim is
folded as it is, several with an ``_Undo`` that is reverted if a later one raises.

Records are never removed, so the list of records *is* the seq order and ``seq``
is the index. ``start`` gets a ``_Reader`` bound to the starting node's ``seq``.

A definition may fold a *run* at once (``update_many``): with a route, the update
claims on one node that follow an update of it are gathered (the one inline code
path the hot loop keeps) and folded by ``_fold_run`` as soon as anything else comes
or the batch ends; if ``update_many`` raises, the run is folded again through
``_claim``, one event at a time, so failures are named and atomic as without it.

Nodes are frozen lazily: a change drops the record's cached ``Node`` and puts the
record on the dirty list; ``nodes()`` refreezes dirty records only.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Hashable, Iterable
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
from ._registration import (
    FRAME,
    IMMEDIATE,
    LEVELS,
    NONE,
    NOT_ACCEPTED,
    Level,
    Registration,
    _Route,
    _Slot,
)
from ._types import Claim, Node

__all__ = ["FRAME", "IMMEDIATE", "NONE", "NOT_ACCEPTED", "Fold", "Level", "Registration"]

_CHUNK: Final = 1024  # events taken at a time from an iterable that is not a list


class _Record:
    """The engine's mutable view of one node; ``node`` caches its frozen form."""

    __slots__ = ("id", "index", "key", "kind", "node", "seq", "state")

    def __init__(self, slot: _Slot, id: str, seq: int, state: Any) -> None:
        self.key = f"{slot.kind}:{id}"
        self.kind = slot.kind
        self.index = slot.index  # its definition's: the record is in Fold.opens[index]
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


class _Reader:
    """The ``Reader`` handed to one ``start`` call; closed when it returns."""

    __slots__ = ("_fold", "_seq")

    def __init__(self, fold: Fold, seq: int) -> None:
        self._fold = fold
        self._seq = seq

    def previous(self, kind: str, /) -> Node | None:
        """Rule 5: bisect ``kind``'s records (kept in seq order) below our ``seq``."""
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


class _Change:
    """One entry of an ``_Undo`` log: a record as it was before the event changed it
    (``created``: the event made it)."""

    __slots__ = ("created", "node", "record", "state")

    def __init__(self, record: _Record, created: bool) -> None:
        self.record = record
        self.state = record.state
        self.node = record.node
        self.created = created


class _Undo:
    """What one event changed so far, to revert if a later claim of it fails (rule 7)."""

    __slots__ = ("changes", "dropped", "fold")

    def __init__(self, fold: Fold) -> None:
        self.fold = fold
        self.dropped = fold.dropped
        self.changes: list[_Change] = []

    def revert(self) -> None:
        fold = self.fold
        for change in reversed(self.changes):
            record = change.record
            if change.created:
                fold.records.pop()
                fold.nodes_list.pop()
                fold.by_kind[record.kind].pop()
                del fold.opens[record.index][record.id]
                # Off the dirty list too: nodes() would write its seq, now someone else's.
                dirty = fold.dirty
                for at in range(len(dirty) - 1, -1, -1):
                    if dirty[at] is record:
                        del dirty[at]
                        break
            else:
                record.state = change.state
                record.node = change.node
        fold.dropped = self.dropped

    def keys(self) -> tuple[str, ...]:
        return tuple(change.record.key for change in self.changes)


class _Run:
    """The node whose update claims gather into runs (the last one updated inline
    through a route with ``update_many``), and its ``events`` not yet folded."""

    __slots__ = ("claim", "events", "record", "rejected", "slot")

    def __init__(self, slot: _Slot, claim: Claim, record: _Record) -> None:
        self.slot = slot
        self.claim = claim
        self.record = record
        self.events: list[object] = []
        self.rejected = 0  # of its events, those that changed nothing (set once folded)

    def takes(self, claim: object, fold: Fold) -> bool:
        """Whether ``claim`` is one more update of this run's node (an equal claim
        that is not the same object)."""
        if not isinstance(claim, Claim) or claim.role != "update":
            return False
        try:
            return fold.opens[self.slot.index].get(claim.id) is self.record
        except TypeError:  # an unhashable id: _claim names it
            return False


class _Failed(Exception):
    """A definition (or ``event_type``) raised while one event was folded; says who."""

    def __init__(
        self,
        error: Exception,
        slot: _Slot | None,
        method: str,
        claim: object = None,
        record: _Record | None = None,
    ) -> None:
        super().__init__(error)
        self.error = error
        self.slot = slot
        self.method = method
        self.claim = claim
        self.record = record


class _RunFailed(Exception):
    """An event of a run failed once folded one at a time: ``cause`` (a ``_Failed``, or
    a ``KeyboardInterrupt`` and the like), the run's ``level`` and ``rejected`` count
    up to it (itself included), and how many of its events come ``after`` it."""

    def __init__(self, cause: BaseException, level: Level, rejected: int, after: int) -> None:
        super().__init__(cause)
        self.cause = cause
        self.level = level
        self.rejected = rejected
        self.after = after


class _BadClaim(Exception):
    """A definition returned a value outside its contract."""


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
        # Each definition's open nodes (id -> record), by its index.
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

    # -- rules 2, 3, 4 and 6: one claim ------------------------------------------------

    def _claim(self, slot: _Slot, claim: Claim, event: object, undo: _Undo | None) -> Level:
        """Fold ``event`` into the node ``claim`` names among ``slot``'s: update it, an
        identical state being no change (rule 6), or drop an update of no open node
        (rule 3); start it with the next seq (rule 2), or reopen it in place (rule 4).
        Returns the change's publication level, ``NOT_ACCEPTED`` for none.

        Raises ``_Failed``, having changed nothing: every call that can raise
        (``update`` or ``start``, then ``publication``) comes before the one change,
        which is logged to ``undo`` when there is one.
        """
        try:
            id = claim.id
            role = claim.role
            record = self.opens[slot.index].get(id)
        except Exception as exc:  # not a Claim, or an unhashable id
            raise _Failed(exc, slot, "match", claim) from None
        if role == "update":
            if record is None:
                self.dropped += 1
                return NOT_ACCEPTED
            old = record.state
            try:
                new = slot.update(old, event)
            except Exception as exc:
                raise _Failed(exc, slot, "update", claim, record) from None
            if new is old:
                return NOT_ACCEPTED
        elif role == "start":
            if record is None and type(id) is not str:
                raise _Failed(_bad_id(id), slot, "match", claim)
            new = self._start(slot, claim, record, event)
        else:
            raise _Failed(_bad_role(role), slot, "match", claim, record)
        publication = slot.publication
        if publication is None:
            level = slot.level
        else:
            try:
                value = publication(event)
                level = LEVELS.get(value)  # type: ignore[assignment]
            except Exception as exc:
                raise _Failed(exc, slot, "publication", claim, record) from None
            if level is None:
                raise _Failed(_bad_publication(value), slot, "publication", claim, record)
        if record is None:  # a new node, last in seq order
            record = _Record(slot, id, len(self.records), new)
            self.records.append(record)
            self.nodes_list.append(None)
            self.by_kind[slot.kind].append(record)
            self.dirty.append(record)
            self.opens[slot.index][id] = record
            if undo is not None:
                undo.changes.append(_Change(record, True))
            return level
        if undo is not None:
            undo.changes.append(_Change(record, False))
        record.state = new  # an update, or a reopen: the old state is discarded, seq kept
        if record.node is not None:
            record.node = None
            self.dirty.append(record)
        return level

    def _start(self, slot: _Slot, claim: Claim, record: _Record | None, event: object) -> Any:
        """``slot.start`` with a reader of the nodes before the starting node's seq
        (a reopened node's own, kept), closed after."""
        reader = _Reader(self, len(self.records) if record is None else record.seq)
        try:
            return slot.start(event, reader)
        except Exception as exc:
            raise _Failed(exc, slot, "start", claim, record) from None
        finally:
            reader._seq = -1

    # -- rules 1 and 7: one event ------------------------------------------------------

    def _event(self, route: _Route, event: object, undo: _Undo | None = None) -> Level:
        """Offer ``event`` to every slot of ``route`` (rule 1), then fold the claims in
        registration order, atomically (rule 7): one claim as it is, several (or any,
        given ``undo``) logging to an undo log reverted if one raises. Returns the most
        urgent level, ``NOT_ACCEPTED`` if nothing changed; raises ``_Failed``."""
        first: Any = None
        claimed: _Slot | None = None
        more: list[tuple[_Slot, Claim]] | None = None
        for slot in route.slots:
            try:
                claim = slot.match(event)
            except Exception as exc:
                raise _Failed(exc, slot, "match") from None
            if claim is None:
                continue
            if claimed is None:
                claimed, first = slot, claim
            elif more is None:
                more = [(slot, claim)]
            else:
                more.append((slot, claim))
        if claimed is None:
            self.unclaimed += 1
            return NOT_ACCEPTED
        if more is None and undo is None:
            return self._claim(claimed, first, event, None)
        if undo is None:
            undo = _Undo(self)
        try:
            level = self._claim(claimed, first, event, undo)
            for slot, claim in more or ():
                level = max(level, self._claim(slot, claim, event, undo))
        except BaseException:
            undo.revert()
            raise
        return level

    def _route(self, event: object) -> _Route:
        """The route of ``event``'s type (see ``Registration``)."""
        assert self.event_type is not None
        try:
            event_type = self.event_type(event)
        except Exception as exc:
            raise _Failed(exc, None, "event_type") from None
        try:
            return self.registration._route(event_type)
        except TypeError as exc:  # an unhashable event type
            raise _Failed(exc, None, "event_type") from None

    # -- batches -------------------------------------------------------------------

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
        """``apply`` for a list or tuple: the hot loop.

        A one-slot route (most routed events) is matched here and its claim folded
        by ``_claim``; other routes go through ``_event``. The update claims on a node
        that follow its update through a route whose definition has ``update_many``
        are gathered into a run, inline (the one fast path kept here), and folded by
        ``_fold_run`` before anything else changes. Positions are read off the list's
        iterator at the end (counting per event would allocate an int per event), and
        the loop counts the events it rejects (streams are mostly accepted events).
        """
        route_all = self.registration._route_all
        routes = self.registration._routes  # shared with the registration's other engines
        event_type = self.event_type
        first = self.position
        size = len(events)
        iterator = iter(events)
        rejected = 0
        level = NOT_ACCEPTED
        run: _Run | None = None
        run_route: _Route | None = None  # the run's route: None is no event's route
        run_match: Any = None
        run_claim: object = None
        gather: Any = None  # run.events.append
        back = 0  # events taken from the iterator but not consumed (a run failed)
        failure: BaseException | None = None
        whole = False  # every event was looked at
        self.busy = True
        try:
            for event in iterator:
                try:
                    if route_all is not None:
                        route = route_all
                    else:
                        try:
                            route = routes[event_type(event)]  # type: ignore[misc]
                        except KeyError:  # a new type (or a KeyError in event_type)
                            route = self._route(event)
                        except Exception as exc:
                            raise _Failed(exc, None, "event_type") from None
                    matched = route is run_route
                    if matched:  # the run fast path
                        try:
                            claim = run_match(event)
                        except Exception as exc:
                            raise _Failed(exc, route.single, "match") from None
                        # A definition that caches its update claims gives the run's
                        # own claim again: its record is the run's (records stay open).
                        if claim is run_claim or run.takes(claim, self):  # type: ignore[union-attr]
                            gather(event)
                            continue
                    if run is not None and run.events:  # anything else ends the run first
                        run_level = self._fold_run(run)
                        gather = run.events.append
                        rejected += run.rejected
                        if run_level > level:
                            level = run_level
                    single = route.single
                    if single is None:
                        event_level = self._event(route, event)
                    else:
                        if not matched:
                            try:
                                claim = single.match(event)
                            except Exception as exc:
                                raise _Failed(exc, single, "match") from None
                        if claim is None:
                            rejected += 1
                            self.unclaimed += 1
                            continue
                        event_level = self._claim(single, claim, event, None)
                        if single.many is not None and claim.role == "update":
                            # Its updates that follow gather into a run (a lone update
                            # costs nothing more).
                            record = self.opens[single.index].get(claim.id)
                            if record is not None:
                                run = _Run(single, claim, record)
                                run_route, run_match, run_claim = route, single.match, claim
                                gather = run.events.append
                    if event_level < 0:
                        rejected += 1
                    elif event_level > level:
                        level = event_level
                except _RunFailed as exc:  # a run's event failed; this one was not folded
                    failure = exc.cause
                    level = max(level, exc.level)
                    rejected += exc.rejected
                    back = exc.after + 1
                    break
                except BaseException as exc:
                    failure = exc
                    rejected += 1
                    break
            else:
                whole = True
        finally:
            # One commit for every way out. A failed event is consumed and changed
            # nothing; an exception between two events (KeyboardInterrupt) goes up as
            # it is, after the events before it are committed.
            if run is not None and run.events:  # the run the batch (or a failure) ended
                try:
                    level = max(level, self._fold_run(run))
                    rejected += run.rejected
                except _RunFailed as exc:
                    level = max(level, exc.level)
                    rejected += exc.rejected
                    back = exc.after
                    if failure is not None:  # the event after the run failed: not consumed
                        back += 1
                        rejected -= 1
                    failure = exc.cause
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
            raise _error(failure, self.position - 1)

    def _fold_run(self, run: _Run) -> Level:
        """Fold a run: its events at once by ``update_many`` when there are several,
        else (or should it, or a ``publication`` call, raise) one at a time through
        ``_claim``, so those before a failing one stay folded and the error names it,
        as if there were no ``update_many``. A run that changed its node counts all its
        events as accepted. Returns the run's level; raises ``_RunFailed``."""
        slot = run.slot
        events = run.events
        run.events = []  # the next run of this node (the list is the definition's now)
        record = run.record
        if len(events) > 1:
            state = record.state
            try:
                new = slot.many(state, events)  # type: ignore[misc]
                if new is state:
                    run.rejected = len(events)
                    return NOT_ACCEPTED
                level = self._run_level(slot, events)
            except Exception:  # folded again one at a time below, to name the event
                pass
            except BaseException as exc:  # KeyboardInterrupt: nothing of the run is folded
                raise _RunFailed(exc, NOT_ACCEPTED, 0, len(events)) from None
            else:
                record.state = new
                if record.node is not None:
                    record.node = None
                    self.dirty.append(record)
                return level
        level = NOT_ACCEPTED
        rejected = 0
        for at, event in enumerate(events):
            try:
                event_level = self._claim(slot, run.claim, event, None)
            except BaseException as exc:
                raise _RunFailed(exc, level, rejected + 1, len(events) - at - 1) from None
            if event_level < 0:
                rejected += 1
            elif event_level > level:
                level = event_level
        run.rejected = rejected
        return level

    @staticmethod
    def _run_level(slot: _Slot, events: list[object]) -> Level:
        """The most urgent publication of a run's events (``_BadClaim`` for a bad one)."""
        publication = slot.publication
        if publication is None:
            return slot.level
        level = NOT_ACCEPTED
        for event in events:
            event_level = LEVELS.get(publication(event))
            if event_level is None:  # a bad value: named when folded one at a time
                raise _BadClaim
            if event_level > level:
                level = event_level
        return level

    # -- hooks and reads -----------------------------------------------------------

    def apply_event(self, event: object, undo: _Undo | None = None) -> None:
        """Fold one event as ``apply`` does, without the batch's machinery (a run needs
        two events of one batch): ``push()`` of one event. ``undo``, when given, logs
        every change (``apply_one`` reads the changed keys off it)."""
        position = self.position
        failure: BaseException | None = None
        level = NOT_ACCEPTED
        self.busy = True
        try:
            level = self._event(self.registration._route_all or self._route(event), event, undo)
        except BaseException as exc:
            failure = exc
        finally:
            self.busy = False
            self.position = position + 1
        if failure is not None:
            raise _error(failure, position)
        if level >= 0:
            self.version += 1
            self.cached = None
            if level > self.level:
                self.level = level

    def apply_one(self, event: object) -> tuple[str, ...]:
        """``apply_event``, returning the keys of the nodes the event changed (for push
        hooks' ``ctx.changed``)."""
        undo = _Undo(self)
        self.apply_event(event, undo)
        return undo.keys()

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


def _error(failure: BaseException, position: int) -> BaseException:
    """The exception to raise for ``failure``, raised while folding event ``position``."""
    if not isinstance(failure, _Failed):
        return failure  # KeyboardInterrupt and the like go up as they are
    exc = failure.error
    slot = failure.slot
    error: ConversationError
    if slot is None:  # routing failed: no definition ran
        if isinstance(exc, EventError):
            return exc
        error = EventError(f"event_type() failed for event #{position}: {exc!r}", position=position)
    else:
        error = _definition_error(failure, slot, position)
        if isinstance(exc, _BadClaim):
            return error  # the message says it all; the internal class is no cause
    error.__cause__ = exc
    return error


def _definition_error(failure: _Failed, slot: _Slot, position: int) -> DefinitionError:
    kind = slot.kind
    exc = failure.error
    method = failure.method
    claim = failure.claim
    record = failure.record
    key: str | None = None
    if isinstance(claim, Claim):
        key = record.key if record is not None else f"{kind}:{claim.id}"
    if isinstance(exc, _BadClaim):
        what = str(exc)
    elif method == "match" and claim is not None and not isinstance(claim, Claim):
        what = f"match() returned {claim!r}; it must return Claim(id, role) or None"
    else:
        what = f"{method}() raised {type(exc).__name__}: {exc}"
    where = f" at event #{position}" + (f", key {key}" if key else "")
    return DefinitionError(
        f"definition {kind!r} {what}{where}", kind=kind, method=method, position=position, key=key
    )
