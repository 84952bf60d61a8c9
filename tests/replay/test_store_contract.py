"""The store contract, run on every store: SQLite, and a real PostgreSQL the suite starts.

Each test takes ``backend``, parametrized over the stores; ``backend.open()`` opens
another handle on the same store (another connection), so what one writes the
other must read. Store-specific behaviour (SQLite's WAL and busy timeout, the
network store's lost connections and change hints) is tested at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import multiprocessing
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from replay import ConcurrencyError, Entry, StoreError, UnstorableEventError, open_store
from tests._postgres import Proxy, Server


@dataclass
class Backend:
    """Where one test's store lives: ``name`` is a path or a URL for ``open_store``."""

    kind: str
    name: str

    def open(self) -> Any:
        return open_store(self.name)


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "sqlite":
        return Backend("sqlite", str(tmp_path / "events.db"))
    server: Server = request.getfixturevalue("postgres_server")
    return Backend("postgres", server.new_database())


@pytest.fixture
def store(backend: Backend) -> Iterator[Any]:
    with backend.open() as s:
        yield s


class TestAppend:
    """append writes a batch atomically at the next positions."""

    def test_positions_are_gapless_per_conversation(self, store: Any) -> None:
        assert store.append("a", [{"n": 0}, {"n": 1}]) == 2
        assert store.append("b", [{"m": 0}]) == 1
        assert store.append("a", [{"n": 2}]) == 3
        assert [e.position for e in store.read_entries("a")] == [0, 1, 2]
        assert store.read("a") == [{"n": 0}, {"n": 1}, {"n": 2}]
        assert store.read("b") == [{"m": 0}]

    def test_stale_expectation_raises_and_writes_nothing(self, store: Any) -> None:
        assert store.append("a", ["x", "y"], expected_position=0) == 2
        with pytest.raises(ConcurrencyError) as info:
            store.append("a", ["late"], expected_position=1)
        error = info.value
        assert (error.conversation, error.expected, error.actual) == ("a", 1, 2)
        assert str(error).startswith(
            "conversation 'a': expected to append at position 1, but it has 2 events"
        )
        assert store.read("a") == ["x", "y"]
        assert store.length("a") == 2

    def test_expecting_events_in_a_new_conversation_fails(self, store: Any) -> None:
        with pytest.raises(ConcurrencyError, match="has 0 events"):
            store.append("new", ["x"], expected_position=3)
        assert store.conversations() == {}

    @pytest.mark.slow
    @pytest.mark.parametrize(
        ("bad", "why"),
        [
            (object(), "no JSON form"),
            (float("nan"), "NaN or infinite"),
            ({"deep": [1, {"n": float("-inf")}]}, "NaN or infinite"),
            (float("inf"), "NaN or infinite"),
        ],
    )
    def test_an_unstorable_event_fails_the_whole_batch(
        self, store: Any, bad: Any, why: str
    ) -> None:
        # msgspec would write a NaN as null: the event read back would not be the one given.
        with pytest.raises(UnstorableEventError, match=rf"'a', event #1 of the batch: .*{why}"):
            store.append("a", [{"ok": None}, bad])
        assert (store.read("a"), store.length("a"), store.conversations()) == ([], 0, {})

    def test_null_is_stored(self, store: Any) -> None:
        store.append("x", [None, {"v": None, "s": "null"}])
        assert store.read("x") == [None, {"v": None, "s": "null"}]

    def test_an_iterator_is_stored_whole_or_not_at_all(self, store: Any) -> None:
        def events() -> Iterator[object]:
            yield "a"
            yield "b"
            raise RuntimeError("the source failed")

        with pytest.raises(RuntimeError):
            store.append("x", events())
        assert store.conversations() == {}
        assert store.append("x", iter(["a", "b"])) == 2

    def test_empty_batch_writes_nothing_but_checks(self, store: Any) -> None:
        assert store.append("a", []) == 0
        assert store.conversations() == {}
        store.append("a", ["x"])
        assert store.append("a", [], expected_position=1) == 1
        with pytest.raises(ConcurrencyError):
            store.append("a", [], expected_position=0)
        assert store.conversations() == {"a": 1}

    def test_time_is_stored_per_event(self, store: Any) -> None:
        store.append("a", ["x", "y"], time=5.5)
        store.append("a", ["z"])
        assert store.read_entries("a") == [
            Entry(0, "x", "a", 5.5),
            Entry(1, "y", "a", 5.5),
            Entry(2, "z", "a", None),
        ]

    def test_events_round_trip_exactly(self, store: Any) -> None:
        events = [
            {"type": "plugin/x", "nested": [1, 2.5, None, {"s": "\u2600\u0000"}]},
            {"b": 1, "a": 2},  # key order is kept
            "text",
            2**62,
            [],
        ]
        store.append("a", events)
        assert store.read("a") == events
        assert list(store.read("a")[1]) == ["b", "a"]


class TestRead:
    """read returns a window of positions; unknown conversations are empty."""

    def test_window(self, store: Any) -> None:
        store.append("a", list(range(10)))
        assert store.read("a", 3, 6) == [3, 4, 5]
        assert store.read("a", 8) == [8, 9]
        assert store.read("a", 12) == []
        assert store.read("a", 6, 3) == []
        assert [e.position for e in store.read_entries("a", 7, 9)] == [7, 8]

    def test_unknown_conversation_is_empty(self, store: Any) -> None:
        assert (store.read("nobody"), store.read_entries("nobody"), store.length("nobody")) == (
            [],
            [],
            0,
        )

    @pytest.mark.parametrize(("start", "stop"), [(-1, None), (0, -1)])
    def test_negative_positions_are_refused(self, store: Any, start: int, stop: int) -> None:
        with pytest.raises(ValueError, match=f"start={start}, stop={stop}"):
            store.read("a", start, stop)
        with pytest.raises(ValueError, match=f"start={start}, stop={stop}"):
            store.read_entries("a", start, stop)
        with pytest.raises(ValueError, match="start=-1"):
            store.read_many({"a": 0, "b": -1})

    @given(
        st.lists(st.integers(0, 6), min_size=1, max_size=5),
        st.dictionaries(st.integers(0, 6), st.integers(0, 8), max_size=7),
        st.none() | st.integers(1, 4),
    )
    @settings(
        suppress_health_check=[HealthCheck.function_scoped_fixture],
        max_examples=20,
        deadline=None,
    )
    def test_read_many_is_each_read_at_once(
        self, store: Any, lengths: list[int], starts: dict[int, int], limit: int | None
    ) -> None:
        """read_many(starts, limit) is read(c, start, start + limit) of each conversation
        (unknown ones included), those with none left out."""
        prefix = uuid.uuid4().hex
        for index, length in enumerate(lengths):
            store.append(f"{prefix}{index}", [{"i": index, "n": n} for n in range(length)])
        wanted = {f"{prefix}{index}": start for index, start in starts.items()}
        expected = {
            c: store.read(c, start, None if limit is None else start + limit)
            for c, start in wanted.items()
        }
        assert store.read_many(wanted, limit) == {c: e for c, e in expected.items() if e}


class TestConversations:
    """conversations lists ids with their lengths, ordered by id (code points)."""

    def test_lists_ids_and_lengths_sorted(self, store: Any) -> None:
        ids = ["b", "a", "Z", "\u00e9", "a/b c", "\u2600", "10", "9"]
        for n, cid in enumerate(ids):
            store.append(cid, ["x"] * (n + 1))
        assert store.conversations() == {cid: n + 1 for n, cid in enumerate(ids)}
        assert list(store.conversations()) == sorted(ids)


class TestHandles:
    """Another handle (connection) on the same store sees every commit."""

    def test_reopen_sees_the_events_and_continues(self, backend: Backend) -> None:
        with backend.open() as s:
            s.append("a", ["x"])
        with backend.open() as s:
            assert s.append("a", ["y"], expected_position=1) == 2
            assert s.read("a") == ["x", "y"]

    def test_two_handles_race_with_expectations(self, backend: Backend) -> None:
        with backend.open() as first, backend.open() as second:
            first.append("a", ["x"], expected_position=0)
            with pytest.raises(ConcurrencyError):
                second.append("a", ["y"], expected_position=0)
            assert second.append("a", ["y"], expected_position=1) == 2
            assert first.read("a") == ["x", "y"]

    def test_a_closed_store_refuses_work(self, backend: Backend) -> None:
        s = backend.open()
        s.close()
        s.close()
        with pytest.raises(StoreError, match="the store is closed"):
            s.read("a")
        with pytest.raises(StoreError, match="the store is closed"):
            s.append("a", ["x"])


class TestModes:
    """ro reads only, rw refuses a store that does not exist, rwc creates it."""

    @pytest.mark.parametrize("mode", ["ro", "rw"])
    def test_only_rwc_creates(self, backend: Backend, mode: str) -> None:
        with pytest.raises(StoreError, match=r"no such event store|not a convo event store") as e:
            open_store(backend.name, mode=mode)  # type: ignore[arg-type]
        assert str(e.value).startswith(f"{backend.name}: ")
        open_store(backend.name).close()  # rwc
        open_store(backend.name, mode=mode).close()  # type: ignore[arg-type]

    def test_read_only_refuses_appends(self, backend: Backend) -> None:
        with backend.open() as s:
            s.append("a", ["x"])
        with open_store(backend.name, mode="ro") as s:
            assert s.read("a") == ["x"]
            with pytest.raises(StoreError):
                s.append("a", ["y"])
        with backend.open() as s:
            assert s.read("a") == ["x"]


class TestThreads:
    """One store shared by threads serializes their appends."""

    def test_threads_share_a_store(self, store: Any) -> None:
        def work(worker: int) -> None:
            for n in range(30):
                store.append("a", [{"w": worker, "n": n}])

        threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        events = store.read("a")
        assert sorted((e["w"], e["n"]) for e in events) == [
            (w, n) for w in range(4) for n in range(30)
        ]


WORKERS = 4
APPENDS = 200


def append_from_process(name: str, worker: int, start: Any) -> int:
    """Child process: APPENDS appends, half optimistic, retried on conflicts; returns retries."""
    from replay import SQLiteStore, StoreBusyError
    from replay.stores._open import is_postgres

    retries = 0
    start.wait()  # a barrier: all workers begin together, to collide as much as possible
    # SQLite without a busy wait: its busy handler sleeps, which lets one process
    # starve the others and the appends run one process after another. Retrying at
    # once makes them interleave, so that expectations really go stale.
    with open_store(name) if is_postgres(name) else SQLiteStore(name, busy_timeout=0) as s:
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
    """Real processes appending to one store lose nothing and never share a position."""

    @pytest.mark.slow
    def test_concurrent_processes(self, backend: Backend) -> None:
        backend.open().close()
        ctx = multiprocessing.get_context("spawn")
        with ctx.Manager() as manager:
            start = manager.Barrier(WORKERS)
            with ctx.Pool(WORKERS) as pool:
                results = [
                    pool.apply_async(append_from_process, (backend.name, w, start))
                    for w in range(WORKERS)
                ]
                for r in results:
                    r.get(timeout=300)
        with backend.open() as s:
            entries = s.read_entries("shared")
            assert s.conversations() == {"shared": WORKERS * APPENDS}
        assert [e.position for e in entries] == list(range(WORKERS * APPENDS))
        seen = [(e.event["worker"], e.event["n"]) for e in entries]
        assert sorted(seen) == [(w, n) for w in range(WORKERS) for n in range(APPENDS)]
        for w in range(WORKERS):  # each process's appends keep their order
            assert [n for worker, n in seen if worker == w] == list(range(APPENDS))


class StoreModel(RuleBasedStateMachine):
    """Two handles on one store against a dict of lists: every read agrees with it."""

    handles: tuple[Any, Any]
    prefix: str

    def __init__(self) -> None:
        super().__init__()
        self.model: dict[str, list[Any]] = {}

    def cid(self, n: int) -> str:
        return f"{self.prefix}-{n}"

    @rule(
        handle=st.integers(0, 1),
        n=st.integers(0, 2),
        events=st.lists(st.dictionaries(st.text(max_size=3), st.integers()), max_size=4),
        expectation=st.sampled_from(["none", "right", "stale"]),
    )
    def append(self, handle: int, n: int, events: list[Any], expectation: str) -> None:
        cid = self.cid(n)
        log = self.model.setdefault(cid, [])
        store = self.handles[handle]
        if expectation == "stale":
            with pytest.raises(ConcurrencyError):
                store.append(cid, events, expected_position=len(log) + 1)
            return
        expected = len(log) if expectation == "right" else None
        assert store.append(cid, events, expected_position=expected) == len(log) + len(events)
        log.extend(events)

    @rule(handle=st.integers(0, 1), n=st.integers(0, 2), start=st.integers(0, 6))
    def read_window(self, handle: int, n: int, start: int) -> None:
        cid = self.cid(n)
        log = self.model.get(cid, [])
        entries = self.handles[handle].read_entries(cid, start, start + 3)
        assert [(e.position, e.event) for e in entries] == list(enumerate(log))[start : start + 3]

    @invariant()
    def lengths_agree(self) -> None:
        for handle in self.handles:
            for cid, log in self.model.items():
                assert handle.length(cid) == len(log)
                assert handle.read(cid) == log


class TestModel:
    """A stateful property: random appends and reads through two handles match a model."""

    @pytest.mark.slow
    def test_store_matches_the_model(self, backend: Backend) -> None:
        examples = itertools.count()
        with backend.open() as first, backend.open() as second:

            class Machine(StoreModel):
                def __init__(self) -> None:
                    super().__init__()
                    self.handles = (first, second)
                    self.prefix = f"run{next(examples)}"

            run_state_machine_as_test(
                Machine,
                settings=settings(
                    max_examples=25,
                    stateful_step_count=12,
                    deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture],
                ),
            )

    @pytest.mark.slow
    @given(st.lists(st.lists(st.integers(), max_size=5), max_size=8))
    @settings(
        suppress_health_check=[HealthCheck.function_scoped_fixture],
        max_examples=20,
        deadline=None,
    )
    def test_random_batches_read_back_in_order(self, store: Any, batches: list[list[int]]) -> None:
        conversation = f"c{uuid.uuid4()}"
        for batch in batches:
            store.append(conversation, batch, expected_position=store.length(conversation))
        flat = [e for batch in batches for e in batch]
        assert store.read(conversation) == flat
        assert store.length(conversation) == len(flat)


# -- the network store's additions ---------------------------------------------------------


@pytest.fixture
def pg(postgres_server: Server) -> str:
    return postgres_server.new_database()


class TestOpenStore:
    """open_store tells a URL from a path."""

    def test_a_path_opens_sqlite(self, tmp_path: Path) -> None:
        from replay import SQLiteStore

        with open_store(tmp_path / "x.db") as s:
            assert isinstance(s, SQLiteStore)
        with open_store(str(tmp_path / "postgresql.db")) as s:
            assert isinstance(s, SQLiteStore)

    def test_a_url_opens_postgres(self, pg: str) -> None:
        from replay import PostgresStore

        with open_store(pg) as s:
            assert isinstance(s, PostgresStore)
        with open_store(pg.replace("postgresql://", "postgres://")) as s:
            assert isinstance(s, PostgresStore)

    def test_an_unreachable_server_is_a_store_error_without_the_password(self) -> None:
        from tests._postgres import _free_port

        url = f"postgresql://convo:s3cret@127.0.0.1:{_free_port()}/x"
        with pytest.raises(StoreError, match="cannot connect") as info:
            open_store(url)
        assert "s3cret" not in str(info.value)
        assert "convo:***@127.0.0.1" in str(info.value)


@contextlib.contextmanager
def lost_append(pg: str, server: Server) -> Iterator[tuple[Any, Any, Any]]:
    """An append sent, then its connection cut before the answer: the store (which
    sent it), the connection holding the conversation's row lock, and the error.

    The lock makes the append wait inside the server, sent but unanswered; the
    proxy then drops the client side only, as a network failure would.
    """
    import psycopg

    from replay import PostgresStore

    with open_store(pg) as setup:
        setup.append("a", ["first"])
    proxy = Proxy(server.port).start()
    blocker = psycopg.connect(pg)
    store = PostgresStore(proxy.dsn(pg))
    try:
        blocker.execute("SELECT * FROM convo_conversations WHERE id = 'a' FOR UPDATE")
        outcome: list[BaseException | int] = []

        def append() -> None:
            try:
                outcome.append(store.append("a", ["second"], expected_position=1))
            except BaseException as exc:
                outcome.append(exc)

        thread = threading.Thread(target=append)
        thread.start()
        _wait_until(lambda: _lock_waiters(pg) == 1)
        proxy.cut()
        thread.join()
        yield store, blocker, outcome[0]
    finally:
        blocker.close()
        store.close()
        proxy.close()


class TestUnknownOutcome:
    """A connection lost after sending: a distinct error with the append's id, resolvable."""

    def test_an_append_that_landed_is_found(self, pg: str, postgres_server: Server) -> None:
        from replay import AppendUnknownError, Landed

        with lost_append(pg, postgres_server) as (store, blocker, error):
            assert isinstance(error, AppendUnknownError)
            assert error.conversation == "a"
            assert str(error.append_id) in str(error)
            blocker.rollback()  # the server-side append goes on and commits
            with open_store(pg) as check:
                _wait_until(lambda: check.length("a") == 2)
            assert store.landed(error.append_id) == Landed("a", 1, 2)
            assert store.read("a") == ["first", "second"]  # the store reconnected

    def test_a_retry_with_the_same_id_lands_once(self, pg: str, postgres_server: Server) -> None:
        # The orphaned session still waits for the lock when the retry is sent: both
        # reach the server, and exactly one of them lands.
        with lost_append(pg, postgres_server) as (store, blocker, error):
            outcome: list[int] = []
            retry = threading.Thread(
                target=lambda: outcome.append(
                    store.append("a", ["second"], expected_position=1, append_id=error.append_id)
                )
            )
            retry.start()
            _wait_until(lambda: _lock_waiters(pg) == 2)
            blocker.rollback()
            retry.join()
            assert outcome == [2]
            assert store.read("a") == ["first", "second"]
            assert store.append("a", ["second"], append_id=error.append_id) == 2  # still once
            assert store.read("a") == ["first", "second"]

    def test_an_append_that_did_not_land_is_none(self, pg: str, postgres_server: Server) -> None:
        import psycopg

        from replay import AppendUnknownError

        with lost_append(pg, postgres_server) as (store, blocker, error):
            assert isinstance(error, AppendUnknownError)
            # The server ends the orphaned session, and its transaction with it.
            with psycopg.connect(pg, autocommit=True) as admin:
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE wait_event_type = 'Lock'"
                )
            _wait_until(lambda: _lock_waiters(pg) == 0)
            blocker.rollback()
            assert store.landed(error.append_id) is None
            assert store.landed(uuid.uuid4()) is None
            assert store.read("a") == ["first"]


def _lock_waiters(dsn: str) -> int:
    # A new session each time: a transaction sees pg_stat_activity as it first read it.
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
        ).fetchone()
    return int(row[0]) if row else 0


def _wait_until(condition: Callable[[], bool]) -> None:
    # A hang guard, not a timing assertion.
    import time

    deadline = time.monotonic() + 20
    while not condition():
        assert time.monotonic() < deadline, "condition never became true"
        time.sleep(0.01)


class TestFollow:
    """follow() hints at every append from any connection; the first hint is "everything"."""

    def test_hints_name_the_conversation_and_length(self, pg: str) -> None:
        from replay import StoreChange

        async def scenario() -> list[Any]:
            with open_store(pg) as reader, open_store(pg) as writer:
                hints = reader.follow(quiet=30)
                seen = [await anext(hints)]
                await asyncio.to_thread(writer.append, "a", ["x", "y"])
                await asyncio.to_thread(writer.append, "b c", ["z"])
                seen += [await anext(hints), await anext(hints)]
                await hints.aclose()
                return seen

        assert asyncio.run(scenario()) == [
            StoreChange(None),
            StoreChange("a", 2),
            StoreChange("b c", 1),
        ]

    def test_a_quiet_interval_hints_everything(self, pg: str) -> None:
        from replay import StoreChange

        async def scenario() -> list[Any]:
            with open_store(pg) as reader:
                hints = reader.follow(quiet=0.01)
                seen = [await anext(hints), await anext(hints)]
                await hints.aclose()
                return seen

        assert asyncio.run(scenario()) == [StoreChange(None), StoreChange(None)]


class TestCli:
    """Every ``convo store`` command takes a SQLite path or a PostgreSQL URL alike."""

    def test_import_ls_append_export(
        self, backend: Backend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        import io
        import sys

        from replay import read_log
        from replay.cli import main

        example = Path(__file__).parents[2] / "replay" / "examples" / "agent_session.jsonl"
        assert main(["store", "import", backend.name, str(example), "-c", "s"]) == 0
        assert main(["store", "ls", backend.name]) == 0
        assert capsys.readouterr().out.endswith("s\t431\n")
        stdin = sys.stdin
        sys.stdin = io.TextIOWrapper(io.BytesIO(b'{"type": "status.update", "id": "x"}\n'))
        try:
            assert main(["store", "append", backend.name, "s", "--expected-position", "3"]) == 2
            assert "expected to append at position 3" in capsys.readouterr().err
        finally:
            sys.stdin = stdin
        out = tmp_path / "out.jsonl"
        assert main(["store", "export", backend.name, "s", "-o", str(out)]) == 0
        entries = read_log(out).entries
        assert [e.position for e in entries] == list(range(431))

    def test_an_unreachable_server_is_one_line_without_the_password(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        from replay.cli import main
        from tests._postgres import _free_port

        url = f"postgresql://convo:s3cret@127.0.0.1:{_free_port()}/x"
        assert main(["store", "ls", url]) == 2
        err = capsys.readouterr().err
        assert err.startswith("convo: error: ")
        assert err.count("\n") == 1
        assert "s3cret" not in err
        assert "cannot connect" in err

    def test_a_lost_listening_connection_reconnects_and_hints_everything(self, pg: str) -> None:
        import psycopg

        from replay import StoreChange

        async def scenario() -> list[Any]:
            with open_store(pg) as reader, open_store(pg) as writer:
                hints = reader.follow(quiet=30)
                seen = [await anext(hints)]
                with psycopg.connect(pg, autocommit=True) as admin:
                    admin.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        " WHERE query LIKE 'LISTEN%'"
                    )
                seen.append(await asyncio.wait_for(anext(hints), 20))  # reconnected
                await asyncio.to_thread(writer.append, "a", ["x"])
                seen.append(await asyncio.wait_for(anext(hints), 20))
                await hints.aclose()
                return seen

        assert asyncio.run(scenario()) == [
            StoreChange(None),
            StoreChange(None),
            StoreChange("a", 1),
        ]


class TestTheServerFixture:
    """Without PostgreSQL the suite skips on a developer machine and fails in CI."""

    @pytest.mark.parametrize(("ci", "outcome"), [("true", "fail"), ("", "skip")])
    def test_no_binaries(self, monkeypatch: pytest.MonkeyPatch, ci: str, outcome: str) -> None:
        import tests._postgres

        monkeypatch.setattr(tests._postgres, "binaries", lambda: None)
        monkeypatch.setenv("CI", ci)
        expected = pytest.fail.Exception if outcome == "fail" else pytest.skip.Exception
        with (
            pytest.raises(expected, match="no PostgreSQL binaries"),
            tests._postgres.require_server(),
        ):
            pass
