"""The soak: racing writers, projection workers killed, added and paused, on PostgreSQL.

Seeded (``CONVO_SOAK_SEED``) and bounded (about 15 s here). Two writer processes
race on 120 conversations with expected positions; three ``convo worker``
processes project them; one is killed with SIGKILL, one added, one paused
(SIGSTOP) until its leases expire, and resumed: each step waits for what it
disturbs, never for a fixed time. Then: every acknowledged event
is in the log exactly once, at the position its append was acknowledged at; no
unacknowledged event is; every log is gapless; and every published view equals a
single-process ``replay`` of its log, byte for byte. The figures are printed
(``pytest -s``) and quoted in the README.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from definitions import builtin, event_type
from replay import (
    AppendUnknownError,
    ConcurrencyError,
    open_store,
    render_json,
    replay,
)
from tests._postgres import Server

pytestmark = pytest.mark.slow  # about 20 s: processes racing for a bounded time

SEED = int(os.environ.get("CONVO_SOAK_SEED", "20261201"))
CONVERSATIONS = 120
WRITERS = 2
PARTITIONS = 12
LEASE = 1.0
WRITE_FOR = 7.0  # seconds the writers run, while the workers are disturbed
# A hang guard, not a timing assertion: how long the views may take to converge.
CONVERGE_GUARD = 40.0


def batch(writer: int, n: int, rng: random.Random) -> list[dict[str, Any]]:
    """One append: a message with a few deltas, sometimes a status; valid in any order
    with any other writer's batches (every id is this batch's own)."""
    mid = f"w{writer}-{n}"
    events: list[dict[str, Any]] = [{"type": "message.start", "id": mid, "role": "assistant"}]
    events += [
        {"type": "message.delta", "id": mid, "text": f"{rng.random():.6f} <i>"}
        for _ in range(rng.randrange(0, 4))
    ]
    events.append({"type": "message.end", "id": mid})
    if rng.random() < 0.3:
        events.append({"type": "status.update", "id": "s", "status": "running", "label": mid})
    return events


def write(dsn: str, writer: int, seed: int, duration: float) -> dict[str, Any]:
    """Child process: append for ``duration`` seconds with expected positions from a
    local (often stale) cache; returns the acknowledged appends and the conflicts."""
    rng = random.Random(seed * 100 + writer)
    acked: list[tuple[str, int, list[str]]] = []
    conflicts = 0
    unknown = 0
    known: dict[str, int] = {}
    deadline = time.monotonic() + duration
    n = 0
    with open_store(dsn) as store:
        while time.monotonic() < deadline:
            cid = f"conv-{rng.randrange(CONVERSATIONS):03d}"
            events = batch(writer, n, rng)
            append_id = None
            n += 1
            while True:
                expected = known.get(cid, 0)
                try:
                    length = store.append(
                        cid, events, expected_position=expected, append_id=append_id
                    )
                except ConcurrencyError as exc:
                    conflicts += 1
                    known[cid] = exc.actual
                    append_id = None  # this one was refused: the next try is new
                    continue
                except AppendUnknownError as exc:  # retried as the same append: lands once
                    unknown += 1
                    append_id = exc.append_id
                    continue
                known[cid] = length
                acked.append((cid, length - len(events), [repr(e) for e in events]))
                break
    return {"acked": acked, "conflicts": conflicts, "unknown": unknown}


def test_soak(postgres_server: Server, tmp_path: Path) -> None:
    dsn = postgres_server.new_database()
    open_store(dsn).close()
    began = time.monotonic()
    processes: dict[str, subprocess.Popen[bytes]] = {}

    def start_worker(name: str) -> None:
        command = [sys.executable, "-m", "replay", "worker", "--store", dsn, "--id", name]
        command += ["--partitions", str(PARTITIONS), "--lease", str(LEASE)]
        with (tmp_path / f"{name}.log").open("wb") as out:
            processes[name] = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)

    ctx = multiprocessing.get_context("spawn")
    try:
        for name in ("w1", "w2", "w3"):
            start_worker(name)
        # The three share every partition before the writers start.
        wait_for(
            lambda: len(o := _lease_owners(dsn)) == PARTITIONS and len(set(o.values())) == 3,
            "the workers never shared out",
        )
        with ctx.Pool(WRITERS) as pool:
            results = [pool.apply_async(write, (dsn, w, SEED, WRITE_FOR)) for w in range(WRITERS)]
            # Each disturbance waits for what it disturbs, never for a fixed time.
            wait_for(lambda: len(_view_positions(dsn)) >= 10, "no view was ever published")
            killed = _busiest(dsn, processes)
            processes[killed].send_signal(signal.SIGKILL)  # dies holding leases
            start_worker("w4")  # joins: the others give up some partitions
            wait_for(lambda: "w4" in _lease_owners(dsn).values(), "w4 never took a lease")
            paused = _busiest(dsn, processes, but=killed)
            processes[paused].send_signal(signal.SIGSTOP)  # paused past its lease
            wait_for(  # ... until the others have taken over all its partitions
                lambda: len(o := _lease_owners(dsn)) == PARTITIONS and paused not in o.values(),
                "the paused worker's partitions were never taken over",
            )
            processes[paused].send_signal(signal.SIGCONT)  # must find itself fenced
            outcomes = [r.get(timeout=120) for r in results]
        written = time.monotonic()
        acked = [a for outcome in outcomes for a in outcome["acked"]]
        conflicts = sum(outcome["conflicts"] for outcome in outcomes)
        unknown = sum(outcome["unknown"] for outcome in outcomes)

        with open_store(dsn) as store:
            lengths = store.conversations()
            wait_for(lambda: _view_positions(dsn) == lengths, "the views never caught up")
            converged = time.monotonic()
            logs = {cid: store.read_entries(cid) for cid in lengths}
            # The killed worker's partitions were all taken over by the living.
            wait_for(lambda: len(_lease_owners(dsn)) == PARTITIONS, "partitions were left unowned")
            owners = _lease_owners(dsn)
            assert killed not in owners.values()
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.terminate()
        for process in processes.values():
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    # Every log is gapless, and holds exactly the acknowledged events, each once,
    # at the position its append was acknowledged at.
    for cid, entries in logs.items():
        assert [e.position for e in entries] == list(range(lengths[cid])), cid
    expected_at: dict[tuple[str, int], str] = {}
    for cid, start, events in acked:
        for offset, event in enumerate(events):
            assert (cid, start + offset) not in expected_at, "one position acknowledged twice"
            expected_at[(cid, start + offset)] = event
    found = {(cid, e.position): repr(e.event) for cid, entries in logs.items() for e in entries}
    assert found == expected_at
    copies = Counter(found.values())
    assert max(copies.values()) == 1  # no event written twice (every batch is unique)

    # Every published view is a single-process replay of its log, byte for byte.
    views = _views(dsn)
    mismatches = 0
    for cid, entries in logs.items():
        want = render_json(
            replay([e.event for e in entries], builtin.DEFINITIONS, event_type=event_type),
            builtin.DEFINITIONS,
        )
        position, digest, data = views[cid]
        if (position, digest, data.encode()) != (
            len(entries),
            hashlib.sha256(want).hexdigest(),
            want,
        ):
            mismatches += 1
    assert mismatches == 0

    # The paused worker found itself fenced when it woke up.
    paused_log = (tmp_path / f"{paused}.log").read_text()
    assert "lost partition" in paused_log, paused_log
    takeovers = sum(
        (tmp_path / f"{name}.log").read_text().count("took partition")
        for name in ("w1", "w2", "w3", "w4")
    )
    events_acked = len(expected_at)
    print(
        f"\nsoak (seed {SEED}): {WRITERS} writers, {len(lengths)} conversations, "
        f"{len(acked)} appends / {events_acked} events acknowledged, {conflicts} conflicts "
        f"retried, {unknown} unknown outcomes; 4 workers (1 SIGKILLed, 1 added, 1 paused "
        f"past its lease of {LEASE:.0f}s), {takeovers} leases taken; "
        f"{len(views)} views checked, {mismatches} mismatches; views current "
        f"{converged - written:.2f}s after the last append, {converged - began:.1f}s in all"
    )


def wait_for(condition: Callable[[], bool], what: str) -> None:
    """Poll ``condition`` until it holds; ``CONVERGE_GUARD`` only guards against a hang."""
    deadline = time.monotonic() + CONVERGE_GUARD
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _busiest(dsn: str, processes: dict[str, Any], but: str = "") -> str:
    """The worker holding the most unexpired leases now (so that disturbing it matters)."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT owner, count(*) FROM convo_leases WHERE expires > now() AND owner <> %s"
            " GROUP BY owner ORDER BY count(*) DESC, owner",
            (but,),
        ).fetchall()
    assert rows, "no worker holds a lease"
    name = str(rows[0][0])
    assert name in processes
    return name


def _lease_owners(dsn: str) -> dict[int, str]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        try:
            rows = conn.execute(
                "SELECT partition, owner FROM convo_leases WHERE expires > now()"
            ).fetchall()
        except psycopg.errors.UndefinedTable:  # no worker has started yet
            return {}
    return dict(rows)


def _view_positions(dsn: str) -> dict[str, int]:
    return {cid: position for cid, (position, _, _) in _views(dsn).items()}


def _views(dsn: str) -> dict[str, tuple[int, str, str]]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        try:
            rows = conn.execute(
                "SELECT conversation, position, digest, json FROM convo_views ORDER BY conversation"
            ).fetchall()
        except psycopg.errors.UndefinedTable:
            return {}
    return {cid: (position, digest, data) for cid, position, digest, data in rows}
