"""One frame clock for every conversation a server holds.

Each conversation's engine asks its scheduler for a frame after a push and notifies
its subscribers when the frame fires. With a timer per engine (``AsyncioScheduler``),
a poll that brings news to a thousand conversations arms a thousand timers, which
fire one by one and wake each conversation's clients in its own loop step.
``FrameClock`` is the display's vertical sync instead: the first request arms the
one timer, every request made before it fires joins it, and the tick fires them all
in one loop step. A conversation still notifies at most once per ``interval`` (its
engine requests one frame at a time, and a request made after a tick waits a whole
interval for the next); a frame may fire sooner than ``interval`` after its own
request, never later. Imports nothing of ``replay``; runs on the loop that requests
frames, and must be used from that loop's thread only (one loop at a time).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable

__all__ = ["FrameClock"]

log = logging.getLogger("replay.serve")


class FrameClock:
    """An engine ``Scheduler`` whose frames all fire on one timer, ``interval`` s after
    the first request since the last tick (see the module docstring)."""

    def __init__(self, interval: float = 0.016) -> None:
        if interval < 0:
            raise ValueError(f"interval must be >= 0 seconds, not {interval!r}")
        self.interval = interval
        self.ticks = 0  # how many times the timer fired: frames per tick = requests / ticks
        self._pending: dict[int, Callable[[], object]] = {}
        self._next = 0
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def request_frame(self, callback: Callable[[], object], /) -> Callable[[], object]:
        """Fire ``callback`` at the next tick; return the function that cancels it."""
        token = self._next
        self._next += 1
        self._pending[token] = callback
        loop = asyncio.get_running_loop()
        # A server's app may be run by one loop after another (tests do): a timer left
        # on a loop that stopped would never fire, so a new loop arms its own.
        if self._timer is None or self._loop is not loop:
            self._loop = loop
            self._timer = loop.call_later(self.interval, self._tick)
        # Tokens are never reused, so a cancel after its frame fired removes nothing.
        return functools.partial(self._pending.pop, token, None)

    def _tick(self) -> None:
        self._timer = None
        self.ticks += 1
        # Requests made while firing (a callback that pushes) wait for the next tick.
        callbacks = list(self._pending.values())
        self._pending.clear()
        for callback in callbacks:
            try:
                callback()
            except Exception:  # one conversation's failure must not freeze the others
                log.exception("a frame callback failed")
