"""The recording examples of docs/recording.md run as written, against a loopback server.

Each example builds its client the way a user does (``anthropic.Anthropic()``,
``boto3.client("bedrock-runtime", ...)``) and calls the real API; here the SDKs' own
settings point them at a loopback server answering with recorded streams
(``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``, ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``; for
google-genai, which has no such variable, a client whose default base URL is the
server's). The log each example writes must hold its calls, complete.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import replay

from . import _server
from ._sdks import require_sdk

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "recording.md"
_MARKED = re.compile(
    r"^<!-- test: by test_the_recording_page_examples_run -->\n```python\n(.*?)^```", re.S | re.M
)
EXAMPLES = _MARKED.findall(PAGE.read_text(encoding="utf-8"))


def _answers(code: str) -> tuple[str, list[_server.Answer]]:
    if "boto3" in code:
        return "bedrock", [_server.bedrock_stream()]
    if "genai" in code:
        return "gemini", [_server.gemini_stream()]
    if "openai" in code:
        return "openai", [_server.openai_chat_stream(), _server.openai_response()]
    return "anthropic", [_server.anthropic_text_stream()]


def _point_at(provider: str, base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if provider == "anthropic":
        monkeypatch.setenv("ANTHROPIC_BASE_URL", base)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-SECRET-KEY-0000")
    elif provider == "openai":
        monkeypatch.setenv("OPENAI_BASE_URL", f"{base}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-SECRET-KEY-0000")
    elif provider == "bedrock":
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", base)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIASECRETKEYID0000")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-SECRET-ACCESS-KEY-0000")
    else:
        genai = require_sdk("google.genai")
        from google.genai import types

        init = genai.Client.__init__

        def pointed(self: Any, **kwargs: Any) -> None:
            kwargs.setdefault("api_key", "AIza-SECRET-KEY-0000")
            kwargs.setdefault("http_options", types.HttpOptions(base_url=base))
            init(self, **kwargs)

        monkeypatch.setattr(genai.Client, "__init__", pointed)


def test_the_page_has_an_example_per_sdk() -> None:
    assert {_answers(code)[0] for code in EXAMPLES} == {"anthropic", "openai", "gemini", "bedrock"}


@pytest.mark.parametrize("code", EXAMPLES, ids=[_answers(c)[0] for c in EXAMPLES])
def test_the_recording_page_examples_run(
    code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider, answers = _answers(code)
    require_sdk({"gemini": "google.genai", "bedrock": "boto3"}.get(provider, provider))
    monkeypatch.chdir(tmp_path)
    with _server.serving() as server:
        _point_at(provider, server.base(*answers), monkeypatch)
        exec(compile(code, f"{PAGE}:{provider}", "exec"), {"__name__": "__doc_example__"})
    events = replay.read_log(tmp_path / "calls.jsonl").events()
    calls = [e for e in events if e["type"] == "recording/request"]
    ends = [e for e in events if e["type"] == "recording/end"]
    assert len(calls) == len(answers)
    assert all(end["complete"] for end in ends), ends


def test_the_readme_recording_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's record-then-play-back example, its call answered by the loopback
    server while recording; playback must not need it."""
    require_sdk("anthropic")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (code,) = re.findall(
        r"^<!-- test: by test_the_readme_recording_example_runs -->\n```python\n(.*?)^```",
        readme,
        flags=re.S | re.M,
    )
    monkeypatch.chdir(tmp_path)
    with _server.serving() as server:
        _point_at("anthropic", server.base(_server.anthropic_message()), monkeypatch)
        exec(compile(code, "README.md", "exec"), {"__name__": "__doc_example__"})
        assert len(server.requests) == 1  # the recorded call; playback sent nothing
