"""``convo context LOG --provider P --calls --policy {none,live,resume} --workbench DIR``
and ``--stats``, on real sessions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay.cli import main
from tests._shared import shared_path

CLAUDE = ("fixtures", "transcripts", "claude-code", "37f83ec9-f2ea-42a9-925e-0d5c105cb6e8.jsonl")
CODEX = (
    "fixtures",
    "transcripts",
    "codex",
    "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl",
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    # The sessions record no request, so no model: each request names "m".
    status = main(["context", *argv, "--model", "m"])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.parametrize("policy", ["none", "live", "resume"])
def test_calls_are_json_lines_one_per_model_call(
    capsys: pytest.CaptureFixture[str], policy: str
) -> None:
    log = str(shared_path(*CODEX))
    status, out, err = run(capsys, log, "--provider", "openai-responses", "--calls")
    assert status == 0
    plain = out.splitlines()
    status, out, err = run(
        capsys, log, "--provider", "openai-responses", "--calls", "--policy", policy
    )
    assert status == 0
    assert err == ""  # no validator problem
    lines = out.splitlines()
    assert len(lines) == len(plain) == 38
    requests = [json.loads(line) for line in lines]
    assert all(isinstance(r["input"], list) for r in requests)
    if policy == "none":
        assert lines == plain  # no policy: the model context's own requests, byte for byte
    else:
        assert sum(map(len, lines)) < 0.5 * sum(map(len, plain))


def test_the_workbench_holds_the_spill_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = str(shared_path(*CLAUDE))
    bench = tmp_path / "wb"
    (bench / "scripts").mkdir(parents=True)
    (bench / "scripts" / "check.sh").write_text("ruff check .\n")
    argv = [
        log,
        "--provider",
        "anthropic",
        "--calls",
        "--policy",
        "live",
        "--workbench",
        str(bench),
    ]
    status, out, _ = run(capsys, *argv)
    assert status == 0
    last = json.loads(out.splitlines()[-1])
    # the index leads as the system prompt
    assert "scripts/check.sh (13 bytes)" in last["system"][0]["text"]
    files = sorted((bench / "spill").iterdir())
    assert len(files) == 11  # the session's eleven results over 4,000 chars
    text = json.dumps(last)
    for path in files:
        assert str(path) in text


@pytest.mark.slow
def test_stats(capsys: pytest.CaptureFixture[str]) -> None:
    log = str(shared_path(*CLAUDE))
    status, out, _ = run(capsys, log, "--provider", "anthropic", "--policy", "resume", "--stats")
    assert status == 0
    stats = json.loads(out)
    assert stats["policy"] == "resume"
    assert stats["calls"] == len(stats["sizes"]) == 76
    assert stats["invalid"] == 0
    assert stats["reduction"] >= 0.3
    assert stats["chars"] == sum(stats["sizes"])
    status, out, _ = run(capsys, log, "--provider", "anthropic", "--policy", "live", "--stats")
    live = json.loads(out)
    assert live["prefix_breaks"] == 0
    assert live["prefix_reuse"] == 1.0


def test_a_bad_policy_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    log = str(shared_path(*CLAUDE))
    status, _, err = run(capsys, log, "--provider", "anthropic", "--policy", "tidy")
    assert status == 2
    assert "--policy" in err
