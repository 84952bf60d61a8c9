"""Projection workers: partitions by lease, fenced publishing, views equal to replay."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from definitions import builtin, event_type
from replay import open_store, render_json, replay
from replay.stores._worker import Worker, partition_of
from tests._postgres import Server

PARTITIONS = 4


def events_for(n: int) -> list[dict[str, Any]]:
    return [
        {"type": "message.start", "id": f"m{n}", "role": "assistant"},
        {"type": "message.delta", "id": f"m{n}", "text": f"hello {n} <b>"},
        {"type": "status.update", "id": "s", "status": "running", "label": f"step {n}"},
    ]


def expected_view(store: Any, cid: str) -> bytes:
    nodes = replay(store.read(cid), builtin.DEFINITIONS, event_type=event_type)
    return render_json(nodes, builtin.DEFINITIONS)


def published(dsn: str) -> dict[str, tuple[int, str, str]]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT conversation, position, digest, json FROM convo_views")
        return {cid: (pos, digest, data) for cid, pos, digest, data in rows}


@pytest.fixture
def dsn(postgres_server: Server) -> str:
    url = postgres_server.new_database()
    with open_store(url) as store:
        for n in range(12):
            store.append(f"conv-{n}", events_for(n))
    return url


def check_views(dsn: str, conversations: int = 12) -> None:
    views = published(dsn)
    with open_store(dsn) as store:
        assert len(views) == conversations
        for cid, (position, digest, data) in views.items():
            want = expected_view(store, cid)
            assert position == store.length(cid)
            assert data.encode() == want
            assert digest == hashlib.sha256(want).hexdigest()


class TestPartitions:
    def test_stable_and_in_range(self) -> None:
        assert partition_of("conv-1", 16) == partition_of("conv-1", 16)
        assert {partition_of(f"c{n}", 8) for n in range(200)} == set(range(8))
        # The same in every process and release: blake2b, not Python's salted hash().
        assert (
            partition_of("conversation", 97)
            == int.from_bytes(hashlib.blake2b(b"conversation", digest_size=8).digest(), "big") % 97
        )


class TestOneWorker:
    def test_publishes_every_view_and_follows_appends(self, dsn: str) -> None:
        worker = Worker(dsn, partitions=PARTITIONS, lease=30, worker_id="w1")
        try:
            worker.step()
            assert sorted(worker.owned) == list(range(PARTITIONS))
            check_views(dsn)
            with open_store(dsn) as store:
                store.append("conv-3", [{"type": "message.delta", "id": "m3", "text": " more"}])
            worker.step()
            check_views(dsn)
            assert published(dsn)["conv-3"][0] == 4
        finally:
            worker.release_all()
            worker.close()

    def test_a_different_partition_count_is_refused(self, dsn: str) -> None:
        from replay import StoreError

        Worker(dsn, partitions=PARTITIONS, worker_id="w1").close()
        with pytest.raises(StoreError, match="partitioned 4 ways; start every worker"):
            Worker(dsn, partitions=PARTITIONS + 1, worker_id="w2")


class TestSharing:
    def test_two_workers_split_the_partitions(self, dsn: str) -> None:
        first = Worker(dsn, partitions=PARTITIONS, lease=30, worker_id="a")
        second = Worker(dsn, partitions=PARTITIONS, lease=30, worker_id="b")
        try:
            first.step()  # alone: takes everything
            assert len(first.owned) == PARTITIONS
            second.step()  # heartbeats; nothing is free yet
            first._next_renewal = 0  # its next round sees two live workers
            first.step()
            assert len(first.owned) == PARTITIONS // 2
            second._next_renewal = 0
            second.step()
            assert sorted([*first.owned, *second.owned]) == list(range(PARTITIONS))
            check_views(dsn)
        finally:
            for worker in (first, second):
                worker.release_all()
                worker.close()


class TestFencing:
    """A worker whose lease was taken publishes nothing and drops the partition."""

    def test_a_zombie_is_refused_by_the_database(self, dsn: str) -> None:
        import psycopg

        zombie = Worker(dsn, partitions=PARTITIONS, lease=30, worker_id="zombie")
        heir = Worker(dsn, partitions=PARTITIONS, lease=30, worker_id="heir")
        try:
            zombie.step()
            # The zombie was paused past its lease: the database says it expired,
            # while its own clock (frozen with it) still says it holds every lease.
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("UPDATE convo_leases SET expires = now() - interval '1 s'")
                conn.execute("UPDATE convo_workers SET expires = now() - interval '1 s'")
                conn.execute("DELETE FROM convo_views")
            heir.step()
            assert len(heir.owned) == PARTITIONS
            with open_store(dsn) as store:
                for n in range(12):
                    store.append(f"conv-{n}", [{"type": "message.end", "id": f"m{n}"}])
            zombie._project()  # before its renewal: the publish itself is fenced
            busy = {partition_of(f"conv-{n}", PARTITIONS) for n in range(12)}
            assert not busy & set(zombie.owned)
            assert zombie.published == 12  # only the first round's views
            zombie._next_renewal = 0
            zombie.step()  # the renewal finds the rest gone too, and nothing is free
            assert zombie.owned == {}
            heir.step()
            check_views(dsn)
        finally:
            for worker in (zombie, heir):
                worker.release_all()
                worker.close()

    def test_an_expired_local_lease_stops_the_worker_before_the_database(self, dsn: str) -> None:
        worker = Worker(dsn, partitions=PARTITIONS, lease=30, worker_id="w")
        try:
            worker.step()
            changes: list[str] = []
            worker.on_change = changes.append
            for held in worker.owned.values():
                held.deadline = 0.0  # its clock says the lease ran out
            worker._drop_expired()
            assert worker.owned == {}
            assert worker.projections == {}
            assert all("lease expired" in change for change in changes)
            assert len(changes) == PARTITIONS
        finally:
            worker.close()


def test_the_cli_wants_a_postgres_url(capsys: pytest.CaptureFixture[str]) -> None:
    from replay.cli import main

    assert main(["worker", "--store", "events.db", "--partitions", "4"]) == 2
    assert "--store must be a postgresql:// URL" in capsys.readouterr().err
