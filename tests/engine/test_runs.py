"""``update_many``: runs of update claims on one node, folded at once.

A run is what a one-at-a-time fold would do in several ``update`` calls: the nodes,
failures and positions must be the same; only the count of accepted events and the
publication treat a run that changed its node as one change.
"""

from __future__ import annotations

import itertools
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import (
    DefinitionError,
    ManualScheduler,
    RegistrationError,
    create_conversation_engine,
)

from .harness import RunTally, Tally, TallyState, Unlucky, as_tuples, ev, model_fold, route_to


def engine_of(*definitions: Any, **kwargs: Any) -> Any:
    return create_conversation_engine(list(definitions), event_type=route_to, **kwargs)


def deltas(id: str, *values: int, to: str = "a", pub: str = "immediate") -> list[dict[str, Any]]:
    return [ev(to, "update", id, v, pub) for v in values]


class TestRuns:
    def test_a_run_is_handed_over_once_and_folds_like_single_updates(self) -> None:
        tally = RunTally("a")
        log = [ev("a", "start", "1"), *deltas("1", 1, 2, 3, 4)]
        engine = engine_of(tally)
        engine.push_many(log)
        assert tally.runs == [3]  # the first update is folded by update, the rest as a run
        assert as_tuples(engine.nodes()) == model_fold([Tally("a")], log)

    @pytest.mark.parametrize("cache_claims", [False, True])
    def test_runs_break_at_another_node_type_or_claim(self, cache_claims: bool) -> None:
        tally = RunTally("a", cache_claims=cache_claims)
        log = [
            ev("a", "start", "1"),
            ev("a", "start", "2"),
            *deltas("1", 1, 1),
            *deltas("2", 2, 2, 2),
            ev("b", "noise", "1"),  # routed elsewhere: no slot
            *deltas("2", 5, 5),
            ev("a", "noise", "2"),  # claimed by nobody
            *deltas("2", 7, 7),
            ev("a", "update", "9"),  # no such node: dropped
            *deltas("1", 3, 3),
        ]
        engine = engine_of(tally)
        engine.push_many(log)
        # Each node's first update goes through update; a lone one never makes a run.
        assert tally.runs == [2, 2, 2]
        assert as_tuples(engine.nodes()) == model_fold([Tally("a")], log)
        stats = engine.statistics()
        # Two starts and eleven updates; the event no definition takes, the one
        # nobody claims and the dropped update change nothing.
        assert (stats.events_pushed, stats.events_accepted) == (16, 13)
        assert stats.updates_dropped == 1

    @pytest.mark.parametrize("cache_claims", [False, True])
    def test_a_run_is_of_one_event_type(self, cache_claims: bool) -> None:
        # Events to "a" and to "*" claim the same node with (when cached) the same
        # claim object, through two routes: two runs, not one.
        tally = RunTally("a", cache_claims=cache_claims)
        log = [ev("a", "start", "1"), *deltas("1", 1, 2, 3), *deltas("1", 4, 5, 6, to="*")]
        engine = engine_of(tally)
        engine.push_many(log)
        assert tally.runs == [2, 2]
        assert engine.nodes()[0].state.total == 22

    def test_a_start_sees_the_run_before_it(self) -> None:
        # reader.previous() in a start must see every update that came before it.
        a, b = RunTally("a"), RunTally("b", looks_at=("a",))

        @attrs.define
        class Reads(RunTally):
            def start(self, event: Any, reader: Any) -> TallyState:
                node = reader.previous("a")
                return TallyState(node.state.total if node else -1, ())

        reads = Reads("b")
        log = [ev("a", "start", "1"), *deltas("1", 1, 2, 3), ev("b", "start", "x")]
        engine = engine_of(a, reads)
        engine.push_many(log)
        assert engine.nodes()[1].state.total == 7
        assert b.runs == []

    def test_a_single_update_and_unrouted_engines_never_use_update_many(self) -> None:
        tally = RunTally("a")
        engine = engine_of(tally)
        engine.push_many([ev("a", "start", "1"), *deltas("1", 1), ev("a", "start", "2")])
        unrouted = create_conversation_engine([tally])
        unrouted.push_many([ev("a", "start", "1"), *deltas("1", 1, 2, 3)])
        assert tally.runs == []
        assert unrouted.nodes()[0].state.total == 7

    def test_a_run_that_changes_nothing_is_not_accepted(self) -> None:
        engine = engine_of(RunTally("a"))
        engine.push(ev("a", "start", "1"))
        nodes = engine.nodes()
        engine.push_many(deltas("1", 0, 0, 0))
        assert engine.nodes() is nodes
        assert engine.statistics().events_accepted == 1

    def test_a_run_that_changed_its_node_counts_all_its_events(self) -> None:
        engine = engine_of(RunTally("a"))
        engine.push_many([ev("a", "start", "1"), *deltas("1", 4, 0, 4, 0)])
        # The start, the first update, then the run [0, 4, 0]: documented, a run that
        # changed its node counts all its events (the model says 3).
        assert engine.statistics().events_accepted == 5
        assert engine.nodes()[0].state.total == 9


class TestRunFailures:
    """A failing event in a run is named exactly as without update_many; the events
    before it stay folded, the rest of the batch is not consumed."""

    @pytest.mark.parametrize("ending", ["end of batch", "another event"])
    def test_the_failing_event_is_named_and_the_earlier_ones_stay(self, ending: str) -> None:
        tally = RunTally("a")
        log = [ev("a", "start", "1"), *deltas("1", 1, 2, 13, 4)]
        if ending == "another event":
            log.append(ev("b", "noise", "1"))
        engine = engine_of(tally)
        with pytest.raises(DefinitionError) as caught:
            engine.push_many(log)
        error = caught.value
        assert (error.kind, error.method, error.position, error.key) == ("a", "update", 3, "a:1")
        assert isinstance(error.__cause__, Unlucky)
        assert engine.nodes()[0].state.total == 1 + 1 + 2
        stats = engine.statistics()
        assert (stats.events_pushed, stats.events_accepted) == (4, 3)
        engine.push_many(log[4:])  # the caller resumes after the failing event
        assert engine.nodes()[0].state.total == 8
        assert engine.statistics().events_pushed == len(log)

    def test_a_failure_after_a_run_folds_the_run_first(self) -> None:
        def route(event: dict[str, Any]) -> str:
            if event.get("boom"):
                raise LookupError("no type")
            return str(event["to"])

        engine = create_conversation_engine([RunTally("a")], event_type=route)
        log = [ev("a", "start", "1"), *deltas("1", 1, 2), {**ev("a", "update", "1"), "boom": 1}]
        with pytest.raises(Exception, match="event #3") as caught:
            engine.push_many(log)
        assert getattr(caught.value, "position", None) == 3
        assert engine.nodes()[0].state.total == 4
        assert engine.statistics().events_pushed == 4

    def test_a_run_failing_before_a_failing_event_is_the_failure(self) -> None:
        def route(event: dict[str, Any]) -> str:
            if event.get("boom"):
                raise LookupError("no type")
            return str(event["to"])

        engine = create_conversation_engine([RunTally("a")], event_type=route)
        log = [ev("a", "start", "1"), *deltas("1", 1, 13, 4), {**ev("a", "update", "1"), "boom": 1}]
        with pytest.raises(DefinitionError) as caught:
            engine.push_many(log)
        assert (caught.value.method, caught.value.position) == ("update", 2)
        assert engine.nodes()[0].state.total == 2
        stats = engine.statistics()
        assert (stats.events_pushed, stats.events_accepted) == (3, 2)

    def test_an_update_failing_after_a_run_folds_the_run_first(self) -> None:
        tally, other = RunTally("a"), RunTally("b")
        log = [ev("a", "start", "1"), ev("b", "start", "1"), *deltas("1", 1, 2)]
        log.append(ev("b", "update", "1", 13))
        engine = engine_of(tally, other)
        with pytest.raises(DefinitionError) as caught:
            engine.push_many(log)
        assert (caught.value.kind, caught.value.position) == ("b", 4)
        assert [n.state.total for n in engine.nodes()] == [4, 1]

    def test_a_bad_publication_in_a_run_names_its_event(self) -> None:
        log = [ev("a", "start", "1"), *deltas("1", 1, 2), ev("a", "update", "1", 3, "soon")]
        log.append(ev("a", "update", "1", 5))
        engine = engine_of(RunTally("a"))
        with pytest.raises(DefinitionError) as caught:
            engine.push_many(log)
        assert (caught.value.method, caught.value.position) == ("publication", 3)
        assert engine.nodes()[0].state.total == 4

    def test_update_many_raising_where_update_would_not_is_folded_one_by_one(self) -> None:
        @attrs.define
        class Flaky(RunTally):
            def update_many(self, state: TallyState, events: list[Any]) -> TallyState:
                raise RuntimeError("not today")

        engine = engine_of(Flaky("a"))
        engine.push_many([ev("a", "start", "1"), *deltas("1", 1, 2, 3)])
        assert engine.nodes()[0].state.total == 7

    def test_an_interrupt_in_update_many_leaves_the_run_to_be_folded(self) -> None:
        @attrs.define
        class Interrupted(RunTally):
            def update_many(self, state: TallyState, events: list[Any]) -> TallyState:
                raise KeyboardInterrupt

        engine = engine_of(Interrupted("a"))
        with pytest.raises(KeyboardInterrupt):
            engine.push_many([ev("a", "start", "1"), *deltas("1", 1, 2, 3)])
        # Not an event's failure: nothing of the run (the updates after the first) is
        # counted as folded.
        assert engine.nodes()[0].state.total == 2
        assert engine.statistics().events_pushed == 2


class TestRunPublication:
    def test_a_run_publishes_its_most_urgent_event(self) -> None:
        scheduler = ManualScheduler()
        engine = engine_of(RunTally("a"), scheduler=scheduler)
        seen: list[Any] = []
        engine.subscribe(seen.append)
        engine.push(ev("a", "start", "1", pub="none"))
        engine.push_many(deltas("1", 1, 1, pub="animation-frame"))
        assert (len(seen), scheduler.pending) == (0, 1)
        engine.push_many([*deltas("1", 1, pub="none"), *deltas("1", 1, pub="immediate")])
        assert (len(seen), scheduler.pending) == (1, 0)


# One definition, two ids, two routes ("a" and "*"): nearly every update is in a run.
_events = st.fixed_dictionaries(
    {
        "to": st.sampled_from(["a", "a", "*"]),
        "op": st.sampled_from(["start", "update", "update", "noise"]),
        "id": st.sampled_from(["1", "2"]),
        "pub": st.sampled_from(["none", "animation-frame", "immediate"]),
    }
)
_bursts = st.builds(
    lambda event, values: [{**event, "v": v} for v in values],
    _events,
    st.lists(st.sampled_from([0, 1, 2, 13]), min_size=1, max_size=5),
)
_logs = st.lists(_bursts, max_size=10).map(lambda bursts: [e for b in bursts for e in b])


@pytest.mark.slow
@settings(max_examples=300)
@given(_logs, st.lists(st.integers(min_value=0, max_value=50), max_size=4), st.booleans())
def test_runs_fold_like_single_updates_in_any_batches(
    log: list[dict[str, Any]], cuts: list[int], cache_claims: bool
) -> None:
    engine = engine_of(RunTally("a", cache_claims=cache_claims))
    bounds = sorted({0, len(log), *(c % (len(log) + 1) for c in cuts)})
    failed = []
    for start, stop in itertools.pairwise(bounds):
        position = start
        while position < stop:
            try:
                engine.push_many(log[position:stop])
                position = stop
            except DefinitionError as error:
                failed.append(error.position)
                position = error.position + 1
    assert as_tuples(engine.nodes()) == model_fold([Tally("a")], log)
    # Every claimed 13 fails, exactly once; positions are log indices here.
    expected = [
        i for i, e in enumerate(log) if e["v"] == 13 and _claimed(log[:i], e) and e["op"] != "noise"
    ]
    assert failed == expected
    assert engine.statistics().events_pushed == len(log)


def _claimed(before: list[dict[str, Any]], event: dict[str, Any]) -> bool:
    """Whether Tally "a" calls start or update for ``event`` after ``before``."""
    if event["op"] == "start":
        return True
    return any(row[2] == event["id"] for row in model_fold([Tally("a")], before))


def test_update_many_must_be_callable() -> None:
    @attrs.define
    class Broken(Tally):
        update_many: object = 3

    with pytest.raises(RegistrationError, match="update_many is 3"):
        create_conversation_engine([Broken("a")])
