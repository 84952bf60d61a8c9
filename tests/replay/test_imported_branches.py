"""Imports keep the branches people already have: ChatGPT and Claude.ai exports
(every conversation, the path each product showed active), a Claude Code session
with an edited prompt and a retry, a Codex rollout with a rollback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from definitions import builtin
from definitions.branch import Branches
from replay import open_store
from replay.logs.sessions import detect, read_transcript

from .test_cli import assert_one_line_error, run

HERE = Path(__file__).parent / "exports"
CHATGPT = HERE / "chatgpt_conversations.json"
CLAUDE_AI = HERE / "claude_ai_conversations.json"


def texts(events: list[Any], leaf: str | None = None) -> list[str]:
    shown = Branches(events, builtin.DEFINITIONS)
    return [str(n.state.text) for n in shown.show(leaf) if n.kind == "message"]


def thread(path: Path, name: str) -> list[Any]:
    transcript = read_transcript(path.read_bytes(), path=str(path))
    assert transcript is not None
    return next(t.events for t in transcript.threads if t.name == name)


class TestChatGpt:
    def test_detected_and_every_conversation_read(self) -> None:
        assert detect(CHATGPT.read_bytes()) == "chatgpt"
        transcript = read_transcript(CHATGPT.read_bytes(), path=None)
        assert transcript is not None
        assert [t.name for t in transcript.threads] == ["c-arith", "c-hello"]

    def test_the_current_node_is_shown_and_every_version_kept(self) -> None:
        events = thread(CHATGPT, "c-arith")
        assert texts(events) == ["What is 3+3?", "6"]
        tree = Branches(events, builtin.DEFINITIONS).tree
        assert sorted(texts(events, leaf.id)[-1] for leaf in tree.leaves()) == ["4", "5", "6"]
        hello = thread(CHATGPT, "c-hello")
        assert texts(hello) == ["Hello", "Hi! How can I help?"]
        thought = [
            str(n.state.text)
            for n in Branches(hello, builtin.DEFINITIONS).show()
            if n.kind == "reasoning"
        ]
        assert thought == ["The user says hello."]

    def test_replay_marks_the_edit(self, capsys: pytest.CaptureFixture[str]) -> None:
        status, out, _ = run(capsys, "replay", CHATGPT, "--conversation", "c-arith")
        assert status == 0
        assert "What is 3+3?\n(version 2 of 2)" in out
        status, out, _ = run(capsys, "replay", CHATGPT, "--conversation", "c-arith", "--branches")
        assert status == 0
        assert len(out.splitlines()) == 3

    def test_an_unknown_conversation_is_one_line(self, capsys: pytest.CaptureFixture[str]) -> None:
        status, _, err = run(capsys, "replay", CHATGPT, "--conversation", "nope")
        assert status == 2
        assert_one_line_error(err, "no conversation 'nope'", "c-arith, c-hello")

    def test_check_and_context_take_the_conversation(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        status, out, _ = run(capsys, "check", CHATGPT, "--conversation", "c-arith", "--rounds", "1")
        assert status == 0
        assert out.count("deterministic") == 3
        status, out, _ = run(
            capsys,
            "context",
            CHATGPT,
            "--conversation",
            "c-hello",
            "-p",
            "openai-chat",
            "--model",
            "m",
        )
        assert status == 0
        assert json.loads(out)["messages"][0]["content"] == "Hello"

    def test_store_import_brings_every_conversation(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        store = tmp_path / "s.db"
        status, out, _ = run(capsys, "store", "import", store, CHATGPT)
        assert (status, out) == (0, f"imported 2 conversations, {self.count()} events\n")
        with open_store(store) as s:
            assert set(s.conversations()) == {"c-arith", "c-hello"}
            assert texts(s.read("c-arith")) == ["What is 3+3?", "6"]
        status, _, err = run(capsys, "store", "import", store, CHATGPT, "-c", "c-hello")
        assert status == 2
        assert_one_line_error(err, "'c-hello' already exist")

    def count(self) -> int:
        transcript = read_transcript(CHATGPT.read_bytes(), path=None)
        assert transcript is not None
        return sum(len(t.events) for t in transcript.threads)


class TestClaudeAi:
    def test_the_leaf_named_is_shown_and_the_other_answer_kept(self) -> None:
        assert detect(CLAUDE_AI.read_bytes()) == "claude-ai"
        events = thread(CLAUDE_AI, "conv-1")
        assert texts(events) == ["Capital of France?", "Paris.", "And of Italy?", "Rome."]
        tree = Branches(events, builtin.DEFINITIONS).tree
        assert [texts(events, leaf.id)[-1] for leaf in tree.leaves()] == ["Lyon.", "Rome."]

    def test_no_parents_is_one_line_in_order(self) -> None:
        assert texts(thread(CLAUDE_AI, "conv-2")) == ["ping", "pong"]


def claude_code(*records: dict[str, Any]) -> bytes:
    base = {"sessionId": "s", "version": "2.0.0", "cwd": "/w", "isSidechain": False}
    return "".join(json.dumps({**base, **r}) + "\n" for r in records).encode()


def user(uuid: str, parent: str | None, text: str) -> dict[str, Any]:
    return {
        "uuid": uuid,
        "parentUuid": parent,
        "type": "user",
        "message": {"role": "user", "content": text},
    }


def assistant(uuid: str, parent: str, text: str) -> dict[str, Any]:
    message = {
        "id": f"msg-{uuid}",
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
    }
    return {"uuid": uuid, "parentUuid": parent, "type": "assistant", "message": message}


class TestClaudeCode:
    def test_an_edited_prompt_and_a_retry_are_branches(self) -> None:
        """Records as Claude Code writes them: an edit (or rewind) and a retry leave
        two records with the same parentUuid; the harness resumed the last one."""
        data = claude_code(
            user("u1", None, "list files"),
            assistant("a1", "u1", "ls"),
            user("u2", "a1", "now count them"),
            assistant("a2", "u2", "3"),
            assistant("a2b", "u2", "three files"),  # a retry of the answer
            user("u2c", "a1", "now sort them"),  # the prompt edited
            assistant("a3", "u2c", "a b c"),
        )
        transcript = read_transcript(data, path=None)
        assert transcript is not None
        events = transcript.events
        assert texts(events) == ["list files", "ls", "now sort them", "a b c"]
        tree = Branches(events, builtin.DEFINITIONS).tree
        assert [texts(events, leaf.id)[-1] for leaf in tree.leaves()] == [
            "3",
            "three files",
            "a b c",
        ]

    def test_a_session_without_branches_has_no_branch_event(self) -> None:
        data = claude_code(user("u1", None, "hi"), assistant("a1", "u1", "hello"))
        transcript = read_transcript(data, path=None)
        assert transcript is not None
        assert not any(e["type"].startswith("branch.") for e in transcript.events)


def codex(*records: dict[str, Any]) -> bytes:
    return "".join(
        json.dumps({"timestamp": "2025-01-01T00:00:00Z", **r}) + "\n" for r in records
    ).encode()


def item(role: str, text: str) -> dict[str, Any]:
    kind = "input_text" if role == "user" else "output_text"
    return {
        "type": "response_item",
        "payload": {"type": "message", "role": role, "content": [{"type": kind, "text": text}]},
    }


class TestCodex:
    def test_a_rollback_keeps_the_retracted_turns_as_a_branch(self) -> None:
        data = codex(
            {"type": "session_meta", "payload": {"id": "s", "cwd": "/w"}},
            item("user", "<environment_context>cwd</environment_context>"),
            item("user", "one"),
            item("assistant", "1"),
            item("user", "two"),
            item("assistant", "2"),
            {"type": "event_msg", "payload": {"type": "thread_rolled_back", "num_turns": 1}},
            item("user", "deux"),
            item("assistant", "2!"),
        )
        transcript = read_transcript(data, path=None)
        assert transcript is not None
        events = transcript.events
        assert texts(events)[1:] == ["one", "1", "deux", "2!"]
        assert texts(events, "main")[1:] == ["one", "1", "two", "2"]


def test_a_conversation_without_its_tree_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "conversations.json"
    bad.write_text(
        json.dumps(
            [{"mapping": {}, "current_node": None}, {"title": "x", "current_node": 1, "mapping": 3}]
        )
    )
    assert detect(bad.read_bytes()) == "chatgpt"
    with pytest.raises(Exception, match="conversation #1 has no 'mapping' dict"):
        read_transcript(bad.read_bytes(), path=str(bad))
    lenient = read_transcript(bad.read_bytes(), path=str(bad), lenient=True)
    assert lenient is not None
    assert len(lenient.threads) == 1
    assert len(lenient.problems) == 1
