"""SnapshotStream: coalesced views for asyncio consumers, ending when the producer closes."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import AsyncioScheduler, Node, SnapshotStream, create_conversation_engine

from .harness import ev, tallies

# A hang guard only: a broken stream fails instead of stalling the suite.
GUARD = 30.0


def run(coroutine: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, GUARD))


async def collect(stream: SnapshotStream) -> list[tuple[Node, ...]]:
    return [nodes async for nodes in stream]


class TestEnding:
    def test_a_consumer_gets_the_current_view_then_ends_when_the_producer_closes(self) -> None:
        engine = create_conversation_engine(tallies())
        engine.push(ev("a", "start", "x"))
        stream = SnapshotStream(engine)

        async def scenario() -> list[tuple[Node, ...]]:
            task = asyncio.create_task(collect(stream))
            await asyncio.sleep(0)  # the consumer starts and takes the current view
            stream.close()
            return await task

        views = run(scenario())
        assert views == [engine.nodes()]
        assert stream.closed

    def test_a_consumer_after_close_gets_the_final_view_and_ends(self) -> None:
        engine = create_conversation_engine(tallies())
        stream = SnapshotStream(engine)
        engine.push(ev("a", "start", "x"))
        stream.close()
        stream.close()  # harmless
        assert run(collect(stream)) == [engine.nodes()]

    def test_close_delivers_a_pending_frame_first(self) -> None:
        async def scenario() -> tuple[list[tuple[Node, ...]], tuple[Node, ...]]:
            # A frame a minute away: only close() can deliver it.
            engine = create_conversation_engine(tallies(), scheduler=AsyncioScheduler(60))
            stream = SnapshotStream(engine)
            task = asyncio.create_task(collect(stream))
            await asyncio.sleep(0)
            engine.push(ev("a", "start", "x", pub="animation-frame"))
            engine.push(ev("a", "update", "x", v=5, pub="animation-frame"))
            stream.close()
            return await task, engine.nodes()

        views, final = run(scenario())
        assert views[0] == ()
        assert views[-1] == final
        assert final[0].state.total == 6


class TestCoalescing:
    def test_a_slow_consumer_sees_only_the_latest_view(self) -> None:
        engine = create_conversation_engine(tallies())
        stream = SnapshotStream(engine)

        async def scenario() -> list[tuple[Node, ...]]:
            iterator = stream.snapshots()
            first = await anext(iterator)
            # 100 immediate notifications while the consumer is not looking.
            for i in range(100):
                engine.push(ev("a", "start", f"x{i}"))
            stream.close()
            return [first] + [nodes async for nodes in iterator]

        views = run(scenario())
        assert views == [(), engine.nodes()]
        assert engine.statistics().notifications == 100

    @settings(max_examples=40, deadline=None)
    @given(st.lists(st.integers(min_value=0, max_value=5), min_size=1, max_size=12))
    def test_the_views_seen_are_notified_views_in_order_ending_with_the_final(
        self, batches: list[int]
    ) -> None:
        engine = create_conversation_engine(tallies())
        notified: list[tuple[Node, ...]] = []
        engine.subscribe(notified.append)
        stream = SnapshotStream(engine)

        async def scenario() -> list[tuple[Node, ...]]:
            task = asyncio.create_task(collect(stream))
            await asyncio.sleep(0)
            count = 0
            for size in batches:
                for _ in range(size):
                    engine.push(ev("a", "start", f"x{count}"))
                    count += 1
                await asyncio.sleep(0)  # sometimes the consumer runs in between
            stream.close()
            return await task

        views = run(scenario())
        assert views[-1] == engine.nodes()
        # The first is the view when the iteration started; then each is a notified
        # view, later than the one before (a subsequence: some were skipped).
        lengths = [len(view) for view in views]
        assert lengths == sorted(set(lengths))
        assert all(view in notified for view in views[1:])


class TestThreads:
    def test_pushes_and_close_from_other_threads(self) -> None:
        engine = create_conversation_engine(tallies())
        stream = SnapshotStream(engine)
        woken_on: set[int] = set()

        async def consume() -> list[tuple[Node, ...]]:
            views = []
            async for nodes in stream:
                woken_on.add(threading.get_ident())
                views.append(nodes)
            return views

        def produce(name: str, barrier: threading.Barrier) -> None:
            barrier.wait()
            for i in range(200):
                engine.push(ev("a", "start", f"{name}-{i}"))

        async def scenario() -> list[tuple[Node, ...]]:
            task = asyncio.create_task(consume())
            await asyncio.sleep(0)
            barrier = threading.Barrier(4)
            threads = [threading.Thread(target=produce, args=(str(n), barrier)) for n in range(4)]

            def all_then_close() -> None:
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                stream.close()  # from yet another thread

            closer = threading.Thread(target=all_then_close)
            closer.start()
            views = await task
            closer.join()
            return views

        views = run(scenario())
        assert views[-1] == engine.nodes()
        assert len(views[-1]) == 800
        assert woken_on == {threading.get_ident()}  # consumers run on their own loop
        for view in views:
            assert [n.seq for n in view] == list(range(len(view)))
