"""Our own compaction: ``compaction_event``, ``convo compact``, ``convo check`` on it, and
the ``Compactor`` policy hook deciding when."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from engine import Compactor, Message, Role
from replay.cli import main
from replay.context._compaction import compaction_due, compaction_event
from replay.context._requests import check_requests, requests

SUMMARY = "OUR-SUMMARY"


def session() -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for n in range(4):
        events += [
            {"type": "message.start", "id": f"u{n}", "role": "user", "text": f"ask{n}"},
            {"type": "message.start", "id": f"a{n}", "role": "assistant", "text": f"answer{n}"},
        ]
    return events


def body(events: list[dict[str, Any]]) -> str:
    last = requests(events, "openai-chat")[-1]
    assert last.problems == ()
    return msgspec.json.encode(last.request).decode()


class TestCompactionEvent:
    """``compaction_event`` replaces the log through a position; the rest follows."""

    def test_through_a_position(self) -> None:
        events = session()
        mark = compaction_event(events, SUMMARY, through=3)
        assert mark["through"] == "message:a1"
        assert mark["messages"] == 4
        text = body([*events, mark])
        assert SUMMARY in text
        assert "ask1" not in text
        assert "answer1" not in text
        assert text.index(SUMMARY) < text.index("ask2") < text.index("answer3")
        assert check_requests([*events, mark], "anthropic") is None

    def test_a_compaction_adds_no_call(self) -> None:
        """The history a compaction keeps verbatim (after ``through``) is sent again
        after the summary (``Compaction.echo``), but its model turns were answered
        already: each call before the mark is as it was, and only the next request
        follows (the echoed turns once counted as calls of their own)."""
        events = session()
        calls = requests(events, "openai-chat")
        for through in range(len(events)):
            compacted = requests(
                [*events, compaction_event(events, SUMMARY, through=through)], "openai-chat"
            )
            assert [c.request for c in compacted[:-1]] == [c.request for c in calls[:-1]]
            assert SUMMARY in msgspec.json.encode(compacted[-1].request).decode()

    def test_everything_by_default(self) -> None:
        events = session()
        mark = compaction_event(events, SUMMARY)
        assert "through" not in mark
        assert json.loads(body([*events, mark]))["messages"] == [
            {"role": "user", "content": [{"type": "text", "text": SUMMARY}]}
        ]

    def test_a_position_outside_the_log(self) -> None:
        with pytest.raises(ValueError, match=r"the log has events 0\.\.7"):
            compaction_event(session(), SUMMARY, through=8)

    def test_a_protocol_recording_is_refused(self) -> None:
        events = [{"type": "message_start", "message": {"id": "m", "content": []}}]
        with pytest.raises(ValueError, match="built-in kinds"):
            compaction_event(events, SUMMARY)


class TestCompactor:
    """The policy hook says *when*: the request from the latest compaction on."""

    def test_due_at_the_threshold(self) -> None:
        compactor = Compactor(threshold=10)
        assert not compactor.due([Message(role=Role.user, content="123456789")])
        assert compactor.due([Message(role=Role.user, content="1234567890")])

    def test_a_compaction_resets_the_count(self) -> None:
        events = session()
        compactor = Compactor(threshold=30)
        assert compaction_due(events, compactor)
        assert not compaction_due([*events, compaction_event(events, "short")], compactor)

    def test_bad_threshold(self) -> None:
        with pytest.raises(ValueError, match="threshold"):
            Compactor(threshold=0)


class TestCli:
    """``convo compact`` appends; ``convo context`` and ``convo check`` honour it."""

    def test_compact_context_check(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        log = tmp_path / "log.jsonl"
        log.write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in session()))
        summary = tmp_path / "summary.txt"
        summary.write_text(SUMMARY, encoding="utf-8")
        assert main(["compact", str(log), "--summary", str(summary), "--through", "3"]) == 0
        last = json.loads(log.read_bytes().splitlines()[-1])
        assert last["type"] == "compaction.mark"
        capsys.readouterr()
        assert main(["context", str(log), "-p", "anthropic", "--model", "m"]) == 0
        out = capsys.readouterr().out
        assert SUMMARY in out
        assert "ask1" not in out
        assert (
            main(["context", str(log), "-p", "anthropic", "--model", "m", "--before-compaction"])
            == 0
        )
        out = capsys.readouterr().out
        assert SUMMARY not in out
        assert "ask1" in out
        assert main(["check", str(log)]) == 0
        assert "compaction honoured" in capsys.readouterr().out

    def test_bad_position_exits_2(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        log = tmp_path / "log.jsonl"
        log.write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in session()))
        summary = tmp_path / "summary.txt"
        summary.write_text(SUMMARY, encoding="utf-8")
        assert main(["compact", str(log), "--summary", str(summary), "--through", "99"]) == 2
        assert "the log has events 0..7" in capsys.readouterr().err


def test_the_page_folds_the_history_before_the_latest_compaction() -> None:
    from definitions import builtin
    from replay import render_html, replay

    events = session()
    nodes = replay(
        [*events, compaction_event(events, SUMMARY, through=3), *session()[:2]], builtin.DEFINITIONS
    )
    page = render_html(nodes, builtin.DEFINITIONS)
    folded, _, rest = page.partition("</details>\n<article")
    assert '<details class="compacted"><summary>8 rows before the compaction' in folded
    assert "ask0" in folded  # still there, readable
    assert SUMMARY in rest
