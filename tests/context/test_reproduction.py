"""Reproduction as a figure: every recorded request after the first is the request
projected after the call before it, up to its new input; where it is not, the first
difference is named and told apart as the agent's edit or a projection defect.

Held on every multi-call recording and cassette of ``../shared`` and of the tests,
and on real cassettes of another project (``samples/``, see its README)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from replay import load_events
from replay.cli import main
from replay.context import _recorded
from replay.context._recorded import reproduce
from tests._shared import SHARED

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = Path(__file__).parent / "samples"
THINKING = SAMPLES / "pydantic-ai-test_anthropic_tool_with_thinking.yaml"
_MARKERS = (b"recording/request", b"interactions:", b'"interactions"')


def _recordings() -> list[Path]:
    """Every file under ``../shared/fixtures/recorded`` and ``tests/`` that may hold a
    recording or a cassette (its bytes name one)."""
    roots = [SHARED / "fixtures" / "recorded", ROOT / "tests"]
    found = []
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.suffix not in (".jsonl", ".json", ".yaml", ".yml") or not path.is_file():
                continue
            head = path.read_bytes()[:4096]
            if any(marker in head for marker in _MARKERS):
                found.append(path)
    return found


def _multi_call(path: Path) -> list[Any] | None:
    try:
        events = list(load_events(path, lenient=True).events)
    except Exception:  # not a log at all (a test's own data): nothing to reproduce
        return None
    calls = [e for e in events if isinstance(e, dict) and e.get("type") == "recording/request"]
    return events if len(calls) > 1 else None


RECORDINGS = [p for p in _recordings() if _multi_call(p) is not None]


def test_the_recordings_are_found() -> None:
    names = {p.name for p in RECORDINGS}
    assert {p.name for p in SAMPLES.glob("*.yaml")} <= names
    assert "weather.jsonl" in names
    if SHARED.is_dir():
        assert "pydantic-ai-test_google_model_iter_stream.yaml" in names


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
def test_every_multi_call_recording_is_reproduced_or_edited_by_its_agent(path: Path) -> None:
    events = _multi_call(path)
    assert events is not None
    figure = reproduce(events)
    assert figure.compared, "a multi-call recording compares its later requests"
    defects = [r.describe() for r in figure.compared if r.verdict == "defect"]
    assert defects == []


def test_the_real_cassettes_are_reproduced_exactly() -> None:
    for path in SAMPLES.glob("*.yaml"):
        figure = reproduce(load_events(path).events)
        assert [r.verdict for r in figure.compared] == ["reproduced"], path.name


# -- edits and defects told apart ----------------------------------------------------------


def _thinking() -> list[dict[str, Any]]:
    return copy.deepcopy(list(load_events(THINKING).events))


def _second_request(events: list[dict[str, Any]]) -> dict[str, Any]:
    return [e for e in events if e["type"] == "recording/request"][1]["body"]


def _only(events: list[dict[str, Any]]) -> _recorded.Reproduction:
    (one,) = reproduce(events).compared
    return one


def test_an_answer_sent_back_without_its_thinking_is_the_agents_edit() -> None:
    events = _thinking()
    echo = _second_request(events)["messages"][1]["content"]
    echo[:] = [b for b in echo if b["type"] != "thinking"]
    got = _only(events)
    assert (got.verdict, got.difference) == ("edit", "it sent the answer back without its thinking")


def test_a_dropped_turn_and_a_changed_setting_are_the_agents_edits() -> None:
    events = _thinking()
    first = next(e for e in events if e["type"] == "recording/request")["body"]
    first["messages"][:0] = [
        {"role": "user", "content": "an earlier turn"},
        {"role": "assistant", "content": "noted"},
    ]
    got = _only(events)
    assert got.verdict == "edit"
    assert got.difference == "it dropped message 0-1 (user 'an earlier turn')"
    events = _thinking()
    _second_request(events)["max_tokens"] = 512
    got = _only(events)
    assert (got.verdict, got.difference) == ("edit", "it changed max_tokens: 4096 before, 512 now")


def test_an_answer_the_projection_reads_wrong_is_a_defect() -> None:
    events = _thinking()
    body = next(e for e in events if e["type"] == "recording/body")["body"]
    body["content"][1]["text"] = "Something the model never said."
    got = _only(events)
    assert got.verdict == "defect"
    assert got.difference.startswith("the answer sent back is not the projected one")


def test_what_the_projection_loses_is_a_defect(monkeypatch: pytest.MonkeyPatch) -> None:
    real = _recorded.carried

    def forgetful(*args: Any) -> Any:
        head = real(*args)
        options = {k: v for k, v in head.options.items() if k != "tool_choice"}
        return type(head)(provider=head.provider, model=head.model, options=options)

    monkeypatch.setattr(_recorded, "carried", forgetful)
    got = _only(_thinking())
    assert got.verdict == "defect"
    assert got.difference == (
        'tool_choice not carried: the projection has nothing, the request {"type":"auto"}'
    )
    monkeypatch.setattr(_recorded, "carried", real)
    every = _recorded.conversation_messages
    monkeypatch.setattr(_recorded, "conversation_messages", lambda nodes: every(nodes)[:-1])
    got = _only(_thinking())
    assert got.verdict == "defect"
    assert got.difference.startswith("the projection lacks the answer it sent back")
    monkeypatch.setattr(_recorded, "conversation_messages", lambda nodes: [])
    got = _only(_thinking())
    assert got.verdict == "defect"
    assert got.difference == (
        "the projection lacks message 0: user 'What is the largest city in the user country?'"
    )


def test_convo_check_reports_the_figure(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(THINKING), "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert "requests: 1 of 1 requests reproduced" in out
