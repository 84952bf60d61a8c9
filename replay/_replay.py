"""Replay: fold a recorded log through a fresh engine and return the view.

Sits on the engine's public API only, so a replay sees exactly what a live view of
the same events would have seen at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from itertools import islice
from typing import Any

from engine import Node, create_conversation_engine

__all__ = ["replay"]


def replay(
    events: Iterable[Any],
    definitions: Iterable[Any],
    *,
    event_type: Callable[[Any], Hashable] | None = None,
    batch: int | None = None,
) -> tuple[Node, ...]:
    """The nodes after folding ``events`` (in order) through a fresh engine.

    ``definitions`` are registered in order (their order fixes ``seq`` within an
    event); ``event_type`` is handed to the engine for routing. ``events`` is
    consumed once and lazily: a log reader's iterator is never held in memory.
    ``batch`` folds that many events per ``push_many`` call; ``None`` (the default)
    folds everything in one call, the fastest way. The result does not depend on
    ``batch`` (``check_determinism`` proves it for a given log).

    Raises what the engine raises: ``RegistrationError`` for bad definitions,
    ``DefinitionError`` naming the kind and event position when a definition fails.
    """
    engine = create_conversation_engine(definitions, event_type=event_type)
    if batch is None:
        engine.push_many(events)
        return engine.nodes()
    if batch < 1:
        raise ValueError(f"batch must be a positive number of events or None, not {batch!r}")
    iterator = iter(events)
    while chunk := tuple(islice(iterator, batch)):
        engine.push_many(chunk)
    return engine.nodes()
