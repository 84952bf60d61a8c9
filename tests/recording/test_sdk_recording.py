"""End to end: each official client (anthropic, openai chat and responses, google-genai,
boto3 bedrock-runtime; sync and async; streamed and not) against a loopback server.

For every case: the SDK's result with the recorder equals its result without; the log
holds the call's records in order (request, response, each event as the server sent it,
end) and no secret; playback of that log, with the server stopped, gives the same
result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import replay

from . import _sdks, _server

IDS = [
    f"{provider}-{'stream' if stream else 'body'}-{'async' if asynchronous else 'sync'}"
    for provider, stream, asynchronous in _sdks.CASES
]


def records(log: Path) -> list[dict[str, Any]]:
    return replay.read_log(log).events()


@pytest.mark.slow
@pytest.mark.parametrize("case", _sdks.CASES, ids=IDS)
def test_record_then_play_back(tmp_path: Path, case: tuple[str, bool, bool]) -> None:
    provider, stream, _ = case
    answer = _sdks.ANSWERS[provider, stream]()
    log = tmp_path / "calls.jsonl"
    with _server.serving() as server:
        base = server.base(answer)
        unrecorded = _sdks.call(case, base)
        recorded = _sdks.call(case, base, lambda c: replay.record(c, log))
    assert recorded == unrecorded

    written = records(log)
    kinds = [r["type"] for r in written]
    body = [r for r in written if r["type"] in ("recording/event", "recording/body")]
    assert kinds[:2] == ["recording/request", "recording/response"]
    assert kinds[-1] == "recording/end"
    assert written[-1] == {"type": "recording/end", "call": 0, "complete": True}
    assert all(r["call"] == 0 for r in written)
    request = written[0]
    assert request["api"] == _sdks.API[provider]
    assert request["stream"] is stream
    assert request["method"] == "POST"
    assert written[1]["status"] == 200
    expected = _server.expected_events(answer)
    assert [{k: v for k, v in r.items() if k != "call"} for r in body] == expected
    entries = replay.read_log(log).entries
    times = [entry.time for entry in entries]
    assert all(t is not None for t in times)
    assert times == sorted(times)  # type: ignore[type-var]
    raw = log.read_bytes()
    for secret in _sdks.SECRETS:
        assert secret not in raw, secret

    # The server is gone: playback answers from the log alone.
    played = _sdks.call(case, base, lambda c: replay.playback(c, log))
    assert played == unrecorded


@pytest.mark.slow
@pytest.mark.parametrize("case", _sdks.CASES, ids=IDS)
def test_playback_names_the_first_difference(tmp_path: Path, case: tuple[str, bool, bool]) -> None:
    provider, stream, _ = case
    log = tmp_path / "calls.jsonl"
    with _server.serving() as server:
        base = server.base(_sdks.ANSWERS[provider, stream]())
        _sdks.call(case, base, lambda c: replay.record(c, log))
    # Edit the recorded model: the SDK's request now differs from the recording there.
    text = log.read_text()
    for model in ('"model":"claude-test"', '"model":"gpt-test"', "models/gemini-test:"):
        text = text.replace(model, model.replace("test", "other"))
    text = text.replace("/model/test-model/", "/model/other-model/")
    log.write_text(text)
    with pytest.raises(replay.PlaybackMismatchError) as caught:
        _sdks.call(case, base, lambda c: replay.playback(c, log))
    message = str(caught.value)
    if provider in ("gemini", "bedrock"):  # the model is in the URL's path
        assert "path: '/" in message
        assert caught.value.field == "path"
    else:
        assert "model: " in message
        assert "other" in message
        assert caught.value.field == "model"
        assert caught.value.recorded in ("claude-other", "gpt-other")


def test_a_call_beyond_the_recording_is_refused(tmp_path: Path) -> None:
    case = ("anthropic", False, False)
    log = tmp_path / "calls.jsonl"
    with _server.serving() as server:
        base = server.base(_server.anthropic_message())
        _sdks.call(case, base, lambda c: replay.record(c, log))
    client = replay.playback(_sdks.client("anthropic", base, False), log)
    client.messages.create(**_sdks.ARGS)
    with pytest.raises(replay.PlaybackMismatchError, match="call 1 is beyond the recording"):
        client.messages.create(**_sdks.ARGS)


def test_a_nested_difference_is_named_by_its_path(tmp_path: Path) -> None:
    case = ("openai_chat", False, False)
    log = tmp_path / "calls.jsonl"
    with _server.serving() as server:
        base = server.base(_server.openai_chat_completion())
        _sdks.call(case, base, lambda c: replay.record(c, log))
    client = replay.playback(_sdks.client("openai_chat", base, False), log)
    with pytest.raises(replay.PlaybackMismatchError) as caught:
        client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "hello"}]
        )
    assert caught.value.field == "messages[0].content"
    assert "messages[0].content: 'hi' != 'hello'" in str(caught.value)
    assert str(caught.value).endswith("- at $.messages[0].content")


@pytest.mark.slow
def test_calls_are_numbered_in_order_and_continue_an_existing_log(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    case = ("anthropic", False, False)
    with _server.serving() as server:
        base = server.base(_server.anthropic_message())
        client = replay.record(_sdks.client("anthropic", base, False), log)
        client.messages.create(**_sdks.ARGS)
        client.messages.create(**_sdks.ARGS)
        _sdks.call(case, base, lambda c: replay.record(c, log))
    calls = [r["call"] for r in records(log) if r["type"] == "recording/request"]
    assert calls == [0, 1, 2]
    client = replay.playback(_sdks.client("anthropic", base, False), log)
    for _ in range(3):
        client.messages.create(**_sdks.ARGS)


def test_record_into_a_store(tmp_path: Path) -> None:
    case = ("openai_chat", True, False)
    store = replay.open_store(tmp_path / "events.db")
    with _server.serving() as server:
        base = server.base(_server.openai_chat_stream())
        unrecorded = _sdks.call(case, base)
        recorded = _sdks.call(case, base, lambda c: replay.record(c, store, conversation="c1"))
    assert recorded == unrecorded
    entries = store.read_entries("c1")
    assert entries[0].event["type"] == "recording/request"
    assert entries[-1].event == {"type": "recording/end", "call": 0, "complete": True}
    assert all(entry.time is not None for entry in entries)
    played = _sdks.call(case, base, lambda c: replay.playback(c, store, conversation="c1"))
    assert played == unrecorded
    store.close()


def test_an_unknown_client_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "never.jsonl"
    with pytest.raises(replay.UnsupportedClientError, match=r"anthropic\.Anthropic"):
        replay.record(object(), log)
    assert not log.exists()
    log.write_text("")
    with pytest.raises(replay.UnsupportedClientError, match=r"boto3\.client"):
        replay.playback(object(), log)
