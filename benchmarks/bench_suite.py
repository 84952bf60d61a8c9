"""A test suite of recorded streamed calls, played back: ours against pytest-recording.

Two generated suites of ``--tests`` tests each, in a temporary folder, every test one
streamed Anthropic call (``--events`` events) through the official client:

- ours: the ``convo_recorder`` fixture (``convo_recorder.wrap(client)``), its
  recordings in ``recordings/<module>/<test>.jsonl``;
- pytest-recording: ``@pytest.mark.vcr``, VCR.py's cassettes in
  ``cassettes/<module>/<test>.yaml``.

Both are recorded once from a loopback server (in its own process; each SSE frame its
own HTTP chunk, as the model APIs send a stream), then the server is stopped and each
suite is run by ``pytest`` in playback (both plugins' default mode), in interleaved
rounds. The figure is the CPU time (user + system) of the whole ``pytest`` process,
interpreter start and imports included, median of the rounds (the ratio: the median of
the rounds' own ratios, each round's two runs one after the other); beside them, one run of
the same calls with no recording at all, to the loopback server. Target: ours at most
pytest-recording's.

    python benchmarks/bench_suite.py [--tests 200] [--events 200] [--rounds 5]

Needs the ``bench`` extra (vcrpy, pytest-recording).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_recording import server, stream_body  # noqa: E402

HEAD = """\
import os

import anthropic
import pytest

BASE = os.environ["BENCH_BASE"]
ARGS = {"model": "m", "max_tokens": 8}


def call(client, n):
    messages = [{"role": "user", "content": f"question {n}"}]
    events = list(client.messages.create(**ARGS, messages=messages, stream=True))
    assert len(events) == EVENTS
"""

OURS = """
def test_call_{n}(convo_recorder):
    call(convo_recorder.wrap(anthropic.Anthropic(api_key="k", base_url=BASE, max_retries=0)), {n})
"""

THEIRS = """
@pytest.mark.vcr
def test_call_{n}():
    call(anthropic.Anthropic(api_key="k", base_url=BASE, max_retries=0), {n})
"""

BARE = """
def test_call_{n}():
    call(anthropic.Anthropic(api_key="k", base_url=BASE, max_retries=0), {n})
"""


def write_suite(folder: Path, test: str, tests: int, events: int) -> Path:
    folder.mkdir()
    (folder / "pytest.ini").write_text("[pytest]\n")  # its own root: no outer config
    body = HEAD.replace("EVENTS", str(events)) + "".join(test.format(n=n) for n in range(tests))
    (folder / "test_calls.py").write_text(body)
    return folder


def pytest_cpu(folder: Path, base: str, *options: str) -> float:
    """CPU seconds (user + system) of one ``pytest`` run of ``folder``; fails loudly
    unless every test passed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**os.environ, "BENCH_BASE": base, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"pytest failed in {folder}:\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def size(folder: Path, pattern: str) -> int:
    return sum(path.stat().st_size for path in folder.rglob(pattern))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=200)
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        top = Path(temp)
        ours = write_suite(top / "ours", OURS, args.tests, args.events)
        theirs = write_suite(top / "theirs", THEIRS, args.tests, args.events)
        bare = write_suite(top / "bare", BARE, args.tests, args.events)
        with server(stream_body(args.events - 5), chunked=True) as base:
            pytest_cpu(ours, base, "--convo-record-mode=once")
            pytest_cpu(theirs, base, "--record-mode=once")
            floor = pytest_cpu(bare, base)
        # The server is gone: playback must not need it (the base stays the recorded one,
        # which VCR.py matches, port included).
        figures: dict[str, list[float]] = {"ours": [], "theirs": []}
        sides = [("ours", ours), ("theirs", theirs)]
        for i in range(args.rounds):
            for name, folder in sides if i % 2 else reversed(sides):
                figures[name].append(pytest_cpu(folder, base))
        recorded = size(ours, "*.jsonl"), size(theirs, "*.yaml")
    mine, peer = statistics.median(figures["ours"]), statistics.median(figures["theirs"])
    print(
        f"a suite of {args.tests} tests, each one streamed anthropic call of {args.events} "
        f"events, played back; pytest's CPU (user + system), median of {args.rounds}:"
    )
    print(f"   convo_recorder (ours)        {mine:7.2f} s   {sorted(figures['ours'])}")
    print(f"   pytest-recording (VCR.py)    {peer:7.2f} s   {sorted(figures['theirs'])}")
    pairs = sorted(a / b for a, b in zip(figures["ours"], figures["theirs"], strict=True))
    print(
        f"   ours / pytest-recording = {statistics.median(pairs):.3f}, the median of the "
        f"rounds' own ratios {[round(r, 3) for r in pairs]} (target <= 1.00)"
    )
    print(
        f"   beside them, the same suite's calls unrecorded, to the loopback server (one "
        f"run): {floor:.2f} s"
    )
    print(
        f"   recordings: ours {recorded[0]:,} bytes, VCR.py's cassettes {recorded[1]:,} bytes "
        f"({recorded[0] / recorded[1]:.2f}x)"
    )


if __name__ == "__main__":
    main()
