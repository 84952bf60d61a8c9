"""SQLiteStore, what is SQLite's own: WAL, the file's marker and modes, refusals, busy.

The contract both stores keep (positions, concurrency, batches, threads, processes)
is tested once for both in test_store_contract.py.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from replay import (
    ConcurrencyError,
    ReplayError,
    SQLiteStore,
    StoreBusyError,
    StoreError,
)


class TestOpenAndClose:
    """The file is in WAL mode; the errors form one tree."""

    def test_wal_mode(self, tmp_path: Path) -> None:
        path = tmp_path / "events.db"
        SQLiteStore(path).close()
        with sqlite3.connect(path) as db:
            assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)

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
            SQLiteStore(path)
        assert not path.parent.exists()

    @pytest.mark.parametrize("mode", ["ro", "rw"])
    def test_missing_file_is_created_only_in_rwc(self, tmp_path: Path, mode: Any) -> None:
        path = tmp_path / "typo.db"
        with pytest.raises(StoreError, match=r"typo\.db: no such event store"):
            SQLiteStore(path, mode=mode)
        assert list(tmp_path.iterdir()) == []

    def test_a_directory(self, tmp_path: Path) -> None:
        with pytest.raises(StoreError, match="is a directory"):
            SQLiteStore(tmp_path)

    @pytest.mark.parametrize("mode", ["ro", "rw", "rwc"])
    def test_not_sqlite(self, tmp_path: Path, mode: Any) -> None:
        path = tmp_path / "notes.txt"
        path.write_bytes(b"just some text, long enough to be a page header? no." * 20)
        before = bytes_of(path)
        with pytest.raises(StoreError, match=r"notes\.txt: .*not an SQLite database"):
            SQLiteStore(path, mode=mode)
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
            SQLiteStore(path, mode=mode)
        assert bytes_of(path) == before

    def test_another_application_id(self, tmp_path: Path) -> None:
        path = tmp_path / "other.db"
        db = sqlite3.connect(path)
        db.execute("PRAGMA application_id = 1234")
        db.close()
        with pytest.raises(StoreError, match="application_id 0x4d2"):
            SQLiteStore(path)

    @pytest.mark.parametrize("mode", ["ro", "rw"])
    def test_an_empty_file_is_not_a_store_to_read(self, tmp_path: Path, mode: Any) -> None:
        path = tmp_path / "empty.db"
        path.touch()
        with pytest.raises(StoreError, match="an empty file"):
            SQLiteStore(path, mode=mode)
        assert bytes_of(path) == b""

    def test_an_empty_file_becomes_a_store_in_rwc(self, tmp_path: Path) -> None:
        path = tmp_path / "empty.db"
        path.touch()
        with SQLiteStore(path) as s:
            s.append("a", ["x"])
        with SQLiteStore(path, mode="ro") as s:
            assert s.read("a") == ["x"]

    def test_a_newer_schema(self, tmp_path: Path) -> None:
        path = tmp_path / "events.db"
        SQLiteStore(path).close()
        db = sqlite3.connect(path)
        db.execute("PRAGMA user_version = 99")
        db.close()
        with pytest.raises(StoreError, match=r"newer convo-engine .*version 99"):
            SQLiteStore(path, mode="ro")

    def test_the_marker_is_sqlites_application_id(self, tmp_path: Path) -> None:
        path = tmp_path / "events.db"
        SQLiteStore(path).close()
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
        with SQLiteStore(path, mode="ro") as s:
            assert s.read("a") == ["x"]
        with SQLiteStore(path) as s:
            assert s.append("a", ["y"], expected_position=1) == 2

    def test_read_only_mode_changes_nothing(self, tmp_path: Path) -> None:
        path = tmp_path / "events.db"
        with SQLiteStore(path) as s:
            s.append("a", ["x", "y"])
        before = bytes_of(path)
        with SQLiteStore(path, mode="ro") as s:
            assert s.conversations() == {"a": 2}
            assert s.read("a") == ["x", "y"]
            with pytest.raises(StoreError, match="read-only"):
                s.append("a", ["z"])
        assert bytes_of(path) == before

    @pytest.mark.parametrize("denied", ["file", "directory"])
    def test_a_place_we_may_not_write(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, denied: str
    ) -> None:
        # The permission check itself, wherever the tests run (root may write anything:
        # TestReadOnlyFiles checks real permissions as a user).
        import replay.stores._sqlite

        path = tmp_path / "events.db"
        with SQLiteStore(path) as s:
            s.append("a", ["x"])
        before = bytes_of(path)
        target = path if denied == "file" else tmp_path

        def access(place: Any, mode: int) -> bool:
            return Path(place) != target

        monkeypatch.setattr(replay.stores._sqlite.os, "access", access)
        cause = "the file is read-only" if denied == "file" else "its directory .* is read-only"
        with pytest.raises(StoreError, match=rf"events\.db: {cause}.*mode 'ro'"):
            SQLiteStore(path)
        with SQLiteStore(path, mode="ro") as s:
            assert s.read("a") == ["x"]
        assert bytes_of(path) == before

    def test_bad_mode(self, tmp_path: Path) -> None:
        with pytest.raises(ValueError, match="'ro', 'rw' or 'rwc'"):
            SQLiteStore(tmp_path / "x.db", mode="w")  # type: ignore[arg-type]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files: run as a user")
class TestReadOnlyFiles:
    """A read-only file or directory opens to read, and is refused (by name) to write."""

    def test_read_only_file(self, tmp_path: Path) -> None:
        path = tmp_path / "events.db"
        with SQLiteStore(path) as s:
            s.append("a", ["x"])
        path.chmod(0o444)
        with pytest.raises(StoreError, match=r"events\.db: the file is read-only"):
            SQLiteStore(path)
        with SQLiteStore(path, mode="ro") as s:
            assert s.read("a") == ["x"]

    def test_read_only_directory(self, tmp_path: Path) -> None:
        folder = tmp_path / "ro"
        folder.mkdir()
        folder.chmod(0o555)
        try:
            with pytest.raises(StoreError, match=r"its directory .* is read-only"):
                SQLiteStore(folder / "events.db")
        finally:
            folder.chmod(0o755)


class TestBusy:
    """A writer that cannot get the lock within the timeout fails cleanly."""

    def test_busy_raises_and_writes_nothing(self, tmp_path: Path) -> None:
        path = tmp_path / "events.db"
        with SQLiteStore(path, busy_timeout=0) as s:
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
        SQLiteStore(path).close()
        blocker = sqlite3.connect(path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        try:
            with SQLiteStore(path, busy_timeout=0) as s:
                assert s.conversations() == {}
                with pytest.raises(StoreBusyError):
                    s.append("a", ["x"])
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()


BATCH = 5000
_WRITER = """
import sys
from replay import SQLiteStore

with SQLiteStore(sys.argv[1]) as store:
    batch = 0
    while True:
        events = [{"batch": batch, "n": n, "pad": "x" * 64} for n in range(int(sys.argv[2]))]
        store.append("crash", events)
        batch += 1
        print(batch, flush=True)
"""


class TestKill:
    """kill -9 of a writer in the middle of a batch: the store opens, consistent, with
    every committed batch whole and nothing of the one cut off."""

    @pytest.mark.slow
    def test_kill_9_mid_batch(self, tmp_path: Path) -> None:
        import signal
        import subprocess
        import sys

        path = tmp_path / "events.db"
        SQLiteStore(path).close()
        writer = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), str(BATCH)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert writer.stdout is not None
            # Two batches committed, so the third is being written when the kill lands
            # (each batch is written in one transaction of 5,000 rows).
            for _ in range(2):
                assert writer.stdout.readline(), "the writer died by itself"
            writer.send_signal(signal.SIGKILL)
            writer.wait()
        finally:
            if writer.poll() is None:
                writer.kill()
                writer.wait()
        assert writer.returncode == -signal.SIGKILL
        db = sqlite3.connect(path)
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        db.close()
        with SQLiteStore(path) as s:
            length = s.length("crash")
            entries = s.read_entries("crash")
            assert length >= 2 * BATCH
            assert length % BATCH == 0  # whole batches only: the cut one left no trace
            assert [e.position for e in entries] == list(range(length))
            assert [(e.event["batch"], e.event["n"]) for e in entries] == [
                (b, n) for b in range(length // BATCH) for n in range(BATCH)
            ]
            assert s.append("crash", ["after"]) == length + 1
