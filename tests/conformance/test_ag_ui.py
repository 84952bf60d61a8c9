"""definitions.ag_ui against the AG-UI reference reducer (@ag-ui/client defaultApplyEvents).

Every AG-UI fixture in ../shared is folded through our definitions and the rebuilt
messages and state are compared field by field with what oracle_agui.mjs prints.
Generated streams are compared in batches (one node process per hypothesis example).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from definitions import RawEventError, ag_ui
from engine import create_conversation_engine
from tests._shared import shared_files
from tests.conformance import _node_oracles as oracles
from tests.conformance._strategies import SHORT_TEXT, cut_into, interleave

FIXTURES = (
    shared_files("fixtures", "recorded", pattern="agui*")
    + shared_files("fixtures", "synthetic", pattern="agui_*.jsonl")
    + shared_files("fixtures", "synthetic", "agui_edges")
)

# Streams verifyEvents refuses, and why our fold is the --no-verify one: a view shows
# what arrived instead of nothing. Any other refusal fails the test.
REFUSED = {
    # a stream recorded without its RUN_STARTED still holds a complete message
    "norun.jsonl": "First event must be 'RUN_STARTED'",
    # an orphan delta has no message to go to; both folds drop it
    "orphan.jsonl": "No active text message found with ID 'x'",
}


class TestFixtures:
    """Each fixture rebuilds exactly what the reference prints."""

    @pytest.mark.slow
    @pytest.mark.parametrize("path", FIXTURES)
    def test_matches_reference(self, path: Path) -> None:
        expected = oracles.run_oracle("oracle_agui.mjs", path)
        if oracles.refused(expected, path.name, REFUSED):
            expected = oracles.run_oracle("oracle_agui.mjs", path, "--no-verify")
            assert "error" not in expected
        nodes = ag_ui.PROTOCOL.replay(oracles.load_events(path))
        oracles.assert_same(expected["messages"], ag_ui.messages(nodes), f"{path.name} messages")
        oracles.assert_same(expected["state"], ag_ui.state(nodes), f"{path.name} state")
        assert ag_ui.PROTOCOL.accumulate(oracles.load_events(path)) == ag_ui.messages(nodes)


RUN = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]
END = [{"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]


def text(message_id: str, *deltas: str) -> list[dict[str, Any]]:
    return [
        {"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant"},
        *({"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": d} for d in deltas),
        {"type": "TEXT_MESSAGE_END", "messageId": message_id},
    ]


class TestAttribution:
    """Which message an event lands in, decided by the router without breaking purity."""

    def test_restart_continues_the_message_like_the_reference(self) -> None:
        events = RUN + text("m", "first") + text("n", "other") + text("m", "second") + END
        assert [m["content"] for m in ag_ui.PROTOCOL.accumulate(events)] == ["firstsecond", "other"]

    def test_window_cut_mid_message_shows_no_node_for_it(self) -> None:
        events = RUN + text("m1", "cut ", "off") + text("m2", "kept") + END
        window = events[3:]  # from m1's second delta: its start is outside the window
        nodes = ag_ui.PROTOCOL.replay(window)
        assert [n.id for n in nodes if n.kind == "ag_ui_message"] == ["m2"]
        assert ag_ui.messages(nodes) == [{"id": "m2", "role": "assistant", "content": "kept"}]

    def test_chunks_without_ids_continue_the_open_stream(self) -> None:
        events = [
            {"type": "TEXT_MESSAGE_CHUNK", "messageId": "a", "delta": "x"},
            {"type": "TEXT_MESSAGE_CHUNK", "delta": "y"},
            {"type": "TEXT_MESSAGE_CHUNK", "messageId": "b", "delta": "z"},
            {"type": "TEXT_MESSAGE_CHUNK", "delta": "w"},
        ]
        assert [m["content"] for m in ag_ui.PROTOCOL.accumulate(events)] == ["xy", "zw"]

    @pytest.mark.slow
    def test_chunk_without_id_or_open_stream_makes_no_node(self) -> None:
        # transformChunks raises here ("First TEXT_MESSAGE_CHUNK must have a messageId");
        # in a window cut mid-stream it is a cut-off message's continuation: show nothing.
        events = [
            {"type": "TEXT_MESSAGE_CHUNK", "delta": "cut"},
            {"type": "TOOL_CALL_CHUNK", "delta": "{}"},
            {"type": "TOOL_CALL_CHUNK", "toolCallId": "c", "delta": "{}"},
        ]
        assert ag_ui.PROTOCOL.replay(events) == ()
        expected = oracles.run_batch([{"protocol": "agui", "events": events[:1]}])[0]
        assert "must have a messageId" in expected["error"]

    def test_tool_result_sharing_its_calls_message_id_is_a_new_message(self) -> None:
        events = [
            {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"},
            {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "{}"},
            {"type": "TOOL_CALL_END", "toolCallId": "c"},
            {"type": "TOOL_CALL_RESULT", "messageId": "c", "toolCallId": "c", "content": "ok"},
        ]
        assert [m["role"] for m in ag_ui.PROTOCOL.accumulate(events)] == ["assistant", "tool"]

    def test_raw_dicts_pushed_without_the_router_name_the_fix(self) -> None:
        engine = create_conversation_engine(ag_ui.DEFINITIONS)
        with pytest.raises(RawEventError, match="Preparer"):
            engine.push(text("m", "x")[0])


class TestStatePatches:
    """STATE_DELTA applies RFC 6902 to a new value and rejects a failing patch whole."""

    def test_operations(self) -> None:
        doc = {"a": {"b": [1, 2]}, "c": 1}
        ops: list[dict[str, Any]] = [
            {"op": "add", "path": "/a/b/1", "value": 9},
            {"op": "remove", "path": "/c"},
            {"op": "copy", "from": "/a/b", "path": "/d"},
            {"op": "move", "from": "/d/0", "path": "/e"},
            {"op": "replace", "path": "/a/b/0", "value": "x"},
            {"op": "test", "path": "/e", "value": 1},
        ]
        assert ag_ui.apply_patch(doc, ops) == {"a": {"b": ["x", 9, 2]}, "d": [9, 2], "e": 1}
        assert doc == {"a": {"b": [1, 2]}, "c": 1}  # never mutated

    def test_failing_patch_keeps_the_state(self) -> None:
        events: list[dict[str, Any]] = [
            {"type": "STATE_SNAPSHOT", "snapshot": {"n": 1}},
            {
                "type": "STATE_DELTA",
                "delta": [
                    {"op": "replace", "path": "/n", "value": 2},
                    {"op": "remove", "path": "/missing"},
                ],
            },
        ]
        nodes = ag_ui.PROTOCOL.replay(events)
        assert ag_ui.state(nodes) == {"n": 1}
        assert nodes[0].state.errors == 1


class TestRendering:
    """Renderers show each kind readably and escape every piece of content."""

    def test_text_and_html(self) -> None:
        events = [
            *RUN,
            *text("m", "<script>alert(1)</script>"),
            {
                "type": "TOOL_CALL_START",
                "toolCallId": "c",
                "toolCallName": "<b>",
                "parentMessageId": "m",
            },
            {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": '{"q": "<i>"}'},
            {"type": "STATE_SNAPSHOT", "snapshot": {"k": "<x>"}},
            {"type": "CUSTOM", "name": "n", "value": "<v>"},
            *END,
        ]
        nodes = ag_ui.PROTOCOL.replay(events)
        by_kind = {d.kind: d for d in ag_ui.DEFINITIONS}
        for node in nodes:
            definition: Any = by_kind[node.kind]
            assert isinstance(definition.render_text(node), str)
            fragment = definition.render_html(node)
            assert "<script" not in fragment
            assert "<b>" not in fragment
            assert "<i>" not in fragment
            assert "<x>" not in fragment
            assert "<v>" not in fragment
        assert "assistant: <script>" in by_kind["ag_ui_message"].render_text(nodes[1])


# -- generated streams ---------------------------------------------------------------------


@st.composite
def agui_stream(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A valid AG-UI run: text and reasoning messages, parallel tool calls whose JSON
    arguments split anywhere (mid-token), results, state, chunks, unicode."""
    events: list[dict[str, Any]] = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]
    for turn in range(draw(st.integers(1, 3))):
        message = f"m{turn}"
        if draw(st.booleans()):
            reasoning = f"r{turn}"
            events += [
                {"type": "REASONING_START", "messageId": f"rs{turn}"},
                {"type": "REASONING_MESSAGE_START", "messageId": reasoning, "role": "reasoning"},
            ]
            events += [
                {"type": "REASONING_MESSAGE_CONTENT", "messageId": reasoning, "delta": d}
                for d in draw(st.lists(SHORT_TEXT, max_size=3))
            ]
            events += [
                {"type": "REASONING_MESSAGE_END", "messageId": reasoning},
                {"type": "REASONING_END", "messageId": f"rs{turn}"},
            ]
        if draw(st.booleans()):
            deltas = draw(st.lists(SHORT_TEXT, max_size=4))
            events += [{"type": "TEXT_MESSAGE_START", "messageId": message, "role": "assistant"}]
            events += [
                {"type": "TEXT_MESSAGE_CONTENT", "messageId": message, "delta": d} for d in deltas
            ]
            events += [{"type": "TEXT_MESSAGE_END", "messageId": message}]
        else:
            deltas = draw(st.lists(SHORT_TEXT, max_size=3))
            events += [
                {
                    "type": "TEXT_MESSAGE_CHUNK",
                    "messageId": message,
                    "role": "assistant",
                    "delta": deltas[0] if deltas else "",
                }
            ]
            events += [{"type": "TEXT_MESSAGE_CHUNK", "delta": d} for d in deltas[1:]]
        calls = draw(st.integers(0, 3))
        pieces = []
        for index in range(calls):
            call = f"c{turn}_{index}"
            args = json.dumps(
                draw(st.dictionaries(SHORT_TEXT, SHORT_TEXT | st.integers(), max_size=2)),
                ensure_ascii=draw(st.booleans()),
            )
            parent = draw(st.sampled_from([message, None, f"p{turn}"]))
            start = {"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": f"f{index}"}
            if parent is not None:
                start["parentMessageId"] = parent
            events.append(start)
            pieces.append(
                [
                    {"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": p}
                    for p in cut_into(args, draw(st.lists(st.integers(0, 99), max_size=3)))
                ]
            )
        # the parallel calls' argument deltas, interleaved
        events += [delta for _, delta in draw(interleave(pieces))]
        for index in range(calls):
            events.append({"type": "TOOL_CALL_END", "toolCallId": f"c{turn}_{index}"})
        for index in draw(st.permutations(range(calls))):
            events.append(
                {
                    "type": "TOOL_CALL_RESULT",
                    "messageId": f"res{turn}_{index}",
                    "toolCallId": f"c{turn}_{index}",
                    "content": draw(SHORT_TEXT),
                }
            )
        if draw(st.booleans()):
            events.append({"type": "STATE_SNAPSHOT", "snapshot": {"turn": turn, "items": []}})
            events.append(
                {
                    "type": "STATE_DELTA",
                    "delta": [
                        {"op": "add", "path": "/items/-", "value": draw(SHORT_TEXT)},
                        {"op": "replace", "path": "/turn", "value": turn + 1},
                    ],
                }
            )
        extra = draw(st.sampled_from(["none", "chunked-call", "restart", "step", "encrypted"]))
        if extra == "chunked-call":
            call = f"k{turn}"
            args = json.dumps({"q": draw(SHORT_TEXT)})
            chunks = cut_into(args, draw(st.lists(st.integers(0, 99), max_size=3)))
            events.append(
                {
                    "type": "TOOL_CALL_CHUNK",
                    "toolCallId": call,
                    "toolCallName": "chunked",
                    "parentMessageId": message,
                    "delta": chunks[0],
                }
            )
            events += [{"type": "TOOL_CALL_CHUNK", "delta": p} for p in chunks[1:]]
        elif extra == "restart":  # the same id again: the reference continues the message
            events += [
                {"type": "TEXT_MESSAGE_START", "messageId": message, "role": "assistant"},
                {"type": "TEXT_MESSAGE_CONTENT", "messageId": message, "delta": draw(SHORT_TEXT)},
                {"type": "TEXT_MESSAGE_END", "messageId": message},
            ]
        elif extra == "step":
            events += [
                {"type": "STEP_STARTED", "stepName": f"s{turn}"},
                {"type": "CUSTOM", "name": "c", "value": draw(SHORT_TEXT)},
                {"type": "STEP_FINISHED", "stepName": f"s{turn}"},
            ]
        elif extra == "encrypted":
            events.append(
                {
                    "type": "REASONING_ENCRYPTED_VALUE",
                    "subtype": "message",
                    "entityId": message,
                    "encryptedValue": "opaque",
                }
            )
    events.append({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
    return events


@pytest.mark.slow
@oracles.BATCHES
@given(st.lists(agui_stream(), min_size=10, max_size=20))
def test_generated_streams_match_reference(streams: list[list[dict[str, Any]]]) -> None:
    """Batches of random valid runs fold to what the reference (with verifyEvents) gives."""
    for stream, expected in oracles.batch_results("agui", streams, verify=True):
        nodes = ag_ui.PROTOCOL.replay(stream)
        oracles.assert_same(expected["messages"], ag_ui.messages(nodes), "generated messages")
        oracles.assert_same(expected["state"], ag_ui.state(nodes), "generated state")


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(agui_stream(), st.data())
def test_window_never_misattributes(stream: list[dict[str, Any]], data: st.DataObject) -> None:
    """A window cut anywhere shows a text message whole when its first start is inside
    the window; one started before the cut shows only what a restart inside the window
    added (a suffix of its content): cut-off content never lands elsewhere."""
    cut = data.draw(st.integers(0, len(stream)), label="cut")
    window = stream[cut:]
    full = {m["id"]: m for m in ag_ui.PROTOCOL.accumulate(stream)}
    before = {e.get("messageId") for e in stream[:cut] if e["type"].endswith("MESSAGE_START")}
    before |= {e.get("messageId") for e in stream[:cut] if e["type"].endswith("_CHUNK")}
    for message in ag_ui.PROTOCOL.accumulate(window):
        if message["role"] in ("assistant", "reasoning") and "toolCalls" not in message:
            whole = full[message["id"]].get("content") or ""
            if message["id"] in before:
                assert whole.endswith(message.get("content") or "")
            else:
                assert message.get("content") == full[message["id"]].get("content")
