"""Compacted sessions of every harness: a compaction row, the summary never a user
turn, and the next request continuing from the summary.

The sessions are synthetic, shaped from the harnesses' records as the shared
test data's FORMATS.md lists them (field names checked against the real samples
named beside each test); the OpenHands V1 stream is a real one
(``openhands_v1_events.jsonl``, see README.md here).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from definitions import builtin, event_type
from engine import ManualScheduler, Node, create_conversation_engine
from replay.context._requests import ContextOptions, requests
from replay.logs.sessions import read_transcript
from replay.render._html import render_html
from replay.render._text import render_text
from tests._shared import shared_path

HERE = Path(__file__).parent
SUMMARY = "This session is being continued from a previous conversation. Summary: the bug is found."


def fold(events: list[dict[str, Any]]) -> tuple[Node, ...]:
    engine = create_conversation_engine(
        builtin.DEFINITIONS, ManualScheduler(), event_type=event_type
    )
    engine.push_many(events)
    return engine.nodes()


def jsonl(records: list[dict[str, Any]]) -> bytes:
    return b"".join(msgspec.json.encode(r) + b"\n" for r in records)


def body(events: list[dict[str, Any]], provider: str, **options: Any) -> str:
    last = requests(events, provider, options=ContextOptions(**options))[-1]
    assert last.problems == ()
    return msgspec.json.encode(last.request).decode()


# -- Claude Code ----------------------------------------------------------------------


def claude(uuid: str, parent: str | None, kind: str, **fields: Any) -> dict[str, Any]:
    # The common fields every record of the real 2.1.114 sample carries
    # (transcripts/claude-code/ef958aa1-*.jsonl).
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "type": kind,
        "uuid": uuid,
        "sessionId": "s1",
        "timestamp": "2026-01-01T00:00:00.000Z",
        **fields,
    }


def claude_session() -> list[dict[str, Any]]:
    """A turn with a Bash call, then a compaction (boundary + summary, FORMATS.md), then
    the next turn."""
    return [
        claude("u1", None, "user", message={"role": "user", "content": "fix bug 7"}),
        claude(
            "a1",
            "u1",
            "assistant",
            message={
                "id": "msg_1",
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "Bash",
                        "input": {"command": "ls"},
                    }
                ],
            },
        ),
        claude(
            "r1",
            "a1",
            "user",
            message={
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "OLD-LS"}],
            },
            toolUseResult={"stdout": "OLD-LS"},
        ),
        claude(
            "b1",
            None,
            "system",
            subtype="compact_boundary",
            content="Conversation compacted",
            logicalParentUuid="r1",
            compactMetadata={
                "trigger": "auto",
                "preTokens": 155210,
                "postTokens": 11840,
                "durationMs": 41230,
            },
        ),
        claude(
            "s1",
            "b1",
            "user",
            message={"role": "user", "content": SUMMARY},
            isCompactSummary=True,
            isVisibleInTranscriptOnly=True,
        ),
        claude("u2", "s1", "user", message={"role": "user", "content": "go on"}),
        claude(
            "a2",
            "u2",
            "assistant",
            message={
                "id": "msg_2",
                "role": "assistant",
                "content": [{"type": "text", "text": "ok"}],
            },
        ),
    ]


def test_claude_code_compaction_is_one_row_and_the_request_starts_at_the_summary() -> None:
    transcript = read_transcript(jsonl(claude_session()), path=None)
    assert transcript is not None
    assert transcript.format == "claude-code"
    events = transcript.events
    nodes = fold(events)
    [row] = [n for n in nodes if n.kind == "compaction"]
    assert row.state.summary == SUMMARY
    assert (row.state.trigger, row.state.tokens_before, row.state.tokens_after) == (
        "auto",
        155210,
        11840,
    )
    texts = [n.state.text for n in nodes if n.kind == "message"]
    assert SUMMARY not in texts  # never a user turn
    assert "fix bug 7" in texts  # the history before it stays in the view
    text = builtin.DEFINITIONS[-1].render_text(row)
    assert text.startswith("compaction (auto, 155,210 -> 11,840 tokens, 41.2 s)")
    for provider in ("anthropic", "openai-chat", "openai-responses", "gemini"):
        request = body(events, provider)
        assert SUMMARY in request
        assert "go on" in request
        assert "OLD-LS" not in request
        assert "fix bug 7" not in request
        assert "OLD-LS" in body(events, provider, compaction=False)


def test_claude_code_microcompaction_sends_the_cleared_results_as_its_placeholder() -> None:
    """After a ``microcompact_boundary`` (FORMATS.md: ``compactedToolIds``) Claude Code
    sends each cleared tool result as ``[Old tool result content cleared]`` (its
    ``microCompact``'s placeholder, as public readings of its source quote it); the
    rest of the history goes on as it was. The log, and the view, keep the result."""
    records = [
        *claude_session()[:3],
        claude(
            "m1",
            "r1",
            "system",
            subtype="microcompact_boundary",
            microcompactMetadata={
                "trigger": "auto",
                "preTokens": 9000,
                "tokensSaved": 4000,
                "compactedToolIds": ["toolu_1"],
            },
        ),
        claude("u3", "m1", "user", message={"role": "user", "content": "and now?"}),
        claude(
            "a3",
            "u3",
            "assistant",
            message={
                "id": "msg_3",
                "role": "assistant",
                "content": [{"type": "text", "text": "ok"}],
            },
        ),
    ]
    transcript = read_transcript(jsonl(records), path=None)
    assert transcript is not None
    nodes = fold(transcript.events)
    [row] = [n for n in nodes if n.kind == "compaction"]
    assert row.state.cleared == ("toolu_1",)
    assert row.state.tokens_after == 5000
    [call] = [n for n in nodes if n.kind == "tool_call"]
    assert call.state.output == "OLD-LS"  # the view keeps it
    text = render_text(nodes, builtin.DEFINITIONS, color=False)
    assert "tool results cleared): results of toolu_1 sent as" in text
    assert "OLD-LS" in text
    html = render_html(nodes, builtin.DEFINITIONS)
    assert '<a href="#tool_call:toolu_1">toolu_1</a>' in html
    for provider in ("anthropic", "openai-chat", "openai-responses", "gemini"):
        calls = requests(transcript.events, provider)
        assert [c.problems for c in calls] == [(), (), ()]
        after, last = (msgspec.json.encode(c.request).decode() for c in calls[1:])
        for request in (after, last):  # the call after the boundary, and the next
            assert "OLD-LS" not in request
            assert request.count("[Old tool result content cleared]") == 1
        assert [word in last for word in ("fix bug 7", "ls", "and now?")] == [True] * 3
        assert last.index("fix bug 7") < last.index("[Old tool result") < last.index("and now?")
        assert "OLD-LS" in body(transcript.events, provider, compaction=False)


# -- Codex ----------------------------------------------------------------------------


def codex(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    # The rollout line of the real 0.58.0 sample (transcripts/codex/rollout-*.jsonl).
    return {"timestamp": "2025-11-17T15:30:28.000Z", "type": kind, "payload": payload}


def user_item(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def codex_session() -> list[dict[str, Any]]:
    """A call, then ``compacted`` with ``replacement_history`` (FORMATS.md), then a turn."""
    return [
        codex("session_meta", {"id": "s", "cwd": "/w"}),
        codex("response_item", user_item("fix bug 7")),
        codex(
            "response_item",
            {
                "type": "function_call",
                "name": "shell",
                "arguments": '{"command":["ls"]}',
                "call_id": "call_1",
            },
        ),
        codex(
            "response_item",
            {"type": "function_call_output", "call_id": "call_1", "output": "OLD-LS"},
        ),
        codex(
            "compacted",
            {
                "message": "",
                "replacement_history": [
                    user_item("fix bug 7"),
                    {"type": "compaction", "encrypted_content": "gAAAA-opaque"},
                ],
            },
        ),
        codex("event_msg", {"type": "context_compacted"}),
        codex("response_item", user_item("go on")),
        codex(
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "ok"}],
            },
        ),
    ]


def test_codex_compacted_continues_from_its_replacement_history() -> None:
    transcript = read_transcript(jsonl(codex_session()), path=None)
    assert transcript is not None
    assert transcript.format == "codex"
    events = transcript.events
    [row] = [n for n in fold(events) if n.kind == "compaction"]
    assert row.state.provider == "openai-responses"
    request = requests(events, "openai-responses")[-1].request
    items = request["input"]
    assert items[0] == {"role": "user", "content": "fix bug 7"}
    assert items[1] == {"type": "compaction", "encrypted_content": "gAAAA-opaque"}
    assert "OLD-LS" not in json.dumps(items)
    # another provider: the item cannot cross, and no summary text is known: said
    other = requests(events, "anthropic")[-1]
    assert other.notes
    assert "encrypted" in other.notes[0]
    assert "gAAAA" not in json.dumps(other.request)


# -- OpenHands ------------------------------------------------------------------------


def test_openhands_v1_real_events_read_as_built_in_kinds() -> None:
    data = (HERE / "openhands_v1_events.jsonl").read_bytes()
    transcript = read_transcript(data, path=None)
    assert transcript is not None
    assert transcript.format == "openhands"
    nodes = fold(transcript.events)
    calls = [n for n in nodes if n.kind == "tool_call"]
    assert [(c.state.name, c.state.status) for c in calls] == [
        ("terminal", "done"),
        ("finish", "done"),
    ]
    roles = [n.state.role for n in nodes if n.kind == "message"]
    assert roles == ["user", "user", "assistant"]


def test_openhands_v1_condensation_forgets_the_middle() -> None:
    """``Condensation{forgotten_event_ids, summary, summary_offset}`` (FORMATS.md) after
    the real events: the first event kept, the forgotten ones replaced."""
    events = [json.loads(line) for line in (HERE / "openhands_v1_events.jsonl").open()]
    forgotten = [e["id"] for e in events[1:5]]
    condensation = {
        "id": "cond-1",
        "source": "environment",
        "kind": "Condensation",
        "forgotten_event_ids": forgotten,
        "summary": "USER ASKED FOR PWD; DONE",
        "summary_offset": 1,
    }
    data = b"".join(json.dumps(e).encode() + b"\n" for e in [*events, condensation])
    transcript = read_transcript(data, path=None)
    assert transcript is not None
    request = body(transcript.events, "openai-chat")
    assert "USER ASKED FOR PWD; DONE" in request
    assert "Use the terminal tool" in request  # the kept first event
    assert "Without using any tools" in request  # after the forgotten range: kept
    assert "pwd > tool_output.txt" not in request


def test_openhands_v0_condensation_action() -> None:
    """V0's ``condensation`` action (``args.forgotten_event_ids``, ``summary``)."""
    history = [
        {"id": 0, "source": "agent", "action": "system", "args": {"content": "SYS"}},
        {"id": 1, "source": "user", "action": "message", "args": {"content": "TASK"}},
        {"id": 2, "source": "agent", "action": "message", "args": {"content": "OLD-THOUGHT"}},
        {"id": 3, "source": "user", "action": "message", "args": {"content": "OLD-ASK"}},
        {
            "id": 4,
            "source": "agent",
            "action": "condensation",
            "args": {"forgotten_event_ids": [2, 3], "summary": "CONDENSED", "summary_offset": 2},
        },
        {"id": 5, "source": "user", "action": "message", "args": {"content": "NEXT"}},
    ]
    transcript = read_transcript(json.dumps(history).encode(), path=None)
    assert transcript is not None
    assert transcript.format == "openhands"
    request = body(transcript.events, "openai-chat")
    assert [m in request for m in ("SYS", "TASK", "CONDENSED", "NEXT")] == [True] * 4
    assert "OLD-THOUGHT" not in request
    assert "OLD-ASK" not in request
    assert request.index("TASK") < request.index("CONDENSED") < request.index("NEXT")


# -- provider compaction recordings ---------------------------------------------------


@pytest.mark.parametrize(
    ("name", "provider", "first"),
    [
        ("anthropic-sdk-compaction_response.txt", "anthropic", "compaction"),
        ("vercel-anthropic-anthropic-compaction.1.chunks.txt", "anthropic", "compaction"),
        ("vercel-openai-responses-openai-compaction.1.chunks.txt", "openai-responses", None),
    ],
)
def test_provider_compactions_restart_the_request(name: str, provider: str, first: Any) -> None:
    from replay import load_events

    path = shared_path("fixtures", "recorded", name)
    events = load_events(path).events
    request = requests(events, provider)[-1].request
    if provider == "anthropic":
        [message] = request["messages"]
        assert message["content"][0]["type"] == "compaction"
        assert message["content"][0]["content"]
    else:
        [item] = request["input"]
        assert item["type"] == "compaction"
        assert item["encrypted_content"]


def test_a_side_file_whose_parents_are_elsewhere_is_read_whole() -> None:
    """A compaction helper's side file (``subagents/agent-acompact-*.jsonl``, FORMATS.md):
    every record a sidechain whose parent is in the main session."""
    records = [
        claude(
            f"x{n}",
            f"main-{n}",
            "user" if n % 2 == 0 else "assistant",
            isSidechain=True,
            agentId="acompact-1",
            message={
                "id": f"msg_{n}",
                "role": "user" if n % 2 == 0 else "assistant",
                "content": [{"type": "text", "text": f"record {n}"}],
            },
        )
        for n in range(5)
    ]
    transcript = read_transcript(jsonl(records), path=None)
    assert transcript is not None
    assert len(transcript.threads) == 1
    texts = [n.state.text for n in fold(transcript.events) if n.kind == "message"]
    assert texts == [f"record {n}" for n in range(5)]


def test_a_recording_of_unsupported_calls_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two Bedrock InvokeModel calls (no protocol set reads them): exit 2, one line."""
    from replay.cli import main

    url = "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/invoke-with-response-stream"
    events = []
    for call in range(2):
        events += [
            {
                "type": "recording/request",
                "call": call,
                "method": "POST",
                "url": url,
                "headers": {},
                "body": {"prompt": "hi"},
                "stream": True,
            },
            {"type": "recording/response", "call": call, "status": 200, "headers": {}},
            {"type": "recording/end", "call": call, "complete": True},
        ]
    log = tmp_path / "bedrock.jsonl"
    log.write_bytes(jsonl(events))
    for command in (["replay", str(log)], ["context", str(log), "-p", "anthropic"]):
        assert main(command) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].endswith("2 calls to bedrock invoke-with-response-stream: not supported")
