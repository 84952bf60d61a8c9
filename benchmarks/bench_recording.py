"""Recording and playback of the official SDK clients (``replay.record``/``playback``).

1. Recording cost per streamed event: the anthropic client streams a long response
   (``--events`` events) from a loopback server in its own process: the SDK alone,
   the SDK with ``replay.record``, and the SDK inside VCR.py's ``use_cassette`` (record
   mode ``all``, the cassette written at its end), in interleaved rounds; the figure is
   the client process's CPU time per event (``time.process_time``: the server's work is
   not in it), median of the rounds; a ratio is the median of the rounds' own ratios.
   Two arrivals: one SSE frame per HTTP chunk (``transfer-encoding: chunked``, as the
   model APIs send a stream: the client gets one piece per frame however fast they
   come), and large reads (a ``content-length`` body read 64 KB at a time). Target: the
   recorder adds at most 5% of what the SDK itself spends per event. VCR.py costs less
   than the SDK alone at one frame per chunk only by holding the whole stream back: it
   reads the body to its end and hands it over as one piece (its first event arrives
   when the stream ends).
2. Recording size: one call recorded by each into a fresh file, the bytes, and gzip's
   (level 6) of both.
3. Playback speed: a 1,000-event stream recorded from the loopback server paced at
   ``--pace`` seconds per event (a model producing tokens, far faster than any does),
   then played back unpaced into the same SDK call. Target: playback at least 10x
   faster than the stream took to record, with equal results.

Beside figure 1, the recorder's own work on the same body in this process with no SDK
(``recorder alone``), for each arrival: what it costs when it does not share the caches
with the SDK's objects.

    python benchmarks/bench_recording.py [--events 5000] [--rounds 7] [--pace 0.002] [--helper]

Needs the ``bench`` extra (vcrpy) for VCR.py's side.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import logging
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
import vcr  # type: ignore[import-untyped]  # noqa: E402

import replay  # noqa: E402

logging.getLogger("vcr").setLevel(logging.WARNING)

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
def server(body: bytes, pace: float = 0.0, *, chunked: bool = False) -> Iterator[str]:
    """A loopback server in its own process answering ``body`` (with ``chunked``, each SSE
    frame its own HTTP chunk); yields its URL."""
    with tempfile.NamedTemporaryFile(suffix=".sse", delete=False) as f:
        f.write(body)
    framing = "chunked" if chunked else "length"
    process = subprocess.Popen(
        [
            sys.executable,
            *("-m", "tests.recording._server", f.name, "text/event-stream", str(pace), framing),
        ],
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


ARRIVALS = (
    ("one SSE frame per HTTP chunk (as the APIs send a stream)", True),
    ("large reads (64 KB, a content-length body)", False),
)


def recording_cost(deltas: int, rounds: int, helper: bool) -> None:
    events = deltas + 5
    print(f"1. recording cost, anthropic stream of {events} events, median of {rounds}:")
    ways = [("raw stream", consume)] + ([("stream helper", consume_helper)] if helper else [])
    for arrival, chunked in ARRIVALS:
        print(f"   {arrival}:")
        for label, way in ways:
            figures = compare(deltas, rounds, way, chunked=chunked)
            sdk, ours, theirs = (statistics.median(figures[k]) for k in ("sdk", "ours", "vcr"))
            print(f"     {label}:")
            print(f"       SDK alone          {sdk * 1e6:8.2f} us CPU per event")
            print(
                f"       SDK + recorder     {ours * 1e6:8.2f} us CPU per event = "
                f"{paired(figures, 'ours', 'sdk'):.3f}x the SDK alone (target <= 1.05)"
            )
            print(
                f"       SDK + VCR.py       {theirs * 1e6:8.2f} us CPU per event = "
                f"{paired(figures, 'vcr', 'sdk'):.3f}x the SDK alone; ours / VCR.py "
                f"{paired(figures, 'ours', 'vcr'):.3f} (it holds the whole stream back)"
            )
        alone = recorder_alone(stream_body(deltas), events, per_frame=chunked)
        print(
            f"     recorder alone       {alone * 1e6:6.2f} us per event in this process, no SDK "
            "(its own work; in the SDK's process it shares the caches with the SDK's objects)"
        )


def paired(figures: dict[str, list[float]], side: str, reference: str) -> float:
    """The median of the rounds' ratios ``side / reference``: each round's sides ran one
    after the other, so a shared machine's load drifting between rounds cancels out."""
    return statistics.median(a / b for a, b in zip(figures[side], figures[reference], strict=True))


def compare(deltas: int, rounds: int, way: Any, *, chunked: bool) -> dict[str, list[float]]:
    """CPU per event of each round: the SDK alone (``sdk``), with our recorder (``ours``),
    inside VCR.py (``vcr``)."""
    events = deltas + 5
    with (
        server(stream_body(deltas), chunked=chunked) as base,
        tempfile.TemporaryDirectory() as folder,
    ):
        figures: dict[str, list[float]] = {"sdk": [], "ours": [], "vcr": []}

        def vcr_way(c: anthropic.Anthropic, cassette: Path) -> Any:
            def run(_: anthropic.Anthropic) -> Any:
                with vcr.use_cassette(str(cassette), record_mode="all"):
                    return way(c)

            return run

        for i in range(rounds):
            # Fresh clients alike, each warmed up (imports, connection) before it is
            # timed; the order turns each round so no side always runs first.
            plain = client(base)
            recording = replay.record(client(base), Path(folder) / f"r{i}.jsonl")
            cassetted = client(base)
            way(plain)
            way(recording)
            vcr_way(cassetted, Path(folder) / f"warm{i}.yaml")(cassetted)
            sides = [
                ("sdk", plain, way),
                ("ours", recording, way),
                ("vcr", cassetted, vcr_way(cassetted, Path(folder) / f"c{i}.yaml")),
            ]
            turn = i % len(sides)
            for name, measured, how in sides[turn:] + sides[:turn]:
                figures[name].append(cpu_per_event(measured, events, how))
    return figures


def recording_size(deltas: int) -> None:
    """One call recorded by each into a fresh file: the bytes, and gzip's of both."""
    with (
        server(stream_body(deltas), chunked=True) as base,
        tempfile.TemporaryDirectory() as folder,
    ):
        log, cassette = Path(folder) / "call.jsonl", Path(folder) / "call.yaml"
        consume(replay.record(client(base), log))
        with vcr.use_cassette(str(cassette), record_mode="all"):
            consume(client(base))
        ours, theirs = log.read_bytes(), cassette.read_bytes()
    packed = [len(gzip.compress(data, 6)) for data in (ours, theirs)]
    print(f"2. recording size, the same anthropic stream of {deltas + 5} events:")
    print(
        f"   our log            {len(ours):>10,} bytes, gzip'd {packed[0]:>9,} "
        f"({len(ours) / (deltas + 5):.0f} bytes per event)"
    )
    print(
        f"   VCR.py's cassette  {len(theirs):>10,} bytes, gzip'd {packed[1]:>9,} "
        f"({len(theirs) / (deltas + 5):.0f} bytes per event)"
    )
    print(
        f"   ours / VCR.py      {len(ours) / len(theirs):10.2f}x, "
        f"gzip'd {packed[0] / packed[1]:.2f}x"
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
    print(f"3. playback of a {events}-event stream recorded at {pace * 1000:.1f} ms per event:")
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
    parser.add_argument("--helper", action="store_true", help="also the SDK's stream helper")
    args = parser.parse_args()
    recording_cost(args.events - 5, args.rounds, args.helper)
    recording_size(args.events - 5)
    playback_speed(args.pace)


if __name__ == "__main__":
    main()
