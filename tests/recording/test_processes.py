"""Several processes recording into one log or one store at once (``convo record`` of a
program that starts others): every call has its own number, the log's positions stay
unique and gapless, every call's records are whole, and playback serves them all."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import attrs
import msgspec
import pytest

import replay
from replay.recording._player import RecordedCall, read_calls

from . import _sdks, _server

PROCESSES = 3
CALLS = 4
ASK = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}

# One recording process: CALLS streamed calls. The server starts each round of calls
# only when every process has asked, and paces it over several of the recorder's
# batches, so the processes' streams interleave in the log however loaded the machine.
WORKER = textwrap.dedent(
    """
    import sys
    import anthropic
    import replay

    base, log, store = sys.argv[1], sys.argv[2], sys.argv[3] == "store"
    client = anthropic.Anthropic(api_key="k", base_url=base, max_retries=0)
    if store:
        client = replay.record(client, log, conversation="c", store=True)
    else:
        client = replay.record(client, log)
    ask = dict(model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    for _ in range(int(sys.argv[4])):
        list(client.messages.create(**ask, stream=True))
    """
)

pytestmark = pytest.mark.slow  # three SDK processes each, paced streams


def record_at_once(tmp_path: Path, log: Path, kind: str) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    paced = attrs.evolve(_server.anthropic_stream(), pace=0.015)
    with _server.serving() as server:
        server.together = threading.Barrier(PROCESSES)
        base = server.root(paced)
        workers = [
            subprocess.Popen(
                [sys.executable, str(script), base, str(log), kind, str(CALLS)],
                env={**os.environ, "PYTHONPATH": os.getcwd()},
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(PROCESSES)
        ]
        for worker in workers:
            _, err = worker.communicate(timeout=120)
            assert worker.returncode == 0, err
        assert len(server.requests) == PROCESSES * CALLS


def check_calls(calls: list[RecordedCall]) -> None:
    assert [call.n for call in calls] == list(range(PROCESSES * CALLS))
    expected = _server.expected_events(_server.anthropic_stream())
    for call in calls:
        assert call.complete
        assert call.status == 200
        events = [msgspec.json.decode(record.event) for record, _ in call.records]
        assert events == [e["event"] for e in expected]


def test_processes_recording_into_one_log(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    record_at_once(tmp_path, log, "log")
    entries = replay.read_log(log).entries  # strict: any bad line raises
    assert [entry.position for entry in entries] == list(range(len(entries)))
    calls = read_calls(log)
    check_calls(calls)
    # The calls interleaved (else this test proves nothing about the hold on the file).
    numbers = [e.event["call"] for e in entries if e.event["type"] == "recording/event"]
    assert any(a > b for a, b in itertools.pairwise(numbers))
    client = replay.playback(_sdks.client("anthropic", "http://127.0.0.1:9", False), log)
    for _ in range(PROCESSES * CALLS):
        list(client.messages.create(**ASK, stream=True))
    assert replay.recording.recorder_of(client).unused == ()


def test_processes_recording_into_one_store(tmp_path: Path) -> None:
    store = tmp_path / "events.db"
    replay.open_store(store, mode="rwc").close()
    record_at_once(tmp_path, store, "store")
    with replay.open_store(store) as opened:
        assert opened.length("c") == len(opened.read("c"))
    check_calls(read_calls(store, "c"))
