"""Writes ``replay/examples/sdk_calls.jsonl``, the recording the package ships
(``replay.recording.EXAMPLE``): the calls of the recording guide's examples
(``docs/recording.md``), so that they run as written on a machine with no API key,
against ``convo playback-server --example``.

Its calls, in order: the two calls of the weather agent (copied from
``recordings/test_example_agent/``; their answers are SSE bodies recorded by
anthropic-sdk-python, MIT), then each "Recording" example of the page run against a
loopback server answering with the short synthetic answers below.

    python -m tests.recording.make_example_recording
"""

from __future__ import annotations

import itertools
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import replay
from definitions._eventstream import encode_frame
from replay.recording import EXAMPLE

from . import _server

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
PAGE = ROOT / "docs" / "recording.md"
_MARKED = re.compile(
    r"^<!-- test: by test_the_recording_page_examples_run -->\n```python\n(.*?)^```", re.S | re.M
)
EXAMPLES = _MARKED.findall(PAGE.read_text(encoding="utf-8"))
"""The page's "Recording" examples, each calling one SDK's real API as written."""
AGENT = HERE / "recordings" / "test_example_agent" / "test_the_agent_answers_with_the_weather.jsonl"


def anthropic_stream() -> _server.Answer:
    text = ["It is sunny", " in Paris", ", 22°C."]
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_example",
                "type": "message",
                "role": "assistant",
                "model": "claude-opus-4-6",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 14, "output_tokens": 1},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        *(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}
            for t in text
        ),
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 9},
        },
        {"type": "message_stop"},
    ]
    return _server.Answer(_server.sse(events, named=True), _server.SSE)


def openai_chat_stream() -> _server.Answer:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {
            "id": "chatcmpl-example",
            "object": "chat.completion.chunk",
            "created": 1765000000,
            "model": "gpt-4o-2024-08-06",
            "choices": [choice],
        }

    events = [
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "Hi"}),
        chunk({"content": " there!"}),
        chunk({}, "stop"),
    ]
    return _server.Answer(_server.sse(events, named=False, done=True), _server.SSE)


def openai_response() -> _server.Answer:
    response = {
        "id": "resp_example",
        "object": "response",
        "created_at": 1765000000,
        "status": "completed",
        "model": "gpt-5-2025-08-07",
        "output": [
            {
                "id": "msg_example",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Hi there!", "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {"input_tokens": 7, "output_tokens": 4, "total_tokens": 11},
    }
    return _server.Answer((json.dumps(response).encode(),))


def gemini_stream() -> _server.Answer:
    def chunk(text: str, finish: str | None = None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}}
        if finish:
            candidate["finishReason"] = finish
        return {"candidates": [candidate], "modelVersion": "gemini-2.5-flash"}

    events = [chunk("Hi"), chunk(" there!", "STOP")]
    return _server.Answer(
        tuple(b"data: " + json.dumps(e).encode() + b"\r\n\r\n" for e in events), _server.SSE
    )


def bedrock_stream() -> _server.Answer:
    events: list[tuple[str, dict[str, Any]]] = [
        ("messageStart", {"role": "assistant"}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hi there!"}}),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        ("messageStop", {"stopReason": "end_turn"}),
        (
            "metadata",
            {
                "usage": {"inputTokens": 8, "outputTokens": 4, "totalTokens": 12},
                "metrics": {"latencyMs": 300},
            },
        ),
    ]
    frames = tuple(
        encode_frame(
            {":message-type": "event", ":event-type": name, ":content-type": "application/json"},
            json.dumps(payload).encode(),
        )
        for name, payload in events
    )
    return _server.Answer(frames, _server.EVENTSTREAM)


HOSTS = {
    "anthropic": "https://api.anthropic.com",
    "openai": "https://api.openai.com",
    "gemini": "https://generativelanguage.googleapis.com",
    "bedrock": "https://bedrock-runtime.us-east-1.amazonaws.com",
}
ANSWERS = {
    "anthropic": [anthropic_stream()],
    "openai": [openai_chat_stream(), openai_response()],
    "gemini": [gemini_stream()],
    "bedrock": [bedrock_stream()],
}


def provider_of(code: str) -> str:
    if "boto3" in code:
        return "bedrock"
    if "genai" in code:
        return "gemini"
    return "openai" if "openai" in code else "anthropic"


def environment(base: str) -> dict[str, str]:
    """What points every SDK at ``base`` with keys that are not keys (as the page says)."""
    return {
        "ANTHROPIC_BASE_URL": base,
        "ANTHROPIC_API_KEY": "unused",
        "OPENAI_BASE_URL": f"{base}/v1",
        "OPENAI_API_KEY": "unused",
        "GOOGLE_GEMINI_BASE_URL": base,
        "GEMINI_API_KEY": "unused",
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": base,
        "AWS_ACCESS_KEY_ID": "unused",
        "AWS_SECRET_ACCESS_KEY": "unused",
    }


def run_example(code: str, env: dict[str, str], folder: Path) -> Path:
    """Run one example of the page as written in ``folder`` with ``env``; its log."""
    saved = {name: os.environ.get(name) for name in env}
    cwd = Path.cwd()
    os.environ.update(env)
    os.chdir(folder)
    try:
        exec(compile(code, str(PAGE), "exec"), {"__name__": "__doc_example__"})
    finally:
        os.chdir(cwd)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return folder / "calls.jsonl"


def main() -> None:
    events = replay.read_log(AGENT).events()
    calls = 1 + max(e["call"] for e in events)
    with tempfile.TemporaryDirectory() as folder:
        for i, code in enumerate(EXAMPLES):
            provider = provider_of(code)
            work = Path(folder) / str(i)
            work.mkdir()
            with _server.serving() as server:
                log = run_example(code, environment(server.root(*ANSWERS[provider])), work)
            recorded = replay.read_log(log).events()
            for event in recorded:
                event["call"] += calls
                event.pop("time", None)
            calls += len({e["call"] for e in recorded})
            events += recorded
    for event in events:  # the loopback's address is no part of the recording
        if event["type"] == "recording/request":
            path = event["url"].split("/", 3)[3]
            event["url"] = f"{HOSTS[event['api'].partition('.')[0]]}/{path}"
    EXAMPLE.unlink(missing_ok=True)
    # Made-up times, 20 ms apart: one chunk per event, and --speed 1.0 paces them.
    ticks = itertools.count()
    replay.write_log(EXAMPLE, events, time=lambda: 1765000000.0 + 0.02 * next(ticks))
    print(f"wrote {EXAMPLE} ({calls} calls)")


if __name__ == "__main__":
    main()
