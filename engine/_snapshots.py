"""Coalesced snapshots of an engine's view for asyncio consumers: ``async for nodes in``.

Which thread runs an engine listener: the one that delivers the notification. An
``immediate`` publication is delivered inside ``push``, on the pushing thread; a
frame on the scheduler's thread (``AsyncioScheduler``: its loop's; no scheduler and
no running loop: the pushing thread, at the end of the push); ``flush`` on the
caller's. So a listener that touches asyncio objects is wrong as soon as one push
comes from another thread. ``SnapshotStream`` is the one listener that gets this
right: it keeps, per consumer, only the latest view (a slow consumer skips views, it
never queues them) and wakes the consumer on the consumer's own loop with
``call_soon_threadsafe``, whatever thread the notification came from. ``close`` (from
any thread) delivers what is pending and ends every consumer after its final view.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator

from ._engine import ConversationEngine
from ._errors import UsageError
from ._types import Node

__all__ = ["SnapshotStream"]


class _Consumer:
    """One ``snapshots()`` iteration: its loop, its wake-up, the view it has not seen."""

    __slots__ = ("ended", "event", "latest", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop, latest: tuple[Node, ...] | None) -> None:
        self.loop = loop
        self.event = asyncio.Event()
        self.latest = latest  # the view not yet handed out, or None: nothing new
        self.ended = False

    def wake(self) -> None:
        # A closed loop raises RuntimeError: its consumer is gone, nobody to wake.
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self.event.set)


class SnapshotStream:
    """The views of ``engine`` for any number of asyncio consumers, coalesced.

    Each ``snapshots()`` is an async iterator that yields the view as it is when the
    iteration starts, then the latest view after each notification it has not seen,
    and ends after ``close()``. Pushes may come from any thread; consumers are woken
    on their own loop. One stream per engine is enough (it subscribes once).
    """

    def __init__(self, engine: ConversationEngine) -> None:
        self._engine = engine
        self._lock = threading.Lock()
        self._consumers: set[_Consumer] = set()
        self._closed = False
        self._unsubscribe = engine.subscribe(self._on_nodes)

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
        return self._closed

    def _on_nodes(self, nodes: tuple[Node, ...]) -> None:
        # On whatever thread delivered the notification: hand over, never block.
        with self._lock:
            consumers = tuple(self._consumers)
            for consumer in consumers:
                consumer.latest = nodes
        for consumer in consumers:
            consumer.wake()

    def close(self) -> None:
        """The producer is done: deliver any pending frame, then end every consumer
        once it has the final view. Thread-safe; closing twice is harmless."""
        self._engine.flush()
        with self._lock:
            self._closed = True
            consumers = tuple(self._consumers)
            for consumer in consumers:
                consumer.ended = True
        self._unsubscribe()
        for consumer in consumers:
            consumer.wake()

    async def snapshots(self) -> AsyncIterator[tuple[Node, ...]]:
        """Yield the current view, then each newer one the consumer has not seen (the
        latest only), until ``close()``. Must run on an event loop."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise UsageError("SnapshotStream.snapshots() must run on an event loop") from None
        consumer = _Consumer(loop, None)
        with self._lock:
            consumer.ended = self._closed
            self._consumers.add(consumer)
        # Outside our lock: listeners take it under the engine's, never the reverse.
        # A notification since registering left a view as new as this one, or newer.
        current = self._engine.nodes()
        with self._lock:
            if consumer.latest is None:
                consumer.latest = current
        try:
            while True:
                with self._lock:
                    nodes = consumer.latest
                    consumer.latest = None
                    ended = consumer.ended
                    consumer.event.clear()
                if nodes is not None:
                    yield nodes
                elif ended:
                    return
                else:
                    await consumer.event.wait()
        finally:
            with self._lock:
                self._consumers.discard(consumer)

    def __aiter__(self) -> AsyncIterator[tuple[Node, ...]]:
        """``async for nodes in stream``: the same as ``stream.snapshots()``."""
        return self.snapshots()
