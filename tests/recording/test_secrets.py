"""The secrets suite: values planted wherever a request carries credentials (headers,
userinfo, query parameters under every name a service uses, percent-encoded names, an
API key or a Bedrock session token with a trailing newline the HTTP library refuses and
quotes in its error) are searched for in every byte of what the recorder and the
cassette importer write. One rule decides (``replay.logs._secrets``); each test prints
what it planted and where it looked."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote_plus

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import replay
from replay import load_events
from replay.logs._secrets import QUERY_PARAMETERS, kept_headers, kept_url, scrub, withheld
from replay.recording._recorder import Recorder, open_sink

from . import _sdks, _server

PLANTED = "PLANTED"
# Query parameter names that have carried credentials in the wild (the recorder's old
# deny-list missed the first six, the cassette importer's most of them).
SECRET_PARAMETERS = (
    "auth",
    "password",
    "pwd",
    "code",
    "jwt",
    "session",
    "access_token",
    "token",
    "apikey",
    "api_key",
    "key",
    "k%65y",
    "%6Bey",
    "sig",
    "X-Goog-Signature",
    "X-Goog-Credential",
    "X-Amz-Signature",
    "X-Amz-Credential",
    "X-Amz-Security-Token",
    "client_secret",
    "refresh_token",
)
SECRET_HEADERS = (
    "Authorization",
    "Proxy-Authorization",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "Cookie",
    "Set-Cookie",
    "X-Amz-Security-Token",
    "x-amz-content-sha256",
    "X-Custom-Credential",
)


def planted_url(path: str = "/v1/messages") -> str:
    query = "&".join(f"{name}={PLANTED}-q{n}" for n, name in enumerate(SECRET_PARAMETERS))
    return f"https://user:{PLANTED}-pw@api.example.com{path}?alt=sse&{query}#{PLANTED}-frag"


def planted_headers() -> list[tuple[str, str]]:
    headers = [(name, f"Bearer {PLANTED}-h{n}\n") for n, name in enumerate(SECRET_HEADERS)]
    return [*headers, ("content-type", "application/json")]


def assert_clean(data: bytes, where: str) -> None:
    assert PLANTED.encode() not in data, f"a planted secret reached {where}: {data[:2000]!r}"


def test_the_rule_keeps_only_what_it_lists() -> None:
    url = kept_url(planted_url())
    assert url == "https://api.example.com/v1/messages?alt=sse"
    headers = kept_headers(planted_headers(), response=False)
    assert headers == {"content-type": "application/json"}
    assert kept_headers(planted_headers(), response=True) == {"content-type": "application/json"}
    # A cassette's odd shapes: list values joined, anything else no headers at all.
    assert kept_headers({"Content-Type": ["a", "b"]}, response=True) == {"content-type": "a, b"}
    assert kept_headers(42, response=False) == {}
    assert kept_url("http://[::1") == ""
    print(
        f"secrets: {len(SECRET_PARAMETERS)} parameters, userinfo, a fragment and "
        f"{len(SECRET_HEADERS)} headers planted; the rule kept none of them"
    )


_names = st.one_of(
    st.sampled_from(sorted(QUERY_PARAMETERS)).map(str.upper),
    st.text(st.characters(codec="utf-8", exclude_characters="&=#"), min_size=1, max_size=12),
)


@settings(max_examples=300, deadline=None)
@given(name=_names, encode=st.booleans())
def test_a_parameter_not_listed_never_survives(name: str, encode: bool) -> None:
    spelled = quote(name, safe="") if encode else name
    listed = unquote_plus(spelled).strip().lower() in QUERY_PARAMETERS
    url = kept_url(f"https://h.example/p?{spelled}=SECRETVALUE")
    assert ("SECRETVALUE" in url) == listed


@settings(max_examples=200, deadline=None)
@given(
    secret=st.text(st.characters(codec="utf-8"), min_size=8, max_size=40).filter(
        lambda s: len(s.strip()) >= 8 and len(s.split()) == 1
    ),
    around=st.text(max_size=20),
)
def test_an_error_text_never_quotes_a_withheld_value(secret: str, around: str) -> None:
    """Whatever the header value (control characters, non-ASCII, a trailing newline),
    the text keeps none of the forms a message may quote it in."""
    withheld_values = withheld("https://h.example/v1", [("x-api-key", secret)])
    for text in (
        f"{around}{secret}{around}",
        f"Illegal header value {secret.encode('utf-8', 'replace')!r}",
        f"bad value {secret!r}",
    ):
        scrubbed = scrub(text, withheld_values)
        assert secret.strip() not in scrubbed.replace("[redacted]", "\0")


def test_the_recorder_writes_no_planted_value_even_in_an_error(tmp_path: Path) -> None:
    log = tmp_path / "planted.jsonl"
    recorder = Recorder(open_sink(log, None))
    headers = planted_headers()
    call = recorder.begin("anthropic", "POST", planted_url(), headers, b"{}", "/v1/messages")
    call.response(401, headers)
    # An error quoting the whole request as an HTTP library might.
    call.finish(ValueError(f"request to {planted_url()} with {headers!r} failed: {headers}"))
    recorder.close()
    data = log.read_bytes()
    assert_clean(data, "the recorder's log")
    events = replay.read_log(log).events()
    assert events[-1]["complete"] is False
    assert "[redacted]" in events[-1]["error"]
    print(
        f"secrets: recorder, planted {len(SECRET_PARAMETERS) + len(SECRET_HEADERS) + 2}, "
        f"searched {len(data)} bytes, found none"
    )


def _client(provider: str, base: str, asynchronous: bool) -> Any:
    """A client whose credential has a trailing newline (read from a file)."""
    if provider == "bedrock":
        boto3 = _sdks.require_sdk("boto3")
        from botocore.config import Config

        return boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            endpoint_url=base,
            aws_access_key_id="AKIA0000000000000000",
            aws_secret_access_key=f"{PLANTED}-secret-access-key",
            aws_session_token=f"{PLANTED}-session-token\n",
            config=Config(retries={"total_max_attempts": 1}),
        )
    made = _sdks.client(provider, base, asynchronous)
    made.api_key = f"{PLANTED}-api-key-0000\n"
    return made


KEYED = [("anthropic", False), ("anthropic", True), ("openai_chat", False), ("bedrock", False)]


@pytest.mark.parametrize("case", KEYED, ids=lambda c: f"{c[0]}-{'async' if c[1] else 'sync'}")
def test_a_credential_with_a_newline_never_reaches_the_log(
    tmp_path: Path, case: tuple[str, bool]
) -> None:
    provider, asynchronous = case
    log = tmp_path / "newline.jsonl"
    with _server.serving() as server:
        base = server.base(_sdks.ANSWERS[provider, False]())
        client = replay.record(_client(provider, base, asynchronous), log)
        try:  # the SDK refuses the header, as it does unrecorded
            if asynchronous:
                asyncio.run(_sdks._async_call(provider, False, client))
            else:
                _sdks._sync_call(provider, False, client)
        except Exception as exc:
            raised = exc
        else:
            pytest.fail("the SDK sent a header value with a newline")
    data = log.read_bytes()
    assert_clean(data, f"the {provider} log")
    end = replay.read_log(log).events()[-1]
    assert end["type"] == "recording/end"
    assert end["complete"] is False
    print(
        f"secrets: {provider} with a newline in its credential raised "
        f"{type(raised).__name__}; the log's error reads {end['error']!r}"
    )


def _cassette() -> dict[str, Any]:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    answer = {"id": "x", "type": "message", "role": "assistant", "content": []}

    def headers() -> dict[str, list[str]]:  # a dict each: YAML would write one as an alias
        return {name: [value] for name, value in planted_headers()}

    return {
        "interactions": [
            {
                "request": {
                    "method": "POST",
                    "uri": planted_url(),
                    "headers": headers(),
                    "body": json.dumps(body),
                },
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": headers(),
                    "body": {"string": json.dumps(answer)},
                },
            }
        ],
        "version": 1,
    }


@pytest.mark.parametrize("form", ["json", "yaml"])
def test_an_imported_cassette_keeps_no_planted_value(tmp_path: Path, form: str) -> None:
    path = tmp_path / f"planted.{form}"
    if form == "yaml":
        yaml = pytest.importorskip("yaml", reason="PyYAML (the test extra) reads YAML cassettes")
        path.write_text(yaml.safe_dump(_cassette()))
    else:
        path.write_text(json.dumps(_cassette()))
    loaded = load_events(path)
    assert [e["type"] for e in loaded.events][:2] == ["recording/request", "recording/response"]
    written = tmp_path / "imported.jsonl"
    replay.write_log(written, loaded.events)
    data = written.read_bytes()
    assert_clean(data, "the imported cassette")
    assert loaded.events[0]["url"] == "https://api.example.com/v1/messages?alt=sse"
    print(f"secrets: {form} cassette, searched {len(data)} bytes of the import, found none")


def test_convo_store_import_keeps_no_planted_value(tmp_path: Path) -> None:
    """The CLI's import path writes the store file: its every byte is searched too."""
    from replay.cli import main

    cassette = tmp_path / "planted.json"
    cassette.write_text(json.dumps(_cassette()))
    store = tmp_path / "events.db"
    assert main(["store", "import", os.fspath(store), os.fspath(cassette)]) in (0, None)
    data = b"".join(p.read_bytes() for p in tmp_path.glob("events.db*"))
    assert_clean(data, "the store")
    print(f"secrets: convo store import, searched {len(data)} bytes of the store, found none")
