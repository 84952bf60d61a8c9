"""Publication and scheduling: coalescing, urgency, listeners, default scheduler."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from engine import (
    AsyncioScheduler,
    DefinitionError,
    ListenerError,
    ManualScheduler,
    Node,
    RegistrationError,
    create_conversation_engine,
)

from .harness import Harness, Tally, ev, tallies

FRAME = "animation-frame"


class TestAnimationFrame:
    """Deltas until a frame fires make one notification."""

    def test_deltas_coalesce_into_one_notification_per_frame(self) -> None:
        h = Harness.make()
        h.push(ev("a", "start", "1"))
        assert h.notifications == 1
        h.push(*[ev("a", "update", "1", pub=FRAME)] * 50)
        assert h.notifications == 1
        assert h.scheduler.pending == 1  # one frame, not fifty
        assert h.scheduler.fire() == 1
        assert h.notifications == 2
        assert h.seen[-1] is h.engine.nodes()
        assert h.seen[-1][0].state.total == 51
        stats = h.engine.statistics()
        assert (stats.frames_requested, stats.frames_fired, stats.notifications) == (1, 1, 2)

    def test_frame_with_nothing_new_does_not_notify(self) -> None:
        h = Harness.make()
        h.push(ev("a", "start", "1", pub=FRAME))
        h.engine.flush()
        assert h.notifications == 1
        assert h.scheduler.fire() == 0  # flush cancelled the frame
        assert h.notifications == 1

    def test_after_a_frame_an_ignored_event_requests_no_frame(self) -> None:
        h = Harness.make()
        h.push(ev("a", "start", "1"), ev("a", "update", "1", pub=FRAME))
        h.push(ev("a", "update", "1", pub=FRAME))  # coalesced into the pending frame
        h.scheduler.fire()
        requested = h.engine.statistics().frames_requested
        h.push(ev("a", "noise", "1"), ev("a", "update", "nobody", pub=FRAME))
        assert h.engine.statistics().frames_requested == requested
        assert h.scheduler.pending == 0

    @pytest.mark.parametrize("failing", ["update", "start"])
    @pytest.mark.parametrize("definitions", ["one", "three"])  # inline and general paths
    def test_a_failed_event_adds_no_urgency(self, failing: str, definitions: str) -> None:
        # The failing event asks for 'immediate': only the frame-level change before it
        # was accepted, so a frame is requested and nobody is notified yet.
        h = Harness.make([Tally("a")] if definitions == "one" else tallies())
        h.push(ev("a", "start", "1"))
        with pytest.raises(DefinitionError):
            h.engine.push_many([ev("a", "update", "1", pub=FRAME), ev("a", failing, "1", v=13)])
        assert h.notifications == 1
        assert h.scheduler.pending == 1
        h.scheduler.fire()
        assert h.notifications == 2
        assert h.seen[-1][0].state.total == 2

    def test_push_many_checks_once_at_its_end(self) -> None:
        h = Harness.make()
        h.engine.push_many([ev("a", "start", str(i)) for i in range(10)])
        assert h.notifications == 1


class TestImmediate:
    """Discrete facts notify now and cancel a pending frame."""

    def test_immediate_cancels_the_pending_frame(self) -> None:
        h = Harness.make()
        h.push(ev("a", "start", "1"))
        h.push(ev("a", "update", "1", pub=FRAME))
        assert h.scheduler.pending == 1
        h.push(ev("a", "update", "1", v=5))  # immediate
        assert h.notifications == 2
        assert h.scheduler.pending == 0
        assert h.seen[-1][0].state.total == 7  # carries the frame's change too
        assert h.engine.statistics().frames_cancelled == 1

    def test_a_cancelled_frame_never_fires_even_if_the_scheduler_calls_it(self) -> None:
        callbacks: list[Callable[[], object]] = []

        class Leaky:
            def request_frame(self, callback: Callable[[], object]) -> Callable[[], None]:
                callbacks.append(callback)
                return lambda: None  # cancel does nothing

        engine = create_conversation_engine(tallies(), scheduler=Leaky())
        seen: list[Any] = []
        engine.subscribe(seen.append)
        engine.push(ev("a", "start", "1", pub=FRAME))
        engine.push(ev("a", "update", "1"))  # immediate: notifies, "cancels"
        callbacks[0]()  # the scheduler fires the cancelled frame anyway
        assert len(seen) == 1

    def test_most_urgent_publication_wins_within_one_event(self) -> None:
        class Quiet(Tally):
            def publication(self, event: dict[str, Any]) -> str:
                return "none"

        h = Harness.make([Quiet("a"), Tally("b")])
        h.push(ev("*", "start", "1", pub=FRAME))  # a: none, b: animation-frame
        assert (h.notifications, h.scheduler.pending) == (0, 1)
        h.push(ev("*", "update", "1", pub="immediate"))  # a: none, b: immediate
        assert h.notifications == 1

    def test_only_definitions_that_changed_a_node_are_asked(self) -> None:
        asked: list[str] = []

        class Asked(Tally):
            def publication(self, event: dict[str, Any]) -> str:
                asked.append(self.kind)
                return "immediate"

        h = Harness.make([Asked("a"), Asked("b")])
        h.push(ev("a", "start", "1"), ev("*", "update", "1"), ev("a", "update", "1", v=0))
        assert asked == ["a", "a"]


class TestNone:
    """State recorded without waking the view."""

    def test_none_neither_notifies_nor_requests_a_frame(self) -> None:
        h = Harness.make()
        h.push(ev("a", "start", "1", pub="none"))
        assert (h.notifications, h.scheduler.pending) == (0, 0)
        h.push(ev("b", "start", "2"))  # the next notification carries it
        assert [n.key for n in h.seen[-1]] == ["a:1", "b:2"]

    def test_flush_delivers_changes_published_as_none(self) -> None:
        h = Harness.make()
        h.push(ev("a", "start", "1", pub="none"))
        h.engine.flush()
        assert h.notifications == 1
        h.engine.flush()
        assert h.notifications == 1  # nothing new: no notification

    def test_constant_publication_members_are_honoured(self) -> None:
        class Quiet(Tally):
            publication = "none"  # type: ignore[assignment]

        h = Harness.make([Quiet("a")])
        h.push(ev("a", "start", "1"))
        assert h.notifications == 0

    def test_missing_publication_means_immediate(self) -> None:
        class Plain:
            kind = "p"

            def match(self, event: Any) -> Any:
                return Tally("p").match(event)

            def start(self, event: Any, reader: Any) -> int:
                return 0

            def update(self, state: int, event: Any) -> int:
                return state + 1

        h = Harness.make([Plain()])
        h.push(ev("p", "start", "1"))
        assert h.notifications == 1


class TestListeners:
    """Listeners get the current nodes, once per change, in order."""

    def test_listener_push_is_notified_once_after_the_round(self) -> None:
        engine = create_conversation_engine(tallies())
        rounds: list[list[str]] = []
        order: list[str] = []

        def first(nodes: tuple[Node, ...]) -> None:
            order.append("first")
            rounds.append([n.key for n in nodes])
            if len(nodes) == 1:
                engine.push(ev("b", "start", "from-listener"))
                assert [n.key for n in engine.nodes()] == ["a:1", "b:from-listener"]

        engine.subscribe(first)
        engine.subscribe(lambda nodes: order.append("second"))
        engine.push(ev("a", "start", "1"))
        assert rounds == [["a:1"], ["a:1", "b:from-listener"]]
        assert order == ["first", "second", "first", "second"]

    def test_unsubscribe_stops_notifications_and_is_idempotent(self) -> None:
        h = Harness.make()
        seen: list[Any] = []
        unsubscribe = h.engine.subscribe(seen.append)
        h.push(ev("a", "start", "1"))
        unsubscribe()
        unsubscribe()
        h.push(ev("a", "start", "2"))
        assert len(seen) == 1
        assert h.notifications == 2

    def test_a_listener_unsubscribed_mid_round_is_not_called(self) -> None:
        engine = create_conversation_engine(tallies())
        calls: list[str] = []
        unsubscribe_second: list[Callable[[], None]] = []
        engine.subscribe(lambda nodes: unsubscribe_second[0]())
        unsubscribe_second.append(engine.subscribe(lambda nodes: calls.append("second")))
        engine.push(ev("a", "start", "1"))
        assert calls == []

    def test_a_raising_listener_does_not_stop_the_others(self) -> None:
        engine = create_conversation_engine(tallies())
        seen: list[Any] = []

        def boom(nodes: Any) -> None:
            raise ValueError("listener bug")

        engine.subscribe(boom)
        engine.subscribe(seen.append)
        with pytest.raises(ListenerError, match="raised ValueError: listener bug") as info:
            engine.push(ev("a", "start", "1"))
        assert isinstance(info.value.__cause__, ValueError)
        assert len(seen) == 1
        assert [n.key for n in engine.nodes()] == ["a:1"]  # the event was folded

    def test_no_subscriber_schedules_nothing(self) -> None:
        scheduler = ManualScheduler()
        engine = create_conversation_engine(tallies(), scheduler=scheduler)
        engine.push(ev("a", "start", "1", pub=FRAME))
        assert scheduler.requested == 0
        assert engine.statistics().notifications == 0

    def test_no_subscriber_builds_no_snapshot_for_immediate_changes(self) -> None:
        engine = create_conversation_engine(tallies())
        engine.push_many([ev("a", "start", "1"), ev("a", "update", "1")])
        assert engine._fold.cached is None  # nobody asked for nodes(): none were built
        assert engine.statistics().notifications == 0
        seen: list[Any] = []
        engine.subscribe(seen.append)
        engine.push(ev("a", "update", "1"))  # the first notification carries everything
        assert [n.state.total for n in seen[-1]] == [3]

    def test_listener_must_be_callable(self) -> None:
        engine = create_conversation_engine(tallies())
        with pytest.raises(RegistrationError):
            engine.subscribe("not callable")  # type: ignore[arg-type]


class TestDefaultScheduler:
    """call_soon on a running loop; otherwise the end of the outermost push."""

    def test_without_a_loop_the_frame_fires_when_push_returns(self) -> None:
        engine = create_conversation_engine(tallies())
        seen: list[Any] = []
        engine.subscribe(seen.append)
        engine.push(ev("a", "start", "1", pub=FRAME))
        assert len(seen) == 1
        engine.push_many([ev("a", "update", "1", pub=FRAME)] * 10)
        assert len(seen) == 2
        assert seen[-1][0].state.total == 11

    def test_with_a_running_loop_the_frame_fires_on_call_soon(self) -> None:
        async def scenario() -> list[int]:
            engine = create_conversation_engine(tallies())
            seen: list[Any] = []
            engine.subscribe(seen.append)
            engine.push(ev("a", "start", "1", pub=FRAME))
            for _ in range(10):
                engine.push(ev("a", "update", "1", pub=FRAME))
            counts = [len(seen)]
            await asyncio.sleep(0)
            counts.append(len(seen))
            counts.append(seen[-1][0].state.total)
            return counts

        assert asyncio.run(scenario()) == [0, 1, 11]


class TestAsyncioScheduler:
    """Frames fire on the loop after the interval (or call_soon for zero)."""

    @pytest.mark.parametrize("interval", [0.0, 0.001])
    def test_frames_fire_on_the_loop(self, interval: float) -> None:
        async def scenario() -> tuple[int, int]:
            engine = create_conversation_engine(
                tallies(), scheduler=AsyncioScheduler(interval=interval)
            )
            seen: list[Any] = []
            fired = asyncio.Event()
            engine.subscribe(lambda notification: (seen.append(notification), fired.set()))
            engine.push_many([ev("a", "start", "1", pub=FRAME)])
            before = len(seen)
            await asyncio.wait_for(fired.wait(), 30)  # a hang guard, not a timing assertion
            return before, len(seen)

        assert asyncio.run(scenario()) == (0, 1)

    def test_cancel_prevents_the_frame(self) -> None:
        async def scenario() -> list[int]:
            fired: list[int] = []
            scheduler = AsyncioScheduler(interval=0)
            cancel = scheduler.request_frame(lambda: fired.append(1))
            cancel()
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            return fired

        assert asyncio.run(scenario()) == []

    def test_frame_requested_from_another_thread_runs_on_the_loop(self) -> None:
        async def scenario() -> bool:
            loop = asyncio.get_running_loop()
            scheduler = AsyncioScheduler(interval=0, loop=loop)
            done = asyncio.Event()
            await asyncio.to_thread(scheduler.request_frame, done.set)
            await asyncio.wait_for(done.wait(), timeout=5)
            return done.is_set()

        assert asyncio.run(scenario())

    def test_needs_a_loop(self) -> None:
        with pytest.raises(RuntimeError, match="needs an event loop"):
            AsyncioScheduler().request_frame(lambda: None)

    def test_negative_interval_is_rejected(self) -> None:
        with pytest.raises(ValueError, match="interval"):
            AsyncioScheduler(interval=-1)


class TestManualScheduler:
    """Frames fire only on fire(); those requested while firing wait."""

    def test_frames_requested_while_firing_wait_for_the_next_fire(self) -> None:
        scheduler = ManualScheduler()
        fired: list[str] = []
        scheduler.request_frame(
            lambda: (fired.append("a"), scheduler.request_frame(lambda: fired.append("b")))
        )
        assert scheduler.fire() == 1
        assert fired == ["a"]
        assert scheduler.fire() == 1
        assert fired == ["a", "b"]

    def test_a_scheduler_that_fires_synchronously_is_tolerated(self) -> None:
        class Eager:
            def request_frame(self, callback: Callable[[], object]) -> Callable[[], None]:
                callback()
                return lambda: None

        engine = create_conversation_engine(tallies(), scheduler=Eager())
        seen: list[Any] = []
        engine.subscribe(seen.append)
        engine.push(ev("a", "start", "1", pub=FRAME))
        engine.push(ev("a", "update", "1", pub=FRAME))
        assert len(seen) == 2


class TestPublicationMapping:
    """publication may map event types to publications, resolved once per type."""

    class Mapped(Tally):
        event_types = frozenset({"start", "update"})
        publication = {"update": "animation-frame"}  # type: ignore[assignment]  # noqa: RUF012

    def test_mapped_types_publish_as_mapped_and_others_immediately(self) -> None:
        h = Harness.make([self.Mapped("a")], event_type=lambda event: event["op"])
        h.push(ev("a", "start", "1"))  # not in the mapping: immediate
        assert h.notifications == 1
        h.push(ev("a", "update", "1"), ev("a", "update", "1"))
        assert (h.notifications, h.scheduler.pending) == (1, 1)

    def test_a_mapping_needs_event_type(self) -> None:
        with pytest.raises(RegistrationError, match="needs the engine's event_type"):
            create_conversation_engine([self.Mapped("a")])

    def test_a_mapping_to_a_bad_value_is_rejected(self) -> None:
        class Bad(Tally):
            publication = {"update": "later"}  # type: ignore[assignment]  # noqa: RUF012

        with pytest.raises(RegistrationError, match="maps to 'later'"):
            create_conversation_engine([Bad("a")], event_type=lambda event: event["op"])

    def test_a_callable_mapping_is_looked_up_with_a_route_and_called_without(self) -> None:
        calls: list[str] = []

        class ByOp(dict[str, str]):
            def __call__(self, event: dict[str, Any]) -> str:
                calls.append(event["op"])
                return self.get(event["op"], "immediate")

        class Both(Tally):
            event_types = frozenset({"start", "update"})
            publication = ByOp({"update": "animation-frame"})  # type: ignore[assignment]

        routed = Harness.make([Both("a")], event_type=lambda event: event["op"])
        unrouted = Harness.make([Both("a")])
        for h in (routed, unrouted):
            h.push(ev("a", "start", "1", pub=FRAME))  # "pub" is ignored by the mapping
            h.push(ev("a", "update", "1"), ev("a", "update", "1"))
            assert (h.notifications, h.scheduler.pending) == (1, 1)
        assert calls == ["start", "update", "update"]  # only the unrouted engine calls
