"""An example to copy: a tiny agent on the anthropic client, tested offline against its
recording, its view snapshotted.

``convo_recorder.wrap(client)`` plays the test's calls back from
``recordings/test_example_agent/test_the_agent_answers_with_the_weather.jsonl`` (the
default record mode, ``none``, never touches the network). To record it again::

    pytest tests/recording/test_example_agent.py --convo-record-mode=rewrite

A real test would then point the client at the real API; this one records against a
loopback server answering with two SSE bodies recorded by anthropic-sdk-python (MIT;
see ../shared/fixtures/recorded/README.md): a ``get_weather`` tool call, then a text.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from . import _server
from ._sdks import require_sdk

TOOLS = [
    {
        "name": "get_weather",
        "description": "The weather at a place.",
        "input_schema": {"type": "object", "properties": {"location": {"type": "string"}}},
    }
]
RAW = {
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
}


def get_weather(location: str) -> str:
    return f"Sunny in {location}."


def weather_agent(client: Any, question: str) -> tuple[str, list[dict[str, Any]]]:
    """Ask, run the tools the model calls, ask again; the final text and every raw
    stream event the SDK yielded."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    events: list[dict[str, Any]] = []
    for _ in range(4):
        with client.messages.stream(
            model="claude-test", max_tokens=256, messages=messages, tools=TOOLS
        ) as stream:
            events += [e.model_dump(mode="json") for e in stream if e.type in RAW]
            message = stream.get_final_message()
        messages.append({"role": "assistant", "content": message.model_dump()["content"]})
        calls = [block for block in message.content if block.type == "tool_use"]
        if not calls:
            return "".join(b.text for b in message.content if b.type == "text"), events
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": call.id,
                        "content": get_weather(**call.input),
                    }
                    for call in calls
                ],
            }
        )
    raise AssertionError("the agent did not finish")


@pytest.fixture
def base_url(convo_recorder: Any) -> Iterator[str]:
    """Where the client sends: the loopback server while recording, else nowhere
    (playback sends nothing)."""
    if not convo_recorder.recording:
        yield "http://127.0.0.1:9"  # the discard port: a call that escaped would fail
        return
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(_server.serving())
        yield server.root(_server.anthropic_stream(), _server.anthropic_text_stream())


def test_the_agent_answers_with_the_weather(
    convo_recorder: Any, convo_snapshot: Any, base_url: str
) -> None:
    anthropic = require_sdk("anthropic")
    client = convo_recorder.wrap(anthropic.Anthropic(api_key="sk-ant-test", base_url=base_url))
    answer, events = weather_agent(client, "What is the weather in Paris?")
    assert answer == "Hello there!"
    convo_snapshot(events)
