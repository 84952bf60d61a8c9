"""A definition set's pre-pass, one event at a time, for views that grow (the server).

A replay hands the whole recording to the set's pre-pass (``DefinitionSet.feed``),
a generator over the events. A live view gets its events one at a time, so it
needs the pre-pass as a function of one event. A protocol set declares one
(``ProtocolSet.pre_pass``), giving exactly the envelopes its generator gives. A
pre-pass without one (a set built by hand) is driven one event at a time; that
works when it yields one envelope per event, and one that does not is refused
(``ValueError``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ._detect import DefinitionSet

__all__ = ["event_feed"]


class _Driven:
    """A one-envelope-per-event generator pre-pass, driven an event at a time."""

    def __init__(self, prepare: Callable[[Iterable[Any]], Iterable[Any]]) -> None:
        self._pending: deque[Any] = deque()
        self._out = iter(prepare(self._source()))

    def _source(self) -> Iterator[Any]:
        while self._pending:
            yield self._pending.popleft()

    def __call__(self, event: Any) -> Any:
        self._pending.append(event)
        try:
            envelope = next(self._out)
        except StopIteration:
            raise ValueError(
                "this pre-pass does not give one envelope per event: it cannot feed a live view"
            ) from None
        if self._pending:
            raise ValueError("this pre-pass gives no envelope for some event")
        return envelope


def event_feed(chosen: DefinitionSet) -> Callable[[Any], Any] | None:
    """A fresh function of one raw event to what the set's definitions take, or ``None``
    when events go in as they are. One per conversation: it keeps that stream's state."""
    if chosen.protocol is not None:
        return chosen.protocol.pre_pass()  # the contract's live pre-pass
    if chosen.prepare is None:
        return None
    return _Driven(chosen.prepare)
