"""The PostgreSQL store against the SQLite store, on the same workloads, in one run.

Workloads (each store fresh, both durable: SQLite's WAL with its default sync,
PostgreSQL with fsync and synchronous_commit on):

- appends of one event with an expected position (optimistic concurrency);
- appends of batches of 64 events, likewise;
- replay: reading back 100k events of one conversation (what ``convo replay`` of a
  stored conversation reads before folding);
- live tail: another process appends one event every 5 ms and notes when each
  append was acknowledged (durable); this one follows the store (PostgreSQL:
  ``follow()``'s notifications; SQLite: a ``data_version`` poll every 50 ms, as
  ``convo serve`` does) and notes when it read each event. The latency is the
  difference: how long after a writer is told "stored" every reader has it.

Rounds are interleaved (SQLite, PostgreSQL, SQLite, ...) and the median kept, so
both see the same machine load. Printed: rates, the ratios PostgreSQL/SQLite
(targets: appends >= 0.4x, replay >= 0.7x) and the tail's p50/p99 (target: p99 under
5 ms for PostgreSQL).

    python benchmarks/bench_stores.py [--rounds 3] [--dsn postgresql://...]

Without ``--dsn`` it starts a throwaway PostgreSQL server (tests/_postgres.py).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

from replay import PostgresStore, SQLiteStore, StoreChange  # noqa: E402

EVENT = {"type": "message.delta", "id": "m1", "text": "a token or two "}


class Fresh:
    """A factory of fresh, empty stores of one kind."""

    def __init__(self, kind: str, dsn: str | None, server: Any, directory: str) -> None:
        self.kind = kind
        self._dsn = dsn
        self._server = server
        self._directory = directory
        self._count = 0

    def name(self) -> str:
        self._count += 1
        if self.kind == "sqlite":
            return os.path.join(self._directory, f"bench{self._count}.db")
        if self._server is not None:
            return str(self._server.new_database())
        # An external server: one schema per run, chosen through the search path.
        assert self._dsn is not None
        import psycopg

        schema = f"bench_{os.getpid()}_{self._count}"
        with psycopg.connect(self._dsn, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        sep = "&" if "?" in self._dsn else "?"
        return f"{self._dsn}{sep}options=-csearch_path%3D{schema}"

    def open(self, name: str) -> SQLiteStore | PostgresStore:
        return SQLiteStore(name) if self.kind == "sqlite" else PostgresStore(name)


def appends(fresh: Fresh, count: int, size: int) -> float:
    """Events per second appended in batches of ``size`` with expected positions."""
    with fresh.open(fresh.name()) as store:
        events = [EVENT] * size
        store.append("warm-up", events)
        length = 0
        began = time.perf_counter()
        for _ in range(count):
            length = store.append("c", events, expected_position=length)
        elapsed = time.perf_counter() - began
    return count * size / elapsed


def reads(fresh: Fresh, count: int) -> float:
    """Events per second read back from one conversation of ``count`` events."""
    with fresh.open(fresh.name()) as store:
        for start in range(0, count, 5000):
            store.append("c", [EVENT] * min(5000, count - start))
        store.read("c", 0, 100)  # warm the connection
        began = time.perf_counter()
        events = store.read("c")
        elapsed = time.perf_counter() - began
        assert len(events) == count
    return count / elapsed


def _tail_writer(kind: str, name: str, count: int, gap: float, ready: Any, acked: Any) -> None:
    store = SQLiteStore(name) if kind == "sqlite" else PostgresStore(name)
    ready.wait()
    with store:
        for n in range(count):
            time.sleep(gap)
            store.append("c", [{"n": n}])
            acked[n] = time.monotonic()  # CLOCK_MONOTONIC: one clock for every process


def tail(fresh: Fresh, count: int, gap: float = 0.005, poll: float = 0.05) -> list[float]:
    """Seconds from another process's acknowledged append to this process reading it."""
    name = fresh.name()
    fresh.open(name).close()
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    acked = ctx.Array("d", count, lock=False)
    writer = ctx.Process(target=_tail_writer, args=(fresh.kind, name, count, gap, ready, acked))
    writer.start()
    seen: list[float] = []

    async def follow() -> None:
        with fresh.open(name) as store:
            position = 0
            if isinstance(store, PostgresStore):
                hints = store.follow(quiet=30)
                await anext(hints)  # listening: the writer may start
            else:
                hints = _poll(store, poll)
            ready.set()
            async for _ in hints:
                events = store.read("c", position)
                now = time.monotonic()
                seen.extend(now for _ in events)
                position += len(events)
                if position >= count:
                    break
            await hints.aclose()

    asyncio.run(follow())
    writer.join()
    # A reader may see an event before its writer hears back (the notification
    # leaves at commit): that counts as no delay.
    return [max(0.0, read - ack) for read, ack in zip(seen, acked, strict=True)]


async def _poll(store: SQLiteStore, interval: float) -> Any:
    import sqlite3

    db = sqlite3.connect(store.path)
    version = None
    try:
        while True:
            now = db.execute("PRAGMA data_version").fetchone()[0]
            if now != version:
                version = now
                yield StoreChange(None)
            await asyncio.sleep(interval)
    finally:
        db.close()


def median_of(rounds: int, kinds: dict[str, Fresh], measure: Callable[[Fresh], float]) -> dict:
    results: dict[str, list[float]] = {kind: [] for kind in kinds}
    for _ in range(rounds):
        for kind, fresh in kinds.items():
            results[kind].append(measure(fresh))
    return {kind: statistics.median(values) for kind, values in results.items()}


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def main(args: argparse.Namespace) -> None:
    server = None
    if args.dsn is None:
        from tests._postgres import start_server

        server = start_server(durable=True)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-stores-") as directory:
            kinds = {
                "sqlite": Fresh("sqlite", None, None, directory),
                "postgres": Fresh("postgres", args.dsn, server, directory),
            }
            print(f"bench_stores: medians of {args.rounds} interleaved rounds")
            rows = [
                ("append 1 event, expected position", lambda f: appends(f, args.single, 1)),
                ("append 64 events, expected position", lambda f: appends(f, args.batches, 64)),
                (f"replay: read {args.replay} events", lambda f: reads(f, args.replay)),
            ]
            for label, measure in rows:
                result = median_of(args.rounds, kinds, measure)
                ratio = result["postgres"] / result["sqlite"]
                print(
                    f"  {label:38} sqlite {result['sqlite']:>10,.0f} ev/s   "
                    f"postgres {result['postgres']:>10,.0f} ev/s   ratio {ratio:.2f}x"
                )
            for kind, fresh in kinds.items():
                latencies = tail(fresh, args.tail)
                how = "notifications" if kind == "postgres" else "50 ms poll"
                print(
                    f"  live tail, another process ({kind}, {how}): "
                    f"p50 {percentile(latencies, 50) * 1000:.2f} ms, "
                    f"p99 {percentile(latencies, 99) * 1000:.2f} ms over {len(latencies)} events"
                )
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--single", type=int, default=2000, help="single-event appends")
    parser.add_argument("--batches", type=int, default=200, help="appends of 64 events")
    parser.add_argument("--replay", type=int, default=100_000, help="events read back")
    parser.add_argument("--tail", type=int, default=400, help="events of the live tail")
    parser.add_argument("--dsn", help="an existing PostgreSQL database (else one is started)")
    main(parser.parse_args())
