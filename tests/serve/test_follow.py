"""The live tail's costs: one read per change for every hub, one timer per frame for all."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay import SQLiteStore
from replay.serve._clock import FrameClock
from replay.serve._engines import BATCH, _apply
from replay.stores._postgres import StoreChange


class CountingStore(SQLiteStore):
    """An SQLiteStore that counts its reads."""

    reads = 0

    def read(self, conversation: str, start: int = 0, stop: int | None = None) -> list[Any]:
        self.reads += 1
        return super().read(conversation, start, stop)

    def read_many(self, starts: Any, limit: int | None = None) -> dict[str, list[Any]]:
        self.reads += 1
        return super().read_many(starts, limit)


class FakeHub:
    """What follow_store needs of a hub: it records what it folds."""

    def __init__(self, conversation: str, position: int = 0) -> None:
        self.conversation = conversation
        self.position = position
        self.lock = asyncio.Lock()
        self.folded: list[Any] = []

    def fold(self, events: Sequence[Any], start: int) -> None:
        assert start == self.position
        self.folded += events
        self.position = start + len(events)

    async def catch_up(self, store: Any) -> None:
        async with self.lock:
            while rows := await asyncio.to_thread(
                store.read, self.conversation, self.position, self.position + BATCH
            ):
                self.fold(rows, self.position)


class TestApply:
    """A look-at-everything hint costs one read for all loaded hubs."""

    @pytest.mark.slow
    @given(
        lengths=st.lists(st.integers(0, 6), min_size=1, max_size=6),
        seen=st.lists(st.integers(0, 6), min_size=6, max_size=6),
        busy=st.sets(st.integers(0, 5), max_size=2),
    )
    @settings(max_examples=30, deadline=None)
    def test_every_hub_folds_exactly_what_it_lacked(
        self, lengths: list[int], seen: list[int], busy: set[int]
    ) -> None:
        with tempfile.TemporaryDirectory() as directory:
            store = CountingStore(Path(directory) / "events.sqlite")
            for index, length in enumerate(lengths):
                store.append(f"c{index}", [{"n": n} for n in range(length)])
            hubs = {
                f"c{index}": FakeHub(f"c{index}", min(seen[index], length))
                for index, length in enumerate(lengths)
            }
            before = {cid: hub.position for cid, hub in hubs.items()}

            async def scenario() -> None:
                # A hub whose lock is held (a page catching up) is left to catch up itself.
                held = [hubs[f"c{i}"].lock for i in busy if f"c{i}" in hubs]
                for lock in held:
                    await lock.acquire()
                applying = asyncio.create_task(_apply(store, hubs, StoreChange(None)))
                await asyncio.sleep(0.01)
                for lock in held:
                    lock.release()
                await applying

            asyncio.run(scenario())
            for index, length in enumerate(lengths):
                hub = hubs[f"c{index}"]
                start = before[hub.conversation]
                assert hub.folded == [{"n": n} for n in range(start, length)]
            # One query for all, and a catch-up of its own for each busy hub.
            busy_loaded = sum(1 for index in busy if index < len(lengths))
            assert store.reads <= 1 + 2 * busy_loaded
            store.close()

    def test_a_hint_for_one_conversation_reads_only_it(self, tmp_path: Path) -> None:
        store = CountingStore(tmp_path / "events.sqlite")
        store.append("a", [1, 2])
        store.append("b", [1])
        hubs = {"a": FakeHub("a"), "b": FakeHub("b")}
        asyncio.run(_apply(store, hubs, StoreChange("a", 2)))
        assert (hubs["a"].folded, hubs["b"].folded, store.reads) == ([1, 2], [], 1)
        asyncio.run(_apply(store, hubs, StoreChange("a", 2)))  # not behind: no read
        assert store.reads == 1
        store.close()


class TestFrameClock:
    """Frames requested before a tick fire together at it; cancelled ones never."""

    def test_one_tick_for_all_and_cancel(self) -> None:
        async def scenario() -> tuple[list[str], int]:
            clock = FrameClock(0.0)
            fired: list[str] = []
            clock.request_frame(lambda: fired.append("a"))
            cancel = clock.request_frame(lambda: fired.append("b"))
            clock.request_frame(lambda: fired.append("c"))
            cancel()
            await asyncio.sleep(0.01)
            cancel()  # after its tick: nothing to cancel, nothing breaks
            return fired, clock.ticks

        assert asyncio.run(scenario()) == (["a", "c"], 1)

    def test_a_frame_requested_while_firing_waits_for_the_next_tick(self) -> None:
        async def scenario() -> list[tuple[str, int]]:
            clock = FrameClock(0.0)
            fired: list[tuple[str, int]] = []

            def first() -> None:
                fired.append(("first", clock.ticks))
                clock.request_frame(lambda: fired.append(("again", clock.ticks)))

            clock.request_frame(first)
            await asyncio.sleep(0.01)
            return fired

        assert asyncio.run(scenario()) == [("first", 1), ("again", 2)]

    def test_a_failing_frame_does_not_stop_the_others(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        async def scenario() -> list[str]:
            clock = FrameClock(0.0)
            fired: list[str] = []
            clock.request_frame(lambda: 1 / 0)
            clock.request_frame(lambda: fired.append("after"))
            await asyncio.sleep(0.01)
            return fired

        assert asyncio.run(scenario()) == ["after"]
        assert "a frame callback failed" in caplog.text

    def test_a_clock_outlives_its_loop(self) -> None:
        # An app may be served by one loop after another: frames still fire on the next.
        clock = FrameClock(3600.0)
        fired: list[int] = []

        async def abandon() -> None:
            clock.request_frame(lambda: fired.append(1))

        asyncio.run(abandon())  # its timer dies with the loop
        clock.interval = 0.0

        async def again() -> None:
            clock.request_frame(lambda: fired.append(2))
            await asyncio.sleep(0.01)

        asyncio.run(again())
        assert fired == [1, 2]

    def test_a_negative_interval_is_refused(self) -> None:
        with pytest.raises(ValueError, match="interval must be >= 0"):
            FrameClock(-1.0)
