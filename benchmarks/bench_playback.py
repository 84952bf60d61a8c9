"""Playback of a long stream against VCR.py, side by side in one run.

One Anthropic stream of ``--events`` events is recorded from a loopback server (in its
own process, each SSE frame flushed on its own, as the API sends them) twice: by
``replay.record`` into our log and by VCR.py (``vcr.use_cassette``, record mode
``once``) into its YAML cassette. Then, in alternating rounds, the same anthropic
client call is played back from each: ``replay.playback(client, log)`` and VCR.py's
``use_cassette(..., record_mode="none")``, and also ``replay.playback`` of VCR.py's
cassette. The figure is this process's CPU time per event for the whole of it,
reading the recording included (``time.process_time``, the cyclic collector off),
median of the rounds. Target: at most VCR.py's.

With ``--chunked`` the server sends each SSE frame as its own HTTP chunk (as the model
APIs do), so our log holds one arrival per event, and playback hands the SDK a chunk per
event, as received, where VCR.py hands it the whole body at once.

    python benchmarks/bench_playback.py [--events 5000] [--rounds 7] [--chunked]

Needs the ``bench`` extra (vcrpy, pytest-recording) and PyYAML.
"""

from __future__ import annotations

import argparse
import gc
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import vcr  # type: ignore[import-untyped]  # noqa: E402

import replay  # noqa: E402
from benchmarks.bench_recording import client, consume, server, stream_body  # noqa: E402

logging.getLogger("vcr").setLevel(logging.WARNING)


def cpu(way: Callable[[], Any]) -> float:
    """CPU seconds of ``way()`` in this process, the cyclic collector off (a collection
    landing in one side's run and not the other's moved figures by 2x)."""
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        way()
        return time.process_time() - start
    finally:
        gc.enable()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--chunked", action="store_true", help="one HTTP chunk per frame")
    args = parser.parse_args()
    deltas = args.events - 5
    events = args.events
    with tempfile.TemporaryDirectory() as folder:
        log, cassette = Path(folder) / "calls.jsonl", Path(folder) / "cassette.yaml"
        with server(stream_body(deltas), chunked=args.chunked) as base:
            recorded = [e.model_dump() for e in consume(replay.record(client(base), log))]
            with vcr.use_cassette(str(cassette), record_mode="once"):
                consume(client(base))
        # The server is gone: playback must not need it (VCR.py matches the URL, port
        # included, so the base stays the recorded one).

        def ours() -> list[Any]:
            return consume(replay.playback(client(base), log))

        def ours_of_cassette() -> list[Any]:
            return consume(replay.playback(client(base), cassette))

        def theirs() -> list[Any]:
            with vcr.use_cassette(str(cassette), record_mode="none"):
                return consume(client(base))

        ways = {"replay.playback (our log)": ours, "VCR.py (its cassette)": theirs}
        ways["replay.playback (VCR.py's cassette)"] = ours_of_cassette
        for way in ways.values():  # warm: imports, first-call caches; and equal results
            assert [e.model_dump() for e in way()] == recorded
        figures: dict[str, list[float]] = {name: [] for name in ways}
        for i in range(args.rounds):
            order = list(ways.items())
            for name, way in order if i % 2 else reversed(order):
                figures[name].append(cpu(way) / events)
        sizes = {"our log": log.stat().st_size, "VCR.py's cassette": cassette.stat().st_size}
    medians = {name: statistics.median(values) for name, values in figures.items()}
    vcr_figure = medians["VCR.py (its cassette)"]
    print(f"playback of an anthropic stream of {events} events, median of {args.rounds}:")
    for name, value in medians.items():
        share = value / vcr_figure
        print(f"   {name:38} {value * 1e6:7.2f} us CPU per event  ({share:.2f}x VCR.py)")
    ratio = medians["replay.playback (our log)"] / vcr_figure
    print(f"   ours / VCR.py = {ratio:.2f} (target <= 1.00)")
    ours_size, theirs_size = sizes["our log"], sizes["VCR.py's cassette"]
    print(
        f"   recording size: our log {ours_size:,} bytes, VCR.py's cassette "
        f"{theirs_size:,} bytes ({ours_size / theirs_size:.2f}x)"
    )


if __name__ == "__main__":
    main()
