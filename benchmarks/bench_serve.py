"""Load check for ``convo serve --store``: many conversations streaming at once, against
the floor of its stack measured in the same run.

For each size (100, 300 and 1,000 conversations by default) and each target, a fresh
SQLite store and a fresh server process: ``convo serve`` (``python -m
replay.serve._command``) and the relay (``benchmarks/_relay.py``: the same Starlette,
sse-starlette and uvicorn, the same ``SQLiteStore`` read through its public API, the
same ``data_version`` poll every 50 ms, sending each follower the new text
HTML-escaped, with no fold and no render). This process opens one SSE stream per
conversation over loopback (raw sockets, so the client costs little); a writer
process appends one token delta to every conversation per round, ``--rate`` rounds a
second, as many agents streaming at once would, and notes when each append returned.

Printed per size and target: server CPU per event (the CPU time of the server
process's threads while the events flow, over the events appended), the latency
from an append's return to the follower's receipt of a message that includes it
(p50, p99), and the ratios of ``convo serve`` to the relay: CPU per event and
latency at each size, and each target's CPU per event at the largest size over the
smallest (flatness). Then a floor for ``convo serve``: the relay's CPU per event
plus the work an update needs that the relay skips (fold, notify, render the patch,
encode the message), measured in this process with no server; a lower bound, since
this process's heap is small and its caches warm. Then the capacity: conversations
one core serves at 20 tokens per second each, ``1 / (CPU per event x 20)`` at the
largest size. Runs alternate relay, serve, relay, ... so both see the same machine
load; ``--repeat`` keeps the median of each figure, and of each ratio over the
pairs of runs.

    python benchmarks/bench_serve.py [--sizes 100,300,1000] [--rounds 20] [--rate 4]
        [--repeat 1] [--chart docs/charts/serving.svg]

``--chart`` writes the figures as an SVG (matplotlib, the ``bench`` extra; a fixed
hash salt and no date, so a rerun changes the file only where a figure moved). Needs
the ``serve`` extra. Linux only (CPU time is read from /proc). Talks only to
127.0.0.1 and stops by itself: every run has a guard of 120 s.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[1]
GUARD = 120.0  # seconds a run may take before it is called stalled
TOKENS_PER_SECOND = 20  # the capacity question: conversations streaming this fast each

TARGETS = {
    "relay": [sys.executable, str(ROOT / "benchmarks" / "_relay.py")],
    "serve": [sys.executable, "-m", "replay.serve._command"],
}
_ID = re.compile(rb"id: (\d+)\n")


def cpu_seconds(pid: int) -> float:
    """CPU time of process ``pid``'s threads (Linux /proc: schedstat counts nanoseconds,
    where stat's ticks of 10 ms would be too coarse for a short run)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that just ended
            total += int((task / "schedstat").read_text().split()[0])
    return total / 1e9


# -- the writer (a process of its own, so it never shares this process's GIL) --------


def write(path: str, count: int, rounds: int, rate: float, out: str) -> None:
    """Append one delta to each of ``count`` conversations per round, ``rate`` rounds a
    second (or as fast as the store allows), then a ``message.end`` each; write to
    ``out`` when each append returned (``time.monotonic``, shared by processes)."""
    from replay import SQLiteStore

    conversations = [f"c{i:04d}" for i in range(count)]
    returned: list[list[float]] = []
    with SQLiteStore(path) as store:
        started = time.monotonic()
        for round_ in range(rounds + 1):
            delay = started + round_ / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            event: dict[str, Any] = (
                {"type": "message.delta", "id": "m", "text": f"tok{round_} "}
                if round_ < rounds
                else {"type": "message.end", "id": "m"}
            )
            times = []
            for conversation in conversations:
                store.append(conversation, [event])
                times.append(time.monotonic())
            returned.append(times)
    Path(out).write_text(json.dumps(returned))


# -- the followers ------------------------------------------------------------------


async def open_stream(port: int, path: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A GET of ``path`` whose first message has been read (the stream is open)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "Accept: text/event-stream\r\n\r\n".encode()
    )
    head = await reader.readuntil(b"\r\n\r\n")
    if b" 200 " not in head.split(b"\r\n", 1)[0]:
        raise RuntimeError(f"{path}: {head.decode(errors='replace')}")
    await reader.readuntil(b"\n\n")  # the first message (retry:)
    # The writer too: a collected writer closes the connection.
    return reader, writer


async def follow(
    reader: asyncio.StreamReader, final: int, receipts: list[tuple[int, float]]
) -> None:
    """Note (message id, time) of each read that completes messages, until id ``final``."""
    tail = b""
    while True:
        chunk = await reader.read(1 << 16)
        if not chunk:
            raise ConnectionError("the server closed a stream early")
        now = time.monotonic()
        data = tail + chunk
        cut = data.rfind(b"\n\n")
        if cut < 0:
            tail = data
            continue
        tail = data[cut + 2 :]
        ids = _ID.findall(data, 0, cut + 1)
        if ids:
            last = int(ids[-1])
            receipts.append((last, now))
            if last >= final:
                return


def latencies(returned: list[list[float]], receipts: list[list[tuple[int, float]]]) -> list[float]:
    """Per event: from its append's return to the first message whose id includes it.
    Round ``r`` brings conversation ``i`` to length ``r + 2`` (after the opening event)."""
    found: list[float] = []
    for i, got in enumerate(receipts):
        ids = [position for position, _ in got]
        for round_, times in enumerate(returned):
            at = bisect.bisect_left(ids, round_ + 2)
            found.append(got[at][1] - times[i])
    return found


# -- one run ------------------------------------------------------------------------


async def run(target: str, count: int, rounds: int, rate: float) -> dict[str, float]:
    """One fresh store and server: its CPU per event and latencies for ``count`` streams."""
    from replay import SQLiteStore

    with tempfile.TemporaryDirectory(prefix="bench-serve-") as directory:
        path = os.path.join(directory, "events.sqlite")
        conversations = [f"c{i:04d}" for i in range(count)]
        with SQLiteStore(path) as store:
            for conversation in conversations:
                store.append(conversation, [{"type": "message.start", "id": "m", "role": "ai"}])
        server = subprocess.Popen(
            [*TARGETS[target], "--store", path, "--port", "0"],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        writer: subprocess.Popen[bytes] | None = None
        readers: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        try:
            assert server.stdout is not None
            port = int(server.stdout.readline().rsplit(":", 1)[1].split("/")[0])
            final = rounds + 2
            for start in range(0, count, 100):  # in batches: the listen backlog is finite
                readers += await asyncio.gather(
                    *(
                        open_stream(port, f"/conversations/{c}/stream?after=1")
                        for c in conversations[start : start + 100]
                    )
                )
            receipts: list[list[tuple[int, float]]] = [[] for _ in conversations]
            await asyncio.sleep(0.5)  # loading settles before the clock starts
            out = os.path.join(directory, "returned.json")
            cpu_before = cpu_seconds(server.pid)
            started = time.monotonic()
            writer = subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    "--write",
                    path,
                    str(count),
                    str(rounds),
                    str(rate),
                    out,
                ],
                cwd=ROOT,
            )
            followers = [
                follow(reader, final, got)
                for (reader, _), got in zip(readers, receipts, strict=True)
            ]
            try:
                await asyncio.wait_for(asyncio.gather(*followers), GUARD)
            except TimeoutError:
                behind = sum(1 for got in receipts if not got or got[-1][0] < final)
                message = f"{target}, {count} conversations: {behind} streams stalled"
                raise SystemExit(message) from None
            cpu = cpu_seconds(server.pid) - cpu_before
            elapsed = time.monotonic() - started
            if writer.wait(timeout=GUARD) != 0:
                raise SystemExit("the writer failed")
            returned = json.loads(Path(out).read_text())
        finally:
            for _, connection in readers:
                connection.close()
            if writer is not None and writer.poll() is None:
                writer.kill()
            server.terminate()
            server.wait(timeout=30)
    found = sorted(latencies(returned, receipts))
    events = count * (rounds + 1)
    return {
        "cpu_per_event": cpu / events,
        "p50": found[len(found) // 2],
        "p99": found[min(len(found) - 1, int(len(found) * 0.99))],
        "messages_per_stream": sum(len(got) for got in receipts) / count,
        "core_share": cpu / elapsed,
    }


# -- report -------------------------------------------------------------------------


def update_work(rounds: int, count: int = 200) -> float:
    """CPU seconds per event of what only ``convo serve`` does with an update, measured in
    this process with no server: fold the event, notify, render the patch and encode the
    message, once per conversation as the server does, for ``count`` conversations fed
    one delta a round as the writer feeds them. Best of 3."""
    from engine import ManualScheduler, Registration
    from replay.protocols._detect import detect_protocol, protocol_definitions
    from replay.serve._app import _Folded

    events: list[dict[str, Any]] = [{"type": "message.start", "id": "m", "role": "ai"}]
    events += [{"type": "message.delta", "id": "m", "text": f"tok{r} "} for r in range(rounds)]
    events.append({"type": "message.end", "id": "m"})
    chosen = protocol_definitions(detect_protocol(events).protocol)
    registration = Registration(chosen.definitions, event_type=chosen.event_type)
    best = float("inf")
    for _ in range(3):
        clock = ManualScheduler()
        hubs = [_Folded(f"c{i}", lambda _: (chosen, registration), clock) for i in range(count)]
        for hub in hubs:
            hub.fold(events[:1], 0)
        clock.fire()
        for hub in hubs:
            hub.frame_since(0)
        started = time.process_time()
        for position in range(1, len(events)):
            for hub in hubs:
                hub.fold(events[position : position + 1], position)
            clock.fire()
            for hub in hubs:
                hub.frame_since(position)  # the shared message: patch rendered, encoded
        best = min(best, (time.process_time() - started) / (count * (len(events) - 1)))
    return best


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def paired(runs: dict[tuple[str, int], list[dict[str, float]]], count: int, key: str) -> float:
    """The median over runs of serve's figure over the relay's run just before it: the
    two saw nearly the same machine load, where runs a minute apart may not."""
    pairs = zip(runs["serve", count], runs["relay", count], strict=True)
    return statistics.median(serve[key] / relay[key] for serve, relay in pairs)


def report(
    runs: dict[tuple[str, int], list[dict[str, float]]], sizes: list[int], work: float
) -> None:
    results = {key: median_of(found) for key, found in runs.items()}
    print(f"{'':14}{'CPU/event':>11}{'p50':>9}{'p99':>9}{'msgs/stream':>13}{'core':>7}")
    for count in sizes:
        for target in TARGETS:
            r = results[target, count]
            print(
                f"{target} {count:<8}{1e6 * r['cpu_per_event']:>8.1f} us"
                f"{1e3 * r['p50']:>6.0f} ms{1e3 * r['p99']:>6.0f} ms"
                f"{r['messages_per_stream']:>13.1f}{100 * r['core_share']:>6.0f}%"
            )
    print()
    print("serve / relay, the median of the ratios of paired runs:")
    for count in sizes:
        print(
            f"  at {count:>5}: CPU per event {paired(runs, count, 'cpu_per_event'):.2f}x"
            f" (target <= 2x), p50 {paired(runs, count, 'p50'):.2f}x,"
            f" p99 {paired(runs, count, 'p99'):.2f}x (target <= 1.5x)"
        )
    print(
        f"the floor for serve: the relay + the update's own work in process, no server"
        f" (fold, notify, render the patch, encode: {1e6 * work:.1f} us/event):"
    )
    for count in sizes:
        relay = results["relay", count]["cpu_per_event"]
        floor = relay + work
        print(f"  at {count:>5}: {1e6 * floor:.1f} us/event, {floor / relay:.2f}x the relay")
    small, large = sizes[0], sizes[-1]
    for target in TARGETS:
        flat = results[target, large]["cpu_per_event"] / results[target, small]["cpu_per_event"]
        print(f"{target} CPU per event at {large} / at {small}: {flat:.2f}x (target <= 1.25x)")
    print()
    print(f"capacity: conversations one core serves at {TOKENS_PER_SECOND} tokens/s each")
    for target in TARGETS:
        per_event = results[target, large]["cpu_per_event"]
        print(f"  {target:6} {1 / (per_event * TOKENS_PER_SECOND):>7,.0f}  (at {large})")


def chart(
    results: dict[tuple[str, int], dict[str, float]],
    sizes: list[int],
    work: float,
    path: str,
    command: str,
) -> None:
    """The figures as an SVG: CPU per event, and p50/p99 latency, by conversations."""
    import matplotlib

    matplotlib.use("svg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.hashsalt"] = "bench_serve"
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: small, diffable
    figure, (cpu_axes, latency_axes) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    colours = {"serve": "tab:blue", "relay": "tab:grey"}
    names = {"serve": "convo serve", "relay": "relay (the stack's floor)"}
    for target in TARGETS:
        rows = [results[target, count] for count in sizes]
        cpu_axes.plot(
            sizes,
            [1e6 * r["cpu_per_event"] for r in rows],
            "o-",
            color=colours[target],
            label=names[target],
        )
        latency_axes.plot(
            sizes,
            [1e3 * r["p50"] for r in rows],
            "o-",
            color=colours[target],
            label=f"{names[target]} p50",
        )
        latency_axes.plot(
            sizes,
            [1e3 * r["p99"] for r in rows],
            "s--",
            color=colours[target],
            label=f"{names[target]} p99",
        )
    cpu_axes.plot(
        sizes,
        [1e6 * (results["relay", count]["cpu_per_event"] + work) for count in sizes],
        ":",
        color="tab:blue",
        label="floor: relay + fold, render, encode",
    )
    cpu_axes.set(
        title="Server CPU per event",
        xlabel="conversations streaming",
        ylabel="µs",
        xscale="log",
        ylim=(0, None),
    )
    latency_axes.set(
        title="Append to follower",
        xlabel="conversations streaming",
        ylabel="ms",
        xscale="log",
        ylim=(0, None),
    )
    for axes in (cpu_axes, latency_axes):
        axes.set_xticks(sizes, [str(count) for count in sizes])
        axes.minorticks_off()
        axes.grid(alpha=0.3)
        axes.legend(fontsize="small")
    figure.suptitle(command, fontsize="small", family="monospace")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="svg", metadata={"Date": None})
    print(f"chart: {path}")


async def main(args: argparse.Namespace) -> None:
    sizes = sorted(int(size) for size in args.sizes.split(","))
    # Every stream is a socket here and in the server.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * sizes[-1] + 256)), hard))
    runs: dict[tuple[str, int], list[dict[str, float]]] = {}
    for _ in range(args.repeat):
        for count in sizes:
            for target in TARGETS:
                result = await run(target, count, args.rounds, args.rate)
                runs.setdefault((target, count), []).append(result)
                print(
                    f"  {target} {count}: {1e6 * result['cpu_per_event']:.1f} us/event, "
                    f"p50 {1e3 * result['p50']:.0f} ms, p99 {1e3 * result['p99']:.0f} ms",
                    file=sys.stderr,
                )
    results = {key: median_of(found) for key, found in runs.items()}
    print(
        f"{args.rounds} rounds of one delta per conversation, {args.rate:g} rounds/s, "
        f"median of {args.repeat}"
    )
    work = update_work(args.rounds)
    report(runs, sizes, work)
    if args.chart:
        command = "python benchmarks/bench_serve.py " + " ".join(sys.argv[1:])
        chart(results, sizes, work, args.chart, command)


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "--write":
        sys.path.insert(0, str(ROOT))
        _, _, store, count, rounds, rate, out = sys.argv
        write(store, int(count), int(rounds), float(rate), out)
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,300,1000", help="conversations, comma-separated")
    parser.add_argument("--rounds", type=int, default=20, help="deltas per conversation")
    parser.add_argument("--rate", type=float, default=4.0, help="rounds a second (at most)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per size; medians kept")
    parser.add_argument("--chart", metavar="SVG", help="write the figures as an SVG chart")
    asyncio.run(main(parser.parse_args()))
