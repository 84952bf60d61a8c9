"""The fold: how events become nodes.

Where each rule of the contract (docs/concepts.md, "The rules") is implemented:

====  ==========================================  ====================================
rule  what                                        where
====  ==========================================  ====================================
1     every definition sees every event           ``Fold._event`` (every slot's match,
                                                  in order), ``Fold._loop`` for a
                                                  one-slot route; ``Registration._route``
                                                  leaves out only matches that cannot
                                                  claim (``event_types``), and gives a
                                                  type nobody admits to ``fallback``
                                                  definitions
2     seq counts starts, in event then            ``Fold._claim``
      registration order; kept for life
3     an update with no open node is dropped      ``Fold._claim``
4     a repeated start reopens in place           ``Fold._claim``
5     ``reader.previous`` looks backward only     ``_Reader.previous`` (the reader is
                                                  made by ``Fold._claim``)
6     an identical state is no change; nodes      ``Fold._claim``; for a run of updates
      frozen, the same tuple until a change       of one node, ``Fold._fold_each`` and
                                                  ``Fold._fold_run``; ``Fold.nodes``
7     events are atomic; the error names the      ``Fold._event`` (an ``_Undo`` log when
      kind, the position and the cause            several claim), ``Fold._end`` (one
                                                  commit per batch), ``_error``
====  ==========================================  ====================================

Theory of operation
-------------------
``Fold._claim`` folds one claim of one definition: every call that can raise
(``update`` or ``start``, then ``publication``) comes before its one change, so a
single claim needs nothing undone; given an ``_Undo`` it logs the change first. An
event offered to several definitions (``Fold._event``) is matched by every one of
them first (``match`` is pure, so when it is called is not observable); one claim
is folded as it is, several with an ``_Undo`` reverted if a later one raises. The
hook path (``apply_event`` asked for ``keys``) passes an ``_Undo`` to ``_event``: its
log names the changed keys.

Records are never removed, so the list of records *is* the seq order and ``seq``
is the index. ``start`` gets a ``_Reader`` bound to the starting node's ``seq``.

*Runs* (with an ``event_type`` route only: then a run's events are all of one
type): the update claims on a node that follow its update through a one-slot route
are gathered, which is the one fast path the hot loop keeps inline (``Fold._loop``),
and folded by ``Fold._fold_run`` before anything else changes or when the batch
ends: by the definition's ``update_many`` at once, or one at a time in a tight loop
(``_fold_each``), which also refolds a run whose ``update_many`` raised, so a
failure is named and atomic exactly as without it. ``push()`` of one event takes
``Fold.apply_event``, without the batch's machinery (a run needs two events).

Nodes are frozen lazily: a change drops the record's cached ``Node`` and puts the
record on the dirty list; ``nodes()`` refreezes dirty records only. Publication
levels are a ``Level`` (an ``IntEnum``): the most urgent of a batch is its ``max``.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Hashable, Iterable
from itertools import islice
from operator import attrgetter, length_hint
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


# A record's seq, as bisect's key: a C call, no Python frame per step.
_seq_of: Final = attrgetter("seq")


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
    """A run to fold: update claims on one node, gathered after its update (made by
    ``Fold._loop`` when the run ends)."""

    __slots__ = ("claim", "events", "rejected", "slot")

    def __init__(self, slot: _Slot, claim: Claim, events: list[object]) -> None:
        self.slot = slot
        self.claim = claim  # its node's claim: the run's record is looked up when folded
        self.events = events
        self.rejected = 0  # of its events, those that changed nothing (set once folded)


class _Batch:
    """One ``Fold._apply`` call: where it began, what it counted, how it ended."""

    __slots__ = (
        "back",
        "failure",
        "first",
        "iterator",
        "level",
        "rejected",
        "run",
        "size",
        "whole",
    )

    def __init__(self, first: int, events: list[object] | tuple[object, ...]) -> None:
        self.first = first  # the position of its first event
        self.size = len(events)
        self.iterator = iter(events)
        self.level = NOT_ACCEPTED  # the most urgent publication among its accepted events
        self.rejected = 0  # consumed events that changed nothing (a failed one included)
        self.back = 0  # events taken from the iterator but not consumed (a run failed)
        self.whole = False  # every event was looked at
        self.failure: BaseException | None = None
        self.run: _Run | None = None  # the run pending when the loop stopped

    def failed(self, exc: _RunFailed, not_consumed: int) -> None:
        """A run's event failed: its ``after`` events and ``not_consumed`` more (the
        event that ended the run) were taken but not consumed."""
        self.failure = exc.cause
        self.level = max(self.level, exc.level)
        self.rejected += exc.rejected
        self.back = exc.after + not_consumed


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

    __slots__ = (
        "busy",
        "by_kind",
        "cached",
        "dirty",
        "dropped",
        "event_type",
        "level",
        "nodes_list",
        "opens",
        "position",
        "records",
        "registration",
        "unclaimed",
        "version",
    )

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
            update = slot.update  # a local: calling a slot member as a method is slower
            try:
                new = update(old, event)
            except Exception as exc:
                raise _Failed(exc, slot, "update", claim, record) from None
            if new is old:
                return NOT_ACCEPTED
        elif role == "start":
            if record is None and type(id) is not str:
                raise _Failed(_bad_id(id), slot, "match", claim)
            # A reader of the nodes before the starting node's seq (a reopened node's
            # own, kept), closed when start returns.
            seq = len(self.records) if record is None else record.seq
            reader = _Reader(self, seq)
            start = slot.start
            try:
                new = start(event, reader)
            except Exception as exc:
                raise _Failed(exc, slot, "start", claim, record) from None
            finally:
                reader._seq = -1
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
            record = _Record(slot, id, seq, new)
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
        # Fold._set_state, inline: an update, or a reopen (the old state discarded, seq kept).
        record.state = new
        if record.node is not None:
            record.node = None
            self.dirty.append(record)
        return level

    # -- rules 1 and 7: one event ------------------------------------------------------

    def _event(self, route: _Route, event: object, undo: _Undo | None = None) -> Level:
        """Offer ``event`` to every slot of ``route`` (rule 1), then fold the claims in
        registration order, atomically (rule 7): one claim as it is, several (or any,
        given ``undo``) logging to an undo log reverted if one raises. Returns the most
        urgent level, ``NOT_ACCEPTED`` if nothing changed; raises ``_Failed``."""
        first: Any = None
        claimed: _Slot | None = None
        more: list[tuple[_Slot, Claim]] | None = None
        for match, slot in route.matches:
            try:
                claim = match(event)
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
            return self.registration._routes[event_type]
        except KeyError:  # a new type
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
        """``apply`` for a list or tuple: ``_loop``, then ``_end`` whatever happened."""
        batch = _Batch(self.position, events)
        self.busy = True
        try:
            self._loop(batch)
        finally:
            self._end(batch)
        if batch.failure is not None:
            raise _error(batch.failure, self.position - 1)

    def _loop(self, batch: _Batch) -> None:
        """The hot loop: fold ``batch``'s events until one fails. A one-slot route is
        matched here, its claim folded by ``_claim``; others go through ``_event``. A
        run (see the module docstring) is gathered inline: a claim equal to the run's
        names the run's node. Rejected events are counted (most are accepted)."""
        route_all = self.registration._route_all
        route: _Route = route_all  # type: ignore[assignment] # routed: set per event
        routes = self.registration._routes  # shared with the registration's other engines
        event_type = self.event_type
        rejected = 0
        level = NOT_ACCEPTED
        # The node whose update claims gather into a run (the last one updated through
        # a one-slot route of a routed engine), and the run's events not yet folded.
        run_route: _Route | None = None  # run_slot's route: None is no event's route
        run_slot: Any = None
        run_claim: Any = None
        run_match: Any = None
        run_events: list[object] = []
        try:
            for event in batch.iterator:
                try:
                    if route_all is None:
                        try:
                            route = routes[event_type(event)]  # type: ignore[misc]
                        except Exception:  # a new type, or a failing event_type: see _route
                            route = self._route(event)
                    claim = None
                    if route is run_route:  # the run fast path: the run's node again?
                        try:
                            claim = run_match(event)
                            if claim is run_claim or claim == run_claim:
                                run_events.append(event)
                                continue
                        except Exception as exc:
                            raise _Failed(exc, run_slot, "match", claim) from None
                        slot = run_slot
                    else:
                        slot = route.single
                        if slot is not None:
                            match = slot.match
                            try:
                                claim = match(event)
                            except Exception as exc:
                                raise _Failed(exc, slot, "match") from None
                    if run_events:  # anything else ends the run first
                        run = _Run(run_slot, run_claim, run_events)
                        run_events = []  # the folded list is the definition's now
                        run_level = self._fold_run(run)
                        rejected += run.rejected
                        if run_level > level:
                            level = run_level
                    if slot is None:
                        event_level = self._event(route, event)
                    elif claim is None:
                        self.unclaimed += 1
                        event_level = NOT_ACCEPTED
                    else:
                        event_level = self._claim(slot, claim, event, None)
                        if slot.runs and claim.role == "update":  # what follows gathers
                            run_route, run_slot, run_claim = route, slot, claim
                            run_match = slot.match
                    if event_level < 0:
                        rejected += 1
                    elif event_level > level:
                        level = event_level
                except _RunFailed as exc:  # a run's event failed; this one was not folded
                    batch.failed(exc, 1)
                    break
                except BaseException as exc:
                    batch.failure = exc
                    rejected += 1
                    break
            else:
                batch.whole = True
        finally:
            batch.level = max(batch.level, level)
            batch.rejected += rejected
            if run_events:
                batch.run = _Run(run_slot, run_claim, run_events)

    def _end(self, batch: _Batch) -> None:
        """Fold the run the batch (or a failure) ended, then commit: one commit for every
        way out. A failed event is consumed and changed nothing; an exception between
        two events (KeyboardInterrupt) goes up as it is, after the events before it are
        committed. (Asking the iterator how many it has left costs more than folding one
        event: only done when the loop stopped early.)"""
        run = batch.run
        if run is not None:  # it came before the failure, if any
            try:
                batch.level = max(batch.level, self._fold_run(run))
                batch.rejected += run.rejected
            except _RunFailed as exc:
                # The event after the run, if it failed, was not consumed.
                failed_after = batch.failure is not None
                batch.rejected -= failed_after
                batch.failed(exc, failed_after)
        self.busy = False
        taken = (batch.size if batch.whole else batch.size - length_hint(batch.iterator)) - (
            batch.back
        )
        self.position = batch.first + taken
        accepted = taken - batch.rejected
        if accepted:
            self.version += accepted
            self.cached = None
            if batch.level > self.level:
                self.level = batch.level

    def _fold_run(self, run: _Run) -> Level:
        """Fold a run: its events at once by ``update_many`` when the definition has one
        and there are several, else (or should it, or a ``publication`` call, raise)
        one at a time by ``_fold_each``, so those before a failing one stay folded and
        the error names it, as if there were no ``update_many``. A run ``update_many``
        changed counts all its events as accepted. Returns the run's level; raises
        ``_RunFailed``."""
        slot = run.slot
        events = run.events
        record = self.opens[slot.index].get(run.claim.id)
        if record is None:  # the update before the run was dropped (rule 3): so are these
            for event in events:
                self._claim(slot, run.claim, event, None)
            run.rejected = len(events)
            return NOT_ACCEPTED
        many = slot.many
        if many is not None and len(events) > 1:
            state = record.state
            try:
                new = many(state, events)
                if new is state:
                    run.rejected = len(events)
                    return NOT_ACCEPTED
                level = slot.level if slot.publication is None else self._run_level(slot, events)
            except Exception:  # folded again one at a time below, to name the event
                pass
            except BaseException as exc:  # KeyboardInterrupt: nothing of the run is folded
                raise _RunFailed(exc, NOT_ACCEPTED, 0, len(events)) from None
            else:
                record.state = new  # Fold._set_state, inline: once per run
                if record.node is not None:
                    record.node = None
                    self.dirty.append(record)
                return level
        return self._fold_each(run, record)

    def _fold_each(self, run: _Run, record: _Record) -> Level:
        """A run's ``events`` one at a time, in a tight loop (the run fast path: the
        update half of ``_claim`` for one open node, rule 6 included, with the state set
        once). Those before a failing event stay folded; raises ``_RunFailed``."""
        slot = run.slot
        events = run.events
        update = slot.update
        publication = slot.publication
        state = record.state
        level = NOT_ACCEPTED
        rejected = 0
        method = "update"
        at = 0
        try:
            for at, event in enumerate(events):  # noqa: B007 - at names the failure
                method = "update"
                new = update(state, event)
                if new is state:  # rule 6: no change
                    rejected += 1
                    continue
                if publication is None:
                    event_level = slot.level
                else:
                    method = "publication"
                    value = publication(event)
                    event_level = LEVELS.get(value)  # type: ignore[assignment]
                    if event_level is None:
                        raise _bad_publication(value)
                state = new
                if event_level > level:
                    level = event_level
        except BaseException as exc:
            self._set_state(record, state)
            if isinstance(exc, Exception):
                exc = _Failed(exc, slot, method, run.claim, record)
            raise _RunFailed(exc, level, rejected + 1, len(events) - at - 1) from None
        self._set_state(record, state)
        run.rejected = rejected
        return level

    def _set_state(self, record: _Record, state: Any) -> None:
        """``record``'s state is now ``state``: its frozen node is dropped and it goes on
        the dirty list (``_claim`` does the same inline)."""
        if state is not record.state:
            record.state = state
            if record.node is not None:
                record.node = None
                self.dirty.append(record)

    @staticmethod
    def _run_level(slot: _Slot, events: list[object]) -> Level:
        """The most urgent ``slot.publication`` of a run's events (``_BadClaim`` for a
        bad one)."""
        publication = slot.publication
        assert publication is not None
        level = NOT_ACCEPTED
        for event in events:
            event_level = LEVELS.get(publication(event))
            if event_level is None:  # a bad value: named when folded one at a time
                raise _BadClaim
            if event_level > level:
                level = event_level
        return level

    # -- hooks and reads -----------------------------------------------------------

    def apply_event(self, event: object, keys: bool = False) -> tuple[str, ...]:
        """Fold one event as ``apply`` does, without the batch's machinery (a run needs
        two events of one batch): ``push()`` of one event, and each event a push hook
        sees. The route and a one-slot route's ``match`` are taken here as in
        ``_loop``; the claims are folded by ``_claim`` and ``_event``, as there.
        Returns the keys of the nodes the event changed when ``keys`` (push hooks'
        ``ctx.changed``), else ``()``."""
        position = self.position
        failure: BaseException | None = None
        level = NOT_ACCEPTED
        changed: tuple[str, ...] = ()
        self.busy = True
        try:
            route = self.registration._route_all
            if route is None:
                try:
                    route = self.registration._routes[self.event_type(event)]  # type: ignore[misc]
                except Exception:  # a new type, or a failing event_type: see _route
                    route = self._route(event)
            slot = route.single
            if slot is None:
                if keys:  # the undo log names the changed nodes
                    undo = _Undo(self)
                    level = self._event(route, event, undo)
                    changed = undo.keys()
                else:
                    level = self._event(route, event)
            else:
                match = slot.match
                try:
                    claim = match(event)
                except Exception as exc:
                    raise _Failed(exc, slot, "match") from None
                if claim is None:
                    self.unclaimed += 1
                else:
                    level = self._claim(slot, claim, event, None)
                    if keys and level >= 0:  # the claimed node changed, and is open
                        changed = (self.opens[slot.index][claim.id].key,)
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
        return changed

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
    if isinstance(exc, EventError) and failure.method in ("event_type", "match"):
        return _blamed(exc, position)  # the event is at fault, not the definition
    if slot is None:  # routing failed: no definition ran
        error = EventError(f"event_type() failed for event #{position}: {exc!r}", position=position)
    else:
        error = _definition_error(failure, slot, position)
        if isinstance(exc, _BadClaim):
            return error  # the message says it all; the internal class is no cause
    error.__cause__ = exc
    return error


def _blamed(error: EventError, position: int) -> EventError:
    """``error`` as it goes out of the engine: an ``EventError`` raised by ``event_type``,
    a ``match`` or an ``on_push_start`` hook (a pre-pass) blames the event, so it goes
    out as itself, never wrapped; one that did not know its position (-1) gets it."""
    if error.position < 0:
        error.position = position
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
