"""A clock for the recorder that moves only when a test moves it (``Recorder(clock=)``):
time stamps and the batching rule are tested without sleeping."""

from __future__ import annotations


class Clock:
    """``now`` seconds since the epoch until the test sets or advances it."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
