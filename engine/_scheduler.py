"""Frame schedulers: where the time between notifications comes from.

The engine never reads a clock; it asks a ``Scheduler`` for a frame and notifies
subscribers when the frame fires. ``ManualScheduler`` lets tests decide when;
``AsyncioScheduler`` fires on an event loop after an interval.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from ._types import Cancel

__all__ = ["AsyncioScheduler", "ManualScheduler"]


class ManualScheduler:
    """Frames fire only when the test says so (``fire()``); for testing frequency."""

    def __init__(self) -> None:
        self._pending: dict[int, Callable[[], object]] = {}
        self._next = 0
        self.requested = 0

    def request_frame(self, callback: Callable[[], object], /) -> Cancel:
        """Queue ``callback`` until the next ``fire()``; return its cancel function."""
        token = self._next
        self._next += 1
        self.requested += 1
        self._pending[token] = callback

        def cancel() -> None:
            self._pending.pop(token, None)

        return cancel

    @property
    def pending(self) -> int:
        """How many frames are waiting to fire."""
        return len(self._pending)

    def fire(self) -> int:
        """Fire every frame pending now (not those requested while firing); return how
        many fired."""
        callbacks = list(self._pending.values())
        self._pending.clear()
        for callback in callbacks:
            callback()
        return len(callbacks)


class AsyncioScheduler:
    """Frames fire on an asyncio event loop ``interval`` seconds after they are requested.

    ``interval=0`` uses ``call_soon`` (next loop iteration). ``loop`` defaults to the
    loop running where the frame is requested; a frame requested from another
    thread is handed to the loop thread-safely.
    """

    def __init__(
        self, interval: float = 0.016, *, loop: asyncio.AbstractEventLoop | None = None
    ) -> None:
        if interval < 0:
            raise ValueError(f"interval must be >= 0 seconds, not {interval!r}")
        self.interval = interval
        self._loop = loop

    def request_frame(self, callback: Callable[[], object], /) -> Cancel:
        """Schedule ``callback`` on the loop; return a thread-safe cancel function."""
        running = asyncio.events._get_running_loop()
        loop = self._loop or running
        if loop is None:
            raise RuntimeError(
                "AsyncioScheduler needs an event loop: request frames from a running loop "
                "or pass AsyncioScheduler(loop=...)"
            )
        cancelled = threading.Event()

        def fire() -> None:
            if not cancelled.is_set():
                cancelled.set()
                callback()

        if loop is running:
            handle = (
                loop.call_later(self.interval, fire) if self.interval > 0 else loop.call_soon(fire)
            )

            def cancel() -> None:
                cancelled.set()
                handle.cancel()

            return cancel
        if self.interval > 0:
            loop.call_soon_threadsafe(loop.call_later, self.interval, fire)
        else:
            loop.call_soon_threadsafe(fire)
        return cancelled.set
