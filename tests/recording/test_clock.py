"""The recorder's clock: every record is stamped with it and the batching rule reads it,
so both are tested here with a clock that moves only when told (no sleeping)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import replay
from replay.recording._recorder import BATCH, BATCH_BYTES, Call, Recorder, open_sink

from ._clock import Clock

T0 = 1_800_000_000.0
URL = "https://a.example/v1/messages"


def frame(n: int) -> bytes:
    data = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": n}}
    return f"event: content_block_delta\ndata: {json.dumps(data)}\n\n".encode()


def stamped(path: Path) -> list[tuple[str, float | None]]:
    return [(e.event["type"], e.time) for e in replay.read_log(path).entries]


def streamed_call(path: Path) -> tuple[Clock, Call]:
    """A recorder on a fake clock writing to ``path``, and its streamed call, answered."""
    clock = Clock()
    recorder = Recorder(open_sink(path, None), clock=clock)
    call = recorder.begin(
        "anthropic", "POST", "https://a.example/v1/messages", [], None, "/v1/messages"
    )
    call.response(200, [("content-type", "text/event-stream")])
    return clock, call


def test_records_are_stamped_with_the_clock_and_batched_by_it(tmp_path: Path) -> None:
    path = tmp_path / "clock.jsonl"
    clock = Clock()
    recorder = Recorder(open_sink(path, None), clock=clock)
    call = recorder.begin(
        "anthropic", "POST", "https://a.example/v1/messages", [], None, "/v1/messages"
    )
    clock.now += 1.0
    call.response(200, [("content-type", "text/event-stream")])
    clock.now += 0.5
    call.chunk(frame(0))  # the first event is written at once
    assert len(stamped(path)) == 3
    for n, at in enumerate((1.51, 1.52, 1.54), start=1):
        clock.now = T0 + at
        call.chunk(frame(n))
    assert len(stamped(path)) == 3  # held: under BATCH since the last write
    clock.now = T0 + 1.56  # past BATCH since the last write: this chunk writes the batch
    call.chunk(frame(4))
    assert [t for _, t in stamped(path)] == [
        T0,
        T0 + 1.0,
        T0 + 1.5,
        T0 + 1.51,
        T0 + 1.52,
        T0 + 1.54,
        T0 + 1.56,
    ]
    clock.now = T0 + 1.561
    call.chunk(frame(5))
    clock.now = T0 + 1.563
    call.finish()  # the end writes what is held, each at its arrival time
    assert stamped(path)[-2:] == [("recording/event", T0 + 1.561), ("recording/end", T0 + 1.563)]


@settings(max_examples=60, deadline=None)
@given(gaps=st.lists(st.sampled_from([0.0, 0.001, 0.01, 0.03, BATCH, 0.2, 5.0]), max_size=30))
def test_no_event_waits_more_than_a_batch(tmp_path_factory: object, gaps: list[float]) -> None:
    """For any arrival times: each event is stamped with its own arrival; after each
    chunk, the events not yet written all arrived less than ``BATCH`` before it; every
    event is written by the end, in order, and there are no more writes than chunks."""
    path = Path(str(tmp_path_factory.mktemp("clock"))) / "batch.jsonl"  # type: ignore[attr-defined]
    clock, call = streamed_call(path)
    arrivals: list[float] = []
    for n, gap in enumerate(gaps):
        clock.now += gap
        arrivals.append(clock.now)
        call.chunk(frame(n))
        written = [t for kind, t in stamped(path) if kind == "recording/event"]
        assert written == arrivals[: len(written)]
        assert all(clock.now - at < BATCH for at in arrivals[len(written) :])
    call.finish()
    events = [e for e in replay.read_log(path).events() if e["type"] == "recording/event"]
    assert [e["event"]["delta"]["text"] for e in events] == list(range(len(gaps)))
    assert [t for kind, t in stamped(path) if kind == "recording/event"] == arrivals


@pytest.mark.slow
def test_a_fast_stream_is_written_every_batch_of_bytes(tmp_path: Path) -> None:
    """Pieces arriving faster than ``BATCH`` are held at most ``BATCH_BYTES`` bytes: then
    parsed and written, each event at its own arrival time, the clock standing still."""
    path = tmp_path / "fast.jsonl"
    clock, call = streamed_call(path)
    arrivals: list[float] = []
    for n in range(2 * BATCH_BYTES // len(frame(0)) + 1):
        clock.now += BATCH / 1000
        arrivals.append(clock.now)
        call.chunk(frame(n))
        events = [t for kind, t in stamped(path) if kind == "recording/event"]
        held = sum(len(frame(k)) for k in range(len(events), n + 1))
        assert held < BATCH_BYTES
        assert events == arrivals[: len(events)]
    assert len(events) > 1  # written before the end, though under BATCH had passed
    call.finish()
    assert len([kind for kind, _ in stamped(path) if kind == "recording/event"]) == n + 1
