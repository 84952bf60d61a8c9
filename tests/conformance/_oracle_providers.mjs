// The AI SDK's own Gemini and Bedrock providers as references, offline.
// Copied next to ../shared/oracles' scripts (into <repo>/.oracles) at test time so that
// `@ai-sdk/google` and `@ai-sdk/amazon-bedrock` resolve from its node_modules.
// As ../shared/oracles/README.md says: the provider's `fetch` answers with the recorded
// body (Gemini: SSE `data:` frames; Bedrock: event-stream frames) and `doStream` is read.
// stdin: JSON array of jobs {provider: "google"|"bedrock", body: string (google: the SSE
//        text; bedrock: the binary body in base64), tools?: [...], repeat?: n}
// stdout: JSON array, one result per job: {parts: [every stream part], error?, ms?}
//   (ms: with repeat=n, the mean milliseconds per stream of n more runs after one warm-up)
import { readFileSync } from "node:fs";
import { createGoogleGenerativeAI } from "@ai-sdk/google";
import { createAmazonBedrock } from "@ai-sdk/amazon-bedrock";

const PROMPT = [{ role: "user", content: [{ type: "text", text: "Hello" }] }];

function answer(body, type) {
  return async () => new Response(body, { status: 200, headers: { "content-type": type } });
}

function model(job) {
  let counter = 0;
  const generateId = () => `id-${counter++}`;
  if (job.provider === "google") {
    const provider = createGoogleGenerativeAI({
      apiKey: "test",
      generateId,
      fetch: answer(job.body, "text/event-stream"),
    });
    return provider("gemini-pro");
  }
  const bytes = Buffer.from(job.body, "base64");
  const provider = createAmazonBedrock({
    apiKey: "test",
    region: "us-east-1",
    generateId,
    fetch: answer(bytes, "application/vnd.amazon.eventstream"),
  });
  return provider("anthropic.claude-3-haiku-20240307-v1:0");
}

async function run(job) {
  const { stream } = await model(job).doStream({ prompt: PROMPT, tools: job.tools, includeRawChunks: false });
  const parts = [];
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
  }
  return parts;
}

function plain(parts) {
  return JSON.parse(
    JSON.stringify(parts, (key, value) => (value instanceof Error ? { error: String(value.message ?? value) } : value)),
  );
}

const jobs = JSON.parse(readFileSync(0, "utf8"));
const results = [];
for (const job of jobs) {
  try {
    const parts = await run(job);
    const result = { parts: plain(parts) };
    if (job.repeat) {
      await run(job);
      const start = process.hrtime.bigint();
      for (let i = 0; i < job.repeat; i++) await run(job);
      result.ms = Number(process.hrtime.bigint() - start) / 1e6 / job.repeat;
    }
    results.push(result);
  } catch (e) {
    results.push({ parts: [], error: String(e?.message ?? e) });
  }
}
process.stdout.write(JSON.stringify(results));
