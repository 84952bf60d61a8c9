"""Events/s of ``definitions.ag_ui`` / ``ai_sdk`` ``fold()`` vs the Node references.

Run: ``python benchmarks/bench_protocols_js.py`` (needs ../shared; the Node figures need
``<repo>/.oracles`` installed, see tests/conformance/_node_oracles.py; the Anthropic
yardstick needs the pinned ``anthropic`` SDK). Every figure comes from the same run:

- ours: ``fold()`` (router + engine + rebuild) on the largest recorded fixtures of each
  protocol and on synthetic streams of ~100k events;
- node: the reference pipeline of the oracle scripts (``readUIMessageStream``;
  ``enforceEvents``/``transformChunks``/``verifyEvents``/``defaultApplyEvents``) on the
  same events, timed inside one node process (start-up and JSON parsing excluded);
- anthropic-sdk: ``accumulate_event`` on a synthetic Anthropic stream of the same
  length, the yardstick the issue sets (the least work of the references).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from definitions import ag_ui, ai_sdk  # noqa: E402

FIXTURES = ROOT.parent / "shared" / "fixtures"
ORACLES = ROOT / ".oracles"

# Times each job's reference fold in-process: the same calls as the oracle scripts.
_NODE_BENCH = r"""
import { readFileSync } from "node:fs";
import { from, lastValueFrom, toArray } from "rxjs";
import { readUIMessageStream } from "ai";
import {
  defaultApplyEvents, verifyEvents, transformChunks, enforceEvents,
} from "@ag-ui/client";
process.env.SUPPRESS_TRANSFORMATION_WARNINGS = "true";
console.warn = () => {};
async function aisdk(events) {
  const stream = new ReadableStream({
    start(c) { for (const ch of events) c.enqueue(ch); c.close(); },
  });
  let last;
  for await (const msg of readUIMessageStream({ stream, terminateOnError: true })) last = msg;
  return last;
}
async function agui(events) {
  const src$ = from(events).pipe(enforceEvents(false)).pipe(transformChunks(false))
    .pipe(verifyEvents(false));
  const input = {
    threadId: "t", runId: "r", state: {}, messages: [], tools: [], context: [], forwardedProps: {},
  };
  const agent = { messages: [], state: {} };
  return lastValueFrom(defaultApplyEvents(input, src$, agent, []).pipe(toArray()));
}
const out = [];
for (const job of JSON.parse(readFileSync(0, "utf8"))) {
  const fold = job.protocol === "aisdk" ? aisdk : agui;
  const repeat = Math.max(1, Math.floor(20000 / job.events.length));
  let best = 0;
  for (let round = 0; round < 3; round++) {
    const started = performance.now();
    for (let i = 0; i < repeat; i++) await fold(job.events);
    best = Math.max(best, job.events.length * repeat / ((performance.now() - started) / 1000));
  }
  out.push(best);
}
process.stdout.write(JSON.stringify(out));
"""


def load(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8-sig")
    if text.lstrip().startswith("["):
        events: list[dict[str, Any]] = json.loads(text)
        return events
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def rate(fold: Callable[[list[dict[str, Any]]], object], events: list[dict[str, Any]]) -> float:
    """Best events/s over three rounds of at least ~20k events each."""
    best = 0.0
    repeat = max(1, 20_000 // max(1, len(events)))
    for _ in range(3):
        started = time.perf_counter()
        for _ in range(repeat):
            fold(events)
        best = max(best, len(events) * repeat / (time.perf_counter() - started))
    return best


def node_rates(jobs: list[dict[str, Any]]) -> list[float | None]:
    if not (ORACLES / "node_modules").is_dir():
        return [None] * len(jobs)
    script = ORACLES / "_bench_protocols_js.mjs"
    script.write_text(_NODE_BENCH)
    done = subprocess.run(
        ["node", str(script)],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        check=True,
        timeout=1200,
    )
    rates: list[float | None] = json.loads(done.stdout)
    return rates


def anthropic_rate(count: int) -> float | None:
    try:
        from anthropic.lib.streaming._messages import accumulate_event
    except ImportError:
        return None
    accumulate: Any = accumulate_event
    message: dict[str, Any] = {"id": "m", "type": "message", "role": "assistant", "model": "x"}
    message["content"] = []
    message |= {"stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1}}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ]
    delta = {"type": "text_delta", "text": "abcdefgh"}
    events += [{"type": "content_block_delta", "index": 0, "delta": delta}] * (count - 3)
    events.append({"type": "message_stop"})

    def fold(events: list[dict[str, Any]]) -> object:
        snapshot: Any = None
        json_bufs: dict[int, bytes] = {}
        for event in events:
            snapshot = accumulate(event=event, current_snapshot=snapshot, json_bufs=json_bufs)
        return snapshot

    return rate(fold, events)


def synthetic_ai_sdk(deltas: int) -> list[dict[str, Any]]:
    """An agent loop: messages of reasoning, text and a tool call, ~``deltas`` deltas."""
    events: list[dict[str, Any]] = []
    per_message = 1000
    for index in range(max(1, deltas // per_message)):
        events += [{"type": "start", "messageId": f"m{index}"}, {"type": "start-step"}]
        events.append({"type": "reasoning-start", "id": "r"})
        events += [{"type": "reasoning-delta", "id": "r", "delta": "thinks.."}] * 200
        events += [{"type": "reasoning-end", "id": "r"}, {"type": "text-start", "id": "0"}]
        events += [{"type": "text-delta", "id": "0", "delta": "abcdefgh"}] * 600
        events.append({"type": "text-end", "id": "0"})
        call = f"c{index}"
        events.append({"type": "tool-input-start", "toolCallId": call, "toolName": "f"})
        events.append({"type": "tool-input-delta", "toolCallId": call, "inputTextDelta": '{"a":"'})
        events += [{"type": "tool-input-delta", "toolCallId": call, "inputTextDelta": "xyz"}] * 198
        events.append({"type": "tool-input-delta", "toolCallId": call, "inputTextDelta": '"}'})
        events.append({"type": "tool-output-available", "toolCallId": call, "output": "ok"})
        events += [{"type": "finish-step"}, {"type": "finish"}]
    return events


def synthetic_ag_ui(deltas: int) -> list[dict[str, Any]]:
    """Runs of reasoning, text and a tool call with its result, ~``deltas`` deltas."""
    events: list[dict[str, Any]] = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]
    for index in range(max(1, deltas // 1000)):
        reasoning, message, call = f"r{index}", f"m{index}", f"c{index}"
        events.append(
            {"type": "REASONING_MESSAGE_START", "messageId": reasoning, "role": "reasoning"}
        )
        events += [
            {"type": "REASONING_MESSAGE_CONTENT", "messageId": reasoning, "delta": "thinks.."}
        ] * 200
        events.append({"type": "REASONING_MESSAGE_END", "messageId": reasoning})
        events.append({"type": "TEXT_MESSAGE_START", "messageId": message, "role": "assistant"})
        events += [
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": message, "delta": "abcdefgh"}
        ] * 600
        events.append({"type": "TEXT_MESSAGE_END", "messageId": message})
        events.append(
            {
                "type": "TOOL_CALL_START",
                "toolCallId": call,
                "toolCallName": "f",
                "parentMessageId": message,
            }
        )
        events += [{"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": "xyz"}] * 200
        events.append({"type": "TOOL_CALL_END", "toolCallId": call})
        events.append(
            {
                "type": "TOOL_CALL_RESULT",
                "messageId": f"t{index}",
                "toolCallId": call,
                "content": "ok",
            }
        )
    events.append({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
    return events


def main() -> None:
    recorded = FIXTURES / "recorded"
    cases: list[tuple[str, str, list[dict[str, Any]]]] = []
    for pattern, protocol in (("agui*", "agui"), ("vercel-langchain*.json", "aisdk")):
        for path in sorted(recorded.glob(pattern), key=lambda p: p.stat().st_size)[-2:]:
            cases.append((path.name, protocol, load(path)))
    cases.append(("synthetic AG-UI (reasoning, text, tools)", "agui", synthetic_ag_ui(10_000)))
    cases.append(("synthetic AG-UI (reasoning, text, tools)", "agui", synthetic_ag_ui(100_000)))
    cases.append(("synthetic AI SDK (agent loop)", "aisdk", synthetic_ai_sdk(100_000)))
    # defaultApplyEvents clones the whole message list on every event (quadratic): a
    # 100k-event run does not finish in reasonable time, so node gets the 10k one only.
    jobs = [
        {"protocol": protocol, "events": events}
        for _, protocol, events in cases
        if protocol == "aisdk" or len(events) <= 20_000
    ]
    measured = iter(node_rates(jobs))
    theirs = [
        next(measured) if protocol == "aisdk" or len(events) <= 20_000 else None
        for _, protocol, events in cases
    ]
    yardsticks: dict[int, float | None] = {}
    for (name, protocol, events), node in zip(cases, theirs, strict=True):
        fold = ag_ui.PROTOCOL.accumulate if protocol == "agui" else ai_sdk.PROTOCOL.accumulate
        mine = rate(fold, events)
        if len(events) not in yardsticks:
            yardsticks[len(events)] = anthropic_rate(len(events))
        anthropic = yardsticks[len(events)]
        text = f"{name:<48} {len(events):>7} events  ours {mine / 1e6:6.3f}M/s"
        if node is not None:
            text += f"  node-ref {node / 1e6:6.3f}M/s (x{mine / node:5.1f})"
        if anthropic is not None:
            text += f"  anthropic-sdk {anthropic / 1e6:6.3f}M/s (x{mine / anthropic:5.1f})"
        print(text, flush=True)


if __name__ == "__main__":
    main()
