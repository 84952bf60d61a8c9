"""VCR.py / pytest-recording cassettes read as recordings: each model interaction a
call, folded by the recorded set like any recording (real traffic: the Gemini and
Bedrock cassettes of ``../shared``)."""

from __future__ import annotations

import builtins
import json
from pathlib import Path
from typing import Any

import pytest

from definitions.conversation import conversation_messages
from definitions.gateways import GATEWAYS
from engine import Reasoning, Role, Text, ToolCall
from replay import LogError, load_events
from replay.context._requests import requests
from replay.protocols._detect import detect_protocol, protocol_definitions
from tests._shared import shared_path

GEMINI = ("fixtures", "recorded", "gemini", "pydantic-ai-test_google_model_iter_stream.yaml")
BEDROCK = (
    "fixtures",
    "recorded",
    "bedrock",
    "pydantic-ai-test_bedrock_model_thinking_part_stream.yaml",
)


def _secret_free(events: list[dict[str, Any]]) -> None:
    text = json.dumps(events).lower()
    for secret in ("authorization", "x-api-key", "x-goog-api-key", "x-amz-", "cookie"):
        assert secret not in text


def test_a_gemini_cassette_is_three_calls_of_a_tool_loop() -> None:
    loaded = load_events(shared_path(*GEMINI))
    assert loaded.format == "cassette"
    assert detect_protocol(loaded.events).protocol == "recorded"
    _secret_free(loaded.events)
    requests_ = [e for e in loaded.events if e["type"] == "recording/request"]
    assert [(e["call"], e["api"], e["stream"]) for e in requests_] == [
        (n, "gemini.generate_content", True) for n in range(3)
    ]
    nodes = protocol_definitions("recorded").replay(loaded.events)
    talk = conversation_messages(nodes)
    assert [m.role for m in talk] == [
        Role.system,
        Role.user,
        Role.assistant,
        Role.user,
        Role.assistant,
        Role.user,
        Role.assistant,
    ]
    calls = [p for m in talk for p in m.parts if isinstance(p, ToolCall)]
    assert [c.name for c in calls] == ["get_capital", "get_temperature"]
    assert "30°C" in str(talk[-1].parts[0])
    # Continued with every gateway: the client's own call ids pair the results.
    for provider in GATEWAYS:
        assert requests(loaded.events, provider)[-1].problems == (), provider


def test_a_bedrock_cassette_streams_its_reasoning_from_the_event_stream_body() -> None:
    loaded = load_events(shared_path(*BEDROCK))
    assert loaded.format == "cassette"
    _secret_free(loaded.events)
    assert loaded.events[0]["url"].endswith("/converse-stream")
    nodes = protocol_definitions("recorded").replay(loaded.events)
    answer = conversation_messages(nodes)[-1]
    assert answer.role is Role.assistant
    assert isinstance(answer.parts[0], Reasoning)
    assert answer.parts[0].text.startswith("The user has greeted me")


def test_a_json_cassette_reads_as_its_yaml(tmp_path: Path) -> None:
    yaml = pytest.importorskip("yaml")
    document = yaml.safe_load(shared_path(*GEMINI).read_bytes())
    path = tmp_path / "cassette.json"
    path.write_text(json.dumps({"interactions": document["interactions"], "version": 1}, indent=2))
    assert load_events(path).events == load_events(shared_path(*GEMINI)).events


def test_a_cassette_drops_keys_from_urls_and_credentials_from_headers(tmp_path: Path) -> None:
    cassette = {
        "interactions": [
            {
                "request": {
                    "method": "POST",
                    "uri": "https://generativelanguage.googleapis.com/v1beta/models/g:generateContent?key=SECRET&alt=json",
                    "headers": {"x-goog-api-key": ["SECRET"], "Content-Type": ["application/json"]},
                    "body": json.dumps({"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}),
                },
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {"Content-Type": ["application/json"], "Set-Cookie": ["SECRET"]},
                    "body": {
                        "string": json.dumps(
                            {
                                "candidates": [
                                    {"content": {"role": "model", "parts": [{"text": "Hello"}]}}
                                ]
                            }
                        )
                    },
                },
            },
            {
                "request": {"method": "GET", "uri": "https://oauth2.googleapis.com/token"},
                "response": {},
            },
        ],
        "version": 1,
    }
    path = tmp_path / "c.json"
    path.write_text(json.dumps(cassette))
    events = load_events(path).events
    assert "SECRET" not in json.dumps(events)
    assert events[0]["url"].endswith(":generateContent?alt=json")
    assert events[0]["headers"] == {"content-type": "application/json"}
    assert [e["type"] for e in events] == [
        "recording/request",
        "recording/response",
        "recording/body",
        "recording/end",
    ]
    talk = conversation_messages(protocol_definitions("recorded").replay(events))
    assert [m.parts for m in talk] == [(Text("Hi"),), (Text("Hello"),)]


def test_a_yaml_cassette_without_pyyaml_names_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = builtins.__import__

    def without_yaml(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "yaml":
            raise ImportError("no yaml")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_yaml)
    with pytest.raises(LogError, match=r"needs PyYAML: pip install pyyaml"):
        load_events(shared_path(*GEMINI))
