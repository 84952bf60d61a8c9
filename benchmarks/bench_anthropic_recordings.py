"""``anthropic.PROTOCOL.accumulate`` beside the Anthropic SDK on every recorded Anthropic stream.

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
pinned SDK of the test extra). Figures are events/s, timed as ``bench_protocol_sets``
times them (the best of five passes, the rounds interleaved over every figure after a
warm-up round, each pass on inputs made for it), with passes of ~5k events.
"""

from __future__ import annotations

import copy
import statistics
import sys
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_protocol_sets import ROUNDS, Cell, _anthropic_events, measure  # noqa: E402
from bench_protocols_anthropic_openai import anthropic_reference, anthropic_typed  # noqa: E402

from definitions import anthropic  # noqa: E402
from tests.conformance import _python_oracles as oracles  # noqa: E402

FIXTURES = ROOT.parent / "shared" / "fixtures" / "recorded"


def main() -> None:
    if not FIXTURES.is_dir():
        sys.exit(f"no recordings at {FIXTURES}: this benchmark needs ../shared")
    paths = sorted(p for p in FIXTURES.iterdir() if "anthropic" in p.name)
    rows = []
    for path in paths:
        # The SDK starts a stream at message_start; what comes before it is not its input.
        events = _anthropic_events(oracles.anthropic_read_events(path))
        if not events:
            continue
        repeat = max(1, 5_000 // len(events))  # 40 recordings x 3 figures: ~3 minutes
        count = len(events)
        fresh = partial(copy.deepcopy, events)
        rows.append(
            (
                path.name,
                count,
                Cell(anthropic.PROTOCOL.accumulate, count, fresh, repeat),
                Cell(anthropic_reference, count, partial(anthropic_typed, events), repeat),
                Cell(anthropic_reference, count, fresh, repeat),
            )
        )
    print(f"timing {len(rows)} recordings, best of {ROUNDS} interleaved rounds ...", flush=True)
    measure([cell for row in rows for cell in row[2:]], ROUNDS)
    print(f"{'recording':<66} {'events':>6} {'ours':>8} {'sdk typed':>10} {'sdk dicts':>10}")
    ratios = []
    for name, count, ours, typed, dicts in rows:
        ratios.append(ours.best / typed.best)
        print(
            f"{name:<66} {count:>6} {ours.best / 1e6:7.3f}M {typed.best / 1e6:9.3f}M "
            f"{dicts.best / 1e6:9.3f}M  ours/typed x{ours.best / typed.best:4.1f}"
        )
    if ratios:
        print(
            f"\nours / sdk typed on the same events: min x{min(ratios):.2f}, "
            f"median x{statistics.median(ratios):.2f}, max x{max(ratios):.2f} "
            f"over {len(ratios)} recordings"
        )


if __name__ == "__main__":
    main()
