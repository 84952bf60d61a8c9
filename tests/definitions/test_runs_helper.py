"""``definitions._runs.fold_run`` is ``update`` over the run, exactly.

One property test of the helper against a small kind (a text, marks, a close), for
any run and any choice of which pieces the kind reports (``None`` is always
allowed): the same state, the state itself exactly when nothing changed, and an
error exactly where folding ``update`` one event at a time raises.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from definitions._runs import fold_run


@attrs.frozen
class Node:
    text: str = ""
    marks: tuple[str, ...] = ()
    closed: bool = False


@attrs.frozen
class Piece:
    text: str


@attrs.frozen
class Other:
    op: str  # "noop", "mark", "close" or "fail"


def append(state: Node, text: str) -> Node:
    if state.closed:
        raise ValueError("a piece for a closed node")
    return attrs.evolve(state, text=state.text + text) if text else state


def update(state: Node, event: Piece | Other) -> Node:
    if isinstance(event, Piece):
        return append(state, event.text)
    if event.op == "fail":
        raise KeyError("fail")
    if event.op == "mark":
        return attrs.evolve(state, marks=(*state.marks, state.text))
    if event.op == "close":
        return state if state.closed else attrs.evolve(state, closed=True)
    return state


events = st.one_of(
    st.builds(Piece, st.sampled_from(["", "a", "bc", "é"])),
    st.builds(Other, st.sampled_from(["noop", "mark", "close", "fail"])),
)


@given(
    state=st.builds(Node, st.sampled_from(["", "x"]), st.just(()), st.booleans()),
    run=st.lists(events, min_size=1, max_size=10),
    reported=st.lists(st.booleans(), min_size=10, max_size=10),
)
def test_fold_run_is_update_over_the_run(
    state: Node, run: list[Piece | Other], reported: list[bool]
) -> None:
    pieces = [
        e.text if isinstance(e, Piece) and shown else None
        for e, shown in zip(run, reported, strict=False)
    ]
    expected: Any = state
    try:
        for event in run:
            expected = update(expected, event)
    except (KeyError, ValueError):
        with pytest.raises((KeyError, ValueError)):
            fold_run(state, run, pieces, append, update)
        return
    got = fold_run(state, run, pieces, append, update)
    assert got == expected
    assert (got is state) == (expected is state)


def test_pieces_must_match_the_run() -> None:
    with pytest.raises(ValueError, match="2 pieces for a run of 1 events"):
        fold_run(Node(), [Piece("a")], ["a", "b"], append, update)


def test_a_run_of_pieces_is_one_append() -> None:
    calls: list[str] = []

    def counting(state: Node, text: str) -> Node:
        calls.append(text)
        return append(state, text)

    run = [Piece("a"), Piece("b"), Other("mark"), Piece("c"), Piece("d")]
    pieces = ["a", "b", None, "c", "d"]
    assert fold_run(Node(), run, pieces, counting, update) == Node("abcd", ("ab",))
    assert calls == ["ab", "cd"]
