"""How a recorded call's body is handed over: each event's bytes as they were received
(never decoded and encoded again), the events of one arrival time joined into one
chunk, as the server sent them."""

from __future__ import annotations

import itertools
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import replay
from replay.recording._player import GAP_MAX, read_calls

# JSON texts as a server may write them: odd spacing, escapes, key order kept.
texts = st.sampled_from(
    ['{"type":"a"}', '{ "type" : "b" ,"x":[1, 2]}', '{"t":"\\u00e9\\n"}', '{"z":1,"a":2}']
)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(texts, st.integers(0, 3)), min_size=1, max_size=12))
def test_events_of_one_time_are_one_chunk_of_their_received_bytes(
    tmp_path_factory: pytest.TempPathFactory, items: list[tuple[str, int]]
) -> None:
    folder = tmp_path_factory.mktemp("log")
    times = list(itertools.accumulate(t for _, t in items))  # arrival times, not decreasing
    lines = [
        '{"position":0,"event":{"type":"recording/request","call":0,"api":"anthropic.messages",'
        '"method":"POST","url":"http://x/v1/messages","body":{},"stream":true}}',
        '{"position":1,"event":{"type":"recording/response","call":0,"status":200,'
        '"headers":{"content-type":"text/event-stream"}}}',
    ]
    for i, ((text, _), at) in enumerate(zip(items, times, strict=True), start=2):
        event = f'{{"type":"recording/event","call":0,"sse":"e","event":{text}}}'
        lines.append(f'{{"position":{i},"event":{event},"time":{at}}}')
    log = folder / "calls.jsonl"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    [call] = read_calls(log)
    chunks = [chunk for chunk, _ in call.chunks(None)]
    assert len(chunks) == len(set(times))  # one chunk per arrival time
    frames = [f"event: e\ndata: {text}\n\n".encode() for text, _ in items]
    assert b"".join(chunks) == b"".join(frames)  # byte for byte as received
    # Paced, each chunk waits for its own time after the one before.
    delays = [delay for _, delay in call.chunks(1.0)]
    assert sum(delays) == times[-1] - times[0]


def test_a_recorded_stream_plays_back_to_a_plain_client(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    replay.write_log(
        log,
        [
            {
                "type": "recording/request",
                "call": 0,
                "api": "openai.chat",
                "method": "POST",
                "url": "https://api.openai.com/v1/chat/completions",
                "body": {"stream": True},
                "stream": True,
            },
            {
                "type": "recording/response",
                "call": 0,
                "status": 200,
                "headers": {"content-type": "text/event-stream"},
            },
            {"type": "recording/event", "call": 0, "event": {"a": 1}},
            {"type": "recording/event", "call": 0, "text": "two\nlines"},
            {"type": "recording/event", "call": 0, "done": True},
            {"type": "recording/end", "call": 0, "complete": True},
        ],
    )
    client = httpx.Client(transport=replay.recording.playback_transport(log))
    response = client.post("https://api.openai.com/v1/chat/completions", json={"stream": True})
    assert response.content == b'data: {"a":1}\n\ndata: two\ndata: lines\n\ndata: [DONE]\n\n'


def test_pacing_waits_at_most_gap_max(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    times = iter([0.0, 0.0, 1e9, 1e9 + 0.5])
    replay.write_log(
        log,
        [
            {"type": "recording/response", "call": 0, "status": 200,
             "headers": {"content-type": "text/event-stream"}},
            {"type": "recording/event", "call": 0, "event": {"a": 1}},
            {"type": "recording/event", "call": 0, "event": {"a": 2}},
            {"type": "recording/event", "call": 0, "event": {"a": 3}},
        ],
        time=lambda: next(times),
    )  # fmt: skip
    [call] = read_calls(log)
    assert [delay for _, delay in call.chunks(1.0)] == [0.0, GAP_MAX, 0.5]
    assert [delay for _, delay in call.chunks(2.0)] == [0.0, GAP_MAX, 0.25]
