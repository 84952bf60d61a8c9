"""Engines: conversations loaded on demand, least recently used out, hooks outside the lock."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.serve._engines import Engines


class FakeHub:
    def __init__(self, name: str) -> None:
        self.name = name
        self.clients: set[object] = set()
        self.last_used = 0.0  # long unused: evictable at once with idle_grace=0


def engines(max_loaded: int, known: set[str] | None = None) -> Engines[FakeHub]:
    async def load(name: str) -> FakeHub | None:
        await asyncio.sleep(0)  # a real load awaits the store
        return FakeHub(name) if known is None or name in known else None

    return Engines(load, max_loaded=max_loaded, idle_grace=0)


class TestHooks:
    """on_load/on_evict run after the lock is released, on_evict first, as seed 003 says."""

    def test_order_and_lock(self) -> None:
        async def scenario() -> list[Any]:
            registry = engines(max_loaded=2)
            seen: list[Any] = []
            registry.on_load.append(
                lambda name: seen.append(("load", name, registry.locked(), sorted(registry)))
            )
            registry.on_evict.append(
                lambda name: seen.append(("evict", name, registry.locked(), sorted(registry)))
            )
            for name in ["a", "b", "a", "c"]:  # "a" used again: "b" is the LRU
                await registry.open(name)
            await registry.unload("a")
            assert await registry.unload("a") is False
            return seen

        assert asyncio.run(scenario()) == [
            ("load", "a", False, ["a"]),
            ("load", "b", False, ["a", "b"]),
            ("evict", "b", False, ["a", "c"]),
            ("load", "c", False, ["a", "c"]),
            ("evict", "a", False, ["c"]),
        ]

    def test_a_hook_may_call_back_into_the_registry(self) -> None:
        # Under the lock this would deadlock: the hook's open needs the lock too.
        async def scenario() -> list[str]:
            registry = engines(max_loaded=10)

            async def prefetch(name: str) -> None:
                if name == "first":
                    await registry.open("neighbour")

            registry.on_load.append(prefetch)
            await asyncio.wait_for(registry.open("first"), 5)
            return list(registry)

        assert asyncio.run(scenario()) == ["neighbour", "first"]

    def test_a_failing_hook_is_logged_and_serving_goes_on(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        async def scenario() -> FakeHub | None:
            registry = engines(max_loaded=10)
            registry.on_load.append(lambda name: 1 / 0)
            return await registry.open("a")

        hub = asyncio.run(scenario())
        assert hub is not None
        assert "on_load hook" in caplog.text


class TestEviction:
    """Past max_loaded the least recently used unwatched hubs go; watched ones stay."""

    def test_watched_and_just_used_hubs_stay(self) -> None:
        async def scenario() -> list[str]:
            registry = engines(max_loaded=1)
            watched = await registry.open("watched")
            assert watched is not None
            watched.clients.add(object())
            fresh = await registry.open("fresh")
            assert fresh is not None
            fresh.last_used = float("inf")  # used just now: within the grace
            await registry.open("new")
            return sorted(registry)

        # The limit is exceeded rather than a watched page frozen.
        assert asyncio.run(scenario()) == ["fresh", "new", "watched"]

    def test_unknown_conversations_are_not_loaded(self) -> None:
        async def scenario() -> tuple[FakeHub | None, int]:
            registry = engines(max_loaded=1, known={"a"})
            return await registry.open("b"), len(registry)

        assert asyncio.run(scenario()) == (None, 0)

    def test_concurrent_opens_build_once(self) -> None:
        async def scenario() -> bool:
            registry = engines(max_loaded=4)
            loads: list[str] = []
            registry.on_load.append(loads.append)
            hubs = await asyncio.gather(*(registry.open("a") for _ in range(5)))
            return len(loads) == 1 and all(hub is hubs[0] for hub in hubs)

        assert asyncio.run(scenario())

    @given(st.integers(1, 4), st.lists(st.sampled_from("abcdefg"), max_size=30))
    @settings(max_examples=60, deadline=None)
    def test_loaded_are_the_most_recently_used(self, limit: int, uses: list[str]) -> None:
        """A model: the loaded set is the ``limit`` most recently used ids, and every
        eviction was reported exactly once."""

        async def scenario() -> tuple[list[str], list[str], list[str]]:
            registry = engines(max_loaded=limit)
            loaded: list[str] = []
            evicted: list[str] = []
            registry.on_load.append(loaded.append)
            registry.on_evict.append(evicted.append)
            for name in uses:
                await registry.open(name)
            return list(registry), loaded, evicted

        order, loaded, evicted = asyncio.run(scenario())
        recent: list[str] = []
        for name in uses:
            if name in recent:
                recent.remove(name)
            recent.append(name)
        assert order == recent[-limit:]
        remaining = list(loaded)
        for name in evicted:
            remaining.remove(name)
        assert sorted(remaining) == sorted(order)
