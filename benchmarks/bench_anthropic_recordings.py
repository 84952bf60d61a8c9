"""``definitions.anthropic.fold`` beside the Anthropic SDK on every recorded Anthropic stream.

Issue #4 asks for each protocol set to fold a recorded stream at least 2x faster than
the Anthropic SDK's accumulator "on the same events". For the anthropic set that reading
is literal: this runs both on the same recorded events, every Anthropic recording in
``../shared/fixtures/recorded``, in one run. The SDK is measured two ways:

- ``sdk dicts``: ``accumulate_event`` on the raw event dicts, as its stream and our oracle
  run it (it builds its typed event model per event first);
- ``sdk typed``: ``accumulate_event`` on typed events built before the timing, its
  accumulate step alone (its best case).

Ours is the whole ``fold()``: pre-pass, engine, and the rebuild into the SDK's message
dicts. Run: ``python benchmarks/bench_anthropic_recordings.py`` (needs ../shared and the
pinned SDK of the test extra). Figures are events/s, best of three rounds of ~20k events.
"""

from __future__ import annotations

import copy
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_protocols_anthropic_openai import anthropic_reference, anthropic_typed  # noqa: E402

from definitions import anthropic  # noqa: E402
from tests.conformance import _python_oracles as oracles  # noqa: E402

FIXTURES = ROOT.parent / "shared" / "fixtures" / "recorded"


def best_rate(run: Callable[[Any], object], batches: list[Any], count: int) -> float:
    """Events/s of ``run`` over ``batches`` (``count`` events each), best of three rounds."""
    best = 0.0
    for _ in range(3):
        started = time.perf_counter()
        for batch in batches:
            run(batch)
        best = max(best, count * len(batches) / (time.perf_counter() - started))
    return best


def main() -> None:
    if not FIXTURES.is_dir():
        sys.exit(f"no recordings at {FIXTURES}: this benchmark needs ../shared")
    paths = sorted(p for p in FIXTURES.iterdir() if "anthropic" in p.name)
    print(f"{'recording':<66} {'events':>6} {'ours':>8} {'sdk typed':>10} {'sdk dicts':>10}")
    ratios = []
    for path in paths:
        events = oracles.anthropic_read_events(path)
        # The SDK starts a stream at message_start; what comes before it is not its input.
        while events and events[0].get("type") != "message_start":
            events = events[1:]
        if not events:
            continue
        repeat = max(1, 20_000 // len(events))
        count = len(events)
        fresh = [copy.deepcopy(events) for _ in range(repeat)]  # neither side mutates them
        ours = best_rate(anthropic.fold, fresh, count)
        sdk_typed = best_rate(anthropic_reference, [anthropic_typed(events)] * repeat, count)
        sdk_dicts = best_rate(anthropic_reference, fresh, count)
        ratios.append(ours / sdk_typed)
        print(
            f"{path.name:<66} {count:>6} {ours / 1e6:7.3f}M {sdk_typed / 1e6:9.3f}M "
            f"{sdk_dicts / 1e6:9.3f}M  ours/typed x{ours / sdk_typed:4.1f}",
            flush=True,
        )
    if ratios:
        print(
            f"\nours / sdk typed on the same events: min x{min(ratios):.2f}, "
            f"median x{statistics.median(ratios):.2f}, max x{max(ratios):.2f} "
            f"over {len(ratios)} recordings"
        )


if __name__ == "__main__":
    main()
