"""A fold that steps back: what makes switching between branches cheap.

A ``Cursor`` folds events one at a time, as ``push`` does, and keeps what each
event changed (the fold's undo log, ``_fold._Undo``). ``back(n)`` reverts the last
``n`` events, newest first, so the cursor stands where it stood before them. Moving
from one branch of a conversation to another is then ``back`` to the point the two
share and forward along the other: the cost is the two divergent parts, never the
shared prefix, and the memory is one undo entry per change of the events held.

A reverted record is refrozen on the next ``nodes()``: the frozen ``Node`` it had
before may already have been replaced in the view's list by a later one.

No scheduler, no subscribers, no lock: a cursor is a private working copy of a
view (one per reader), not a live engine. Imports only the fold.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any

from ._fold import NOT_ACCEPTED, Fold, Registration, _error, _Undo
from ._types import Node

__all__ = ["Cursor"]


class Cursor:
    """Fold events forward one at a time and step back over them.

    ``definitions`` (or a ``Registration``) and ``event_type`` are as for
    ``create_conversation_engine``. The view after ``forward(events)`` equals the
    view of a fresh engine given the same events; ``back(n)`` returns to the view
    before the last ``n`` events.
    """

    __slots__ = ("_fold", "_undos")

    def __init__(
        self,
        definitions: Iterable[Any] | Registration,
        *,
        event_type: Callable[[Any], Hashable] | None = None,
    ) -> None:
        self._fold = Fold(definitions, event_type)
        self._undos: list[_Undo] = []

    def __len__(self) -> int:
        """How many events the cursor holds (folded and not stepped back over)."""
        return len(self._undos)

    def forward(self, events: Iterable[object]) -> None:
        """Fold ``events`` in order. Raises ``DefinitionError`` as ``push`` does: the
        failing event leaves no trace, the events before it stay folded."""
        fold = self._fold
        registration = fold.registration
        undos = self._undos
        for event in events:
            undo = _Undo(fold)
            fold.busy = True
            try:
                route = registration._route_all
                if route is None:
                    route = fold._route(event)
                level = fold._event(route, event, undo)
            except BaseException as exc:
                raise _error(exc, fold.position) from None
            finally:
                fold.busy = False
            fold.position += 1
            if level > NOT_ACCEPTED:
                fold.version += 1
                fold.cached = None
            undos.append(undo)

    def back(self, count: int) -> None:
        """Revert the last ``count`` events, newest first. O(their changes)."""
        if not 0 <= count <= len(self._undos):
            raise ValueError(f"cannot step back {count} events: the cursor holds {len(self)}")
        fold = self._fold
        undos = self._undos
        changed = False
        for _ in range(count):
            undo = undos.pop()
            if undo.changes:
                undo.revert()
                for change in undo.changes:
                    if not change.created:  # refreeze: its node in the list is a later one
                        change.record.node = None
                        fold.dirty.append(change.record)
                changed = True
            fold.position -= 1
        if changed:
            # A record refrozen above may have been removed by an older event's revert.
            records = fold.records
            fold.dirty = [r for r in fold.dirty if r.seq < len(records) and records[r.seq] is r]
            fold.cached = None
            fold.version += 1

    def nodes(self) -> tuple[Node, ...]:
        """The view after the events held, in ``seq`` order (as ``engine.nodes()``)."""
        return self._fold.nodes()
