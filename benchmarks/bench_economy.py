"""The context economy on real agent sessions: what each policy set saves and costs.

For every session in ``../shared/fixtures/transcripts/`` (each thread of a file:
the main conversation and each sub-agent's, each OpenHands run), the request
before every model call is built with no policy (``none``), the live defaults
(``live``: spill at entry) and the resume defaults (``resume``: every request as
an agent resumed before that call would send it), per provider gateway, and
measured:

- request size per call and summed (chars of the serialized request; tokens when
  ``tiktoken`` and its encoding are available offline), and the reduction;
- prefix reuse between consecutive requests and the number of prefix breaks;
- invalid requests (the gateway's validator; must be 0);
- spill files: every result cut is in one, whole;
- determinism: the request hashes of two runs and of random batchings agree;
- render time per call as the session grows (first tenth of the calls against
  the last tenth).

``compact`` is the live defaults after a compaction whenever a request reaches
``COMPACT_AT`` chars (a stand-in summary of ``SUMMARY_CHARS``: what the request
carries); the tool results and user instructions that fell outside the summaries
are listed per session, for a person to read.

Four references come from the same run: ``wide`` (trim on, ``keep_recent`` 2) shows
how far trim and wider expiry go beyond the defaults; ``ceiling`` (every result but
the 6 latest trimmed to a bare pointer) bounds what any policy of the economy could
cut, since they touch only results, denied calls and retry debris; ``safepoint`` resumes once,
before the first call, then applies the load-time defaults again only at a call
where that frees ``clear_at_least`` chars (``engine.Economist``); and SWE-agent's own
history processor is measured on the context its marshmallow trajectory recorded at every
call (prefix reuse over the same serialization).

    python benchmarks/bench_economy.py [--gateway anthropic] [--json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import random
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec

from definitions import builtin, event_type
from definitions.gateways import GATEWAYS
from definitions.harness import glance
from engine import Compaction, Compactor, Economy, Message, Role, ToolResult, compaction_of
from replay import replay
from replay.context._economy import (
    CallRequest,
    Conversation,
    common_prefix,
    conversation,
    measure,
    requests,
    serialize,
    timed,
)
from replay.context._workbench import Workbench
from replay.logs.sessions import read_transcript

ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPTS = ROOT.parent / "shared" / "fixtures" / "transcripts"
POLICIES = {
    "none": Economy.none(),
    "live": Economy.live(),
    "resume": Economy.resume(glance=glance),
    "wide": Economy(glance=glance, trim=True, keep_recent=2),
    "safepoint": Economy.resume(glance=glance),  # resumed once, then safepoints (see SAFEPOINTS)
    # Every result but the 6 latest cut to a bare pointer: the most the economy's
    # policies (which touch results, denied calls and debris only) can cut while
    # keeping the defaults' 6 latest results whole.
    # (Results under 200 chars are left: a pointer is about as long.)
    "ceiling": Economy(
        glance=glance, trim=True, trim_min_chars=200, trim_keep_recent=6, spill_preview=0
    ),
}
SAFEPOINTS = frozenset({"safepoint"})
# Compaction beside the results-only policies: when a request reaches COMPACT_AT chars
# the history so far is replaced by a summary of SUMMARY_CHARS (a stand-in for the
# model's: its length is what a request carries), then the live defaults apply.
COMPACT_AT = 60_000
SUMMARY_CHARS = 4_000
COMPACTOR = Compactor(threshold=COMPACT_AT)


def sessions() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """(name, events) of every thread of every session file, side files included in
    their session (as its sub-agent threads)."""
    files = sorted(TRANSCRIPTS.glob("*/*.jsonl")) + sorted(TRANSCRIPTS.glob("*/*.traj"))
    for path in files:
        transcript = read_transcript(path.read_bytes(), path=str(path))
        if transcript is None:
            continue
        for thread in transcript.threads:
            yield f"{path.parent.name}/{path.stem[:12]}:{thread.name[:24]}", thread.events


def run(
    events: list[dict[str, Any]],
    gateway: str,
    economy: Economy,
    bench: Path | None,
    batch: int | None = None,
    safepoints: bool = False,
    compact: bool = False,
) -> tuple[list[CallRequest], list[float]]:
    nodes = replay(events, builtin.DEFINITIONS, event_type=event_type, batch=batch)
    talk = conversation(nodes)
    if compact:
        talk, _ = compacted(talk, COMPACTOR)
    calls, timings = timed(
        requests(
            talk,
            GATEWAYS[gateway],
            economy,
            workbench=Workbench(bench) if bench else None,
            safepoints=safepoints,
        )
    )
    # the last request follows the whole log: no model call of the log answers it
    return calls[:-1], timings[:-1]


def compacted(talk: Conversation, compactor: Compactor) -> tuple[Conversation, list[str]]:
    """``talk`` compacted before each model call the ``compactor`` says is due, and
    what fell outside the summaries: each tool result and user instruction replaced,
    one line each (what a person reads to see what the model no longer has)."""
    calls = set(talk.calls)
    out: list[Message] = []
    moved: dict[int, int] = {}
    lost: list[str] = []
    since = 0
    for index, message in enumerate(talk.messages):
        if index in calls and compactor.due(out):
            lost += [_lost(m) for m in out[since:] if m.role is Role.user]
            summary = f"[a summary of {len(out) - since} messages] ".ljust(SUMMARY_CHARS, ".")
            out.append(Message(role=Role.user, content=(Compaction(summary),)))
            since = len(out) - 1
        moved[index] = len(out)
        out.append(message)
    debris = frozenset(moved[i] for i in talk.marks.debris)
    new_calls = tuple(moved[i] for i in talk.calls)
    return Conversation(
        messages=tuple(out),
        marks=type(talk.marks)(interrupted=talk.marks.interrupted, debris=debris),
        calls=new_calls,
        compactions=tuple(i for i, m in enumerate(out) if compaction_of(m) is not None),
    ), [line for line in lost if line]


def _lost(message: Message) -> str:
    """A caller turn as one readable line: its user text, or its tool results."""
    results = [p for p in message.parts if isinstance(p, ToolResult)]
    if results:
        chars = sum(len(r.content) if isinstance(r.content, str) else 0 for r in results)
        names = ", ".join(sorted({r.name or "tool" for r in results}))
        return f"{len(results)} result(s) of {names} ({chars:,} chars)"
    if isinstance(message.content, str) or all(
        not isinstance(p, Compaction) for p in message.parts
    ):
        text = " ".join(str(getattr(p, "text", "")) for p in message.parts).strip()
        return f"user: {' '.join(text.split())[:80]}" if text else ""
    return ""


def tokens_counter() -> Any:
    try:
        import tiktoken  # type: ignore[import-not-found]

        return tiktoken.get_encoding("o200k_base").encode
    except Exception:  # absent, or its encoding cannot be fetched offline
        return None


def swe_agent_reference() -> float | None:
    """Prefix reuse of the context SWE-agent's own history processor sent, per call."""
    path = TRANSCRIPTS / "swe-agent" / "marshmallow-code__marshmallow-1867.traj"
    if not path.exists():
        return None
    steps = msgspec.json.decode(path.read_bytes())["trajectory"]
    sent = [serialize({"messages": step["messages"]}) for step in steps if "messages" in step]
    shares = [common_prefix(a, b) / len(a) for a, b in itertools.pairwise(sent)]
    return sum(shares) / len(shares) if shares else None


CHART_SESSION = "claude-code/37f83ec9-f2ea-42a9-925e-0d5c105cb6e8.jsonl"


def chart(path: str) -> int:
    """Request size before every model call of one real session, per policy."""
    from _charts import line_chart

    session = TRANSCRIPTS / CHART_SESSION
    transcript = read_transcript(session.read_bytes(), path=str(session))
    assert transcript is not None
    events = transcript.threads[0].events
    series: dict[str, tuple[Sequence[float], Sequence[float]]] = {}
    for policy in ("none", "live", "resume", "wide", "ceiling", "compact"):
        economy = POLICIES["live" if policy == "compact" else policy]
        with tempfile.TemporaryDirectory() as folder:
            calls, _ = run(events, "anthropic", economy, Path(folder), compact=policy == "compact")
        sizes = measure(calls).sizes
        series[policy] = (list(range(1, len(sizes) + 1)), [size / 1000 for size in sizes])
        print(f"{policy}: {len(sizes)} calls, {sum(sizes):,} chars in all")
    line_chart(
        path,
        title="Request size before each model call (Claude Code session 37f83ec9)",
        x_label="model call",
        y_label="request size (thousand chars)",
        series=series,
        note="python benchmarks/bench_economy.py --chart docs/charts/economy.svg",
    )
    print(f"wrote {path}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gateway", default="all", choices=["all", *GATEWAYS])
    parser.add_argument("--json", action="store_true", help="one JSON object per row")
    parser.add_argument(
        "--chart",
        metavar="SVG",
        help="draw request size per call, one line per policy, on the largest Claude "
        "Code session (Anthropic gateway) to SVG, instead of the table",
    )
    args = parser.parse_args()
    if not TRANSCRIPTS.is_dir():
        print(f"{TRANSCRIPTS} is absent: nothing to measure", file=sys.stderr)
        return 2
    if args.chart:
        return chart(args.chart)
    gateways = list(GATEWAYS) if args.gateway == "all" else [args.gateway]
    count = tokens_counter()
    rng = random.Random(0)
    print(
        f"# bench_economy {time.strftime('%Y-%m-%d', time.gmtime())} on "
        f"{platform.machine()} {platform.processor() or platform.system()}, "
        f"Python {platform.python_version()}; tokens: {'o200k_base' if count else 'n/a'}"
    )
    print(
        "session | gateway | calls | none chars | live | resume | wide | safepoint | ceiling | "
        "compact (live + compaction) | "
        "live reuse | "
        "resume reuse | safepoint reuse | breaks live/resume | invalid | deterministic | "
        "ms/call live first/last | ms/call resume first/last"
    )
    worst = {"resume_cut": 1.0, "live_reuse": 1.0, "invalid": 0}
    files: dict[tuple[str, str], dict[str, int]] = {}
    for name, events in sessions():
        for gateway in gateways:
            row: dict[str, Any] = {"session": name, "gateway": gateway}
            totals: dict[str, int] = {}
            for policy, economy in POLICIES.items():
                safe = policy in SAFEPOINTS
                with tempfile.TemporaryDirectory() as folder:
                    calls, timings = run(events, gateway, economy, Path(folder), safepoints=safe)
                    figures = measure(calls)
                    _check_spills(calls, Path(folder))
                batch = rng.randint(1, 50)
                again, _ = run(events, gateway, economy, None, batch=batch, safepoints=safe)
                once, _ = run(events, gateway, economy, None, safepoints=safe)
                deterministic = measure(again).digest == measure(once).digest
                totals[policy] = figures.total
                row[policy] = {**figures.as_dict(), "deterministic": deterministic}
                if count is not None:
                    row[policy]["tokens"] = sum(len(count(c.serialized().decode())) for c in calls)
                tenth = max(1, len(timings) // 10)
                row[policy]["ms_first"] = 1000 * sum(timings[:tenth]) / tenth
                row[policy]["ms_last"] = 1000 * sum(timings[-tenth:]) / tenth
                worst["invalid"] += figures.invalid
            with tempfile.TemporaryDirectory() as folder:
                calls, _ = run(events, gateway, POLICIES["live"], Path(folder), compact=True)
            figures = measure(calls)
            again, _ = run(events, gateway, POLICIES["live"], None, batch=7, compact=True)
            once, _ = run(events, gateway, POLICIES["live"], None, compact=True)
            totals["compact"] = figures.total
            row["compact"] = {
                **figures.as_dict(),
                "deterministic": measure(again).digest == measure(once).digest,
            }
            worst["invalid"] += figures.invalid
            whole = files.setdefault(
                (name.split(":")[0], gateway), dict.fromkeys([*POLICIES, "compact"], 0)
            )
            for policy in totals:
                whole[policy] += totals[policy]
            base = totals["none"] or 1
            cut = {p: 1 - totals[p] / base for p in totals}
            worst["resume_cut"] = min(worst["resume_cut"], cut["resume"])
            worst["live_reuse"] = min(worst["live_reuse"], row["live"]["prefix_reuse"])
            if args.json:
                print(json.dumps(row))
                continue
            live, resume = row["live"], row["resume"]
            print(
                f"{name} | {gateway} | {live['calls']} | {totals['none']:,} | "
                f"{_cut(cut['live'])} | {_cut(cut['resume'])} | {_cut(cut['wide'])} | "
                f"{_cut(cut['safepoint'])} | {_cut(cut['ceiling'])} | {_cut(cut['compact'])} | "
                f"{live['prefix_reuse']:.3f} | {resume['prefix_reuse']:.3f} | "
                f"{row['safepoint']['prefix_reuse']:.3f} | "
                f"{live['prefix_breaks']}/{resume['prefix_breaks']} | "
                f"{sum(row[p]['invalid'] for p in totals)} | "
                f"{all(row[p]['deterministic'] for p in totals)} | "
                f"{live['ms_first']:.2f}/{live['ms_last']:.2f} | "
                f"{resume['ms_first']:.2f}/{resume['ms_last']:.2f}"
            )
    print(
        "# whole session files (every thread summed): "
        "file | gateway | none | live | resume | wide | safepoint | ceiling | compact"
    )
    for (file, gateway), whole in files.items():
        base = whole["none"] or 1
        cuts = " | ".join(_cut(1 - whole[p] / base) for p in whole if p != "none")
        print(f"# {file} | {gateway} | {whole['none']:,} | {cuts}")
    print(
        f"# compaction at {COMPACT_AT:,} chars (summary {SUMMARY_CHARS:,}): what fell "
        "outside the summaries, per session (anthropic requests)"
    )
    for name, events in sessions():
        nodes = replay(events, builtin.DEFINITIONS, event_type=event_type)
        talk, lost = compacted(conversation(nodes), COMPACTOR)
        count_compactions = len(talk.compactions)
        if count_compactions:
            said = [line for line in lost if line.startswith("user:")]
            results = len(lost) - len(said)
            print(
                f"# {name}: {count_compactions} compaction(s); replaced {results} tool "
                f"result turn(s) and {len(said)} user instruction(s)"
            )
            for line in said[:5]:
                print(f"#     {line}")
    reference = swe_agent_reference()
    print(
        f"# SWE-agent's own history processor (marshmallow, as recorded): prefix reuse "
        f"{reference:.2f}"
        if reference is not None
        else "# SWE-agent reference: absent"
    )
    print(
        f"# worst resume cut {_cut(worst['resume_cut'])} (target -30%); worst live reuse "
        f"{worst['live_reuse']:.3f} (target 0.98); invalid requests {worst['invalid']} (target 0)"
    )
    return 0


def _cut(share: float) -> str:
    """A cut as the change it makes: ``-46%``, or ``+1%`` where a policy added."""
    return f"{-share:+.0%}"


def _check_spills(calls: list[CallRequest], folder: Path) -> None:
    bench = Workbench(folder)
    for call in calls:
        for spill in call.economized.spills:
            if bench.read(spill.name) != spill.content:
                raise SystemExit(f"spill file {spill.name} does not hold what was cut")


if __name__ == "__main__":
    sys.exit(main())
