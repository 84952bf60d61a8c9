"""``convo playback-server``: a recording served on a loopback port as the providers' HTTP
APIs, answering a plain HTTP client and the SDKs (their base URLs pointed at it) with
the recorded bytes, and a request the recording does not hold with HTTP 400 naming the
first difference, as ``replay.playback`` names it."""

from __future__ import annotations

import http.client
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import replay
from replay.cli import main
from replay.recording import EXAMPLE
from replay.recording._player import Player, read_calls
from replay.recording._server import PlaybackServer, serving

from ._sdks import require_sdk

ROOT = Path(__file__).resolve().parents[2]
CASSETTES = Path(__file__).parent / "cassettes"
ASK = {
    "max_tokens": 256,
    "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
    "model": "claude-opus-4-6",
    "stream": True,
}


def player(path: Path, **options: Any) -> Player:
    return Player(read_calls(path), speed=None, path=str(path), **options)


def post(server: PlaybackServer, path: str, body: Any) -> tuple[int, dict[str, str], bytes]:
    """A plain HTTP client's POST: status, headers (lower-cased), body."""
    host, port = str(server.server_address[0]), server.server_address[1]
    connection = http.client.HTTPConnection(host, port, timeout=30)
    try:
        headers = {"content-type": "application/json"}
        connection.request("POST", path, json.dumps(body).encode(), headers)
        response = connection.getresponse()
        return (
            response.status,
            {k.lower(): v for k, v in response.getheaders()},
            response.read(),
        )
    finally:
        connection.close()


def test_a_plain_client_gets_the_recorded_stream_bytes() -> None:
    with serving(player(EXAMPLE, any_order=True)) as server:
        status, headers, body = post(server, "/v1/messages", ASK)
    assert status == 200
    assert headers["content-type"].startswith("text/event-stream")
    assert headers["transfer-encoding"] == "chunked"
    frames = [e for e in replay.load_events(EXAMPLE).events if e["type"] == "recording/event"]
    anthropic = [e for e in frames if e["call"] == 2]
    assert body == b"".join(
        f"event: {e['sse']}\ndata: ".encode()
        + json.dumps(e["event"], separators=(",", ":"), ensure_ascii=False).encode()
        + b"\n\n"
        for e in anthropic
    )


def test_a_request_the_recording_does_not_hold_gets_400_naming_the_difference() -> None:
    with serving(player(EXAMPLE)) as server:
        status, headers, body = post(server, "/v1/messages", {**ASK, "max_tokens": 9})
    assert status == 400
    assert headers["x-should-retry"] == "false"
    message = json.loads(body)["error"]["message"]
    assert message.startswith(f"call 0 (anthropic.messages) differs from the recording {EXAMPLE}")
    assert "max_tokens: 256 != 9 (recorded != sent)" in message


def test_a_chunked_request_body_is_read_whole() -> None:
    body = json.dumps(ASK).encode()
    with serving(player(EXAMPLE, any_order=True)) as server:
        host, port = str(server.server_address[0]), server.server_address[1]
        connection = http.client.HTTPConnection(host, port, timeout=30)
        pieces = iter([body[:10], body[10:]])
        connection.request("POST", "/v1/messages", pieces, {"content-type": "application/json"})
        response = connection.getresponse()
        assert response.status == 200
        assert response.read().startswith(b"event: message_start")
        connection.close()


def test_calls_are_answered_in_order_and_a_call_beyond_is_refused() -> None:
    cassette = CASSETTES / "openllmetry-test_responses.yaml"
    body = {"input": "What is the capital of France?", "model": "gpt-4.1-nano"}
    with serving(player(cassette)) as server:
        answers = [post(server, "/v1/responses", body) for _ in range(3)]
    assert [status for status, _, _ in answers] == [200, 200, 400]
    assert [json.loads(b)["output"][0]["content"][0]["text"] for _, _, b in answers[:2]] == [
        "The capital of France is Paris."
    ] * 2
    assert "call 2 is beyond the recording" in json.loads(answers[2][2])["error"]["message"]


def test_any_order_answers_each_request_however_often() -> None:
    with serving(player(EXAMPLE, any_order=True)) as server:
        first = post(server, "/v1/messages", ASK)
        again = post(server, "/v1/messages", ASK)
        wrong = post(server, "/v1/messages", {**ASK, "model": "claude-other"})
    assert first == again
    assert wrong[0] == 400
    assert "no call of the recording" in json.loads(wrong[2])["error"]["message"]
    assert "the nearest, call 2" in json.loads(wrong[2])["error"]["message"]


@pytest.mark.filterwarnings("ignore:The model:DeprecationWarning")  # an old model's name
def test_a_streamed_anthropic_cassette_through_the_sdk_base_url() -> None:
    anthropic = require_sdk("anthropic")
    cassette = CASSETTES / "llm-anthropic-test_prompt.yaml"
    with serving(player(cassette)) as server:
        client = anthropic.Anthropic(api_key="unused", base_url=server.url, max_retries=0)
        body = dict(read_calls(cassette)[0].request["body"])
        del body["stream"]
        extra = {"temperature": body.pop("temperature")}
        with client.messages.stream(**body, extra_body=extra) as stream:
            text = "".join(stream.text_stream)
        with pytest.raises(anthropic.BadRequestError, match="beyond the recording"):
            client.messages.create(**body, extra_body=extra)
    assert text == "- Captain\n- Scoop"


def test_a_cut_stream_ends_the_connection_where_it_was_cut(tmp_path: Path) -> None:
    log = tmp_path / "cut.jsonl"
    replay.write_log(
        log,
        [
            {"type": "recording/request", "call": 0, "api": "openai.chat", "method": "POST",
             "url": "https://api.openai.com/v1/chat/completions", "body": {"stream": True},
             "stream": True},
            {"type": "recording/response", "call": 0, "status": 200,
             "headers": {"content-type": "text/event-stream"}},
            {"type": "recording/event", "call": 0, "event": {"a": 1}},
            {"type": "recording/event", "call": 0, "event": {"a": 2}},
            {"type": "recording/end", "call": 0, "complete": False, "error": "ReadError: cut"},
        ],
    )  # fmt: skip
    with serving(player(log)) as server, pytest.raises(http.client.IncompleteRead) as caught:
        post(server, "/v1/chat/completions", {"stream": True})
    assert caught.value.partial == b'data: {"a":1}\n\ndata: {"a":2}\n\n'


def test_only_loopback_addresses_are_served(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["playback-server", str(EXAMPLE), "--host", "0.0.0.0"]) == 2
    assert "loopback addresses only" in capsys.readouterr().err
    assert main(["playback-server"]) == 2
    assert "give RECORDING or --example" in capsys.readouterr().err
    assert main(["playback-server", str(ROOT / "no-such.jsonl")]) == 2


@pytest.mark.slow
def test_the_command_serves_and_the_docs_curl_runs() -> None:
    """``convo playback-server --example --port 0`` in its own process; then the curl
    command of docs/recording.md, as written but for the port."""
    process = subprocess.Popen(
        [sys.executable, "-m", "replay", "playback-server", "--example", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # printed once listening; EOF if it failed
        match = re.search(r"\(7 calls\) at (http://127\.0\.0\.1:(\d+))$", line.strip())
        assert match, line
        page = (ROOT / "docs" / "recording.md").read_text(encoding="utf-8")
        (command,) = re.findall(r"^\$ (curl .*)$", page, flags=re.M)
        if shutil.which("curl") is None:
            pytest.skip("curl is not installed")
        argv = [a.replace("8765", match.group(2)) for a in shlex.split(command)]
        out = subprocess.run(argv, capture_output=True, check=True, timeout=60).stdout
        assert out.startswith(b"event: message_start\ndata: ")
        assert b"It is sunny" in out
    finally:
        process.terminate()
        process.wait(timeout=60)
