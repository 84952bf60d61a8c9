// Batch runner for the Node reference accumulators, used by the hypothesis tests.
// Copied next to ../shared/oracles' scripts (into <repo>/.oracles) at test time so that
// `ai` and `@ag-ui/client` resolve from its node_modules; never edit ../shared.
// stdin: JSON array of jobs {protocol: "aisdk"|"agui", events: [...], verify?: bool}
// stdout: JSON array of results, one per job, in order:
//   aisdk: {messages: [final UIMessage per message, in order], error?}
//   agui:  {messages, state, error?}
// The pipelines are those of oracle_aisdk.mjs and oracle_agui.mjs (same calls, same options).
import { readFileSync } from "node:fs";
import { from, lastValueFrom, toArray } from "rxjs";
import { readUIMessageStream } from "ai";
import { defaultApplyEvents, verifyEvents, transformChunks, enforceEvents } from "@ag-ui/client";

process.env.SUPPRESS_TRANSFORMATION_WARNINGS = "true";
console.warn = () => {};

async function aisdk(events) {
  const stream = new ReadableStream({ start(c) { for (const ch of events) c.enqueue(ch); c.close(); } });
  const finals = [];
  let last, err;
  try {
    for await (const msg of readUIMessageStream({ stream, terminateOnError: true, onError: e => { err = String(e?.message ?? e); } })) {
      // A snapshot of another message means the previous one is final (resetStateOnMessageIdChange).
      if (last !== undefined && last.id !== msg.id) finals.push(last);
      last = msg;
    }
  } catch (e) { err = String(e?.message ?? e); }
  if (last !== undefined) finals.push(last);
  return { messages: JSON.parse(JSON.stringify(finals)), ...(err ? { error: err } : {}) };
}

async function agui(events, verify) {
  let src$ = from(events).pipe(enforceEvents(false)).pipe(transformChunks(false));
  if (verify) src$ = src$.pipe(verifyEvents(false));
  const agent = { messages: [], state: {} };
  const input = { threadId: "t", runId: "r", state: {}, messages: [], tools: [], context: [], forwardedProps: {} };
  let messages = [], state = {};
  try {
    const muts = await lastValueFrom(defaultApplyEvents(input, src$, agent, []).pipe(toArray()));
    for (const m of muts) { if (m.messages) messages = m.messages; if (m.state) state = m.state; }
    return JSON.parse(JSON.stringify({ messages, state }));
  } catch (e) {
    return JSON.parse(JSON.stringify({ error: String(e.message || e), messages, state }));
  }
}

const jobs = JSON.parse(readFileSync(0, "utf8"));
const results = [];
for (const job of jobs) {
  results.push(job.protocol === "aisdk" ? await aisdk(job.events) : await agui(job.events, job.verify ?? false));
}
process.stdout.write(JSON.stringify(results));
