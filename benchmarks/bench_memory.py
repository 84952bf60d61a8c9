"""Peak memory of ``convo replay``, ``store import`` and ``store export`` on a big log.

Generates, in a temporary directory, a JSON Lines log of one message streamed as
token deltas (200 MB and about 2.83 million deltas by default), then runs each
command as a child process and reads the child's peak resident set size from the
kernel (``wait4``'s ``ru_maxrss``, what ``/usr/bin/time -v`` prints as "Maximum
resident set size"). The reference is the log's own size, in the same run: the
target is a peak of at most 1.5 times the file for every command (the whole log
is never held in memory, decoded or not).

    python benchmarks/bench_memory.py [--mb 200] [--source DIR]

``--source`` runs the commands from another checkout (its ``replay`` first on
``PYTHONPATH``), to measure before and after a change in one sitting. Linux only.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 1.5
WORDS = ["the ", "quick ", "brown ", "fox ", "jumps ", "over ", "a ", "lazy ", "dog. "]


def write_log(path: Path, size: int, seed: int = 0) -> int:
    """A log of one assistant message: a start, deltas up to ``size`` bytes, an end.
    Returns the number of events."""
    rng = random.Random(seed)
    head = b'{"type":"message.start","id":"m","role":"assistant"}\n'
    tail = b'{"type":"message.end","id":"m"}\n'
    count = 2
    written = len(head) + len(tail)
    with path.open("wb") as f:
        f.write(head)
        block: list[bytes] = []
        while written < size:
            text = "".join(rng.choice(WORDS) for _ in range(rng.randint(3, 7)))
            line = b'{"type":"message.delta","id":"m","text":"%s"}\n' % text.encode()
            block.append(line)
            written += len(line)
            count += 1
            if len(block) == 65536:
                f.write(b"".join(block))
                block.clear()
        f.write(b"".join(block))
        f.write(tail)
    return count


def peak_rss(argv: list[str], env: dict[str, str]) -> tuple[int, float]:
    """The child's peak RSS in bytes (``ru_maxrss``) and its wall time; the child must
    exit 0."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.perf_counter() - started
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {child.returncode}")
    return usage.ru_maxrss * 1024, elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=200.0, help="log size in MB (default 200)")
    parser.add_argument("--source", metavar="DIR", help="run the commands from this checkout")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.source:
        env["PYTHONPATH"] = os.pathsep.join(
            [str(Path(args.source).resolve()), env.get("PYTHONPATH", "")]
        ).rstrip(os.pathsep)
    convo = [sys.executable, "-m", "replay"]
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as folder:
        log = Path(folder) / "big.jsonl"
        store = Path(folder) / "events.sqlite"
        count = write_log(log, int(args.mb * 1e6))
        size = log.stat().st_size
        print(f"log: {size / 1e6:.1f} MB, {count:,} events ({args.source or 'this checkout'})")
        baseline, _ = peak_rss([sys.executable, "-c", "import replay"], env)
        print(f"  {'python -c import replay':<24} peak {baseline / 1e6:8.1f} MB (floor)")
        steps = [
            ("replay", [*convo, "replay", str(log), "-o", str(Path(folder) / "view.txt")]),
            ("store import", [*convo, "store", "import", str(store), str(log), "-c", "big"]),
            (
                "store export",
                [*convo, "store", "export", str(store), "big", "-o", str(Path(folder) / "out")],
            ),
        ]
        worst = 0.0
        for label, argv in steps:
            peak, seconds = peak_rss(argv, env)
            ratio = peak / size
            worst = max(worst, ratio)
            print(
                f"  {label:<24} peak {peak / 1e6:8.1f} MB  {ratio:5.2f}x the file"
                f"  ({seconds:.1f} s)"
            )
    verdict = "within" if worst <= TARGET else "OVER"
    print(f"worst ratio {worst:.2f}x: {verdict} the {TARGET}x target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
