"""The typed table of ``bench_protocol_sets.py`` counted in instructions: per SDK
protocol, what a fold of the SDK's typed events costs per event over the fold of the
same events as dicts (issue #17 asks at most 2x), all streams and the worst one.

Run: ``python benchmarks/bench_typed_instructions.py [PROTOCOL ...]`` (needs valgrind,
../shared and the pinned SDKs of the test extra; about half a minute per protocol).

A loaded shared machine moves timed figures by 20% and more from one run to the next;
an instruction count does not move. Each protocol runs in one process under callgrind
with instrumentation off until the inputs are made and every stream folded once
(imports, the converters written for each model class, the first routes); then each
stream's dict folds and typed folds run, each set of folds followed by a
``callgrind_control --dump``, and a figure is a dump's instructions (less those of an
empty dump) per event. The streams and typed events are ``bench_protocol_sets``'
(``_bench_providers``' for Gemini). A count does not see cache misses or mispredicted
branches: read it beside the timed table.
"""

from __future__ import annotations

import copy
import gc
import glob
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROTOCOLS = ("anthropic", "openai_chat", "openai_responses", "gemini")
REPEAT = 2  # folds of each stream per figure


def _control(*arguments: str) -> None:
    """Send callgrind (this process runs under it) a command."""
    command = ["callgrind_control", *arguments, str(os.getpid())]
    subprocess.run(command, capture_output=True, check=True)


def _workload(protocol: str) -> tuple[Callable[[Any], object], list[tuple[str, list[Any]]], Any]:
    """The set's fold, its streams (name, event dicts) and the maker of typed events."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import _bench_providers as providers
    import bench_protocol_sets as sets
    from bench_protocols_anthropic_openai import anthropic_typed

    if protocol == "gemini":
        from google.genai import types

        from definitions import gemini

        def make(events: list[Any]) -> list[Any]:
            return [types.GenerateContentResponse.model_validate(event) for event in events]

        rows = providers.recordings()
        found = [(row["name"], row["events"]) for row in rows if row["protocol"] == "gemini"]
        return gemini.PROTOCOL.accumulate, found, make
    typed = {
        "anthropic": anthropic_typed,
        "openai_chat": sets._chat_typed,
        "openai_responses": sets._responses_typed,
    }[protocol]
    return sets.FOLDS[protocol], sets.streams()[protocol], typed


def child(protocol: str) -> None:
    """Under callgrind: fold each stream as dicts and as typed events, dumping after each."""
    fold, found, make = _workload(protocol)
    inputs = []
    for _, events in found:
        fold(copy.deepcopy(events))
        fold(make(events))
        dicts = [copy.deepcopy(events) for _ in range(REPEAT)]
        inputs.append((dicts, [make(events) for _ in range(REPEAT)]))
    gc.collect()
    print("STREAMS " + "|".join(f"{len(events) * REPEAT}:{name}" for name, events in found))
    sys.stdout.flush()
    _control("--instr=on")
    _control("--dump=start")
    _control("--dump=empty")
    for number, (dicts, typed) in enumerate(inputs):
        for events in dicts:
            fold(events)
        _control(f"--dump=dicts{number}")
        for events in typed:
            fold(events)
        _control(f"--dump=typed{number}")
    _control("--instr=off")


def measure(protocol: str) -> str:
    """One protocol's line of the table (a child under callgrind)."""
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "callgrind.out")
        done = subprocess.run(
            [
                *("valgrind", "--tool=callgrind", "--instr-atstart=no"),
                f"--callgrind-out-file={out}",
                *(sys.executable, __file__, "--child", protocol),
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        found = re.search(r"STREAMS (.*)", done.stdout)
        if found is None:
            raise SystemExit(f"{protocol}: the run under valgrind failed:\n{done.stderr[-2000:]}")
        dumps = {}
        for path in glob.glob(out + ".*"):
            text = Path(path).read_text()
            trigger = re.search(r"desc: Trigger: dump (\w+)", text)
            total = re.search(r"totals: (\d+)", text)
            if trigger and total:
                dumps[trigger.group(1)] = int(total.group(1))
    empty = dumps["empty"]
    rows = []
    for number, stream in enumerate(found.group(1).split("|")):
        count, name = stream.split(":", 1)
        dicts = (dumps[f"dicts{number}"] - empty) / int(count)
        typed = (dumps[f"typed{number}"] - empty) / int(count)
        rows.append((name, int(count), dicts, typed))
    events = sum(count for _, count, _, _ in rows)
    dicts = sum(count * cost for _, count, cost, _ in rows) / events
    typed = sum(count * cost for _, count, _, cost in rows) / events
    name, _, worst_dicts, worst_typed = max(rows, key=lambda row: row[3] / row[2])
    return (
        f"  {protocol:<17} typed {typed:7.0f} instructions/event, dicts {dicts:6.0f}: "
        f"x{typed / dicts:.2f} the cost (worst stream x{worst_typed / worst_dicts:.2f}: "
        f"{name[:40]})"
    )


def main() -> None:
    protocols = sys.argv[1:] or PROTOCOLS
    print("typed SDK objects: instructions per event over the dict path (the issue asks <= 2x)")
    for protocol in protocols:
        print(measure(protocol), flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2])
    else:
        main()
