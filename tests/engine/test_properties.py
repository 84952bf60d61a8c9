"""Property and stateful tests: random logs, batch splits and frame timing vs the model."""

from __future__ import annotations

import contextlib
import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from engine import (
    DefinitionError,
    ManualScheduler,
    Node,
    Registration,
    create_conversation_engine,
)

from .harness import (
    Event,
    RunTally,
    Tally,
    as_tuples,
    model_fold,
    route_to,
    routed_tallies,
    run_tallies,
    tallies,
)

LEVEL = {"none": 0, "animation-frame": 1, "immediate": 2}

events = st.fixed_dictionaries(
    {
        "to": st.sampled_from(["a", "b", "c", "*"]),
        "op": st.sampled_from(["start", "update", "update", "update", "noise"]),
        "id": st.sampled_from(["1", "2", "3"]),
        "v": st.sampled_from([0, 1, 2, 5, 13]),
        "pub": st.sampled_from(list(LEVEL)),
    }
)
# Streams come in bursts (a message's deltas): an event repeated with other values, so
# runs of updates on one node, and what ends them, are common.
bursts = st.builds(
    lambda event, values: [{**event, "v": v} for v in values],
    events,
    st.lists(st.sampled_from([0, 1, 2, 5, 13]), min_size=1, max_size=4),
)
logs = st.lists(bursts, max_size=14).map(lambda bursts: [e for burst in bursts for e in burst])

# Definitions and router of each engine set-up the properties run on, chosen so that
# both ways the fold takes an event are exercised: several definitions per event
# (the general path, with its undo log) and one (inline, with no undo log).
SETUPS: dict[str, tuple[Any, Any]] = {
    "three, unrouted (general path)": (tallies, None),
    "one (inline path)": (lambda: [Tally("a", looks_at=("a", "b"))], None),
    "three, routed by 'to' (both paths)": (routed_tallies, route_to),
    "three, routed, with update_many (runs)": (run_tallies, route_to),
    # One registration for every engine of every example: an engine's nodes must not
    # leak into another's through what the registration shares (routes, members).
    "three, routed, runs, one Registration shared by all": (run_tallies, "shared"),
}
setups = pytest.mark.parametrize("setup", list(SETUPS))
SHARED = Registration(run_tallies(), event_type=route_to)


def make(setup: str, **kwargs: Any) -> tuple[list[Any], Any]:
    """The definitions of ``setup`` and an engine registering them."""
    definitions, router = SETUPS[setup]
    if router == "shared":
        return list(SHARED.definitions), create_conversation_engine(SHARED, **kwargs)
    return definitions(), create_conversation_engine(definitions(), event_type=router, **kwargs)


def model_level(before: list[Event], event: Event, definitions: list[Any] | None = None) -> int:
    """The publication level of ``event`` after ``before`` (-1: not accepted).

    Written from the Tally rules: a start always changes its node, an update changes
    an open node unless v == 0, and v == 13 in a called start/update fails the event.
    """
    definitions = tallies() if definitions is None else definitions
    open_keys = {row[0] for row in model_fold(definitions, before)}
    changed = False
    for definition in definitions:
        if event["to"] not in (definition.kind, "*") or event["op"] == "noise":
            continue
        is_open = f"{definition.kind}:{event['id']}" in open_keys
        if event["op"] == "update" and not is_open:
            continue
        if event["v"] == 13:
            return -1
        changed = changed or event["op"] == "start" or event["v"] != 0
    return LEVEL[event["pub"]] if changed else -1


def assert_folded_like_the_model(engine: Any, definitions: list[Any], log: list[Event]) -> None:
    """The engine, handed every event of ``log`` once, holds the model's nodes and
    counts as accepted the events the model says change a node."""
    assert as_tuples(engine.nodes()) == model_fold(definitions, log)
    accepted = sum(model_level(log[:i], event, definitions) >= 0 for i, event in enumerate(log))
    stats = engine.statistics()
    assert stats.events_pushed == len(log)
    kinds = {definition.kind for definition in definitions} | {"*"}
    unclaimed = sum(e["to"] not in kinds or e["op"] == "noise" for e in log)
    assert stats.events_unclaimed == unclaimed
    if not isinstance(definitions[0], RunTally):
        assert stats.events_accepted == accepted
        return
    # A run that changed its node counts all its events, its no-op updates (v == 0)
    # included: between the model's count and that plus every no-op update.
    no_ops = sum(
        e["op"] == "update" and e["v"] == 0 and e["to"] != "*" and model_level(log[:i], e) == -1
        for i, e in enumerate(log)
    )
    assert accepted <= stats.events_accepted <= accepted + no_ops


class TestRandomLogs:
    """Any log folds to what the model fold says, however it is pushed."""

    @pytest.mark.slow
    @setups
    @settings(max_examples=200)
    @given(logs)
    def test_one_at_a_time_matches_the_model(self, setup: str, log: list[Event]) -> None:
        definitions, engine = make(setup)
        for event in log:
            with contextlib.suppress(DefinitionError):
                engine.push(event)
        assert_folded_like_the_model(engine, definitions, log)

    @pytest.mark.slow
    @setups
    @settings(max_examples=150)
    @given(logs, st.lists(st.integers(min_value=0, max_value=40), max_size=8))
    def test_random_batch_splits_match_the_model(
        self, setup: str, log: list[Event], cuts: list[int]
    ) -> None:
        definitions, engine = make(setup)
        bounds = sorted({0, len(log), *(c % (len(log) + 1) for c in cuts)})
        for start, stop in itertools.pairwise(bounds):
            position = start
            while position < stop:
                try:
                    engine.push_many(log[position:stop])
                    position = stop
                except DefinitionError as error:
                    position = error.position + 1  # positions are log indices here
        assert_folded_like_the_model(engine, definitions, log)

    @pytest.mark.slow
    @setups
    @settings(max_examples=100)
    @given(logs, st.integers(min_value=0, max_value=40))
    def test_a_generator_matches_the_model_up_to_its_failure(
        self, setup: str, log: list[Event], stop: int
    ) -> None:
        # A non-list iterable is folded in chunks; a source that raises after ``stop``
        # events leaves exactly those folded (or stops earlier at a failing event).
        definitions, engine = make(setup)

        def source() -> Any:
            yield from log[:stop]
            raise OSError("source ended")

        done = 0
        while True:
            try:
                engine.push_many(itertools.islice(source(), done, None))
            except DefinitionError as error:
                done = error.position + 1
                continue
            except OSError:
                break
        assert_folded_like_the_model(engine, definitions, log[:stop])


class TestRandomFrameTiming:
    """Whenever frames fire, notifications are exact, fresh and never lost."""

    @pytest.mark.slow
    @setups
    @settings(max_examples=150)
    @given(
        logs,
        st.lists(st.sampled_from(["push", "push", "push", "batch", "fire", "flush"]), max_size=60),
    )
    def test_notifications_carry_the_prefix_view(
        self, setup: str, log: list[Event], plan: list[str]
    ) -> None:
        scheduler = ManualScheduler()
        definitions, engine = make(setup, scheduler=scheduler)
        pushed: list[Event] = []
        # Each notification with the number of events the engine had been handed then.
        seen: list[tuple[tuple[Node, ...], int]] = []
        engine.subscribe(lambda nodes: seen.append((nodes, engine.statistics().events_pushed)))
        queue = list(log)

        def push(batch: list[Event]) -> int:
            """Push ``batch``, resuming after failures; return how many calls it took."""
            start = len(pushed)
            pushed.extend(batch)
            position = calls = 0
            while position < len(batch):
                calls += 1
                try:
                    if len(batch) == 1:
                        engine.push(batch[0])
                    else:
                        engine.push_many(batch[position:])
                    break
                except DefinitionError as error:
                    position = error.position - start + 1
            return calls

        for step in plan:
            before = len(seen)
            if step == "push" and queue:
                event = queue.pop(0)
                level = model_level(pushed, event, definitions)
                push([event])
                if level == 2:
                    assert len(seen) == before + 1, "immediate must notify now"
                    assert scheduler.pending == 0, "immediate cancels the pending frame"
                else:
                    assert len(seen) == before, "only immediate notifies during a push"
                    if level == 1:
                        assert scheduler.pending == 1
            elif step == "batch" and queue:
                batch, queue = queue[:5], queue[5:]
                calls = push(batch)
                assert len(seen) <= before + calls, "one notification check per push_many"
            elif step == "fire":
                scheduler.fire()
                assert len(seen) <= before + 1
            elif step == "flush":
                engine.flush()
                assert scheduler.pending == 0
            assert scheduler.pending <= 1
        push(queue)
        engine.flush()
        for (nodes, count), previous in zip(seen, [None, *seen], strict=False):
            expected = model_fold(definitions, pushed[:count])
            assert as_tuples(nodes) == expected, "a notification carries nodes() of that moment"
            if previous is not None:
                assert nodes is not previous[0], "never notified with nothing new"
        final = model_fold(definitions, pushed)
        if seen:
            assert as_tuples(seen[-1][0]) == final, "nothing is lost after flush"
        else:
            assert final == []


class EngineMachine(RuleBasedStateMachine):
    """The engine under random pushes, frames, flushes and subscriptions vs the model."""

    def __init__(self) -> None:
        super().__init__()
        self.scheduler = ManualScheduler()
        self.engine = create_conversation_engine(tallies(), scheduler=self.scheduler)
        self.log: list[Event] = []
        self.seen: list[tuple[Node, ...]] = []
        self.extra: list[Any] = []
        self.engine.subscribe(self.seen.append)

    def _push(self, event: Event) -> None:
        self.log.append(event)
        with contextlib.suppress(DefinitionError):
            self.engine.push(event)

    @rule(event=events)
    def push(self, event: Event) -> None:
        self._push(event)

    @rule(batch=st.lists(events, min_size=1, max_size=6))
    def push_many(self, batch: list[Event]) -> None:
        for event in batch:
            self._push(event)

    @rule()
    def fire(self) -> None:
        self.scheduler.fire()

    @rule()
    def flush(self) -> None:
        self.engine.flush()
        if self.seen:
            assert self.seen[-1] is self.engine.nodes()

    @rule()
    def subscribe(self) -> None:
        seen: list[tuple[Node, ...]] = []
        self.extra.append((self.engine.subscribe(seen.append), seen))

    @precondition(lambda self: bool(self.extra))
    @rule()
    def unsubscribe(self) -> None:
        unsubscribe, _ = self.extra.pop()
        unsubscribe()

    @invariant()
    def nodes_match_the_model(self) -> None:
        assert as_tuples(self.engine.nodes()) == model_fold(tallies(), self.log)

    @invariant()
    def at_most_one_frame_pending(self) -> None:
        assert self.scheduler.pending <= 1

    @invariant()
    def notifications_are_fresh(self) -> None:
        for earlier, later in zip(self.seen, self.seen[1:], strict=False):
            assert earlier is not later

    @invariant()
    def seq_is_gapless(self) -> None:
        assert [n.seq for n in self.engine.nodes()] == list(range(len(self.engine.nodes())))


TestEngineMachine = EngineMachine.TestCase
TestEngineMachine.pytestmark = [pytest.mark.slow]
TestEngineMachine.settings = settings(max_examples=60, stateful_step_count=30)


class RoutedEngineMachine(EngineMachine):
    """The same, routed by ``to``: single-definition events take the inline path."""

    def __init__(self) -> None:
        super().__init__()
        self.engine = create_conversation_engine(
            routed_tallies(), scheduler=self.scheduler, event_type=route_to
        )
        self.engine.subscribe(self.seen.append)


TestRoutedEngineMachine = RoutedEngineMachine.TestCase
TestRoutedEngineMachine.pytestmark = [pytest.mark.slow]
TestRoutedEngineMachine.settings = settings(max_examples=60, stateful_step_count=30)

SHARED_ROUTED = Registration(routed_tallies(), event_type=route_to)


class SharedRegistrationMachine(EngineMachine):
    """Routed, from one ``Registration`` shared by the engines of every example."""

    def __init__(self) -> None:
        super().__init__()
        self.engine = create_conversation_engine(SHARED_ROUTED, scheduler=self.scheduler)
        self.engine.subscribe(self.seen.append)


TestSharedRegistrationMachine = SharedRegistrationMachine.TestCase
TestSharedRegistrationMachine.pytestmark = [pytest.mark.slow]
TestSharedRegistrationMachine.settings = settings(max_examples=40, stateful_step_count=30)


@pytest.mark.slow
@settings(max_examples=150)
@given(logs, logs, st.lists(st.booleans(), max_size=60))
def test_engines_of_one_registration_fold_independently(
    first: list[Event], second: list[Event], turns: list[bool]
) -> None:
    """Two engines of one registration, pushed in turn (as two conversations of one
    server are), each hold exactly what their own log folds to."""
    registration = Registration(run_tallies(), event_type=route_to)
    engines = [create_conversation_engine(registration) for _ in range(2)]
    pending = [list(first), list(second)]
    for turn in [*turns, *([False] * len(first)), *([True] * len(second))]:
        log = pending[turn]
        if log:
            with contextlib.suppress(DefinitionError):
                engines[turn].push(log.pop(0))
    definitions = list(registration.definitions)
    for engine, log in zip(engines, (first, second), strict=True):
        assert_folded_like_the_model(engine, definitions, log)
