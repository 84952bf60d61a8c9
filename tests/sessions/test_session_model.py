"""An agent session names its model: the next request needs no ``--model``.

Claude Code writes each assistant record's ``message.model``, Codex each turn's
``turn_context.model`` (its provider in ``session_meta``), OpenHands the run's
``llm_config.model`` and SWE-agent its run config's (litellm's names, the provider
prefix saying whose). The
importers write the latest as a ``session.model`` event; ``convo context`` carries
it to the session's own provider, ``--model`` still overriding, and says so where
the session's model is another provider's or the session names none.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replay import load_events
from replay.cli import main
from replay.context import ContextOptions, next_request
from replay.logs.sessions import MODEL_EVENT, read_transcript
from tests._shared import shared_path

CLAUDE = ("claude-code", "37f83ec9-f2ea-42a9-925e-0d5c105cb6e8.jsonl")
CODEX = ("codex", "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl")
OPENHANDS = ("openhands", "multi_swe_bench_examples_output.jsonl")


def session(*parts: str) -> Path:
    return shared_path("fixtures", "transcripts", *parts)


@pytest.mark.parametrize(
    ("parts", "provider", "model"),
    [
        (CLAUDE, "anthropic", "claude-sonnet-4-20250514"),
        (CODEX, "openai-responses", "gpt-5.1-codex"),
        # litellm's "openai/NAME": NAME on an OpenAI-compatible endpoint
        (OPENHANDS, "openai-chat", "openrouter-llama-4-maverick"),
    ],
)
def test_a_session_continues_with_its_own_model(
    parts: tuple[str, str], provider: str, model: str
) -> None:
    events = load_events(session(*parts)).events
    assert next_request(events, provider).request["model"] == model
    options = ContextOptions(model="override")
    assert next_request(events, provider, options=options).request["model"] == "override"
    other = "openai-chat" if provider == "anthropic" else "anthropic"
    with pytest.raises(ValueError, match=rf"the log's model '{model}' is not {other}'s"):
        next_request(events, other)


def test_the_latest_model_named_is_the_one_carried() -> None:
    """A real Claude Code session whose later turns an agent made with another model
    (``/model``), and one of Claude Code's own notices (model ``<synthetic>``)."""
    records = [json.loads(line) for line in session(*CLAUDE).read_bytes().splitlines()]
    answers = [r for r in records if r.get("type") == "assistant"]
    for record in answers[len(answers) // 2 :]:
        record["message"] = {**record["message"], "model": "claude-opus-4-1"}
    notice = {**answers[-1], "uuid": "notice", "parentUuid": answers[-1]["uuid"]}
    notice["message"] = {
        **answers[-1]["message"],
        "id": "notice",
        "model": "<synthetic>",
        "content": [{"type": "text", "text": "No response requested."}],
    }
    records.append(notice)
    data = b"".join(json.dumps(r).encode() + b"\n" for r in records)
    transcript = read_transcript(data, path="edited.jsonl")
    assert transcript is not None
    named = [(e["model"], e["provider"]) for e in transcript.events if e["type"] == MODEL_EVENT]
    assert named == [
        ("claude-sonnet-4-20250514", "anthropic"),
        ("claude-opus-4-1", "anthropic"),
    ]
    assert next_request(transcript.events, "anthropic").request["model"] == "claude-opus-4-1"


def test_the_command_needs_no_model_for_a_session(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status = main(["context", str(session(*CODEX)), "-p", "openai-responses"])
    out, err = capsys.readouterr()
    assert (status, json.loads(out)["model"], err) == (0, "gpt-5.1-codex", "")
    # A session that names no model (this SWE-agent trajectory replayed recorded
    # actions: its model is "replay"): still an error, one line.
    traj = session("swe-agent", "marshmallow-code__marshmallow-1867.traj")
    status = main(["context", str(traj), "-p", "anthropic"])
    out, err = capsys.readouterr()
    assert (status, out) == (2, "")
    assert "no model known for anthropic (the log records no request naming one)" in err


def test_a_bare_litellm_name_goes_to_the_provider_asked() -> None:
    """An OpenHands run whose config names a model without litellm's provider prefix:
    the session does not say whose it is, so it is carried to the provider asked."""
    run: dict[str, Any] = json.loads(session(*OPENHANDS).read_text().splitlines()[0])
    run["metadata"]["llm_config"]["model"] = "claude-3-5-sonnet-20241022"
    data = json.dumps(run).encode() + b"\n"
    transcript = read_transcript(data, path="run.jsonl")
    assert transcript is not None
    for provider in ("anthropic", "openai-chat"):
        request = next_request(transcript.events, provider).request
        assert request["model"] == "claude-3-5-sonnet-20241022"


def test_a_swe_agent_run_names_its_model_in_its_config() -> None:
    """A real trajectory, its run config naming a litellm model: read as OpenHands'
    (the real one's config names ``replay``, SWE-agent's replay of recorded actions:
    no model)."""
    path = session("swe-agent", "marshmallow-code__marshmallow-1867.traj")
    trajectory = json.loads(path.read_text())
    config = trajectory["replay_config"]
    config = json.loads(config) if isinstance(config, str) else config
    assert config["agent"]["model"]["name"] == "replay"
    config["agent"]["model"]["name"] = "anthropic/claude-3-5-sonnet-20241022"
    trajectory["replay_config"] = json.dumps(config)
    transcript = read_transcript(json.dumps(trajectory).encode(), path="run.traj")
    assert transcript is not None
    request = next_request(transcript.events, "anthropic").request
    assert request["model"] == "claude-3-5-sonnet-20241022"
    with pytest.raises(ValueError, match="is not openai-chat's"):
        next_request(transcript.events, "openai-chat")
