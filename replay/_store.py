"""The embedded default event store: an append-only SQLite file in WAL mode.

Theory of operation
-------------------
``events`` holds one row per event, keyed by ``(conversation, position)``; the
primary key makes a duplicate position impossible even for a buggy writer.
``conversations`` holds each conversation's length, the next free position. An
append is one ``BEGIN IMMEDIATE`` transaction: it takes SQLite's single write lock
before reading the length, so no other process can append to the file between the
check of ``expected_position`` and the inserts. That is what makes positions gapless
and the optimistic check exact across processes; readers never block (WAL).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterable
from typing import Any

import msgspec

from ._errors import ConcurrencyError, StoreBusyError
from ._log import Entry

__all__ = [
    "EventStore",
]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    conversation TEXT NOT NULL,
    position INTEGER NOT NULL,
    time REAL,
    event BLOB NOT NULL,
    PRIMARY KEY (conversation, position)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    length INTEGER NOT NULL
) WITHOUT ROWID;
"""

_HAS_SCHEMA = (
    "SELECT count(*) = 2 FROM sqlite_master"
    " WHERE type = 'table' AND name IN ('events', 'conversations')"
)
_CREATE_TIMEOUT = 30.0  # seconds to wait for the write lock when creating the tables

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode


class EventStore:
    """An append-only event store in one SQLite file, per-conversation positions 0, 1, ...

    Several processes (and several ``EventStore`` objects) may append to one file at
    once: every append is atomic and positions stay gapless and unique. One object
    may be shared by threads: it has one connection and serializes its calls with a
    lock (open one store per thread to read in parallel). Use it as a context
    manager, or call ``close()``.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 30.0) -> None:
        """Open (creating if needed) the store at ``path``.

        ``busy_timeout`` is how many seconds an append waits for another writer's
        lock before ``StoreBusyError``.
        """
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        # isolation_level=None: we issue BEGIN ourselves, so the transaction boundaries
        # are exactly the ones written below.
        self._db = sqlite3.connect(
            self.path,
            timeout=max(busy_timeout, _CREATE_TIMEOUT),
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            # Making the file takes the write lock: wait for other writers then, even
            # with a short busy_timeout (opening must not fail because another process
            # is appending). An existing store needs only a read, which never waits.
            if not self._db.execute(_HAS_SCHEMA).fetchone()[0]:
                self._db.execute("PRAGMA journal_mode=WAL")  # kept in the file
                self._db.executescript(_SCHEMA)  # idempotent; each statement commits
            self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        except sqlite3.OperationalError as exc:
            self._db.close()
            raise _busy(exc) from exc
        except BaseException:
            self._db.close()
            raise

    def append(
        self,
        conversation: str,
        events: Iterable[Any],
        *,
        expected_position: int | None = None,
        time: float | None = None,
    ) -> int:
        """Append ``events`` to ``conversation`` in one transaction; returns its new length.

        With ``expected_position`` the append happens only if the conversation has
        exactly that many events, else ``ConcurrencyError``. All or nothing:
        ``msgspec.EncodeError``/``TypeError`` for an event msgspec cannot encode,
        ``StoreBusyError`` when the write lock stays taken past the busy timeout, and
        in each case nothing is written. ``time`` is stored with every event.
        """
        blobs = [_encode(event) for event in events]  # fail before taking the lock
        with self._lock, self._transaction():
            row = self._db.execute(
                "SELECT length FROM conversations WHERE id = ?", (conversation,)
            ).fetchone()
            length: int = row[0] if row else 0
            if expected_position is not None and expected_position != length:
                raise ConcurrencyError(conversation, expected_position, length)
            if not blobs:
                return length
            self._db.executemany(
                "INSERT INTO events (conversation, position, time, event) VALUES (?, ?, ?, ?)",
                [(conversation, length + i, time, blob) for i, blob in enumerate(blobs)],
            )
            self._db.execute(
                "INSERT INTO conversations (id, length) VALUES (?, ?)"
                " ON CONFLICT (id) DO UPDATE SET length = excluded.length",
                (conversation, length + len(blobs)),
            )
            return length + len(blobs)

    def read(self, conversation: str, start: int = 0, stop: int | None = None) -> list[Any]:
        """The events at positions ``start`` <= p < ``stop`` (to the end when ``None``),
        in order, decoded to plain Python objects. Empty for an unknown conversation."""
        return [_decode(blob) for _, _, blob in self._rows(conversation, start, stop)]

    def read_entries(
        self, conversation: str, start: int = 0, stop: int | None = None
    ) -> list[Entry[Any]]:
        """Like ``read``, each event in an ``Entry`` with its position, conversation and time."""
        return [
            Entry(position, _decode(blob), conversation, time)
            for position, time, blob in self._rows(conversation, start, stop)
        ]

    def length(self, conversation: str) -> int:
        """How many events ``conversation`` has (its next position); 0 if unknown."""
        with self._lock:
            row = self._db.execute(
                "SELECT length FROM conversations WHERE id = ?", (conversation,)
            ).fetchone()
        return row[0] if row else 0

    def conversations(self) -> dict[str, int]:
        """Every conversation id with its length, ordered by id."""
        with self._lock:
            rows = self._db.execute("SELECT id, length FROM conversations ORDER BY id").fetchall()
        return dict(rows)

    def close(self) -> None:
        """Close the connection; idempotent. The store is unusable afterwards."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> EventStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _rows(
        self, conversation: str, start: int, stop: int | None
    ) -> list[tuple[int, float | None, bytes]]:
        if start < 0 or (stop is not None and stop < 0):
            raise ValueError(f"positions are >= 0, got start={start}, stop={stop}")
        with self._lock:
            # One statement: a consistent snapshot even while others append.
            return self._db.execute(
                "SELECT position, time, event FROM events"
                " WHERE conversation = ? AND position >= ? AND position < ?"
                " ORDER BY position",
                (conversation, start, stop if stop is not None else 2**63 - 1),
            ).fetchall()

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)


class _Transaction:
    # BEGIN IMMEDIATE ... COMMIT, ROLLBACK on any exception; SQLite's "database is
    # locked" becomes StoreBusyError.
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise _busy(exc) from exc

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        if exc_type is not None:
            self._db.rollback()
            return
        try:
            self._db.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            self._db.rollback()
            raise _busy(exc) from exc


def _busy(exc: sqlite3.OperationalError) -> Exception:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return StoreBusyError(f"event store busy: {text}")
    return exc
