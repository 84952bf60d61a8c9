"""The recording examples of docs/recording.md run as written, against
``convo playback-server --example`` (the recording the package ships), as the page tells
a reader with no API key to run them.

Each example builds its client the way a user does (``anthropic.Anthropic()``,
``boto3.client("bedrock-runtime", ...)``) and calls the real API; the SDKs' own
settings point them at the server (``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``,
``GOOGLE_GEMINI_BASE_URL``, ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``), with keys that are
not keys. The log each example writes must hold its calls, complete. When an example
changes, the shipped recording no longer matches it: the failure names the first
difference; ``python -m tests.recording.make_example_recording`` writes it again.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import replay
from replay.recording import EXAMPLE
from replay.recording._player import Player, read_calls
from replay.recording._server import serving

from . import _server
from ._sdks import require_sdk
from .make_example_recording import ANSWERS, EXAMPLES, PAGE, environment, provider_of

ROOT = Path(__file__).resolve().parents[2]


def test_the_page_has_an_example_per_sdk() -> None:
    assert {provider_of(code) for code in EXAMPLES} == {"anthropic", "openai", "gemini", "bedrock"}


@pytest.mark.slow
@pytest.mark.parametrize("code", EXAMPLES, ids=[provider_of(c) for c in EXAMPLES])
def test_the_recording_page_examples_run(
    code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = provider_of(code)
    require_sdk({"gemini": "google.genai", "bedrock": "boto3"}.get(provider, provider))
    monkeypatch.chdir(tmp_path)
    player = Player(read_calls(EXAMPLE), speed=None, path=str(EXAMPLE), any_order=True)
    with serving(player) as server:
        for name, value in environment(server.url).items():
            monkeypatch.setenv(name, value)
        exec(compile(code, f"{PAGE}:{provider}", "exec"), {"__name__": "__doc_example__"})
    events = replay.read_log(tmp_path / "calls.jsonl").events()
    calls = [e for e in events if e["type"] == "recording/request"]
    ends = [e for e in events if e["type"] == "recording/end"]
    assert len(calls) == len(ANSWERS[provider])
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
        for name, value in environment(server.base(_server.anthropic_message())).items():
            monkeypatch.setenv(name, value)
        exec(compile(code, "README.md", "exec"), {"__name__": "__doc_example__"})
        assert len(server.requests) == 1  # the recorded call; playback sent nothing
