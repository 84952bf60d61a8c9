"""Forks: a conversation that starts as another's first P events, none copied.

A fork is one row, ``(id, source, prefix)``, written once and never changed: the
fork's positions below ``prefix`` are the source's (which never change either:
stores are append-only), and its own events are stored from ``prefix`` on, under
its own id, like any conversation's. So a read of a fork is a read of the source's
prefix then of its own rows, and a fork of a fork resolves the same way, down the
chain. Both stores keep this one rule through ``windows``; the check of a fork
request is ``check_fork``. May import: ``replay._errors``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .._errors import StoreError

__all__ = ["check_fork", "check_window", "read_many", "windows"]


def check_window(start: int, stop: int | None) -> None:
    """A read's window is of positions, never negative (both stores)."""
    if start < 0 or (stop is not None and stop < 0):
        raise ValueError(f"positions are >= 0, got start={start}, stop={stop}")


def windows(
    conversation: str,
    start: int,
    stop: int | None,
    fork_of: Callable[[str], tuple[str, int] | None],
) -> list[tuple[str, int, int | None]]:
    """The own-row windows ``(conversation, start, stop)`` that make up positions
    ``start`` <= p < ``stop`` of ``conversation``, in position order (``fork_of``:
    a conversation's ``(source, prefix)``, or ``None`` when it is no fork)."""
    found: list[tuple[str, int, int | None]] = []
    while True:
        fork = fork_of(conversation)
        if fork is None:
            found.append((conversation, start, stop))
            break
        source, prefix = fork
        if stop is None or stop > prefix:
            found.append((conversation, max(start, prefix), stop))
        if start >= prefix:
            break
        conversation, stop = source, prefix if stop is None else min(stop, prefix)
    found.reverse()
    return found


def check_fork(
    path: str, source: str, conversation: str, prefix: int, source_length: int, length: int | None
) -> None:
    """Refuse a fork that cannot be made, naming why (``StoreError``; ``length``:
    the new conversation's, ``None`` when it does not exist, as it must not)."""
    if prefix < 0:
        raise ValueError(f"a fork's prefix is a number of events >= 0, got {prefix}")
    if source == conversation:
        raise StoreError(f"{path}: cannot fork conversation {source!r} into itself")
    if length is not None:
        raise StoreError(
            f"{path}: conversation {conversation!r} already has {length} events; "
            "a fork starts a new conversation"
        )
    if prefix > source_length:
        raise StoreError(
            f"{path}: conversation {source!r} has {source_length} events, "
            f"fewer than the {prefix} to fork"
        )


def read_many(
    starts: Mapping[str, int],
    limit: int | None,
    prefixes: Callable[[list[str]], dict[str, int]],
    read: Callable[[str, int, int | None], list[Any]],
    read_own: Callable[[Mapping[str, int]], dict[str, list[Any]]],
) -> dict[str, list[Any]]:
    """A store's ``read_many``: a fork read from below its prefix (``prefixes``: the
    forks among some conversations, one statement) is read alone (``read``, through
    its windows), every other conversation by the store's one statement over its own
    rows (``read_own``); in the order of ``starts``. ``ValueError`` for a negative
    start."""
    for start in starts.values():
        check_window(start, None)
    if not starts:
        return {}
    found: dict[str, list[Any]] = {}
    rest = dict(starts)
    forks = prefixes(list(starts))
    for conversation, start in starts.items():
        prefix = forks.get(conversation)
        if prefix is not None and start < prefix:
            del rest[conversation]
            events = read(conversation, start, None if limit is None else start + limit)
            if events:
                found[conversation] = events
    if len(rest) == len(starts):
        return read_own(rest)
    if rest:
        found.update(read_own(rest))
    return {c: found[c] for c in starts if c in found}
