"""The fault-injection suite: the recorder's medium fails under it (a file size limit
set with ``RLIMIT_FSIZE`` in a subprocess, a disk that is full, the log deleted or
rotated, its lock held by another process, a PostgreSQL server stopped or killed
mid-append). What must hold each time: the SDK's call goes on unchanged, the log stays
valid (unique, gapless positions; each call a clean prefix, ended ``complete: false``
with the reason when it lost a record), every loss is counted and warned about, and
nothing waits for ever. Each test prints what it tried and what held; each is bounded
(a few hundred records, deadlines of a second or two)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import replay
from replay.recording import _recorder, recorder_of
from replay.recording._recorder import LOST, Recorder, open_sink

from . import _sdks, _server
from ._clock import Clock

DELTAS = 400


def stream(deltas: int) -> list[bytes]:
    """An Anthropic message stream of ``deltas`` text deltas, one SSE frame per chunk."""
    frames = [{"type": "message_start", "message": {"id": "m", "content": []}}]
    frames += [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}}
        for _ in range(deltas)
    ]
    frames += [{"type": "message_stop"}]
    return [f"event: {f['type']}\ndata: {json.dumps(f)}\n\n".encode() for f in frames]


def record_stream(
    recorder: Recorder,
    clock: Clock,
    deltas: int,
    *,
    at: int = -1,
    then: Callable[[], None] = lambda: None,
) -> None:
    """One streamed call through ``recorder``, as the instrumented transport drives it;
    ``then`` is called after chunk ``at``."""
    call = recorder.begin(
        "anthropic", "POST", "https://api.example/v1/messages", [], b"{}", "/v1/messages"
    )
    call.response(200, [("content-type", "text/event-stream")])
    for n, chunk in enumerate(stream(deltas)):
        clock.now += _recorder.BATCH
        call.chunk(chunk)
        if n == at:
            then()
    call.finish()


def check_valid(path: Path) -> list[dict[str, Any]]:
    """The log reads strictly, its positions are 0, 1, ... and each call that lost a
    record ends ``complete: false`` naming the loss. Returns its events."""
    log = replay.read_log(path)
    assert log.problems == ()
    assert [e.position for e in log.entries] == list(range(len(log.entries)))
    return log.events()


CHILD = textwrap.dedent(
    """
    import json, resource, sys, warnings
    from tests.recording._clock import Clock
    from tests.recording.test_fault_injection import DELTAS, record_stream
    from replay.recording._recorder import Recorder, open_sink

    path, limit, calls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    recorder = Recorder(open_sink(path, None), clock=Clock())
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    lift = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # The first call meets the limit, which is lifted before the call ends (space
        # freed): its end says what was lost; the second call is recorded whole.
        for n in range(calls):
            record_stream(recorder, recorder.clock, DELTAS, at=390 if n == 0 else -1, then=lift)
    writer = recorder._sink._writer
    print(json.dumps({"lost": recorder.lost, "dropped": writer.dropped,
                      "problem": recorder.problem, "warned": len(caught)}))
    """
)


def run_child(path: Path, limit: int, calls: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), str(limit), str(calls)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.mark.slow  # a Python subprocess per limit
@pytest.mark.parametrize("limit", [2_000, 20_000, 60_000])
def test_a_file_size_limit_mid_stream_leaves_a_valid_log(tmp_path: Path, limit: int) -> None:
    """``RLIMIT_FSIZE`` (Python ignores ``SIGXFSZ``, so writes past it fail with
    ``EFBIG``, the one that crosses it written in part)."""
    path = tmp_path / "limited.jsonl"
    outcome = run_child(path, limit, calls=2)
    events = check_valid(path)
    first = [e for e in events if e["call"] == 0]
    deltas = sum(e["type"] == "recording/event" for e in first)
    assert first[-1]["type"] == "recording/end"
    assert first[-1]["complete"] is False
    assert first[-1]["error"].startswith(f"{LOST}: ")
    assert "File too large" in first[-1]["error"]
    assert deltas < DELTAS
    assert events[-1] == {"type": "recording/end", "call": 1, "complete": True}
    # The write that crossed the limit (a batch of one or two lines), cut back.
    assert 1 <= outcome["dropped"] <= 2
    assert outcome["warned"] == 1
    # Each record is in the log or counted lost: nothing in between, nothing twice.
    per_call = 2 + DELTAS + 2 + 1  # request, response, events, end
    assert len(events) + outcome["lost"] == 2 * per_call
    print(
        f"faults: RLIMIT_FSIZE={limit}: call 0 kept {len(first)} records ({deltas} of "
        f"{DELTAS} deltas), {outcome['lost']} counted lost, {outcome['dropped']} lines cut "
        "back, ended complete: false; call 1 whole; positions gapless"
    )


class FillingDisk:
    """The log's file on a disk with ``room`` bytes left: the write that crosses it is
    written in part, then ``ENOSPC``, until ``free()``."""

    def __init__(self, inner: Any, room: int) -> None:
        self.inner = inner
        self.room = room

    def write(self, data: Any) -> int:
        if self.room <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        written: int = self.inner.write(bytes(data)[: self.room])
        self.room -= written
        return written

    def free(self) -> None:
        self.room = 1 << 40

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_disk_full_mid_stream_ends_the_call_incomplete(tmp_path: Path) -> None:
    """The disk fills mid-stream and has room again before the call ends: the bytes
    of the refused write are cut back, the rest of the stream is counted lost, and
    the end says why; the next call is recorded whole."""
    path = tmp_path / "full.jsonl"
    clock = Clock()
    recorder = Recorder(open_sink(path, None), clock=clock)
    writer = recorder._sink._writer  # type: ignore[attr-defined]
    disk = FillingDisk(writer._file, room=3_000)
    writer._file = disk
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        record_stream(recorder, clock, DELTAS, at=DELTAS // 2, then=disk.free)
        record_stream(recorder, clock, 3)
    events = check_valid(path)
    first = [e for e in events if e.get("call") == 0]
    assert first[-1]["type"] == "recording/end"
    assert first[-1]["complete"] is False
    assert first[-1]["error"].startswith(f"{LOST}: ")
    assert "No space left on device" in first[-1]["error"]
    assert events[-1] == {"type": "recording/end", "call": 1, "complete": True}
    per_call = 2 + DELTAS + 2 + 1
    assert len(first) + recorder.lost == per_call
    assert writer.dropped >= 1
    # Counted by kind: an earlier test's unclosed file may be collected in this block.
    assert sum(issubclass(w.category, replay.RecordingLostWarning) for w in caught) == 1
    print(
        f"faults: disk full mid-stream: {len(first)} records of the call kept, "
        f"{recorder.lost} counted lost ({writer.dropped} lines cut back), end complete: false "
        f"with {first[-1]['error'][:40]!r}...; the next call whole"
    )


def _one_call(client: Any) -> Any:
    return _sdks._sync_call("anthropic", True, client)


@contextlib.contextmanager
def recorded_client(log: Path) -> Iterator[tuple[Any, Any]]:
    with _server.serving() as server:
        base = server.base(*[_server.anthropic_stream() for _ in range(3)])
        unrecorded = _sdks.call(("anthropic", True, False), server.base(_server.anthropic_stream()))
        client = replay.record(_sdks.client("anthropic", base, False), log)
        yield client, unrecorded


@pytest.mark.parametrize("how", ["deleted", "rotated"])
def test_a_log_deleted_or_rotated_mid_recording_is_noticed(tmp_path: Path, how: str) -> None:
    log = tmp_path / "calls.jsonl"
    with (
        recorded_client(log) as (client, unrecorded),
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        assert _one_call(client) == unrecorded
        if how == "deleted":
            log.unlink()
        else:
            log.rename(tmp_path / "calls.jsonl.1")
            log.write_bytes(b"")
        assert _one_call(client) == unrecorded  # the SDK goes on
    recorder = recorder_of(client)
    assert recorder.lost > 0
    lost = [str(w.message) for w in caught if issubclass(w.category, replay.RecordingLostWarning)]
    assert len(lost) == 1
    assert ("deleted" if how == "deleted" else "replaced (rotated)") in lost[0]
    if how == "rotated":
        assert log.read_bytes() == b""  # nothing went astray into the new file
        kept = check_valid(tmp_path / "calls.jsonl.1")
        assert kept[-1] == {"type": "recording/end", "call": 0, "complete": True}
    print(
        f"faults: log {how} between calls: noticed, {recorder.lost} records counted lost, "
        "warned once"
    )


def test_a_store_deleted_mid_recording_is_noticed(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    with _server.serving() as server:
        base = server.base(_server.anthropic_stream(), _server.anthropic_stream())
        client = replay.record(
            _sdks.client("anthropic", base, False), path, conversation="c", store=True
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _one_call(client)
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"{path}{suffix}")
            _one_call(client)
    recorder = recorder_of(client)
    assert recorder.lost > 0
    lost = [str(w.message) for w in caught if issubclass(w.category, replay.RecordingLostWarning)]
    assert lost
    assert "deleted or replaced" in lost[0]
    print(
        f"faults: SQLite store deleted between calls: noticed, {recorder.lost} records counted lost"
    )


HOLDER = textwrap.dedent(
    """
    import fcntl, sys
    f = open(sys.argv[1], "ab")
    fcntl.flock(f.fileno(), fcntl.LOCK_EX)
    print("held", flush=True)
    sys.stdin.read()  # until the test closes our stdin
    """
)


@pytest.mark.slow
def test_a_foreign_lock_costs_a_bounded_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process takes the log's lock and keeps it (stopped, say): the recorded
    call waits ``LOCK_WAIT`` per write at most, counts its records lost and goes on."""
    monkeypatch.setattr(_recorder, "LOCK_WAIT", 0.2)
    log = tmp_path / "locked.jsonl"
    with recorded_client(log) as (client, unrecorded):
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(log)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert holder.stdout is not None
            assert holder.stdout.readline() == "held\n"
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                assert _one_call(client) == unrecorded
        finally:
            assert holder.stdin is not None
            holder.stdin.close()
            holder.wait(timeout=30)
        assert _one_call(client) == unrecorded  # the lock is free again: recorded
    recorder = recorder_of(client)
    assert recorder.lost > 0
    assert "TimeoutError" in (recorder.problem or "")
    assert any("held the lock" in str(w.message) for w in caught)
    events = check_valid(log)
    assert events[-1]["type"] == "recording/end"
    assert events[-1]["complete"] is True
    print(
        f"faults: a foreign lock: {recorder.lost} records counted lost after 0.2 s waits; "
        "the next call recorded whole"
    )


def test_a_lock_is_taken_at_once_when_free(tmp_path: Path) -> None:
    """The bounded wait changes nothing when nobody holds the lock (no poll, no sleep)."""
    writer = replay.LogWriter(tmp_path / "free.jsonl", lock_wait=0.0)
    for n in range(5):
        writer.append({"n": n})
    writer.close()
    with open(tmp_path / "free.jsonl", "ab") as other:
        fcntl.flock(other.fileno(), fcntl.LOCK_EX)
        with pytest.raises(TimeoutError, match="held the lock"):
            replay.LogWriter(tmp_path / "free.jsonl", lock_wait=0.0)


# -- PostgreSQL ----------------------------------------------------------------------


@pytest.fixture
def own_server() -> Iterator[Any]:
    """A server of this test's own, for killing."""
    from tests._postgres import require_server

    with require_server() as server:
        yield server


def _backend(store: Any) -> int:
    return int(store._db.execute("SELECT pg_backend_pid()").fetchone()[0])


@pytest.mark.slow
def test_a_stopped_server_turns_an_append_into_outcome_unknown(postgres_server: Any) -> None:
    from replay.stores._postgres import AppendUnknownError, PostgresStore

    store = PostgresStore(postgres_server.new_database(), append_timeout=0.5)
    try:
        store.append("c", [{"n": 0}])
        backend = _backend(store)
        os.kill(backend, signal.SIGSTOP)  # the server's process for this connection stops answering
        append_id = uuid.uuid4()
        try:
            with pytest.raises(AppendUnknownError, match=r"no answer within 0\.5 s") as raised:
                store.append("c", [{"n": 1}], append_id=append_id)
        finally:
            os.kill(backend, signal.SIGCONT)
        assert raised.value.append_id == append_id
        # Settled as documented: the same id again lands at most once.
        assert store.append("c", [{"n": 1}], append_id=append_id) == 2
        assert store.read("c") == [{"n": 0}, {"n": 1}]
    finally:
        store.close()
    print(
        "faults: PostgreSQL backend stopped mid-append: AppendUnknownError after 0.5 s; "
        "the retry with its append_id landed once"
    )


@pytest.mark.slow  # a PostgreSQL server of its own
def test_a_killed_server_hangs_no_appender(own_server: Any) -> None:
    from replay._errors import StoreError
    from replay.stores._postgres import PostgresStore

    dsn = own_server.new_database()
    outcomes: list[str] = []
    started = threading.Barrier(5)

    def appender(n: int) -> None:
        store = PostgresStore(dsn, append_timeout=1.0, connect_timeout=1.0)
        started.wait()
        try:
            for i in range(10_000):
                store.append(f"c{n}", [{"i": i}])
            outcomes.append("finished")
        except StoreError as exc:
            outcomes.append(type(exc).__name__)
        finally:
            store.close()

    threads = [threading.Thread(target=appender, args=(n,), daemon=True) for n in range(4)]
    for thread in threads:
        thread.start()
    started.wait()
    own_server.process.send_signal(signal.SIGKILL)  # the postmaster; its backends follow
    own_server.process.wait(timeout=30)
    for thread in threads:
        thread.join(timeout=30)  # a guard, not a timing assertion: the deadline is 1 s
    assert not any(thread.is_alive() for thread in threads), "an appender hangs"
    assert len(outcomes) == 4
    print(f"faults: PostgreSQL killed under 4 appenders: every append ended ({sorted(outcomes)})")


@pytest.mark.parametrize("medium", ["log", "store"])
def test_a_program_that_changes_directory_has_not_lost_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, medium: str
) -> None:
    """The deleted-or-rotated check must not mistake a relative path read from another
    directory for a missing file."""
    monkeypatch.chdir(tmp_path)
    clock = Clock()
    name = "calls.jsonl" if medium == "log" else "events.db"
    recorder = Recorder(open_sink(name, "c", store=medium == "store"), clock=clock)
    record_stream(recorder, clock, 3)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    record_stream(recorder, clock, 3)
    recorder.close()
    assert recorder.lost == 0
