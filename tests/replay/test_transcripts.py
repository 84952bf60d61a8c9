"""Real agent sessions (../shared/fixtures/transcripts) import as built-in events."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from definitions import builtin, event_type
from definitions.branch import Branches
from replay import LogError, load_events, replay
from replay.logs.sessions import Transcript, detect, read_transcript
from tests._shared import SHARED, shared_files, shared_path

TRANSCRIPTS = ("fixtures", "transcripts")


def sessions() -> list[Any]:
    """Every session file: the .jsonl files (side files included) and the .traj ones."""
    params: list[Any] = []
    for pattern in ("*.jsonl", "*.traj"):
        for sub in ("claude-code", "codex", "openhands", "swe-agent"):
            params += [
                p
                for p in shared_files(*TRANSCRIPTS, sub, pattern=pattern)
                if getattr(p, "id", "") != "shared-absent"
            ]
    side = SHARED.joinpath(*TRANSCRIPTS, "claude-code")
    if side.is_dir():
        params += [pytest.param(p, id=p.name) for p in sorted(side.glob("*/subagents/*.jsonl"))]
    return params or shared_files(*TRANSCRIPTS)


def imported(path: Path) -> Transcript:
    transcript = read_transcript(path.read_bytes(), path=str(path))
    assert transcript is not None, f"{path} not detected as a session"
    return transcript


def kinds(events: list[dict[str, Any]]) -> Counter[str]:
    return Counter(e["type"] for e in events)


def claude(name: str) -> Path:
    return shared_path(*TRANSCRIPTS, "claude-code", name)


@pytest.mark.parametrize("path", sessions())
class TestEverySession:
    """Each session folds with the built-in kinds, its calls paired, nothing lost."""

    def test_folds_with_the_builtin_kinds(self, path: Path) -> None:
        transcript = imported(path)
        assert transcript.threads
        assert transcript.events
        for thread in transcript.threads:
            nodes = replay(thread.events, builtin.DEFINITIONS, event_type=event_type)
            assert nodes
            assert {n.kind for n in nodes} <= {d.kind for d in builtin.DEFINITIONS}

    def test_load_events_is_the_primary_thread(self, path: Path) -> None:
        loaded = load_events(path)
        assert loaded.format == imported(path).format
        assert loaded.events == imported(path).events
        typed = load_events(path, types=builtin.Event)
        assert len(typed.events) == len(loaded.events)

    def test_every_outcome_has_its_call_and_ids_are_unique(self, path: Path) -> None:
        for thread in imported(path).threads:
            calls: set[str] = set()
            outcomes: set[str] = set()
            opened: list[str] = []
            for event in thread.events:
                kind = event["type"]
                if kind.endswith(".start") or kind in ("approval.request", "interruption.mark"):
                    opened.append(event["id"])
                if kind == "tool_call.start":
                    calls.add(event["id"])
                if kind in ("tool_call.result", "tool_call.error", "tool_call.denied"):
                    assert event["id"] in calls, event
                    assert event["id"] not in outcomes, event
                    outcomes.add(event["id"])
            assert len(opened) == len(set(opened))


class TestClaudeCode:
    """Denials, interruptions, non-conversation records, chains and sub-agents."""

    SESSION = "37f83ec9-f2ea-42a9-925e-0d5c105cb6e8.jsonl"

    def test_counts_match_the_records(self) -> None:
        path = claude(self.SESSION)
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        uses = [
            b
            for r in records
            if r.get("type") == "assistant"
            for b in r["message"]["content"]
            if b.get("type") == "tool_use"
        ]
        events = imported(path).events
        found = kinds(events)
        assert found["tool_call.start"] == len(uses) == 101
        outcomes = ("tool_call.result", "tool_call.error", "tool_call.denied")
        assert sum(found[k] for k in outcomes) == 101

    def test_denials_are_the_approval_kinds_decision(self) -> None:
        events = imported(claude(self.SESSION)).events
        decisions = [e for e in events if e["type"] == "approval.decision"]
        assert [d["decision"] for d in decisions] == ["denied", "denied"]
        denied = [e["id"] for e in events if e["type"] == "tool_call.denied"]
        requests = [e for e in events if e["type"] == "approval.request"]
        assert [r["tool_call_id"] for r in requests] == denied
        assert all(r["action"].startswith(("Edit", "MultiEdit", "Write", "Bash")) for r in requests)

    def test_each_denial_is_followed_by_the_users_interruption(self) -> None:
        events = imported(claude(self.SESSION)).events
        marks = [i for i, e in enumerate(events) if e["type"] == "interruption.mark"]
        assert len(marks) == 2
        for index in marks:
            assert events[index]["cause"] == "user"
            assert events[index - 1]["type"] == "tool_call.denied"
        # the harness's notice is a structural fact, not a user turn
        assert not any(
            e["type"] == "message.start" and e["text"].startswith("[Request interrupted")
            for e in events
        )

    def test_non_conversation_records_stay_out(self) -> None:
        for name in (self.SESSION, "ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl"):
            events = imported(claude(name)).events
            blob = json.dumps(events)
            assert "\\u001b[1mPostToolUse" not in blob  # hook notices (system records)
            assert "Status set to busy" not in blob  # hook attachments
            assert "trackedFileBackups" not in blob  # file-history-snapshot
            assert "Centralizing Project Name Logic" not in blob  # summaries

    def test_parallel_calls_keep_their_results(self) -> None:
        # 2.1.x hangs each parallel call's result off that call's own record
        transcript = imported(claude("ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl"))
        for thread in transcript.threads:
            found = kinds(thread.events)
            assert found["tool_call.start"] == found["tool_call.result"] + found["tool_call.error"]
            assert found["interruption.mark"] == 0

    def test_side_file_is_a_thread_with_its_big_result(self) -> None:
        transcript = imported(claude("ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl"))
        names = [t.name for t in transcript.threads]
        assert names == ["main", "agent-a4ca7529859c158c2"]
        main = kinds(transcript.threads[0].events)
        agent_calls = [
            e
            for e in transcript.threads[0].events
            if e["type"] == "tool_call.start" and e["name"] == "Agent"
        ]
        assert len(agent_calls) == 6
        assert main["reasoning.redacted"] == 14
        sizes = [
            len(e["output"])
            for e in transcript.threads[1].events
            if e["type"] == "tool_call.result" and isinstance(e["output"], str)
        ]
        assert max(sizes) == 42_575

    def test_sidechains_in_the_main_file_are_threads(self) -> None:
        transcript = imported(claude("fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"))
        assert [t.name for t in transcript.threads][:2] == ["main", "sidechain-1"]
        assert len(transcript.threads) == 6
        total = sum(kinds(t.events)["tool_call.start"] for t in transcript.threads)
        assert total == 167
        # sub-agent work never reaches the main thread
        assert kinds(transcript.threads[0].events)["tool_call.start"] == 11

    def test_signatures_stay_opaque_reasoning(self) -> None:
        events = imported(claude("ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl")).events
        redacted = [e for e in events if e["type"] == "reasoning.redacted"]
        assert all(e["variant"] == "encrypted" and e["data"] for e in redacted)


class TestStructuralMarkers:
    """Denials and interruptions come from fields, never from text the model or user wrote."""

    def record(self, **fields: Any) -> dict[str, Any]:
        return {"sessionId": "s", "isSidechain": False, **fields}

    def bash_call(self) -> dict[str, Any]:
        # the model's turn "a1" after user turn "u1": one Bash call, "t1"
        use = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}
        return self.record(
            uuid="a1", parentUuid="u1", type="assistant", message={"id": "m1", "content": [use]}
        )

    def lines(self, *records: dict[str, Any]) -> bytes:
        return b"".join(json.dumps(r).encode() + b"\n" for r in records)

    def session(self, result_text: str, **marker: Any) -> list[dict[str, Any]]:
        data = self.lines(
            self.record(uuid="u1", parentUuid=None, type="user", message={"content": "hi"}),
            self.bash_call(),
            self.record(
                uuid="u2",
                parentUuid="a1",
                type="user",
                message={
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t1",
                            "content": result_text,
                            "is_error": True,
                        }
                    ]
                },
                **marker,
            ),
        )
        transcript = read_transcript(data, path="s.jsonl")
        assert transcript is not None
        assert transcript.format == "claude-code"
        return transcript.events

    def test_text_quoting_a_refusal_is_an_error_not_a_denial(self) -> None:
        events = self.session("the log said: The user doesn't want to proceed with this tool use.")
        assert kinds(events)["tool_call.error"] == 1
        assert kinds(events)["approval.decision"] == 0

    def test_the_denial_kind_marker_decides(self) -> None:
        events = self.session("permission rule: Bash denied", toolDenialKind="permission-rule")
        assert kinds(events)["approval.decision"] == 1

    def test_an_unanswered_call_is_cut_when_the_user_speaks(self) -> None:
        data = self.lines(
            self.record(uuid="u1", parentUuid=None, type="user", message={"content": "go"}),
            self.bash_call(),
            self.record(uuid="u2", parentUuid="a1", type="user", message={"content": "stop"}),
            self.record(
                uuid="a2",
                parentUuid="u2",
                type="assistant",
                isApiErrorMessage=True,
                message={"id": "m2", "content": [{"type": "text", "text": "API Error"}]},
            ),
        )
        transcript = read_transcript(data, path=None)
        assert transcript is not None
        marks = [e for e in transcript.events if e["type"] == "interruption.mark"]
        assert [(m["cause"], m.get("tool_call_id")) for m in marks] == [
            ("cut", "t1"),
            ("retry_error", None),
        ]

    def test_abandoned_branches_are_kept_as_branches(self) -> None:
        """The view is the chain the harness resumed; the abandoned one is a branch."""
        data = self.lines(
            self.record(uuid="u1", parentUuid=None, type="user", message={"content": "first"}),
            self.record(uuid="u2", parentUuid=None, type="user", message={"content": "edited"}),
        )
        transcript = read_transcript(data, path=None)
        assert transcript is not None
        shown = Branches(transcript.events, builtin.DEFINITIONS)
        assert [str(n.state.text) for n in shown.show()] == ["edited"]
        assert [str(n.state.text) for n in shown.show("main")] == ["first"]

    def test_a_bad_line_names_the_file_and_line(self) -> None:
        data = self.lines(self.record(uuid="u1", parentUuid=None, type="user", message={}))
        data += b"{not json\n" + data
        with pytest.raises(LogError, match=r"s\.jsonl, line 2"):
            read_transcript(data, path="s.jsonl")
        transcript = read_transcript(data, path="s.jsonl", lenient=True)
        assert transcript is not None
        assert len(transcript.problems) == 1


class TestOtherFormats:
    def test_codex_rollout(self) -> None:
        path = shared_path(*TRANSCRIPTS, "codex")
        transcript = imported(next(path.glob("*.jsonl")))
        found = kinds(transcript.events)
        assert found["tool_call.start"] == found["tool_call.result"] == 39
        assert found["reasoning.redacted"] == 38  # encrypted_content, kept opaque
        assert found["message.start"] == 2  # event_msg echoes are not conversation

    def test_codex_turn_aborted_is_an_interruption(self) -> None:
        lines = [
            {"type": "session_meta", "payload": {"id": "x"}},
            {
                "type": "response_item",
                "payload": {
                    "type": "function_call",
                    "name": "shell",
                    "arguments": "{}",
                    "call_id": "c",
                },
            },
            {"type": "event_msg", "payload": {"type": "turn_aborted", "reason": "interrupted"}},
        ]
        data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
        assert detect(data) == "codex"
        transcript = read_transcript(data, path=None)
        assert transcript is not None
        marks = [e for e in transcript.events if e["type"] == "interruption.mark"]
        assert [(m["cause"], m.get("tool_call_id")) for m in marks] == [
            ("cut", "c"),
            ("user", None),
        ]

    def test_openhands_runs_are_threads(self) -> None:
        path = shared_path(*TRANSCRIPTS, "openhands")
        transcript = imported(next(path.glob("*.jsonl")))
        assert [t.name for t in transcript.threads] == [
            "ponylang__ponyc-4595",
            "ponylang__ponyc-4593",
            "ponylang__ponyc-4588",
        ]
        calls = sum(kinds(t.events)["tool_call.start"] for t in transcript.threads)
        results = sum(kinds(t.events)["tool_call.result"] for t in transcript.threads)
        assert (calls, results) == (105, 103)  # two runs end on their unanswered finish

    def test_swe_agent_text_commands_become_calls(self) -> None:
        path = shared_path(*TRANSCRIPTS, "swe-agent", "pydicom__pydicom-1458.traj")
        events = imported(path).events
        calls = [e for e in events if e["type"] == "tool_call.arguments_delta"]
        assert json.loads(calls[0]["text"]) == {"command": "create reproduce_bug.py"}
        assert len(calls) == 12
        assert "DEMONSTRATION" not in json.dumps(events)

    def test_recordings_are_not_sessions(self) -> None:
        assert detect(b'{"position": 0, "event": {"type": "message.start", "id": "m"}}\n') is None
        assert detect(b'{"type": "message_start", "message": {}}\n') is None
        assert detect(b"data: {}\n\n") is None
        assert detect(b"[1, 2]") is None


class TestClaudeCodeRecords:
    def test_a_queued_prompt_is_the_user_turn_it_became(self) -> None:
        records = [
            {"type": "file-history-snapshot", "messageId": "x", "snapshot": {}},
            {"type": "queue-operation", "operation": "enqueue", "content": "later"},
            {"uuid": "u1", "parentUuid": None, "type": "user", "message": {"content": "go"}},
            {
                "uuid": "q1",
                "parentUuid": "u1",
                "type": "attachment",
                "attachment": {"type": "queued_command", "prompt": "and then the docs"},
            },
            {"uuid": "s1", "parentUuid": "q1", "type": "system", "content": "\x1b[1mhook\x1b[22m"},
            {"type": "permission-mode", "permissionMode": "acceptEdits"},
            {"type": "a-record-type-from-a-later-version", "whatever": 1},
        ]
        data = b"".join(json.dumps(r).encode() + b"\n" for r in records)
        assert detect(data) == "claude-code"  # a snapshot first: still detected
        transcript = read_transcript(data, path=None)
        assert transcript is not None
        texts = [e["text"] for e in transcript.events if e["type"] == "message.start"]
        assert texts == ["go", "and then the docs"]


def test_odd_records_are_no_session() -> None:
    odd = [{"type": ["user"]}, {"type": {"a": 1}, "payload": {}}, {"history": "x"}, [1], 7]
    data = b"".join(json.dumps(r).encode() + b"\n" for r in odd)
    assert detect(data) is None


def test_a_session_over_a_piece_is_told_as_load_events_tells_it(tmp_path: Path) -> None:
    """A pretty-printed .traj larger than the bytes read before the format is told is
    still a SWE-agent session when read in pieces (convo replay, store import)."""
    from replay.logs._formats import Recording

    source = shared_path(*TRANSCRIPTS, "swe-agent", "pydicom__pydicom-1458.traj")
    record = json.loads(source.read_bytes())
    record["padding"] = "x" * (3 << 20)  # past the first piece of 1 MiB
    path = tmp_path / "big.traj"
    path.write_text(json.dumps(record, indent=1))
    with Recording(path) as recording:
        assert recording.format == "swe-agent"
    assert load_events(path).format == "swe-agent"
