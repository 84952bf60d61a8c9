"""Choosing a store by its name, and the change feed every store offers.

``open_store`` is the one place that tells a PostgreSQL URL from a SQLite path, so
every ``--store`` option takes either. ``Store`` is the contract both stores keep
(checked by tests/replay/test_store_contract.py). ``changes`` is a store's live
feed of ``StoreChange`` hints: PostgreSQL's LISTEN/NOTIFY, or for SQLite a poll of
``PRAGMA data_version`` (SQLite's own counter of commits by other connections, one
cheap query per tick and no file watching, which is unreliable for WAL files).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any, Protocol

from ..logs._jsonl import Entry
from ._postgres import PostgresStore, StoreChange
from ._sqlite import SQLiteStore, StoreMode

__all__ = ["Store", "changes", "is_postgres", "open_store"]

_SCHEMES = ("postgresql://", "postgres://")


class Store(Protocol):
    """What every event store does (``SQLiteStore``, ``PostgresStore``)."""

    path: str

    def append(
        self,
        conversation: str,
        events: Iterable[Any],
        *,
        expected_position: int | None = None,
        time: float | None = None,
    ) -> int: ...

    def read(self, conversation: str, start: int = 0, stop: int | None = None) -> list[Any]: ...

    def read_entries(
        self, conversation: str, start: int = 0, stop: int | None = None
    ) -> list[Entry[Any]]: ...

    def read_many(
        self, starts: Mapping[str, int], limit: int | None = None
    ) -> dict[str, list[Any]]: ...

    def fork(self, source: str, conversation: str, prefix: int) -> int: ...

    def length(self, conversation: str) -> int: ...

    def conversations(self) -> dict[str, int]: ...

    def close(self) -> None: ...


def is_postgres(name: str | os.PathLike[str]) -> bool:
    """Whether ``name`` is a PostgreSQL URL rather than a SQLite file's path."""
    return isinstance(name, str) and name.startswith(_SCHEMES)


def open_store(
    name: str | os.PathLike[str], *, mode: StoreMode = "rwc"
) -> SQLiteStore | PostgresStore:
    """The store named by ``name``: a ``postgresql://`` (or ``postgres://``) URL opens a
    ``PostgresStore``, anything else is the path of a SQLite ``SQLiteStore``.
    ``mode`` is the same for both: ``"ro"`` reads only, ``"rw"`` refuses a store that
    does not exist yet, ``"rwc"`` creates it."""
    if is_postgres(name):
        return PostgresStore(os.fspath(name), mode=mode)
    return SQLiteStore(name, mode=mode)


async def changes(
    store: SQLiteStore | PostgresStore,
    *,
    poll_interval: float = 0.05,
    kick: asyncio.Event | None = None,
) -> AsyncIterator[StoreChange]:
    """``store``'s change hints, forever. For SQLite, setting ``kick`` yields a
    look-at-everything hint at once (an in-process append need not wait for the next
    poll); PostgreSQL notifies every append itself, this process's included."""
    if isinstance(store, PostgresStore):
        async with contextlib.aclosing(store.follow()) as hints:
            async for change in hints:
                yield change
        return
    kick = kick or asyncio.Event()
    # Our own connection: data_version only moves for commits by *other* connections.
    version_db = sqlite3.connect(store.path, isolation_level=None, check_same_thread=False)
    try:
        version = _data_version(version_db)
        yield StoreChange(None)
        while True:
            # asyncio.timeout, not wait_for: Python 3.11's wait_for drops a cancel that
            # arrives as the kick completes, and the server's stop would wait for ever.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(poll_interval):
                    await kick.wait()
            kicked = kick.is_set()
            kick.clear()
            now = _data_version(version_db)
            if now != version or kicked:
                version = now
                yield StoreChange(None)
    finally:
        version_db.close()


def _data_version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA data_version").fetchone()[0])
