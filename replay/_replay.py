"""Replay: fold a recorded log through a fresh engine and return the view.

Sits on the engine's public API only, so a replay sees exactly what a live view of
the same events would have seen at the end. A log with branch events
(``definitions.branch``) is a tree: its view is the view of one branch's path (the
active one unless ``leaf`` names another), folded as a plain log.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from itertools import islice
from typing import Any

from definitions.branch import Tree, is_branch_event, path_events, starts_of
from engine import ConversationError, Node, create_conversation_engine

__all__ = ["replay"]


def replay(
    events: Iterable[Any],
    definitions: Iterable[Any],
    *,
    event_type: Callable[[Any], Hashable] | None = None,
    batch: int | None = None,
    leaf: str | None = None,
) -> tuple[Node, ...]:
    """The nodes after folding ``events`` (in order) through a fresh engine.

    ``definitions`` are registered in order (their order fixes ``seq`` within an
    event); ``event_type`` is handed to the engine for routing. ``events`` is
    consumed once and lazily: a log reader's iterator is never held in memory.
    ``batch`` folds that many events per ``push_many`` call; ``None`` (the default)
    folds everything in one call, the fastest way. The result does not depend on
    ``batch`` (``check_determinism`` proves it for a given log).

    A list or tuple of events that holds branch events folds the path of branch
    ``leaf`` (default: the active one); an iterator holding one raises ``ValueError``
    there (a tree needs the whole log: pass a list). ``BranchError`` for a branch
    event that cannot be placed or a ``leaf`` that does not exist.

    Raises what the engine raises: ``RegistrationError`` for bad definitions,
    ``DefinitionError`` naming the kind and event position when a definition fails.
    """
    definitions = tuple(definitions)
    if batch is not None and batch < 1:
        raise ValueError(f"batch must be a positive number of events or None, not {batch!r}")
    if isinstance(events, Sequence):
        if leaf is not None:
            return replay(
                _path(events, definitions, leaf), definitions, event_type=event_type, batch=batch
            )
        # A branch event is claimed by no definition: only a log with unclaimed events
        # (or one whose versions, folded in a line, fail) is looked through for one,
        # so the common log pays nothing.
        try:
            nodes, unclaimed = _fold(events, definitions, event_type, batch, check=False)
        except ConversationError:
            if not any(map(is_branch_event, events)):
                raise
            unclaimed = 1
        if unclaimed and any(map(is_branch_event, events)):
            return replay(
                _path(events, definitions, None), definitions, event_type=event_type, batch=batch
            )
        return nodes
    if leaf is not None:
        raise ValueError("leaf= names a branch of a whole log: pass the events as a list")
    return _fold(events, definitions, event_type, batch, check=True)[0]


def _path(events: Sequence[Any], definitions: tuple[Any, ...], leaf: str | None) -> list[Any]:
    return path_events(events, Tree(events, starts_of(definitions)), leaf)


_CHUNK = 1024  # events read at a time from an iterator (as the engine itself reads)


def _fold(
    events: Iterable[Any],
    definitions: tuple[Any, ...],
    event_type: Callable[[Any], Hashable] | None,
    batch: int | None,
    *,
    check: bool,
) -> tuple[tuple[Node, ...], int]:
    """The view and the count of unclaimed events; with ``check``, ``ValueError`` at a
    chunk holding a branch event (looked for only when the chunk left one unclaimed)."""
    engine = create_conversation_engine(definitions, event_type=event_type)
    if batch is None and not check:
        engine.push_many(events)
        return engine.nodes(), engine.statistics().events_unclaimed
    iterator = iter(events)
    unclaimed = 0
    while chunk := tuple(islice(iterator, batch or _CHUNK)):
        engine.push_many(chunk)
        if check and (now := engine.statistics().events_unclaimed) > unclaimed:
            unclaimed = now
            if any(map(is_branch_event, chunk)):
                raise ValueError(
                    "the log holds branch events (a tree needs the whole log): pass it as a list"
                )
    return engine.nodes(), engine.statistics().events_unclaimed
