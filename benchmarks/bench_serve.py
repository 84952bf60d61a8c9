"""Load check for ``convo serve``: 100 conversations streaming at once over loopback.

A server process (``python -m replay.serve._command``) serves a fresh store; this process
opens one SSE stream per conversation and, from a writer thread, appends token
deltas to every conversation in rounds, as 100 agents would. It stops by itself when
every stream has delivered the last position (or after a guard of 120 s), then
prints updates delivered per second and the server's CPU time per event.

    python benchmarks/bench_serve.py [--conversations 100] [--rounds 40] [--deltas 10]

Needs the ``serve`` and ``serve-test`` extras (uvicorn, httpx). Linux only (server CPU
time is read from /proc). The reference, measured in the same run, is the CPU time of
folding the same events in this process with no server: the ratio is what serving
(SQLite, rendering, SSE) costs on top of the fold.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from definitions import builtin
from replay import EventStore, replay

ROOT = Path(__file__).parents[1]
GUARD = 120.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def follow(
    client: httpx.AsyncClient, url: str, final: int, counts: list[int], index: int
) -> None:
    async with client.stream("GET", url) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                counts[index] += 1
                if json.loads(line[5:])["position"] >= final:
                    return


def write(path: str, conversations: list[str], rounds: int, deltas: int, pause: float) -> None:
    with EventStore(path) as store:
        for round_ in range(rounds):
            for conversation in conversations:
                store.append(
                    conversation,
                    [
                        {"type": "message.delta", "id": "m", "text": f"tok{round_}.{i} "}
                        for i in range(deltas)
                    ],
                )
            time.sleep(pause)
        for conversation in conversations:
            store.append(conversation, [{"type": "message.end", "id": "m"}])


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as directory:
        path = os.path.join(directory, "events.sqlite")
        conversations = [f"c{i:03d}" for i in range(args.conversations)]
        with EventStore(path) as store:
            for conversation in conversations:
                store.append(conversation, [{"type": "message.start", "id": "m", "role": "ai"}])
        server = subprocess.Popen(
            [sys.executable, "-m", "replay.serve._command", "--store", path, "--port", "0"],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        try:
            assert server.stdout is not None
            base = server.stdout.readline().split(": ", 1)[1].strip().rstrip("/")
            final = 1 + args.rounds * args.deltas + 1
            counts = [0] * len(conversations)
            limits = httpx.Limits(max_connections=len(conversations) + 10)
            timeout = httpx.Timeout(GUARD)
            async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:
                followers = [
                    asyncio.create_task(
                        follow(client, f"{base}/conversations/{c}/stream?after=1", final, counts, i)
                    )
                    for i, c in enumerate(conversations)
                ]
                await asyncio.sleep(0.5)  # let every stream open before the clock starts
                cpu_before = cpu_seconds(server.pid)
                started = time.perf_counter()
                try:
                    await asyncio.wait_for(
                        asyncio.gather(
                            asyncio.to_thread(
                                write, path, conversations, args.rounds, args.deltas, args.pause
                            ),
                            *followers,
                        ),
                        GUARD,
                    )
                except TimeoutError:
                    print("stalled; updates per stream:", counts, file=sys.stderr)
                    raise
                elapsed = time.perf_counter() - started
                cpu = cpu_seconds(server.pid) - cpu_before
        finally:
            server.terminate()
            server.wait(timeout=30)
    events = len(conversations) * (final - 1)
    updates = sum(counts)
    print(f"conversations          {len(conversations)}")
    print(f"events appended        {events}  ({args.rounds} rounds x {args.deltas} deltas + end)")
    print(f"wall time              {elapsed:.2f} s")
    print(f"events/s (in)          {events / elapsed:,.0f}")
    print(f"updates delivered      {updates}  ({updates / len(conversations):.1f} per stream)")
    print(f"updates/s (out)        {updates / elapsed:,.0f}")
    print(f"events per update      {events / updates:.1f}  (coalescing by frame and poll)")
    print(f"server CPU             {cpu:.2f} s  ({100 * cpu / elapsed:.0f}% of one core)")
    print(f"server CPU per event   {1e6 * cpu / events:.1f} us")
    print(f"server CPU per update  {1e6 * cpu / updates:.1f} us")
    reference = fold_cpu_per_event(args.rounds, args.deltas)
    print(f"reference: the same events folded in process, no server: {1e6 * reference:.2f} us")
    print(f"server CPU per event / in-process fold: {cpu / events / reference:.1f}x")


def fold_cpu_per_event(rounds: int, deltas: int) -> float:
    """CPU seconds per event to fold one conversation's events in this process."""
    events: list[dict[str, str]] = [{"type": "message.start", "id": "m", "role": "ai"}]
    events += [
        {"type": "message.delta", "id": "m", "text": f"tok{round_}.{i} "}
        for round_ in range(rounds)
        for i in range(deltas)
    ]
    events.append({"type": "message.end", "id": "m"})
    best = float("inf")
    for _ in range(5):
        started = time.process_time()
        for _ in range(20):
            replay(events, builtin.DEFINITIONS)
        best = min(best, (time.process_time() - started) / (20 * len(events)))
    return best


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--deltas", type=int, default=10)
    parser.add_argument("--pause", type=float, default=0.02, help="seconds between rounds")
    asyncio.run(main(parser.parse_args()))
