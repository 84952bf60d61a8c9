"""Run coalescing: ``update_many`` written once, for every kind that streams text.

The engine hands a definition's ``update_many(state, events)`` a *run*: the update
events of one node that came one after the other (see ``engine.Definition``). It
must return what ``update`` on each event in turn returns (``state`` itself when
none changed it), or raise; the engine then folds the run one event at a time. What
makes a run cheap is that nearly every event of it appends a piece of text to one
field of the node and does nothing else: the pieces joined are one append.

A kind supplies only what is its own, and ``fold_run`` does the rest::

    def update_many(self, state, events):
        pieces = [e["text"] if e["type"] == "x.delta" else None for e in events]
        return fold_run(state, events, pieces, _append, self.update)

API
---
``fold_run(state, events, pieces, append, update) -> state``

- ``events``: the run, as the engine handed it (a list).
- ``pieces``: one entry per event (same length, else ``ValueError``): the ``str``
  the event appends to the node, or ``None`` for an event that ``update`` must
  fold. An event is a piece only if ``update(s, event)`` equals ``append(s, piece)``
  in every state ``s`` the run can reach (raising where it raises); ``None`` is
  always allowed (it is only slower), so a kind says ``None`` for anything it
  need not decide here (an event of another field, a piece of a wrong type).
- ``append(state, text) -> state``: ``state`` with ``text`` appended. Called once
  per stretch of consecutive pieces, with their texts joined, so it must satisfy
  ``append(append(s, a), b) == append(s, a + b)`` and make the checks ``update``
  makes of a piece's state (a closed node raising, say). It is called even when
  the joined text is ``""``: return ``state`` itself there if ``update`` does.
- ``update(state, event) -> state``: the kind's ``update``, for the ``None`` events.

The common runs, pieces only or pieces then a few events that are not (a ``done``),
are one ``"".join`` and one ``append`` (then ``update`` for those few); any other
run is folded in order, each stretch of pieces joined. Nothing is read from an event
here: what an event is stays the kind's business (its ``pieces`` comprehension).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["fold_run"]

StateT = TypeVar("StateT")
EventT = TypeVar("EventT")


def fold_run(
    state: StateT,
    events: Sequence[EventT],
    pieces: Sequence[str | None],
    append: Callable[[StateT, str], StateT],
    update: Callable[[StateT, EventT], StateT],
) -> StateT:
    """``update`` over ``events`` in turn, with each stretch of consecutive pieces
    joined into one ``append`` (see the module docstring for the contract)."""
    count = len(pieces)
    if count != len(events):
        raise ValueError(f"fold_run got {count} pieces for a run of {len(events)} events")
    # The common runs: pieces only, or pieces then a few events that are not (a
    # "done"): one join, found without comparing each piece with None (which costs
    # as much as the join).
    end = count
    while end and pieces[end - 1] is None:
        end -= 1
    try:
        joined = "".join(pieces if end == count else pieces[:end])  # type: ignore[arg-type]
    except TypeError:  # a None among them (a piece that is not a str raises again below)
        pass
    else:
        if end:
            state = append(state, joined)
        for at in range(end, count):
            state = update(state, events[at])
        return state
    # Any run: each stretch of pieces joined, the other events updated.
    begin = 0  # the first piece of the stretch not yet appended
    for at, piece in enumerate(pieces):
        if piece is None:
            if at > begin:
                state = append(state, "".join(pieces[begin:at]))  # type: ignore[arg-type]
            state = update(state, events[at])
            begin = at + 1
    if begin < count:
        state = append(state, "".join(pieces[begin:]))  # type: ignore[arg-type]
    return state
