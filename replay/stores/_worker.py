"""Projection workers: many processes keep every conversation's published view current.

Theory of operation
-------------------
Conversations are split into ``partitions`` by a stable hash of their id
(``partition_of``). A worker owns some partitions through leases in
``convo_leases``: one row per partition with its ``owner``, a fencing ``token``
and an ``expires`` time, all in PostgreSQL's clock. Every change is a
compare-and-set: a claim succeeds only on an expired (or released) lease and
increments the token; a renewal only for the owner with the same token and an
unexpired lease. Live workers heartbeat in ``convo_workers``; each aims at its fair
share (partitions / live workers, rounded up), claiming free partitions below it
and releasing the excess above it, so a new worker is given work and a dead one's
partitions are taken over once its leases expire.

Fencing, twice. Locally, a worker counts its lease from the moment it sent the
renewal; once that time has passed without a successful renewal (a paused
process, a slow network) it drops the partition at once, before talking to the
database again. In the database, a view is published only in the same statement
that checks the lease (``FOR SHARE``, so a concurrent takeover waits or wins) and
only over an older position, so a zombie can never overwrite a newer view.

Taking a partition rebuilds its conversations from the log; afterwards the worker
folds only the events past each conversation's position, woken by the store's
notifications and checking every length each round (a lost notification only
delays). The view it publishes (``convo_views``) is ``render_json`` of the nodes,
byte for byte what a single-process ``replay`` of the same prefix renders, with
its SHA-256 digest and the position it shows.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import os
import socket
import threading
import time
from collections.abc import Callable, Hashable, Iterable
from typing import Any

import attrs

from definitions import builtin, event_type
from engine import ConversationEngine, ConversationError, Registration, create_conversation_engine

from .._errors import StoreError
from ..render._common import render_json
from ._postgres import CHANNEL, PostgresStore, parse_hint, psycopg_module

__all__ = ["Worker", "partition_of"]

log = logging.getLogger("replay.worker")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS convo_leases (
    partition integer PRIMARY KEY,
    owner text,
    token bigint NOT NULL DEFAULT 0,
    expires timestamptz NOT NULL DEFAULT '-infinity'
);
CREATE TABLE IF NOT EXISTS convo_workers (
    id text PRIMARY KEY,
    expires timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS convo_views (
    conversation text PRIMARY KEY,
    position bigint NOT NULL,
    digest text NOT NULL,
    json text NOT NULL
);
"""
_SCHEMA_LOCK = 0x636F6E7677  # an advisory lock id: creating these tables, one at a time

_CLAIM = (
    "UPDATE convo_leases SET owner = %s, token = token + 1,"
    " expires = now() + make_interval(secs => %s)"
    " WHERE partition = %s AND expires < now() RETURNING token"
)
_RENEW = (
    "UPDATE convo_leases AS l SET expires = now() + make_interval(secs => %s)"
    " FROM unnest(%s::integer[], %s::bigint[]) AS held(partition, token)"
    " WHERE l.partition = held.partition AND l.token = held.token"
    " AND l.owner = %s AND l.expires > now() RETURNING l.partition"
)
_RELEASE = (
    "UPDATE convo_leases SET owner = NULL, expires = '-infinity'"
    " WHERE partition = %s AND owner = %s AND token = %s"
)
_PUBLISH = (
    "INSERT INTO convo_views AS v (conversation, position, digest, json)"
    " SELECT %s, %s, %s, %s WHERE EXISTS (SELECT 1 FROM convo_leases"
    "  WHERE partition = %s AND owner = %s AND token = %s AND expires > now() FOR SHARE)"
    " ON CONFLICT (conversation) DO UPDATE SET position = excluded.position,"
    " digest = excluded.digest, json = excluded.json WHERE v.position <= excluded.position"
    " RETURNING 1"
)


def partition_of(conversation: str, partitions: int) -> int:
    """The partition (0 <= p < ``partitions``) that ``conversation`` belongs to: a
    stable hash of its id, the same in every process and on every machine."""
    digest = hashlib.blake2b(conversation.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % partitions


@attrs.define
class _Lease:
    token: int
    deadline: float  # time.monotonic() past which the lease may be someone else's


@attrs.define
class _Projection:
    engine: ConversationEngine
    position: int = 0
    published: int = -1
    failed: bool = False


class Worker:
    """One projection worker: owns partitions by lease, publishes their views.

    ``run()`` loops until ``stop`` is set; ``step()`` is one round (renew, claim or
    release, fold, publish), for tests. ``lease`` is in seconds; a worker renews
    every third of it. ``on_change(message)`` hears ownership changes. Its connections
    and its store's give up after ``connect_timeout`` seconds.
    """

    def __init__(
        self,
        dsn: str,
        *,
        partitions: int,
        lease: float = 5.0,
        worker_id: str | None = None,
        definitions: Iterable[Any] = builtin.DEFINITIONS,
        event_type: Callable[[Any], Hashable] | None = event_type,
        on_change: Callable[[str], None] | None = None,
        connect_timeout: float = 10.0,
    ) -> None:
        if partitions < 1:
            raise ValueError(f"partitions must be >= 1, not {partitions}")
        if lease <= 0:
            raise ValueError(f"lease must be > 0 seconds, not {lease}")
        self.partitions = partitions
        self.lease = lease
        self.id = worker_id or f"{socket.gethostname()}:{os.getpid()}"
        self.definitions = tuple(definitions)
        self.registration = Registration(self.definitions, event_type=event_type)
        self.on_change = on_change or (lambda message: log.info("%s", message))
        self.store = PostgresStore(dsn, connect_timeout=connect_timeout)
        self.owned: dict[int, _Lease] = {}
        self.projections: dict[str, _Projection] = {}
        self.published = 0
        self._pg = pg = psycopg_module()
        try:
            self._db = pg.connect(dsn, autocommit=True, connect_timeout=connect_timeout)
            self._listen = pg.connect(dsn, autocommit=True, connect_timeout=connect_timeout)
            self._listen.execute(f"LISTEN {CHANNEL}")
            with self._db.transaction():
                self._db.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                self._db.execute(_SCHEMA)
                row = self._db.execute("SELECT count(*) FROM convo_leases").fetchone()
                if row is not None and row[0] == 0:  # the first worker fixes the count
                    self._db.execute(
                        "INSERT INTO convo_leases (partition) SELECT generate_series(0, %s - 1)",
                        (partitions,),
                    )
                    row = (partitions,)
        except pg.Error as exc:
            self.store.close()
            raise StoreError(f"{self.store.path}: worker setup: {exc}") from exc
        if row is None or row[0] != partitions:
            self.close()
            raise StoreError(
                f"{self.store.path}: the views are partitioned "
                f"{row[0] if row else '?'} ways; start every worker with --partitions "
                f"{row[0] if row else '?'}"
            )
        self._next_renewal = 0.0

    # -- the loop ------------------------------------------------------------------

    def run(self, stop: threading.Event | None = None) -> None:
        """Work until ``stop`` is set (or forever), then release the leases."""
        stop = stop or threading.Event()
        hinted: set[str] | None = None
        try:
            while not stop.is_set():
                self.step(hinted)
                hinted = self._wait(min(self.lease / 3, 0.5))
        finally:
            self.release_all()

    def step(self, hinted: set[str] | None = None) -> None:
        """One round: drop expired leases, renew, rebalance, fold and publish.

        ``hinted`` limits the fold to those conversations (the ones notified since
        the last round); every renewal round, and ``None``, looks at all of them.
        """
        self._drop_expired()
        if time.monotonic() >= self._next_renewal:
            self._heartbeat_and_renew()
            self._rebalance()
            hinted = None
        self._project(hinted)

    def release_all(self) -> None:
        """Give every partition back at once (a clean shutdown need not wait out a lease)."""
        for partition in list(self.owned):
            self._release(partition)
        with contextlib.suppress(self._pg.Error):
            self._db.execute("DELETE FROM convo_workers WHERE id = %s", (self.id,))

    def close(self) -> None:
        """Close the connections (leases are left to expire)."""
        self._db.close()
        self._listen.close()
        self.store.close()

    # -- leases --------------------------------------------------------------------

    def _drop_expired(self) -> None:
        now = time.monotonic()
        for partition, held in list(self.owned.items()):
            if now >= held.deadline:
                self._lose(partition, "its lease expired before it was renewed")

    def _heartbeat_and_renew(self) -> None:
        sent = time.monotonic()
        self._next_renewal = sent + self.lease / 3
        self._db.execute(
            "INSERT INTO convo_workers (id, expires) VALUES (%s, now() + make_interval(secs => %s))"
            " ON CONFLICT (id) DO UPDATE SET expires = excluded.expires",
            (self.id, self.lease),
        )
        if not self.owned:
            return
        parts = list(self.owned)
        tokens = [self.owned[p].token for p in parts]
        rows = self._db.execute(_RENEW, (self.lease, parts, tokens, self.id)).fetchall()
        renewed = {row[0] for row in rows}
        for partition in parts:
            if partition in renewed:
                self.owned[partition].deadline = sent + self.lease
            else:
                self._lose(partition, "another worker holds its lease now")

    def _rebalance(self) -> None:
        row = self._db.execute(
            "SELECT count(*) FROM convo_workers WHERE expires > now()"
        ).fetchone()
        live = max(1, int(row[0]) if row else 1)
        share = math.ceil(self.partitions / live)
        while len(self.owned) > share:
            self._release(max(self.owned))
        if len(self.owned) >= share:
            return
        free = self._db.execute(
            "SELECT partition FROM convo_leases WHERE expires < now() ORDER BY partition"
        ).fetchall()
        for (partition,) in free:
            if len(self.owned) >= share:
                break
            sent = time.monotonic()
            claimed = self._db.execute(_CLAIM, (self.id, self.lease, partition)).fetchone()
            if claimed is not None:
                self.owned[partition] = _Lease(int(claimed[0]), sent + self.lease)
                self.on_change(f"{self.id}: took partition {partition} (token {claimed[0]})")

    def _release(self, partition: int) -> None:
        held = self.owned.pop(partition)
        self._forget(partition)
        with contextlib.suppress(self._pg.Error):  # else it expires
            self._db.execute(_RELEASE, (partition, self.id, held.token))
        self.on_change(f"{self.id}: released partition {partition}")

    def _lose(self, partition: int, why: str) -> None:
        self.owned.pop(partition, None)
        self._forget(partition)
        self.on_change(f"{self.id}: lost partition {partition}: {why}")

    def _forget(self, partition: int) -> None:
        for cid in [c for c in self.projections if partition_of(c, self.partitions) == partition]:
            del self.projections[cid]

    # -- projections ---------------------------------------------------------------

    def _project(self, hinted: set[str] | None = None) -> None:
        if not self.owned:
            return
        if hinted is None:
            lengths = self.store.conversations()
        else:
            lengths = {cid: self.store.length(cid) for cid in sorted(hinted)}
        for cid, length in lengths.items():
            partition = partition_of(cid, self.partitions)
            held = self.owned.get(partition)
            if held is None:
                continue
            projection = self.projections.get(cid)
            if projection is None:  # a partition just taken: rebuilt from the log
                projection = _Projection(create_conversation_engine(self.registration))
                self.projections[cid] = projection
            if projection.failed or projection.position >= length:
                continue
            events = self.store.read(cid, projection.position, length)
            try:
                projection.engine.push_many(events)
            except ConversationError as exc:
                projection.failed = True
                log.warning("conversation %r: not projected: %s", cid, exc)
                continue
            projection.position += len(events)
            if time.monotonic() >= held.deadline:  # fenced locally: publish nothing
                self._lose(partition, "its lease expired while folding")
                continue
            self._publish(cid, projection, partition, held)

    def _publish(self, cid: str, projection: _Projection, partition: int, held: _Lease) -> None:
        data = render_json(projection.engine.nodes(), self.definitions)
        digest = hashlib.sha256(data).hexdigest()
        row = self._db.execute(
            _PUBLISH,
            (cid, projection.position, digest, data.decode(), partition, self.id, held.token),
        ).fetchone()
        if row is None:  # fenced: the lease is gone, or a newer owner published further
            self._lose(partition, "the database refused the view (lease taken over)")
            return
        projection.published = projection.position
        self.published += 1

    def _wait(self, timeout: float) -> set[str] | None:
        # The conversations notified until the first notification (and the burst
        # behind it) or the timeout; None for a look-at-everything hint.
        hinted: set[str] = set()
        notes = [*self._listen.notifies(timeout=timeout, stop_after=1)]
        notes += self._listen.notifies(timeout=0)
        for note in notes:
            change = parse_hint(note.payload)
            if change.conversation is None:
                return None
            hinted.add(change.conversation)
        return hinted
