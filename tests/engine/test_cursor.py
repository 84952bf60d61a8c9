"""``engine.Cursor``: a fold that steps back to exactly the view before the events
it reverts, against the naive model fold, with nodes frozen at random moments."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Cursor

from .harness import as_tuples, model_fold, tallies

events = st.lists(
    st.fixed_dictionaries(
        {
            "to": st.sampled_from(["a", "b", "c", "*"]),
            "op": st.sampled_from(["start", "start", "update", "update", "noise"]),
            "id": st.sampled_from(["1", "2", "3"]),
            "v": st.sampled_from([0, 1, 2, 5]),
            "pub": st.sampled_from(["none", "animation-frame", "immediate"]),
        }
    ),
    max_size=40,
)


class TestCursor:
    """``engine.Cursor`` steps back to exactly the view before the events it reverts."""

    @pytest.mark.slow
    @settings(max_examples=80, deadline=None)
    @given(events, st.randoms(use_true_random=False))
    def test_back_and_forward_equal_a_fresh_fold(
        self, events: list[Any], rng: random.Random
    ) -> None:
        cursor = Cursor(tallies())
        held: list[Any] = []
        for event in events:
            cursor.forward([event])
            held.append(event)
            if rng.random() < 0.3:
                cursor.nodes()  # freeze now: a revert must refreeze what it restores
            if rng.random() < 0.3:
                back = rng.randint(0, len(held))
                cursor.back(back)
                del held[len(held) - back :]
            assert as_tuples(cursor.nodes()) == model_fold(tallies(), held)
        assert len(cursor) == len(held)

    def test_a_failing_event_leaves_no_trace(self) -> None:
        cursor = Cursor(tallies())
        good = {"to": "*", "op": "start", "id": "1", "v": 1, "pub": "none"}
        bad = {"to": "*", "op": "update", "id": "1", "v": 13, "pub": "none"}
        cursor.forward([good])
        with pytest.raises(Exception, match="event #1"):
            cursor.forward([bad])
        assert len(cursor) == 1
        assert as_tuples(cursor.nodes()) == model_fold(tallies(), [good])

    def test_cannot_step_back_past_the_start(self) -> None:
        with pytest.raises(ValueError, match="holds 0"):
            Cursor(tallies()).back(1)
