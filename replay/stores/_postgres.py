"""The shared event store: the same contract as the SQLite store, in PostgreSQL.

Theory of operation
-------------------
The layout follows the ``eventsourcing`` library's ``stored_events`` table: one row
per event keyed by ``(conversation, position)`` with the encoded event as ``bytea``
(the exact bytes msgspec wrote, so every reader folds identical input; ``jsonb``
would reorder keys). ``convo_conversations`` holds each conversation's length and
``convo_appends`` one row per append, keyed by an id the client chose before
sending, which is how a client that lost its connection learns where its append
landed, if it did.

An append is one call of the ``convo_append`` function, so one round trip and one
transaction. Its first statement is an upsert of the conversation's length row,
which takes that row's lock: appenders to one conversation queue there, each reads
the length its predecessor committed, so positions are gapless and the
``expected_position`` check is exact across machines, while appends to different
conversations never wait for each other. A stale expectation raises inside the
function, which rolls the whole transaction back. Commits of one conversation
happen in position order, so a reader always sees a gapless prefix.

The function also calls ``pg_notify`` (delivered at commit) with the new length and
the conversation id. ``follow()`` turns those into ``StoreChange`` hints. A hint
is only a reason to read: the reader always reads from its own position to the
store's end, and ``follow`` yields a "look at everything" hint after every
(re)connection and after a quiet interval, so a lost hint delays nothing for long
and loses nothing.

psycopg is imported when a store is opened, not with the package (the
``postgres`` extra is optional).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import uuid
from collections.abc import AsyncGenerator, Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import attrs
import msgspec

from engine._deprecation import renamed

from .._errors import ConcurrencyError, StoreError
from ..logs._jsonl import Entry
from . import _forks
from ._forks import check_fork, windows
from ._forks import check_window as _check_window
from ._sqlite import StoreMode, _blob

if TYPE_CHECKING:
    import psycopg

__all__ = ["AppendUnknownError", "Landed", "PostgresStore", "StoreChange"]

CHANNEL = "convo_events"
"""The NOTIFY channel every append signals on."""

_INSTALL = "the PostgreSQL store needs the postgres extra: pip install 'convo-engine[postgres]'"

# The SQLSTATE convo_append raises for a stale expected position (class "CV" is ours).
_STALE = "CV409"

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS convo_events (
    conversation text NOT NULL,
    position bigint NOT NULL,
    time double precision,
    event bytea NOT NULL,
    PRIMARY KEY (conversation, position)
);
CREATE TABLE IF NOT EXISTS convo_conversations (
    id text PRIMARY KEY,
    length bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS convo_forks (
    id text PRIMARY KEY,
    source text NOT NULL,
    prefix bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS convo_appends (
    id uuid PRIMARY KEY,
    conversation text NOT NULL,
    start bigint NOT NULL,
    stop bigint NOT NULL
);
CREATE OR REPLACE FUNCTION convo_append(
    p_conversation text, p_expected bigint, p_time double precision,
    p_events bytea[], p_append uuid
) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    n bigint := coalesce(array_length(p_events, 1), 0);
    total bigint;
BEGIN
    -- A repeated append id is the same append, retried: it lands once. (Were the
    -- first still running, the later of the two fails on convo_appends' key.)
    SELECT stop INTO total FROM convo_appends WHERE id = p_append;
    IF FOUND THEN
        RETURN total;
    END IF;
    IF n = 0 THEN
        SELECT length INTO total FROM convo_conversations WHERE id = p_conversation;
        total := coalesce(total, 0);
        IF p_expected IS NOT NULL AND p_expected <> total THEN
            RAISE EXCEPTION USING ERRCODE = '{_STALE}', MESSAGE = total::text;
        END IF;
        RETURN total;
    END IF;
    INSERT INTO convo_conversations AS c (id, length) VALUES (p_conversation, n)
        ON CONFLICT (id) DO UPDATE SET length = c.length + n
        RETURNING length INTO total;
    IF p_expected IS NOT NULL AND p_expected <> total - n THEN
        RAISE EXCEPTION USING ERRCODE = '{_STALE}', MESSAGE = (total - n)::text;
    END IF;
    INSERT INTO convo_events (conversation, position, time, event)
        SELECT p_conversation, total - n + o - 1, p_time, e
        FROM unnest(p_events) WITH ORDINALITY AS t(e, o);
    INSERT INTO convo_appends (id, conversation, start, stop)
        VALUES (p_append, p_conversation, total - n, total);
    -- The payload is bounded (8000 bytes): a longer id sends an empty hint,
    -- which readers take as "look at everything".
    PERFORM pg_notify('{CHANNEL}', CASE WHEN octet_length(p_conversation) < 7000
        THEN total::text || ' ' || p_conversation ELSE '' END);
    RETURN total;
END $$;
"""

_HAS_SCHEMA = (
    "SELECT count(*) = 4 FROM ("
    " SELECT 1 FROM pg_tables WHERE schemaname = current_schema()"
    " AND tablename IN ('convo_events', 'convo_conversations', 'convo_appends')"
    " UNION ALL SELECT 1 FROM pg_proc WHERE proname = 'convo_append') AS found"
)
_FORKS = (
    "CREATE TABLE IF NOT EXISTS convo_forks"
    " (id text PRIMARY KEY, source text NOT NULL, prefix bigint NOT NULL)"
)
_SCHEMA_LOCK = 0x636F6E766F  # an advisory lock id: creating the schema, one process at a time
_APPEND = "SELECT convo_append(%s, %s, %s, %s, %s)"
_NO_STOP = 2**63 - 1
_NO_LIMIT = 2**62  # start + _NO_LIMIT stays a bigint

_decode = msgspec.json.Decoder().decode


@attrs.frozen
class StoreChange:
    """A hint from ``follow()``: ``conversation`` reached ``length`` events.

    ``conversation`` is ``None`` for "anything may have changed" (after a
    reconnection, a quiet interval, or an id too long for a notification): look
    at every conversation you follow. Always read from your own position to the
    store's end; the hint only says where to look.
    """

    conversation: str | None
    length: int | None = None


@attrs.frozen
class Landed:
    """Where an append landed: ``conversation`` positions ``start`` <= p < ``stop``."""

    conversation: str
    start: int
    stop: int


class AppendUnknownError(StoreError):
    """The connection was lost after an append was sent: it may or may not have happened.

    ``append_id`` names it. Appending the same events again with
    ``append_id=error.append_id`` settles it: an append id lands at most once.
    ``PostgresStore.landed(append_id)`` says where it landed, if it has.
    ``__cause__`` is psycopg's error.
    """

    def __init__(self, conversation: str, append_id: uuid.UUID, cause: str) -> None:
        super().__init__(
            f"conversation {conversation!r}: the connection was lost after append "
            f"{append_id} was sent ({cause}); retry with append_id={str(append_id)!r}, which "
            "lands at most once"
        )
        self.conversation = conversation
        self.append_id = append_id


def psycopg_module() -> Any:
    """psycopg, or a ``StoreError`` saying how to install it."""
    try:
        import psycopg
    except ImportError as exc:
        raise StoreError(f"{_INSTALL} ({exc})") from exc
    return psycopg


def describe(dsn: str) -> str:
    """``dsn`` without its password, to name a store in messages."""
    parts = urlsplit(dsn)
    if parts.password is None:
        return dsn
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


class PostgresStore:
    """An append-only event store in a PostgreSQL database, shared by many machines.

    The same contract as ``SQLiteStore``: per-conversation positions 0, 1, ...,
    gapless; all-or-nothing appends; ``ConcurrencyError`` on a stale
    ``expected_position``. What a network store adds: ``AppendUnknownError`` when
    the connection is lost mid-append and ``landed()`` to resolve it; ``follow()``
    for change hints from any process. One object may be shared by threads (one
    connection, calls serialized); it reconnects after a lost connection.
    """

    def __init__(
        self,
        dsn: str,
        *,
        mode: StoreMode = "rwc",
        connect_timeout: float = 10.0,
        append_timeout: float = 30.0,
    ) -> None:
        """Connect to ``dsn`` (a ``postgresql://`` URL or libpq string).

        ``mode`` as for ``SQLiteStore``: ``"rwc"`` creates the tables and function
        when missing, ``"rw"`` refuses a database without them, ``"ro"`` too and
        makes the session read-only. A connection attempt gives up after
        ``connect_timeout`` seconds; an append that has no answer after
        ``append_timeout`` seconds (a server stopped, a network that drops packets) is
        ended on this side: its connection is shut and ``AppendUnknownError`` raised,
        as for any connection lost mid-append. ``StoreError`` naming the server (never
        the password) and the cause if it cannot connect or refuses.
        """
        self.dsn = dsn
        self.path = describe(dsn)  # the name messages use, as for the SQLite store
        self.mode: StoreMode = mode
        self._pg = psycopg_module()
        self.connect_timeout = connect_timeout
        self.append_timeout = append_timeout
        self._lock = threading.Lock()
        self._closed = False
        self._forks: dict[str, tuple[str, int]] = {}  # found ones: a fork row never changes
        self._has_forks = True
        self._db: psycopg.Connection[Any] = self._connect()
        try:
            with self._db.transaction():
                if not self._db.execute(_HAS_SCHEMA).fetchone()[0]:  # type: ignore[index]
                    if mode != "rwc":
                        raise StoreError(
                            f"{self.path}: not a convo event store (no convo_events "
                            "tables); nothing was changed (open it with mode 'rwc' to "
                            "create one)"
                        )
                    self._db.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                    self._db.execute(_SCHEMA)
                elif mode != "ro":  # a store made before forks: the table is added
                    self._db.execute(_FORKS)
                else:
                    found = self._db.execute("SELECT to_regclass('convo_forks')").fetchone()
                    self._has_forks = found is not None and found[0] is not None
        except self._pg.Error as exc:
            self._db.close()
            raise self._failure("cannot create the schema", exc) from exc
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
        append_id: uuid.UUID | None = None,
    ) -> int:
        """Append ``events`` to ``conversation`` in one transaction; returns its new length.

        As ``SQLiteStore.append`` (``UnstorableEventError`` for an event with no JSON
        form; ``events`` is encoded whole before anything is sent); besides,
        ``AppendUnknownError`` when the connection was lost after sending, and
        ``StoreError`` for a refused append (nothing written). ``append_id`` (a new
        one by default) makes a retry safe: an append id lands at most once, so
        retrying with the id an ``AppendUnknownError`` carries lands the events
        exactly once, and returns the length that landing left.
        """
        # Refused (UnstorableEventError) before anything is sent, by the SQLite store's rule.
        blobs = [_blob(conversation, index, event) for index, event in enumerate(events)]
        retry = append_id is not None
        append_id = append_id or uuid.uuid4()
        params = (conversation, expected_position, time, blobs, append_id)
        stale: ConcurrencyError | None = None
        with self._lock:
            db = self._connection()
            deadline = _Deadline(db, self.append_timeout)
            try:
                with deadline:
                    row = db.execute(_APPEND, params).fetchone()
            except self._pg.OperationalError as exc:
                cause = deadline.expired or _first_line(exc)
                raise AppendUnknownError(conversation, append_id, cause) from exc
            except self._pg.Error as exc:
                if exc.sqlstate == _STALE and expected_position is not None:
                    actual = int(exc.diag.message_primary or 0)
                    stale = ConcurrencyError(conversation, expected_position, actual)
                elif exc.diag.constraint_name != "convo_appends_pkey":
                    what = f"conversation {conversation!r}: append refused"
                    raise self._failure(what, exc) from exc
                row = None
        if row is not None:
            return int(row[0])
        # Refused because the same append landed first from another session (a
        # retry's orphan, committed while this one waited), or truly stale.
        landed = self.landed(append_id) if retry or stale is None else None
        if landed is not None:
            return landed.stop
        assert stale is not None
        raise stale

    def landed(self, append_id: uuid.UUID | str) -> Landed | None:
        """Where the append ``append_id`` landed, or ``None`` if it has not.

        ``None`` is final only once the session that sent it has ended (a lost
        connection's session may still be waiting for a lock); to settle an unknown
        outcome, append again with ``append_id=``, which never lands twice.
        """
        rows = self._query(
            "SELECT conversation, start, stop FROM convo_appends WHERE id = %s",
            (uuid.UUID(str(append_id)),),
        )
        return Landed(rows[0][0], rows[0][1], rows[0][2]) if rows else None

    def fork(self, source: str, conversation: str, prefix: int) -> int:
        """Start ``conversation`` as the first ``prefix`` events of ``source``, copying
        none, as ``SQLiteStore.fork`` does; followers are told of it as of an append."""
        with self._lock:
            db = self._connection()
            try:
                with db.transaction():
                    # Both rows locked in one order: a concurrent append or fork waits.
                    rows = db.execute(
                        "SELECT id, length FROM convo_conversations WHERE id = ANY(%s)"
                        " ORDER BY id FOR UPDATE",
                        ([source, conversation],),
                    ).fetchall()
                    lengths = {cid: int(length) for cid, length in rows}
                    check_fork(
                        self.path,
                        source,
                        conversation,
                        prefix,
                        lengths.get(source, 0),
                        lengths.get(conversation),
                    )
                    db.execute(
                        "INSERT INTO convo_forks (id, source, prefix) VALUES (%s, %s, %s)",
                        (conversation, source, prefix),
                    )
                    db.execute(
                        "INSERT INTO convo_conversations (id, length) VALUES (%s, %s)",
                        (conversation, prefix),
                    )
                    db.execute(
                        "SELECT pg_notify(%s, %s)",
                        (CHANNEL, f"{prefix} {conversation}" if len(conversation) < 7000 else ""),
                    )
            except self._pg.Error as exc:
                raise self._failure(f"conversation {conversation!r}: fork refused", exc) from exc
        return prefix

    def _fork_of(self, conversation: str) -> tuple[str, int] | None:
        found = self._forks.get(conversation)
        if found is None and self._has_forks:
            rows = self._query(
                "SELECT source, prefix FROM convo_forks WHERE id = %s", (conversation,)
            )
            if rows:
                found = self._forks[conversation] = (rows[0][0], int(rows[0][1]))
        return found

    def _prefixes(self, conversations: list[str]) -> dict[str, int]:
        if not self._has_forks:
            return {}
        rows = self._query(
            "SELECT id, prefix FROM convo_forks WHERE id = ANY(%s)", (conversations,)
        )
        return {cid: int(prefix) for cid, prefix in rows}

    def _rows(
        self, columns: str, conversation: str, start: int, stop: int | None
    ) -> list[tuple[Any, ...]]:
        # A fork's prefix never changes: its windows read apart still read as one.
        _check_window(start, stop)
        rows: list[tuple[Any, ...]] = []
        for owner, low, high in windows(conversation, start, stop, self._fork_of):
            rows += self._query(
                f"SELECT {columns} FROM convo_events"
                " WHERE conversation = %s AND position >= %s AND position < %s"
                " ORDER BY position",
                (owner, low, _NO_STOP if high is None else high),
            )
        return rows

    def read(self, conversation: str, start: int = 0, stop: int | None = None) -> list[Any]:
        """The events at positions ``start`` <= p < ``stop`` (to the end when ``None``),
        in order, decoded to plain Python objects. Empty for an unknown conversation."""
        return [_decode(blob) for (blob,) in self._rows("event", conversation, start, stop)]

    def read_entries(
        self, conversation: str, start: int = 0, stop: int | None = None
    ) -> list[Entry[Any]]:
        """Like ``read``, each event in an ``Entry`` with its position, conversation and time."""
        rows = self._rows("position, time, event", conversation, start, stop)
        return [Entry(position, _decode(blob), conversation, t) for position, t, blob in rows]

    def read_many(
        self, starts: Mapping[str, int], limit: int | None = None
    ) -> dict[str, list[Any]]:
        """For each conversation of ``starts``, its events from that position on (at most
        ``limit`` of them), decoded, in one query; conversations with none are left out."""
        return _forks.read_many(
            starts,
            limit,
            self._prefixes,
            self.read,
            lambda own: self._read_many_own(own, limit),
        )

    def _read_many_own(self, starts: Mapping[str, int], limit: int | None) -> dict[str, list[Any]]:
        rows = self._query(
            "SELECT e.conversation, e.event"
            " FROM unnest(%s::text[], %s::bigint[]) WITH ORDINALITY AS w(conversation, start, n)"
            " JOIN convo_events AS e ON e.conversation = w.conversation"
            " AND e.position >= w.start AND e.position < w.start + %s"
            " ORDER BY w.n, e.position",
            (list(starts), list(starts.values()), _NO_LIMIT if limit is None else limit),
        )
        found: dict[str, list[Any]] = {}
        for conversation, blob in rows:
            events = found.get(conversation)
            if events is None:
                events = found[conversation] = []
            events.append(_decode(blob))
        return found

    def length(self, conversation: str) -> int:
        """How many events ``conversation`` has (its next position); 0 if unknown."""
        rows = self._query("SELECT length FROM convo_conversations WHERE id = %s", (conversation,))
        return int(rows[0][0]) if rows else 0

    def conversations(self) -> dict[str, int]:
        """Every conversation id with its length, ordered by id."""
        rows = self._query('SELECT id, length FROM convo_conversations ORDER BY id COLLATE "C"')
        return {cid: int(length) for cid, length in rows}

    async def follow(self, *, quiet: float = 5.0) -> AsyncGenerator[StoreChange, None]:
        """Change hints from every process appending to this database, forever.

        First (and after every reconnection, and after ``quiet`` seconds without a
        notification) a ``StoreChange(None)``: look at everything. Then one hint
        per committed append. Runs on its own connection; close it with
        ``aclose()`` or by cancelling the task that iterates.
        """
        pg = self._pg
        while True:
            try:
                conn = await pg.AsyncConnection.connect(
                    self.dsn, autocommit=True, connect_timeout=self.connect_timeout
                )
            except pg.OperationalError as exc:
                raise self._failure("cannot listen for changes", exc) from exc
            try:
                await conn.execute(f"LISTEN {CHANNEL}")
                yield StoreChange(None)  # what was appended before LISTEN took effect
                while True:
                    async for note in conn.notifies(timeout=quiet):
                        yield parse_hint(note.payload)
                    yield StoreChange(None)
            except pg.OperationalError:
                continue  # reconnect; the first hint after it covers the gap
            finally:
                with contextlib.suppress(Exception):
                    await conn.close()

    def close(self) -> None:
        """Close the connection; idempotent. The store is unusable afterwards."""
        with self._lock:
            self._closed = True
            self._db.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- connection ----------------------------------------------------------------

    def _connect(self) -> psycopg.Connection[Any]:
        # Read-only is the session's default, so PostgreSQL itself refuses every write.
        options = "-c default_transaction_read_only=on" if self.mode == "ro" else None
        try:
            conn: psycopg.Connection[Any] = self._pg.connect(
                self.dsn,
                autocommit=True,
                connect_timeout=self.connect_timeout,
                **({"options": options} if options else {}),
            )
        except self._pg.Error as exc:
            raise self._failure("cannot connect", exc) from exc
        return conn

    def _connection(self) -> psycopg.Connection[Any]:
        # Called under the lock. A lost connection is replaced at the next call.
        if self._closed:
            raise StoreError(f"{self.path}: the store is closed")
        if self._db.broken or self._db.closed:
            self._db = self._connect()
        return self._db

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            db = self._connection()
            try:
                with db.cursor(binary=True) as cursor:
                    return cursor.execute(sql, params).fetchall()
            except self._pg.Error as exc:
                raise self._failure("query failed", exc) from exc

    def _failure(self, what: str, exc: Exception) -> StoreError:
        # The message names the server (not the password): it may reach a log.
        return StoreError(f"{self.path}: {what}: {_first_line(exc)}")


class _Deadline:
    """Shuts ``db``'s socket if the block it guards outlasts ``seconds``: the blocked
    call then fails at once (psycopg's ``OperationalError``), where waiting on a server
    that no longer answers would last for ever. ``expired`` says so afterwards."""

    def __init__(self, db: psycopg.Connection[Any], seconds: float) -> None:
        self._db = db
        self._seconds = seconds
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._lock = threading.Lock()  # the block ends, or the deadline fires: not both
        self._over = False
        self.expired: str | None = None

    def _expire(self) -> None:
        with self._lock:
            if self._over:
                return
            self.expired = f"no answer within {self._seconds:g} s (the client-side deadline)"
            with (
                contextlib.suppress(OSError),
                socket.socket(fileno=os.dup(self._db.pgconn.socket)) as dup,
            ):
                dup.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> None:
        self._timer.start()

    def __exit__(self, *exc_info: object) -> None:
        with self._lock:
            self._over = True
        self._timer.cancel()


def parse_hint(payload: str) -> StoreChange:
    """A change hint's payload (``LENGTH CONVERSATION``) as a ``StoreChange``."""
    length, _, conversation = payload.partition(" ")
    if not length.isdigit():
        return StoreChange(None)
    return StoreChange(conversation, int(length))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# The name of one release ago (the SQLite store and the PostgreSQL one, apart from the
# ``Store`` protocol both follow).
__getattr__ = renamed(__name__, globals(), {"PostgresEventStore": "PostgresStore"})
