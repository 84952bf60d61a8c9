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

The file says it is ours the way SQLite recommends for application file formats:
``PRAGMA application_id`` (``_APPLICATION_ID``) and ``PRAGMA user_version`` (the
schema version) in its header. A store is opened in one of SQLite's own URI modes
(``ro``, ``rw``, ``rwc``); only ``rwc`` turns a missing or empty file into a store,
and no mode touches a database of another application. Stores written before the
marker (our two tables, application id 0) are still read and written as they are.
"""

from __future__ import annotations

import contextlib
import math
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import msgspec

from engine._deprecation import renamed

from .._errors import ConcurrencyError, StoreBusyError, StoreError, UnstorableEventError
from ..logs._jsonl import Entry
from . import _forks
from ._forks import check_fork, windows
from ._forks import check_window as _check_window

__all__ = [
    "SQLiteStore",
    "StoreMode",
]

StoreMode = Literal["ro", "rw", "rwc"]
"""How a store is opened, as SQLite's URI ``mode``: read-only, read-write, or
read-write creating the store when the file is missing or empty."""

_APPLICATION_ID = 0x436F6E76  # "Conv": what `PRAGMA application_id` of our files holds
_SCHEMA_VERSION = 1  # `PRAGMA user_version`: the layout below

# Forks (``_forks``): added to the first schema without a new version: a store made
# before it gets the table when first opened to write, and reads as having no fork.
_FORKS = """CREATE TABLE IF NOT EXISTS forks (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    prefix INTEGER NOT NULL
) WITHOUT ROWID"""

_SCHEMA = (
    """CREATE TABLE events (
    conversation TEXT NOT NULL,
    position INTEGER NOT NULL,
    time REAL,
    event BLOB NOT NULL,
    PRIMARY KEY (conversation, position)
) WITHOUT ROWID""",
    """CREATE TABLE conversations (
    id TEXT PRIMARY KEY,
    length INTEGER NOT NULL
) WITHOUT ROWID""",
    _FORKS,
    f"PRAGMA application_id = {_APPLICATION_ID}",
    f"PRAGMA user_version = {_SCHEMA_VERSION}",
)
_TABLES = frozenset({"events", "conversations"})
_CREATE_TIMEOUT = 30.0  # seconds to wait for the write lock when creating the tables

_NO_LIMIT = 2**62  # start + _NO_LIMIT stays a 64-bit integer
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode


class SQLiteStore:
    """An append-only event store in one SQLite file, per-conversation positions 0, 1, ...

    Several processes (and several ``SQLiteStore`` objects) may append to one file at
    once: every append is atomic and positions stay gapless and unique. One object
    may be shared by threads: it has one connection and serializes its calls with a
    lock (open one store per thread to read in parallel). Use it as a context
    manager, or call ``close()``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 30.0,
        mode: StoreMode = "rwc",
    ) -> None:
        """Open the store at ``path``.

        ``mode`` is SQLite's: ``"ro"`` reads only and never changes the file, ``"rw"``
        refuses a missing file, ``"rwc"`` (the default) creates the store in a missing
        or empty file. ``StoreError``, naming the path and the cause, for a missing
        directory or file, a file that is not SQLite, a database of another application
        or a newer schema, or a read-only file or directory opened to write; nothing
        is changed then. ``busy_timeout`` is how many seconds an append waits for
        another writer's lock before ``StoreBusyError``.
        """
        self.path = os.fspath(path)
        self.mode: StoreMode = mode
        self._lock = threading.Lock()
        self._closed = False
        self._has_forks = True
        self._forks: dict[str, tuple[str, int]] = {}  # found ones: a fork row never changes
        self._db = _connect(self.path, mode, max(busy_timeout, _CREATE_TIMEOUT))
        try:
            self._prepare()
            self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        except sqlite3.Error as exc:
            self._db.close()
            raise _failure(self.path, "cannot open the event store", exc) from exc
        except BaseException:
            self._db.close()
            raise

    def _prepare(self) -> None:
        # Reads only, unless the file is empty and may be created: then the write lock,
        # waited for even with a short busy_timeout (opening must not fail because
        # another process is appending), and a second look under it.
        db = self._db
        for attempt in range(2):
            application_id = db.execute("PRAGMA application_id").fetchone()[0]
            version = db.execute("PRAGMA user_version").fetchone()[0]
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
            if application_id == _APPLICATION_ID or (not application_id and tables >= _TABLES):
                if version > _SCHEMA_VERSION:
                    raise StoreError(
                        f"{self.path}: written by a newer convo-engine (schema version "
                        f"{version}; this one knows up to {_SCHEMA_VERSION})"
                    )
                if attempt:
                    db.execute("ROLLBACK")
                self._has_forks = "forks" in tables
                if not self._has_forks and self.mode != "ro":
                    db.execute(_FORKS)
                    self._has_forks = True
                return
            if application_id or tables:
                if attempt:
                    db.execute("ROLLBACK")
                what = (
                    f"application_id {application_id:#x}"
                    if application_id
                    else "tables " + ", ".join(sorted(tables))
                )
                raise StoreError(
                    f"{self.path}: not a convo event store but another SQLite database "
                    f"({what}); it was not changed"
                )
            if attempt:
                break
            if self.mode != "rwc":
                raise StoreError(
                    f"{self.path}: not a convo event store (an empty file); "
                    "nothing was changed (open it with mode 'rwc' to create one)"
                )
            db.execute("PRAGMA journal_mode=WAL")  # kept in the file; not in a transaction
            db.execute("BEGIN IMMEDIATE")
        try:
            for statement in _SCHEMA:
                db.execute(statement)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
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
        ``UnstorableEventError`` for an event with no JSON form (NaN and infinities
        included), ``StoreBusyError`` when the write lock stays taken past the busy
        timeout, and in each case nothing is written. ``events`` is consumed inside the
        transaction, so an iterator (a log being decoded) is stored without being held
        in memory. ``time`` is stored with every event.
        """
        with self._lock, self._guard("cannot append"), _Transaction(self._db):
            row = self._db.execute(
                "SELECT length FROM conversations WHERE id = ?", (conversation,)
            ).fetchone()
            length: int = row[0] if row else 0
            if expected_position is not None and expected_position != length:
                raise ConcurrencyError(conversation, expected_position, length)
            count = 0

            def rows() -> Iterator[tuple[str, int, float | None, bytes]]:
                nonlocal count
                for index, event in enumerate(events):
                    count = index + 1
                    yield conversation, length + index, time, _blob(conversation, index, event)

            self._db.executemany(
                "INSERT INTO events (conversation, position, time, event) VALUES (?, ?, ?, ?)",
                rows(),
            )
            if count:
                self._db.execute(
                    "INSERT INTO conversations (id, length) VALUES (?, ?)"
                    " ON CONFLICT (id) DO UPDATE SET length = excluded.length",
                    (conversation, length + count),
                )
            return length + count

    def fork(self, source: str, conversation: str, prefix: int) -> int:
        """Start ``conversation`` as the first ``prefix`` events of ``source``, copying
        none (``replay.stores._forks``); returns its length, ``prefix``. Appends to it
        go after them; reads give the source's prefix, then its own events.
        ``StoreError`` when ``conversation`` exists or ``source`` is shorter."""
        with self._lock, self._guard("cannot fork"), _Transaction(self._db):
            lengths = dict(
                self._db.execute(
                    "SELECT id, length FROM conversations WHERE id IN (?, ?)",
                    (source, conversation),
                ).fetchall()
            )
            check_fork(
                self.path,
                source,
                conversation,
                prefix,
                lengths.get(source, 0),
                lengths.get(conversation),
            )
            self._db.execute(
                "INSERT INTO forks (id, source, prefix) VALUES (?, ?, ?)",
                (conversation, source, prefix),
            )
            self._db.execute(
                "INSERT INTO conversations (id, length) VALUES (?, ?)", (conversation, prefix)
            )
        return prefix

    def _prefixes(self, conversations: list[str]) -> dict[str, int]:
        if not self._has_forks:
            return {}
        with self._lock, self._guard("cannot read"):
            rows = self._db.execute(
                "SELECT id, prefix FROM forks WHERE id IN (SELECT value FROM json_each(?))",
                (_encode(conversations),),
            ).fetchall()
        return dict(rows)

    def _fork_of(self, conversation: str) -> tuple[str, int] | None:
        # Under the lock. A fork row never changes once written: found ones are kept.
        found = self._forks.get(conversation)
        if found is None and self._has_forks:
            row = self._db.execute(
                "SELECT source, prefix FROM forks WHERE id = ?", (conversation,)
            ).fetchone()
            if row is not None:
                found = self._forks[conversation] = (row[0], row[1])
        return found

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

    def read_many(
        self, starts: Mapping[str, int], limit: int | None = None
    ) -> dict[str, list[Any]]:
        """For each conversation of ``starts``, its events from that position on (at most
        ``limit`` of them), decoded, in one query; conversations with none are left out.
        What a live view of many conversations reads per change: one statement, not one
        per conversation (each costs an index seek, the unchanged ones nothing more)."""
        return _forks.read_many(
            starts,
            limit,
            self._prefixes,
            self.read,
            lambda own: self._read_many_own(own, limit),
        )

    def _read_many_own(self, starts: Mapping[str, int], limit: int | None) -> dict[str, list[Any]]:
        found: dict[str, list[Any]] = {}
        wanted = _encode(list(starts.items()))
        with self._lock, self._guard("cannot read"):
            # One statement: a consistent snapshot even while others append.
            rows = self._db.execute(
                "SELECT e.conversation, e.event FROM json_each(?) AS w"
                " JOIN events AS e ON e.conversation = w.value ->> 0"
                " AND e.position >= w.value ->> 1 AND e.position < (w.value ->> 1) + ?"
                " ORDER BY w.key, e.position",
                (wanted, _NO_LIMIT if limit is None else limit),
            ).fetchall()
        for conversation, blob in rows:
            events = found.get(conversation)
            if events is None:
                events = found[conversation] = []
            events.append(_decode(blob))
        return found

    def length(self, conversation: str) -> int:
        """How many events ``conversation`` has (its next position); 0 if unknown."""
        with self._lock, self._guard("cannot read"):
            row = self._db.execute(
                "SELECT length FROM conversations WHERE id = ?", (conversation,)
            ).fetchone()
        return row[0] if row else 0

    def conversations(self) -> dict[str, int]:
        """Every conversation id with its length, ordered by id."""
        with self._lock, self._guard("cannot read"):
            rows = self._db.execute("SELECT id, length FROM conversations ORDER BY id").fetchall()
        return dict(rows)

    def close(self) -> None:
        """Close the connection; idempotent. The store is unusable afterwards."""
        with self._lock:
            self._closed = True
            self._db.close()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _rows(
        self, conversation: str, start: int, stop: int | None
    ) -> list[tuple[int, float | None, bytes]]:
        _check_window(start, stop)
        with self._lock, self._guard("cannot read"):
            # Each window one statement: a fork's prefix never changes, so the windows
            # of a fork read at different moments still make one consistent read.
            rows: list[tuple[int, float | None, bytes]] = []
            for owner, low, high in windows(conversation, start, stop, self._fork_of):
                rows += self._db.execute(
                    "SELECT position, time, event FROM events"
                    " WHERE conversation = ? AND position >= ? AND position < ?"
                    " ORDER BY position",
                    (owner, low, high if high is not None else 2**63 - 1),
                ).fetchall()
            return rows

    @contextlib.contextmanager
    def _guard(self, doing: str) -> Iterator[None]:
        # Every driver error leaves as a StoreError naming the file (the lock is held).
        if self._closed:
            raise StoreError(f"{self.path}: {doing}: the store is closed")
        try:
            yield
        except sqlite3.Error as exc:
            raise _failure(self.path, doing, exc) from exc


class _Transaction:
    # BEGIN IMMEDIATE ... COMMIT, ROLLBACK on any exception.
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        if exc_type is not None:
            if self._db.in_transaction:
                self._db.rollback()
            return
        try:
            self._db.execute("COMMIT")
        except sqlite3.Error:
            self._db.rollback()
            raise


def _connect(path: str, mode: StoreMode, timeout: float) -> sqlite3.Connection:
    """A connection to ``path`` in SQLite URI ``mode``, refusing what cannot be a store
    with the reason SQLite's own message ("unable to open database file") does not give."""
    if mode not in ("ro", "rw", "rwc"):
        raise ValueError(f"mode is 'ro', 'rw' or 'rwc', not {mode!r}")
    absolute = Path(path).absolute()
    directory = absolute.parent
    if not directory.is_dir():
        raise StoreError(f"{path}: no such directory: {directory}")
    if absolute.is_dir():
        raise StoreError(f"{path}: is a directory, not an event store")
    if mode != "rwc" and not absolute.exists():
        raise StoreError(f"{path}: no such event store")
    if mode != "ro":
        # SQLite would open a read-only file read-only without a word and fail at the
        # first append; a WAL store also needs its directory writable (the -wal and
        # -shm files).
        if not os.access(directory, os.W_OK):
            raise StoreError(
                f"{path}: its directory {directory} is read-only (a store's -wal and -shm "
                "files live beside it): open the store with mode 'ro' to read it"
            )
        if absolute.exists() and not os.access(absolute, os.W_OK):
            raise StoreError(f"{path}: the file is read-only: open it with mode 'ro' to read it")
    try:
        return sqlite3.connect(
            f"{absolute.as_uri()}?mode={mode}",
            uri=True,
            timeout=timeout,
            # None: we issue BEGIN ourselves, so the transaction boundaries are exactly
            # the ones written here.
            isolation_level=None,
            check_same_thread=False,
        )
    except sqlite3.Error as exc:
        raise _failure(path, "cannot open the event store", exc) from exc


def _failure(path: str, doing: str, exc: sqlite3.Error) -> StoreError:
    """The StoreError for a driver error: busy, or what SQLite's message means."""
    text = str(exc)
    if "locked" in text or "busy" in text:
        return StoreBusyError(f"{path}: event store busy: {text}")
    if "not a database" in text:
        return StoreError(f"{path}: {doing}: not an SQLite database ({text})")
    if "readonly" in text or "read-only" in text:
        return StoreError(f"{path}: {doing}: the file or its directory is read-only ({text})")
    return StoreError(f"{path}: {doing}: {text}")


def _blob(conversation: str, index: int, event: Any) -> bytes:
    try:
        blob = _encode(event)
    except (TypeError, msgspec.EncodeError) as exc:
        raise UnstorableEventError(conversation, index, f"it has no JSON form: {exc}") from exc
    # msgspec writes NaN and the infinities as null: look for them only where one may be.
    if b"null" in blob and _non_finite(msgspec.to_builtins(event)):
        raise UnstorableEventError(
            conversation, index, "it holds a NaN or infinite number, which JSON cannot carry"
        )
    return blob


def _non_finite(value: Any) -> bool:
    if type(value) is float:
        return not math.isfinite(value)
    if type(value) is dict:
        return any(_non_finite(item) for item in value.values())
    if type(value) is list:
        return any(_non_finite(item) for item in value)
    return False


# The name of one release ago (the SQLite store and the PostgreSQL one, apart from the
# ``Store`` protocol both follow).
__getattr__ = renamed(__name__, globals(), {"EventStore": "SQLiteStore"})
