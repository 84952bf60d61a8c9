"""EventStore: gapless positions, optimistic concurrency, atomic batches, real processes."""

from __future__ import annotations

import math
import multiprocessing
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay import (
    ConcurrencyError,
    Entry,
    EventStore,
    ReplayError,
    StoreBusyError,
    StoreError,
    UnstorableEventError,
)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EventStore]:
    with EventStore(tmp_path / "events.db") as s:
        yield s


class TestAppend:
    """append writes a batch atomically at the next positions."""

    def test_positions_are_gapless_per_conversation(self, store: EventStore) -> None:
        assert store.append("a", [{"n": 0}, {"n": 1}]) == 2
        assert store.append("b", [{"m": 0}]) == 1
        assert store.append("a", [{"n": 2}]) == 3
        assert [e.position for e in store.read_entries("a")] == [0, 1, 2]
        assert store.read("a") == [{"n": 0}, {"n": 1}, {"n": 2}]
        assert store.read("b") == [{"m": 0}]

    def test_expected_position_matches(self, store: EventStore) -> None:
        assert store.append("a", ["x"], expected_position=0) == 1
        assert store.append("a", ["y", "z"], expected_position=1) == 3

    def test_stale_expectation_raises_and_writes_nothing(self, store: EventStore) -> None:
        store.append("a", ["x", "y"])
        with pytest.raises(ConcurrencyError) as info:
            store.append("a", ["late"], expected_position=1)
        error = info.value
        assert (error.conversation, error.expected, error.actual) == ("a", 1, 2)
        assert str(error).startswith(
            "conversation 'a': expected to append at position 1, but it has 2 events"
        )
        assert store.read("a") == ["x", "y"]

    def test_expecting_events_in_a_new_conversation_fails(self, store: EventStore) -> None:
        with pytest.raises(ConcurrencyError, match="has 0 events"):
            store.append("new", ["x"], expected_position=3)
        assert store.conversations() == {}

    def test_unencodable_event_fails_the_whole_batch(self, store: EventStore) -> None:
        with pytest.raises(UnstorableEventError, match=r"'a', event #1 .*no JSON form"):
            store.append("a", ["ok", object()])
        assert (store.read("a"), store.length("a")) == ([], 0)

    @pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
    def test_non_finite_numbers_are_refused(self, store: EventStore, number: float) -> None:
        # msgspec would write them as null: the event read back would not be the one given.
        with pytest.raises(UnstorableEventError, match="NaN or infinite") as info:
            store.append("x", [{"ok": None}, {"deep": [1, {"n": number}]}])
        assert info.value.index == 1
        assert store.conversations() == {}
        with pytest.raises(UnstorableEventError):
            store.append("x", [number])

    def test_null_is_stored(self, store: EventStore) -> None:
        store.append("x", [None, {"v": None, "s": "null"}])
        assert store.read("x") == [None, {"v": None, "s": "null"}]

    def test_an_iterator_is_stored_in_one_transaction(self, store: EventStore) -> None:
        def events() -> Iterator[object]:
            yield "a"
            yield "b"
            raise RuntimeError("the source failed")

        with pytest.raises(RuntimeError):
            store.append("x", events())
        assert store.conversations() == {}
        assert store.append("x", iter(["a", "b"])) == 2

    def test_empty_batch_writes_nothing_but_checks(self, store: EventStore) -> None:
        store.append("a", ["x"])
        assert store.append("a", []) == 1
        with pytest.raises(ConcurrencyError):
            store.append("a", [], expected_position=0)
        assert store.conversations() == {"a": 1}

    def test_time_is_stored_per_event(self, store: EventStore) -> None:
        store.append("a", ["x", "y"], time=5.5)
        store.append("a", ["z"])
        assert store.read_entries("a") == [
            Entry(0, "x", "a", 5.5),
            Entry(1, "y", "a", 5.5),
            Entry(2, "z", "a", None),
        ]

    @given(st.lists(st.lists(st.dictionaries(st.text(), st.integers()), max_size=5), max_size=8))
    @settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=30)
    def test_random_batches_read_back_in_order(
        self, tmp_path: Path, batches: list[list[dict[str, int]]]
    ) -> None:
        with EventStore(tmp_path / "prop.db") as s:
            conversation = f"c{len(s.conversations())}"
            for batch in batches:
                s.append(conversation, batch, expected_position=s.length(conversation))
            flat = [e for batch in batches for e in batch]
            assert s.read(conversation) == flat
            assert s.length(conversation) == len(flat)


class TestRead:
    """read returns a window of positions; unknown conversations are empty."""

    def test_window(self, store: EventStore) -> None:
        store.append("a", list(range(10)))
        assert store.read("a", 3, 6) == [3, 4, 5]
        assert store.read("a", 8) == [8, 9]
        assert store.read("a", 12) == []
        assert [e.position for e in store.read_entries("a", 7, 9)] == [7, 8]

    def test_unknown_conversation_is_empty(self, store: EventStore) -> None:
        assert store.read("nobody") == []

    def test_negative_positions_are_refused(self, store: EventStore) -> None:
        with pytest.raises(ValueError, match="start=-1"):
            store.read("a", -1)

    def test_unknown_event_types_round_trip(self, store: EventStore) -> None:
        event = {"type": "plugin/x", "nested": [1, 2.5, None, {"s": "\u2600"}]}
        store.append("a", [event])
        assert store.read("a") == [event]


class TestConversations:
    """conversations lists ids with their lengths."""

    def test_lists_ids_and_lengths_sorted(self, store: EventStore) -> None:
        store.append("b", ["x"])
        store.append("a", ["x", "y"])
        assert store.conversations() == {"a": 2, "b": 1}
        assert list(store.conversations()) == ["a", "b"]


class TestOpenAndClose:
    """The file persists, is in WAL mode, and the store closes cleanly."""

    def test_reopen_sees_the_events_and_continues(self, tmp_path: Path) -> None:
        path = tmp_path / "events.db"
        with EventStore(path) as s:
            s.append("a", ["x"])
        with EventStore(path) as s:
            assert s.append("a", ["y"], expected_position=1) == 2
            assert s.read("a") == ["x", "y"]

    def test_wal_mode(self, tmp_path: Path) -> None:
        path = tmp_path / "events.db"
        EventStore(path).close()
        with sqlite3.connect(path) as db:
            assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)

    def test_closed_store_refuses_work(self, tmp_path: Path) -> None:
        s = EventStore(tmp_path / "events.db")
        s.close()
        s.close()
        with pytest.raises(StoreError, match="closed"):
            s.read("a")

    def test_error_tree(self) -> None:
        assert issubclass(ConcurrencyError, StoreError)
        assert issubclass(StoreBusyError, StoreError)
        assert issubclass(StoreError, ReplayError)


def bytes_of(path: Path) -> bytes | None:
    return path.read_bytes() if path.exists() else None


class TestRefusals:
    """What cannot be a store is a StoreError naming the path and the cause, and is left
    exactly as it was."""

    def test_missing_directory(self, tmp_path: Path) -> None:
        path = tmp_path / "nowhere" / "events.db"
        with pytest.raises(StoreError, match=r"events\.db: no such directory: .*nowhere"):
            EventStore(path)
        assert not path.parent.exists()

    @pytest.mark.parametrize("mode", ["ro", "rw"])
    def test_missing_file_is_created_only_in_rwc(self, tmp_path: Path, mode: Any) -> None:
        path = tmp_path / "typo.db"
        with pytest.raises(StoreError, match=r"typo\.db: no such event store"):
            EventStore(path, mode=mode)
        assert list(tmp_path.iterdir()) == []

    def test_a_directory(self, tmp_path: Path) -> None:
        with pytest.raises(StoreError, match="is a directory"):
            EventStore(tmp_path)

    @pytest.mark.parametrize("mode", ["ro", "rw", "rwc"])
    def test_not_sqlite(self, tmp_path: Path, mode: Any) -> None:
        path = tmp_path / "notes.txt"
        path.write_bytes(b"just some text, long enough to be a page header? no." * 20)
        before = bytes_of(path)
        with pytest.raises(StoreError, match=r"notes\.txt: .*not an SQLite database"):
            EventStore(path, mode=mode)
        assert bytes_of(path) == before
        assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]

    @pytest.mark.parametrize("mode", ["ro", "rw", "rwc"])
    def test_another_applications_database(self, tmp_path: Path, mode: Any) -> None:
        path = tmp_path / "other.db"
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE people (name TEXT)")
            db.execute("INSERT INTO people VALUES ('ada')")
        db.close()
        before = bytes_of(path)
        with pytest.raises(StoreError, match=r"other\.db: not a convo event store .*people"):
            EventStore(path, mode=mode)
        assert bytes_of(path) == before

    def test_another_application_id(self, tmp_path: Path) -> None:
        path = tmp_path / "other.db"
        db = sqlite3.connect(path)
        db.execute("PRAGMA application_id = 1234")
        db.close()
        with pytest.raises(StoreError, match="application_id 0x4d2"):
            EventStore(path)

    @pytest.mark.parametrize("mode", ["ro", "rw"])
    def test_an_empty_file_is_not_a_store_to_read(self, tmp_path: Path, mode: Any) -> None:
        path = tmp_path / "empty.db"
        path.touch()
        with pytest.raises(StoreError, match="an empty file"):
            EventStore(path, mode=mode)
        assert bytes_of(path) == b""

    def test_an_empty_file_becomes_a_store_in_rwc(self, tmp_path: Path) -> None:
        path = tmp_path / "empty.db"
        path.touch()
        with EventStore(path) as s:
            s.append("a", ["x"])
        with EventStore(path, mode="ro") as s:
            assert s.read("a") == ["x"]

    def test_a_newer_schema(self, tmp_path: Path) -> None:
        path = tmp_path / "events.db"
        EventStore(path).close()
        db = sqlite3.connect(path)
        db.execute("PRAGMA user_version = 99")
        db.close()
        with pytest.raises(StoreError, match=r"newer convo-engine .*version 99"):
            EventStore(path, mode="ro")

    def test_the_marker_is_sqlites_application_id(self, tmp_path: Path) -> None:
        path = tmp_path / "events.db"
        EventStore(path).close()
        db = sqlite3.connect(path)
        assert db.execute("PRAGMA application_id").fetchone() == (0x436F6E76,)
        assert db.execute("PRAGMA user_version").fetchone() == (1,)
        db.close()

    def test_a_store_from_before_the_marker_is_ours(self, tmp_path: Path) -> None:
        path = tmp_path / "old.db"
        db = sqlite3.connect(path)
        db.executescript(
            "CREATE TABLE events (conversation TEXT NOT NULL, position INTEGER NOT NULL,"
            " time REAL, event BLOB NOT NULL, PRIMARY KEY (conversation, position))"
            " WITHOUT ROWID;"
            "CREATE TABLE conversations (id TEXT PRIMARY KEY, length INTEGER NOT NULL)"
            " WITHOUT ROWID;"
            "INSERT INTO events VALUES ('a', 0, NULL, '\"x\"');"
            "INSERT INTO conversations VALUES ('a', 1);"
        )
        db.close()
        with EventStore(path, mode="ro") as s:
            assert s.read("a") == ["x"]
        with EventStore(path) as s:
            assert s.append("a", ["y"], expected_position=1) == 2

    def test_read_only_mode_changes_nothing(self, tmp_path: Path) -> None:
        path = tmp_path / "events.db"
        with EventStore(path) as s:
            s.append("a", ["x", "y"])
        before = bytes_of(path)
        with EventStore(path, mode="ro") as s:
            assert s.conversations() == {"a": 2}
            assert s.read("a") == ["x", "y"]
            with pytest.raises(StoreError, match="read-only"):
                s.append("a", ["z"])
        assert bytes_of(path) == before

    def test_bad_mode(self, tmp_path: Path) -> None:
        with pytest.raises(ValueError, match="'ro', 'rw' or 'rwc'"):
            EventStore(tmp_path / "x.db", mode="w")  # type: ignore[arg-type]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files: run as a user")
class TestReadOnlyFiles:
    """A read-only file or directory opens to read, and is refused (by name) to write."""

    def test_read_only_file(self, tmp_path: Path) -> None:
        path = tmp_path / "events.db"
        with EventStore(path) as s:
            s.append("a", ["x"])
        path.chmod(0o444)
        with pytest.raises(StoreError, match=r"events\.db: the file is read-only"):
            EventStore(path)
        with EventStore(path, mode="ro") as s:
            assert s.read("a") == ["x"]

    def test_read_only_directory(self, tmp_path: Path) -> None:
        folder = tmp_path / "ro"
        folder.mkdir()
        folder.chmod(0o555)
        try:
            with pytest.raises(StoreError, match=r"its directory .* is read-only"):
                EventStore(folder / "events.db")
        finally:
            folder.chmod(0o755)


class TestBusy:
    """A writer that cannot get the lock within the timeout fails cleanly."""

    def test_busy_raises_and_writes_nothing(self, tmp_path: Path) -> None:
        path = tmp_path / "events.db"
        with EventStore(path, busy_timeout=0) as s:
            blocker = sqlite3.connect(path, isolation_level=None)
            blocker.execute("BEGIN IMMEDIATE")
            try:
                with pytest.raises(StoreBusyError, match="locked"):
                    s.append("a", ["x"])
            finally:
                blocker.execute("ROLLBACK")
                blocker.close()
            assert s.read("a") == []
            assert s.append("a", ["x"]) == 1

    def test_opening_never_waits_for_a_writer(self, tmp_path: Path) -> None:
        # Another process appending holds the write lock: opening an existing store
        # only reads, so it succeeds even with no busy timeout at all.
        path = tmp_path / "events.db"
        EventStore(path).close()
        blocker = sqlite3.connect(path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        try:
            with EventStore(path, busy_timeout=0) as s:
                assert s.conversations() == {}
                with pytest.raises(StoreBusyError):
                    s.append("a", ["x"])
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()


class TestThreads:
    """One store shared by threads serializes their appends."""

    def test_threads_share_a_store(self, store: EventStore) -> None:
        def work(worker: int) -> None:
            for n in range(50):
                store.append("a", [{"w": worker, "n": n}])

        threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        events = store.read("a")
        assert sorted((e["w"], e["n"]) for e in events) == [
            (w, n) for w in range(4) for n in range(50)
        ]


WORKERS = 4
APPENDS = 200


def append_from_process(path: str, worker: int, start: Any) -> int:
    """Child process: APPENDS appends, half optimistic, retried on conflicts; returns retries."""
    retries = 0
    start.wait()  # a barrier: all workers begin together, to collide as much as possible
    # No busy wait: SQLite's busy handler sleeps, which lets one process starve the
    # others and the appends run one process after another. Retrying at once makes
    # them interleave, so that expectations really go stale.
    with EventStore(path, busy_timeout=0) as s:
        for n in range(APPENDS):
            event = {"worker": worker, "n": n}
            while True:
                try:
                    if n % 2:
                        s.append("shared", [event], expected_position=s.length("shared"))
                    else:
                        s.append("shared", [event])
                    break
                except (ConcurrencyError, StoreBusyError):
                    retries += 1
    return retries


class TestProcesses:
    """Real processes appending to one file lose nothing and never share a position."""

    def test_concurrent_processes(self, tmp_path: Path) -> None:
        path = str(tmp_path / "events.db")
        EventStore(path).close()
        ctx = multiprocessing.get_context("spawn")
        with ctx.Manager() as manager:
            start = manager.Barrier(WORKERS)
            with ctx.Pool(WORKERS) as pool:
                results = [
                    pool.apply_async(append_from_process, (path, w, start)) for w in range(WORKERS)
                ]
                for r in results:
                    r.get(timeout=300)
        with EventStore(path) as s:
            entries = s.read_entries("shared")
            assert s.conversations() == {"shared": WORKERS * APPENDS}
        assert [e.position for e in entries] == list(range(WORKERS * APPENDS))
        seen = [(e.event["worker"], e.event["n"]) for e in entries]
        assert sorted(seen) == [(w, n) for w in range(WORKERS) for n in range(APPENDS)]
        for w in range(WORKERS):  # each process's appends keep their order
            assert [n for worker, n in seen if worker == w] == list(range(APPENDS))
