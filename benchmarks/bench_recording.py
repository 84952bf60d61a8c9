"""Recording and playback of the official SDK clients (``replay.record``/``playback``).

1. Recording cost per streamed event: the anthropic client streams a long response
   (``--events`` text deltas) from a loopback server in its own process, with and
   without the recorder, alternately; the figure is the client process's CPU time per
   event (``time.process_time``: the server's work is not in it). Target: the recorder
   adds at most 5% of what the SDK itself spends per event.
2. Playback speed: a 1,000-event stream recorded from the loopback server paced at
   ``--pace`` seconds per event (a model producing tokens, far faster than any does),
   then played back unpaced into the same SDK call. Target: playback at least 10x
   faster than the stream took to record, with equal results.

Beside figure 1, the recorder's own work on the same body in this process with no SDK
(``recorder alone``): what it costs when it does not share the caches with the SDK's
objects.

    python benchmarks/bench_recording.py [--events 5000] [--rounds 7] [--pace 0.002]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import anthropic  # noqa: E402

import replay  # noqa: E402

ARGS = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}


def stream_body(deltas: int) -> bytes:
    """An Anthropic SSE body with ``deltas`` text deltas, framed as the API frames it."""
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_bench",
                "type": "message",
                "role": "assistant",
                "model": "m",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 1},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        *(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": f" token{i}"},
            }
            for i in range(deltas)
        ),
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": deltas},
        },
        {"type": "message_stop"},
    ]
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


@contextmanager
def server(body: bytes, pace: float = 0.0) -> Iterator[str]:
    """A loopback server in its own process answering ``body``; yields its URL."""
    with tempfile.NamedTemporaryFile(suffix=".sse", delete=False) as f:
        f.write(body)
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.recording._server", f.name, "text/event-stream", str(pace)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        yield f"http://127.0.0.1:{port}"
    finally:
        process.kill()
        process.wait()
        Path(f.name).unlink()


def client(base: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="k",
        base_url=base,
        max_retries=0,
        http_client=anthropic.DefaultHttpxClient(trust_env=False),
    )


def consume(c: anthropic.Anthropic) -> list[Any]:
    """The raw stream: the least the SDK does per event (parse, build the typed event)."""
    return list(c.messages.create(**ARGS, stream=True))


def consume_helper(c: anthropic.Anthropic) -> list[Any]:
    """The stream helper most applications use: it also accumulates the message."""
    with c.messages.stream(**ARGS) as stream:
        return list(stream)


def cpu_per_event(c: anthropic.Anthropic, events: int, way: Any) -> float:
    # With the cyclic collector off: a full collection landing in one run and not in the
    # other made the two sides' figures jump by 2x either way.
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        way(c)
        return (time.process_time() - start) / events
    finally:
        gc.enable()


def recorder_alone(body: bytes, events: int, *, per_frame: bool = False) -> float:
    """CPU seconds per event of the recorder's own work on ``body`` in this process, with
    no SDK and no network: a call's chunks (64 KB, as the loopback stream arrives, or
    with ``per_frame`` one SSE frame each, as the APIs send them) fed to ``Call.chunk``
    and written to a log. Best of 7; with the collector off, as above."""
    from replay.recording._recorder import Recorder, open_sink

    if per_frame:
        chunks = [frame + b"\n\n" for frame in body.split(b"\n\n") if frame.strip()]
    else:
        chunks = [body[i : i + 65536] for i in range(0, len(body), 65536)]
    best = float("inf")
    with tempfile.TemporaryDirectory() as folder:
        for i in range(7):
            recorder = Recorder(open_sink(Path(folder) / f"alone{i}.jsonl", None))
            content = json.dumps({**ARGS, "stream": True}).encode()
            call = recorder.begin(
                "anthropic", "POST", "http://x/v1/messages", [], content, "/v1/messages"
            )
            call.response(200, [("content-type", "text/event-stream")])
            gc.collect()
            gc.disable()
            try:
                start = time.process_time()
                for chunk in chunks:
                    call.chunk(chunk)
                call.finish()
                best = min(best, (time.process_time() - start) / events)
            finally:
                gc.enable()
                recorder.close()
    return best


def recording_cost(deltas: int, rounds: int) -> None:
    events = deltas + 5
    print(f"1. recording cost, anthropic stream of {events} events, median of {rounds}:")
    for label, way in (("raw stream", consume), ("stream helper", consume_helper)):
        with server(stream_body(deltas)) as base, tempfile.TemporaryDirectory() as folder:
            plain, recorded = [], []
            for i in range(rounds):
                # Fresh clients alike, each warmed up (imports, connection) before it is
                # timed; the order alternates so neither side always runs first.
                plain_client = client(base)
                recording_client = replay.record(client(base), Path(folder) / f"r{i}.jsonl")
                way(plain_client)
                way(recording_client)
                pair = [(plain, plain_client), (recorded, recording_client)]
                for figures, measured in pair if i % 2 else reversed(pair):
                    figures.append(cpu_per_event(measured, events, way))
        without, with_recorder = statistics.median(plain), statistics.median(recorded)
        ratio = with_recorder / without
        print(f"   {label}:")
        print(f"     SDK alone          {without * 1e6:8.2f} us CPU per event")
        print(f"     SDK + recorder     {with_recorder * 1e6:8.2f} us CPU per event")
        print(
            f"     recorder adds      {(with_recorder - without) * 1e6:8.2f} us per event = "
            f"{(ratio - 1) * 100:.1f}% of the SDK's own (ratio {ratio:.3f}; target <= 1.05)"
        )
        if way is consume:
            alone = recorder_alone(stream_body(deltas), events)
            print(
                f"     recorder alone     {alone * 1e6:8.2f} us per event in this process, no "
                f"SDK = {alone / without * 100:.1f}% of the SDK's own (its work; in the SDK's "
                "process it shares the caches with the SDK's objects)"
            )
            framed = recorder_alone(stream_body(deltas), events, per_frame=True)
            print(
                f"     ... one frame per chunk {framed * 1e6:5.2f} us per event = "
                f"{framed / without * 100:.1f}% (as the APIs send a stream: a chunk per event)"
            )


def playback_speed(pace: float) -> None:
    deltas = 995
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "paced.jsonl"
        with server(stream_body(deltas), pace) as base:
            recorded = [e.model_dump() for e in consume(replay.record(client(base), log))]
        entries = replay.read_log(log).entries
        took = entries[-1].time - entries[0].time  # type: ignore[operator]
        played_client = replay.playback(client(base), log)
        start = time.perf_counter()
        played = [e.model_dump() for e in consume(played_client)]
        playback = time.perf_counter() - start
    events = sum(e.event["type"] == "recording/event" for e in entries)
    print(f"2. playback of a {events}-event stream recorded at {pace * 1000:.1f} ms per event:")
    print(f"   recording took     {took:8.3f} s (request to end, as the log's times say)")
    print(f"   playback took      {playback:8.3f} s unpaced")
    print(
        f"   playback is {took / playback:.1f}x faster (target >= 10x); results equal: "
        f"{played == recorded}"
    )
    if played != recorded:
        raise SystemExit("playback gave other results than the recorded stream")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--pace", type=float, default=0.002)
    args = parser.parse_args()
    recording_cost(args.events, args.rounds)
    playback_speed(args.pace)


if __name__ == "__main__":
    main()
