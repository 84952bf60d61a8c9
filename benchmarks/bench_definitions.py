"""Events/s of the built-in kinds and of every protocol set, with the Anthropic SDK
accumulator as the yardstick, all in one run.

Run: ``python benchmarks/bench_definitions.py [--quick]`` (the protocol rows need
../shared; the yardstick needs the pinned ``anthropic`` SDK of the test extra).

- built-in kinds: the bundled example (replay/examples/agent_session.jsonl) repeated
  to ~100k events, ids renamed per repetition (so nodes are ~100k/431 times as many,
  as in a long session); ``decode`` is ``replay.load_events`` typed with the set's
  vocabulary (``builtin.Event``), ``fold`` the engine with ``event_type`` routing on
  those events, ``decode+fold`` both, as ``convo bench`` measures them (issue 3 asks
  for decode+fold >= 1M events/s); ``fold (dicts)`` folds plain dicts instead;
- each protocol set's ``fold()`` (pre-pass, engine, rebuild) on its largest recorded
  fixtures and on a synthetic stream of ~100k events;
- the Anthropic SDK's ``accumulate_event`` on the synthetic Anthropic stream, both on
  raw dicts (as the oracle runs it: each event is converted to a typed model first)
  and on typed events built before the clock starts (its accumulate step alone).

Each figure is the best of a few rounds (the machine is shared: expect 2x swings
between runs; compare rows of the same run).
"""

from __future__ import annotations

import importlib.util
import io
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_protocols_anthropic_openai as openai_bench  # noqa: E402
import bench_protocols_js as js_bench  # noqa: E402

from definitions import (  # noqa: E402
    ag_ui,
    ai_sdk,
    anthropic,
    builtin,
    event_type,
    openai_chat,
    openai_responses,
)
from engine import create_conversation_engine  # noqa: E402
from replay import load_events  # noqa: E402

EXAMPLE = ROOT / "replay" / "examples" / "agent_session.jsonl"
FIXTURES = ROOT.parent / "shared" / "fixtures" / "recorded"
ROUNDS = 3


def best_rate(action: Callable[[], object], count: int, rounds: int = ROUNDS) -> float:
    """Best events/s of ``action`` (which handles ``count`` events) over ``rounds``."""
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - started)
    return count / best


def repeated_example(target: int) -> bytes:
    """The bundled example as JSONL, repeated to ``target`` events, ids renamed."""
    base = [json.loads(line) for line in EXAMPLE.read_bytes().splitlines() if line.strip()]
    lines: list[bytes] = []
    repetition = 0
    while len(lines) < target:
        for event in base:
            renamed = {**event, "id": f"{event['id']}~{repetition}"}
            lines.append(json.dumps(renamed, separators=(",", ":")).encode())
        repetition += 1
    return b"\n".join(lines[:target]) + b"\n"


def builtin_rows(target: int) -> None:
    data = repeated_example(target)
    events = load_events(io.BytesIO(data), types=builtin.Event).events
    dicts = load_events(io.BytesIO(data)).events
    count = len(events)

    def decode() -> list[Any]:
        return load_events(io.BytesIO(data), types=builtin.Event).events

    def fold(events: list[Any]) -> object:
        engine = create_conversation_engine(builtin.DEFINITIONS, event_type=event_type)
        engine.push_many(events)
        return engine.nodes()

    name = f"built-in kinds: example x{count // 431} (ids renamed)"
    actions: list[tuple[str, Callable[[], object]]] = [
        ("decode", decode),
        ("fold", lambda: fold(events)),
        ("decode+fold", lambda: fold(decode())),
        ("fold (dicts)", lambda: fold(dicts)),
    ]
    rates = {label: best_rate(action, count) for label, action in actions}
    text = "  ".join(f"{label} {rate / 1e6:6.3f}M/s" for label, rate in rates.items())
    print(f"{name:<58} {count:>7} events  {text}", flush=True)


def protocol_row(
    name: str,
    fold: Callable[[list[dict[str, Any]]], object],
    events: list[dict[str, Any]],
    yardstick: tuple[float, float] | None,
) -> None:
    repeat = max(1, 20_000 // max(1, len(events)))

    def action() -> None:
        for _ in range(repeat):
            fold(events)

    mine = best_rate(action, len(events) * repeat)
    text = f"{name:<58} {len(events):>7} events  ours {mine / 1e6:6.3f}M/s"
    if yardstick is not None:
        raw, typed = yardstick
        text += f"  (x{mine / raw:4.1f} SDK on dicts, x{mine / typed:4.2f} SDK accumulate alone)"
    print(text, flush=True)


def anthropic_sdk_row(name: str, events: list[dict[str, Any]]) -> tuple[float, float] | None:
    """The SDK accumulator on raw dicts and on typed events; returns both rates."""
    if importlib.util.find_spec("anthropic") is None:
        print("anthropic-sdk: not installed (pip install the test extra)")
        return None

    # as the oracle does: nothing before the first message_start
    starts = [i for i, e in enumerate(events) if e.get("type") == "message_start"]
    events = events[starts[0] :] if starts else []
    typed = openai_bench.anthropic_typed(events)
    repeat = max(1, 20_000 // max(1, len(events)))

    def many(stream: list[Any]) -> Callable[[], None]:
        def action() -> None:
            for _ in range(repeat):
                openai_bench.anthropic_reference(stream)

        return action

    raw = best_rate(many(events), len(events) * repeat)
    accumulate_only = best_rate(many(typed), len(events) * repeat)
    print(
        f"{'anthropic-sdk: ' + name:<58} {len(events):>7} events"
        f"  raw dicts {raw / 1e6:6.3f}M/s  typed events {accumulate_only / 1e6:6.3f}M/s",
        flush=True,
    )
    return raw, accumulate_only


def largest(
    pattern: str | tuple[str, ...], count: int, exclude: tuple[str, ...] = ()
) -> list[Path]:
    if not FIXTURES.is_dir():
        return []
    prefixes = (pattern,) if isinstance(pattern, str) else pattern
    paths = [
        p
        for p in FIXTURES.iterdir()
        if p.name.startswith(prefixes) and not any(x in p.name for x in exclude)
    ]
    return sorted(paths, key=lambda p: p.stat().st_size)[-count:]


def main() -> None:
    quick = "--quick" in sys.argv
    size = 20_000 if quick else 100_000
    builtin_rows(size)
    oracles: Any = getattr(openai_bench, "oracles")  # noqa: B009 (not re-exported)

    # The yardsticks: the SDK's best rates in this run, on raw dicts (what its stream
    # does: build a model per event, then accumulate) and on typed events built
    # beforehand (its accumulate step alone). It appends text with ``+=`` (quadratic
    # on long blocks), so it runs on the recorded streams and on a short synthetic
    # one; the 100k stream shows how that grows.
    synthetic_a = openai_bench.synthetic_anthropic(size)
    recorded_a = [(p.name, oracles.anthropic_read_events(p)) for p in largest("anthropic", 2)]
    sdk_rates = [anthropic_sdk_row(name, events) for name, events in recorded_a]
    sdk_rates.append(anthropic_sdk_row("synthetic, 2k", openai_bench.synthetic_anthropic(2_000)))
    anthropic_sdk_row(f"synthetic, {size // 1000}k", synthetic_a)
    known = [rates for rates in sdk_rates if rates is not None]
    yardstick = (max(r[0] for r in known), max(r[1] for r in known)) if known else None
    for name, events in recorded_a:
        protocol_row(f"anthropic: {name}", anthropic.PROTOCOL.accumulate, events, yardstick)
    protocol_row(
        "anthropic: synthetic (text + JSON deltas)",
        anthropic.PROTOCOL.accumulate,
        synthetic_a,
        yardstick,
    )

    for path in largest(("openai-python", "vercel-openai-chat"), 2):
        protocol_row(
            f"openai_chat: {path.name}",
            openai_chat.PROTOCOL.accumulate,
            oracles.openai_read_events(path),
            yardstick,
        )
    protocol_row(
        "openai_chat: synthetic (content deltas)",
        openai_chat.PROTOCOL.accumulate,
        openai_bench.synthetic_chat(size),
        yardstick,
    )

    exclude = ("parallel-tool-call-wrapper", "id-rotation")
    for path in largest(("vercel-openai-responses", "openai_responses"), 2, exclude):
        protocol_row(
            f"openai_responses: {path.name}",
            openai_responses.PROTOCOL.accumulate,
            oracles.openai_read_events(path),
            yardstick,
        )
    protocol_row(
        "openai_responses: synthetic (output_text deltas)",
        openai_responses.PROTOCOL.accumulate,
        openai_bench.synthetic_responses(size),
        yardstick,
    )

    for path in largest("agui", 2):
        protocol_row(
            f"ag_ui: {path.name}", ag_ui.PROTOCOL.accumulate, js_bench.load(path), yardstick
        )
    protocol_row(
        "ag_ui: synthetic (reasoning, text, tools)",
        ag_ui.PROTOCOL.accumulate,
        js_bench.synthetic_ag_ui(size),
        yardstick,
    )

    for path in sorted(FIXTURES.glob("vercel-langchain*.json"), key=lambda p: p.stat().st_size)[
        -2:
    ]:
        protocol_row(
            f"ai_sdk: {path.name}", ai_sdk.PROTOCOL.accumulate, js_bench.load(path), yardstick
        )
    protocol_row(
        "ai_sdk: synthetic (agent loop)",
        ai_sdk.PROTOCOL.accumulate,
        js_bench.synthetic_ai_sdk(size),
        yardstick,
    )


if __name__ == "__main__":
    main()
