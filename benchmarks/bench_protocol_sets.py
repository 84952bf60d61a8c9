"""Every protocol set on its recorded streams, beside its own reference and the
Anthropic SDK yardstick, in one run (issue #4's benchmark).

Run: ``python benchmarks/bench_protocol_sets.py`` (needs ../shared and the pinned SDKs
of the test extra; the AG-UI and AI SDK references need node and ``<repo>/.oracles``
installed, see tests/conformance/_node_oracles.py, else their column says so).

- **streams**: every recording in ``../shared/fixtures/recorded`` of at least
  ``MIN_EVENTS`` events (shorter ones measure per-fold set-up, not folding), grouped by
  the protocol ``replay.detect_protocol`` names; one file per recording (the same
  stream saved in two formats counts once).
- **ours**: the set's whole ``fold()`` (pre-pass, engine, rebuild of the protocol's
  own objects) on the raw event dicts as read from the file.
- **reference**: the protocol's own reference accumulator on the same events, at its
  cheapest: the Anthropic and OpenAI SDKs on their typed event models built before the
  clock starts (their accumulate step alone; the figure on raw dicts, as their streams
  run, is printed beside it); ``readUIMessageStream`` and AG-UI's
  ``defaultApplyEvents`` pipeline timed inside one node process.
- **yardstick**: the Anthropic SDK's accumulate step on typed events, its best rate on
  the Anthropic streams of this run (the issue: "it does the least work of the
  references"); every set is asked to fold at least twice as fast.

Figures are events/s, best of three rounds of ~20k events; compare rows of one run.
"""

from __future__ import annotations

import copy
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_anthropic_recordings import best_rate  # noqa: E402
from bench_protocols_anthropic_openai import anthropic_reference, anthropic_typed  # noqa: E402
from bench_protocols_js import node_rates  # noqa: E402

from definitions import ag_ui, ai_sdk, anthropic, openai_chat, openai_responses  # noqa: E402
from replay import detect_protocol, load_events  # noqa: E402

FIXTURES = ROOT.parent / "shared" / "fixtures" / "recorded"
MIN_EVENTS = 100
FOLDS: dict[str, Callable[[list[dict[str, Any]]], object]] = {
    "anthropic": anthropic.fold,
    "openai_chat": openai_chat.fold,
    "openai_responses": openai_responses.fold,
    "ag_ui": ag_ui.fold,
    "ai_sdk": ai_sdk.fold,
}


def streams() -> dict[str, list[tuple[str, list[dict[str, Any]]]]]:
    """The recorded streams of each protocol, longest first, one file per stream."""
    found: dict[str, list[tuple[str, list[dict[str, Any]]]]] = defaultdict(list)
    seen: set[str] = set()
    for path in sorted(FIXTURES.iterdir()):
        events = load_events(path, lenient=True).events
        protocol = detect_protocol(events).protocol
        if protocol not in FOLDS or len(events) < MIN_EVENTS:
            continue
        key = f"{protocol}:{path.stem}"  # the same stream as .json and .jsonl
        if key in seen:
            continue
        seen.add(key)
        found[protocol].append((path.name, events))
    for rows in found.values():
        rows.sort(key=lambda row: -len(row[1]))
    return found


# -- the references, each on the same events ---------------------------------------


def _sdk_rates(
    events: list[dict[str, Any]],
    repeat: int,
    typed: Callable[[list[dict[str, Any]]], list[Any]],
    fold: Callable[[list[Any]], object],
) -> tuple[float, float]:
    """(typed events, raw dicts) rates of an SDK accumulator ``fold``."""
    typed_batches = [typed(events) for _ in range(repeat)]  # fresh: accumulators mutate
    dict_batches = [copy.deepcopy(events) for _ in range(repeat)]
    count = len(events)
    return best_rate(fold, typed_batches, count), best_rate(fold, dict_batches, count)


def _anthropic_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # The SDK starts a stream at message_start (as the oracle folds it).
    starts = [i for i, e in enumerate(events) if e.get("type") == "message_start"]
    return events[starts[0] :] if starts else []


def _chat_typed(events: list[dict[str, Any]]) -> list[Any]:
    from openai._models import construct_type
    from openai.types.chat import ChatCompletionChunk

    return [construct_type(type_=ChatCompletionChunk, value=event) for event in events]


def _chat_fold(chunks: list[Any]) -> object:
    from openai._models import construct_type
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    state: Any = ChatCompletionStreamState()
    for chunk in chunks:
        if type(chunk) is dict:  # raw: the model its stream builds per chunk
            chunk = construct_type(type_=ChatCompletionChunk, value=chunk)
        list(state.handle_chunk(chunk))
    return state.current_completion_snapshot


def _responses_typed(events: list[dict[str, Any]]) -> list[Any]:
    from openai._models import construct_type
    from openai.types.responses import ResponseStreamEvent

    return [construct_type(type_=ResponseStreamEvent, value=event) for event in events]


def _responses_fold(events: list[Any]) -> object:
    """One ``ResponseStreamState`` per response, as the oracle folds a log."""
    from openai._models import construct_type
    from openai._types import omit
    from openai.lib.streaming.responses import ResponseStreamState
    from openai.types.responses import ResponseStreamEvent

    state: Any = None
    for event in events:
        if type(event) is dict:
            event = construct_type(type_=ResponseStreamEvent, value=event)
        if state is None or event.type == "response.created":
            state = ResponseStreamState(input_tools=omit, text_format=omit)
        state.handle_event(event)
    return state


def reference(
    protocol: str, events: list[dict[str, Any]], repeat: int
) -> tuple[float, float | None] | None:
    """(typed events, raw dicts) rates of the Python reference on ``events``; None for
    the Node references (run in one batch by ``main``) or a missing SDK."""
    try:
        if protocol == "anthropic":
            events = _anthropic_events(events)
            return _sdk_rates(events, repeat, anthropic_typed, anthropic_reference)
        if protocol == "openai_chat":
            return _sdk_rates(events, repeat, _chat_typed, _chat_fold)
        if protocol == "openai_responses":
            return _sdk_rates(events, repeat, _responses_typed, _responses_fold)
    except ImportError:
        pass
    return None


def main() -> None:
    if not FIXTURES.is_dir():
        sys.exit(f"no recordings at {FIXTURES}: this benchmark needs ../shared")
    found = streams()
    rows: list[dict[str, Any]] = []
    for protocol in FOLDS:
        for name, events in found.get(protocol, []):
            repeat = max(1, 20_000 // len(events))
            batches = [copy.deepcopy(events) for _ in range(repeat)]
            rows.append(
                {
                    "protocol": protocol,
                    "name": name,
                    "count": len(events),
                    "ours": best_rate(FOLDS[protocol], batches, len(events)),
                    "reference": reference(protocol, events, repeat),
                    "events": events,
                }
            )
    jobs = [
        {"protocol": "agui" if row["protocol"] == "ag_ui" else "aisdk", "events": row["events"]}
        for row in rows
        if row["protocol"] in ("ag_ui", "ai_sdk")
    ]
    try:
        node = iter(node_rates(jobs)) if jobs else iter(())
    except (OSError, ValueError) as exc:  # no node, or its output unreadable
        print(f"(node references not run: {exc})")
        node = iter([None] * len(jobs))
    for row in rows:
        if row["protocol"] in ("ag_ui", "ai_sdk"):
            rate = next(node)
            row["reference"] = None if rate is None else (rate, None)

    sdk_typed = [
        row["reference"][0]
        for row in rows
        if row["protocol"] == "anthropic" and row["reference"] is not None
    ]
    yardstick = max(sdk_typed) if sdk_typed else None
    print(
        f"yardstick: the Anthropic SDK's accumulate step on typed events, best on the "
        f"Anthropic streams below: {yardstick / 1e6:.3f}M events/s\n"
        if yardstick
        else "yardstick: the anthropic SDK is not installed (pip install the test extra)\n"
    )
    print(
        f"{'set':<17} {'recording':<58} {'events':>6} {'ours':>8} {'reference':>10}"
        f" {'(dicts)':>8}  {'/yardstick':>10} {'/reference':>10}"
    )
    worst: dict[str, list[float]] = defaultdict(lambda: [float("inf"), float("inf")])
    together: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])  # events, seconds
    for row in rows:
        typed, dicts = row["reference"] or (None, None)
        ours = row["ours"]
        line = f"{row['protocol']:<17} {row['name'][:58]:<58} {row['count']:>6} {ours / 1e6:7.3f}M"
        line += f" {typed / 1e6:9.3f}M" if typed else f" {'n/a':>10}"
        line += f" {dicts / 1e6:7.3f}M" if dicts else f" {'':>8}"
        line += f"  {ours / yardstick:9.2f}x" if yardstick else f"  {'n/a':>10}"
        line += f" {ours / typed:9.2f}x" if typed else f" {'n/a':>10}"
        print(line, flush=True)
        low = worst[row["protocol"]]
        if yardstick:
            low[0] = min(low[0], ours / yardstick)
        if typed:
            low[1] = min(low[1], ours / typed)
        total = together[row["protocol"]]
        total[0] += row["count"]
        total[1] += row["count"] / ours
    print(
        "\neach set (the issue asks >= 2x the yardstick, > 1x the reference): its slowest"
        "\nstream, and all its streams folded one after the other (events / time)"
    )
    for protocol, (vs_yardstick, vs_reference) in worst.items():
        count, seconds = together[protocol]
        line = f"  {protocol:<17} slowest x{vs_yardstick:.2f} the yardstick, x{vs_reference:.2f}"
        line += f" its reference; all {count / seconds / 1e6:.3f}M"
        line += f" = x{count / seconds / yardstick:.2f} the yardstick" if yardstick else ""
        print(line)


if __name__ == "__main__":
    main()
