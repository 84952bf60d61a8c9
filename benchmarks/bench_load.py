"""Reading a large log: ``load_events`` against msgspec's own decode of the same lines,
``import replay`` against ``import msgspec``, and ``convo replay``'s peak memory
against the file's size.

    python benchmarks/bench_load.py            # a 100 MB log
    python benchmarks/bench_load.py --mb 20    # quicker

The log is our own JSON Lines format holding a streamed agent conversation (messages
in deltas, tool calls, statuses), as ``convo record`` and the stores write it. Each
figure is the median of ``--repeat`` interleaved rounds, and each ratio is taken
round by round, so a noisy machine moves both sides alike. Targets (issue #37):
``load_events`` at most 1.2x msgspec after imports; ``convo replay`` at most 1.5x the
file's size in peak memory.
"""

from __future__ import annotations

import argparse
import gc
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec


class Envelope(msgspec.Struct, gc=False):
    position: int
    event: dict[str, object]


def write_log(path: Path, megabytes: int, *, raw: bool = False) -> int:
    """A log of about ``megabytes`` MB; returns its number of lines. ``raw``: the
    provider's own events one per line (JSON Lines of an Anthropic stream), not our
    envelopes."""
    encoder = msgspec.json.Encoder()
    target = megabytes * 1_000_000
    size = lines = 0
    with path.open("wb") as out:
        turn = 0
        while size < target:
            mid, tid = f"m{turn}", f"t{turn}"
            events: list[dict[str, object]] = [
                {"type": "message.start", "id": mid, "role": "assistant"},
                *(
                    {"type": "message.delta", "id": mid, "text": f"word {n} of turn {turn}, "}
                    for n in range(40)
                ),
                {"type": "message.end", "id": mid},
                {"type": "tool.call", "id": tid, "name": "bash", "args": {"cmd": "ls -la"}},
                {"type": "tool.result", "id": tid, "result": "total 0\n" * 20},
                {"type": "status.update", "id": "s", "status": "running", "label": mid},
            ]
            if raw:
                events = anthropic_events(turn)
            buffer = bytearray()
            for event in events:
                line = event if raw else {"position": lines, "event": event}
                encoder.encode_into(line, buffer, len(buffer))
                buffer += b"\n"
                lines += 1
            out.write(buffer)
            size += len(buffer)
            turn += 1
    return lines


def anthropic_events(turn: int) -> list[dict[str, object]]:
    """One streamed Anthropic message of 40 text deltas, as its SSE frames' JSON."""
    message = {"id": f"msg_{turn}", "type": "message", "role": "assistant", "content": []}
    return [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        *(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": f"word {n} of turn {turn}, "},
            }
            for n in range(40)
        ),
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}},
        {"type": "message_stop"},
    ]


def timed(function: object) -> float:
    gc.collect()
    start = time.perf_counter()
    function()  # type: ignore[operator]
    return time.perf_counter() - start


def child_seconds(code: str) -> float:
    """CPU seconds (user + system) of a fresh interpreter running ``code``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def peak_memory(command: list[str]) -> int:
    """Peak resident memory (bytes) of ``command``, run in a child of a fresh child so
    that the maximum is that command's alone."""
    code = (
        "import resource, subprocess, sys;"
        f"subprocess.run({command!r}, check=True, stdout=subprocess.DEVNULL);"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return int(out.stdout) * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=100, help="size of the log (MB)")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved rounds")
    args = parser.parse_args()

    from replay import load_events

    with tempfile.TemporaryDirectory() as directory:
        raw = Path(directory) / "raw.jsonl"
        write_log(raw, args.mb, raw=True)
        path = Path(directory) / "large.jsonl"
        lines = write_log(path, args.mb)
        size = path.stat().st_size
        print(f"logs of {size / 1e6:.0f} MB; medians of {args.repeat} rounds")

        # msgspec at its fastest for the same result: our envelope as a Struct and the
        # event as plain objects; a raw provider event as an object.
        envelopes = msgspec.json.Decoder(Envelope)
        objects = msgspec.json.Decoder(dict[str, object])
        peers = {
            "our log": (path, lambda: [e.event for e in envelopes.decode_lines(path.read_bytes())]),
            "raw events": (raw, lambda: objects.decode_lines(raw.read_bytes())),
        }
        for name, (file, peer) in peers.items():
            ours: list[float] = []
            theirs: list[float] = []
            for _ in range(args.repeat):
                theirs.append(timed(peer))
                ours.append(timed(lambda file=file: load_events(file)))  # type: ignore[misc]
            ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
            print(
                f"load_events, {name:10} {statistics.median(ours):6.3f} s   "
                f"msgspec {statistics.median(theirs):6.3f} s   "
                f"ratio {statistics.median(ratios):.2f}x (target <= 1.2x)"
            )
        print(f"({lines:,} lines in our log)")

        imports: list[float] = []
        bare: list[float] = []
        for _ in range(args.repeat):
            bare.append(child_seconds("import msgspec"))
            imports.append(child_seconds("import replay"))
        print(
            f"import replay      {statistics.median(imports):7.3f} s   "
            f"import msgspec       {statistics.median(bare):7.3f} s   (CPU, fresh interpreter)"
        )

        tiny = Path(directory) / "tiny.jsonl"
        tiny.write_bytes(path.read_bytes()[:4096].rpartition(b"\n")[0] + b"\n")
        floor = peak_memory([sys.executable, "-m", "replay", "replay", str(tiny)])
        peak = peak_memory([sys.executable, "-m", "replay", "replay", str(path)])
        print(
            f"convo replay peak  {peak / 1e6:7.0f} MB   file {size / 1e6:7.0f} MB   "
            f"ratio {peak / size:.2f}x (target <= 1.5x); "
            f"the interpreter and imports alone: {floor / 1e6:.0f} MB"
        )


if __name__ == "__main__":
    main()
