"""definitions.ai_sdk against the AI SDK reference (readUIMessageStream from ``ai``).

Every UI-message-stream fixture in ../shared is folded through our definitions and the
rebuilt UI message is compared field by field with what oracle_aisdk.mjs prints (the
last snapshot). Generated multi-message streams are compared in batches, one node
process per hypothesis example, against the final snapshot of every message.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from definitions import RawEventError, ai_sdk
from engine import create_conversation_engine
from tests._shared import shared_files
from tests.conformance import _node_oracles as oracles
from tests.conformance._strategies import SHORT_TEXT, cut_into, interleave

FIXTURES = (
    shared_files("fixtures", "recorded", pattern="aisdk*")
    + shared_files("fixtures", "recorded", pattern="vercel-langchain*")
    + shared_files("fixtures", "synthetic", pattern="aisdk_*")
)

# Streams the reference stops on (terminateOnError): it cannot attribute a chunk. The
# rebuilt message up to that chunk is the same; we drop the chunk and keep folding
# (TestErrors shows the difference on a stream that goes on).
REFUSED = {
    "aisdk_orphan.jsonl": 'missing text part with ID "t9"',
    "aisdk_orphan_output.jsonl": 'No tool invocation found for tool call ID "zz"',
}


class TestFixtures:
    """Each fixture rebuilds exactly the message the reference yields last."""

    @pytest.mark.slow
    @pytest.mark.parametrize("path", FIXTURES)
    def test_matches_reference(self, path: Path) -> None:
        expected = oracles.run_oracle("oracle_aisdk.mjs", path)
        # a refused stream: the message up to the refused chunk is the same
        oracles.refused(expected, path.name, REFUSED)
        ours = ai_sdk.PROTOCOL.accumulate(oracles.load_events(path))
        assert len(ours) == 1
        oracles.assert_same(expected["message"], ours[-1], path.name)


def message(message_id: str | None, *chunks: dict[str, Any]) -> list[dict[str, Any]]:
    start: dict[str, Any] = {"type": "start"}
    if message_id is not None:
        start["messageId"] = message_id
    return [start, *chunks, {"type": "finish"}]


def part(tag: str, part_id: str, *deltas: str) -> list[dict[str, Any]]:
    """A streamed part (``tag``: text or reasoning): its start, deltas and end."""
    return [
        {"type": f"{tag}-start", "id": part_id},
        *({"type": f"{tag}-delta", "id": part_id, "delta": d} for d in deltas),
        {"type": f"{tag}-end", "id": part_id},
    ]


def text(part_id: str, *deltas: str) -> list[dict[str, Any]]:
    return part("text", part_id, *deltas)


class TestAttribution:
    """Which message and part a chunk lands in, decided by the router."""

    def test_reused_part_ids_across_messages_stay_apart(self) -> None:
        events = message("a", *text("0", "one")) + message("b", *text("0", "two"))
        ours = ai_sdk.PROTOCOL.accumulate(events)
        assert [(m["id"], [p["text"] for p in m["parts"]]) for m in ours] == [
            ("a", ["one"]),
            ("b", ["two"]),
        ]

    def test_start_without_a_new_id_continues_the_message(self) -> None:
        events = message("a", *text("0", "x")) + message(None, *text("0", "y"))
        assert [[p["text"] for p in m["parts"]] for m in ai_sdk.PROTOCOL.accumulate(events)] == [
            ["x", "y"]
        ]

    def test_window_cut_mid_message_shows_no_node_for_it(self) -> None:
        events = message("a", *text("0", "cut ", "off")) + message("b", *text("0", "kept"))
        window = events[3:]  # from the second delta of a's part: a's starts are cut off
        nodes = ai_sdk.PROTOCOL.replay(window)
        assert all(not n.key.startswith("ai_sdk_text:0/") for n in nodes)
        assert ai_sdk.ui_messages(nodes)[-1]["parts"] == [
            {"type": "text", "text": "kept", "state": "done"}
        ]
        assert [m["id"] for m in ai_sdk.ui_messages(nodes) if m["parts"]] == ["b"]

    def test_raw_dicts_pushed_without_the_router_name_the_fix(self) -> None:
        engine = create_conversation_engine(ai_sdk.DEFINITIONS)
        with pytest.raises(RawEventError, match="Preparer"):
            engine.push({"type": "start", "messageId": "a"})


class TestErrors:
    """Where we knowingly differ from the reference."""

    @pytest.mark.slow
    def test_orphan_delta_is_dropped_and_folding_goes_on(self) -> None:
        # readUIMessageStream(terminateOnError) ends at the orphan delta and never shows
        # "later"; a view of a recording should keep showing what arrived after it.
        events = message(
            "a", {"type": "text-delta", "id": "nope", "delta": "lost"}, *text("1", "later")
        )
        expected = oracles.run_batch([{"protocol": "aisdk", "events": events}])[0]
        assert "missing text part" in expected["error"]
        assert expected["messages"][-1]["parts"] == []
        assert ai_sdk.PROTOCOL.accumulate(events)[-1]["parts"] == [
            {"type": "text", "text": "later", "state": "done"}
        ]


class TestPartialJson:
    """fix_json is the reference's repair, character for character."""

    @pytest.mark.parametrize(
        ("text", "fixed"),
        [
            ('{"a": "b', '{"a": "b"}'),
            ('{"a": tr', '{"a": true}'),
            ('{"a": [1, 2', '{"a": [1, 2]}'),
            ('{"a": 1.', '{"a": 1}'),
            ('{"a', "{}"),
            ('["\\u00', '[""]'),
            ("", ""),
        ],
    )
    def test_fix_json(self, text: str, fixed: str) -> None:
        assert ai_sdk.fix_json(text) == fixed

    def test_unparseable_is_unset(self) -> None:
        assert ai_sdk.parse_partial_json("") is ai_sdk.UNSET

    @staticmethod
    def _json_loads_model(text: str) -> Any:
        """parse_partial_json as json.loads alone would do it (msgspec is a shortcut)."""
        try:
            return json.loads(text)
        except ValueError:
            pass
        try:
            return json.loads(ai_sdk.fix_json(text))
        except ValueError:
            return ai_sdk.UNSET

    def _check_parse(self, text: str) -> None:
        got, expected = ai_sdk.parse_partial_json(text), self._json_loads_model(text)
        if expected is ai_sdk.UNSET:
            assert got is ai_sdk.UNSET
        else:  # dumps tells -0.0 from 0, 1.0 from 1, True from 1, and keeps key order
            assert json.dumps(got) == json.dumps(expected)

    @pytest.mark.parametrize(
        "text",
        [
            "NaN",
            '{"a": Infinity}',
            "[-Infinity]",
            "1e400",
            "-1e400",
            "1.5e-400",
            "-0",
            "-0.0",
            "123456789012345678901234567890",
            "-123456789012345678901234567890.5",
            '"\\ud800"',
            '"\\udc00x"',
            '"\\ud83d\\ude00"',
            '"\ud800"',
            '{"a": 1, "a": 2}',
            '\ufeff{"a": 1}',
            ' {"a" : [1 , 2.50, true, null]}\n',
            "[1, 2",
            '{"a": "b',
            "tru",
        ],
    )
    def test_parse_is_json_loads_on_edge_cases(self, text: str) -> None:
        self._check_parse(text)

    @pytest.mark.slow
    @settings(max_examples=300)
    @given(
        value=st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
            lambda inner: (
                st.lists(inner, max_size=4)
                | st.dictionaries(st.text(max_size=4), inner, max_size=4)
            ),
            max_leaves=10,
        ),
        cut=st.integers(0, 10**6),
        ascii=st.booleans(),
    )
    def test_parse_is_json_loads(self, value: Any, cut: int, ascii: bool) -> None:
        text = json.dumps(value, ensure_ascii=ascii)
        self._check_parse(text)
        self._check_parse(text[: cut % (len(text) + 1)])


class TestRendering:
    """Renderers show each kind readably and escape every piece of content."""

    def test_text_and_html(self) -> None:
        events = message(
            "<m>",
            {"type": "start-step"},
            *text("0", "<script>x</script>"),
            {"type": "reasoning-start", "id": "r"},
            {"type": "reasoning-delta", "id": "r", "delta": "<r>"},
            {"type": "tool-input-start", "toolCallId": "c", "toolName": "<t>"},
            {"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": '{"<k>": 1'},
            {"type": "tool-output-available", "toolCallId": "c", "output": "<o>"},
            {"type": "data-x", "id": "d", "data": "<d>"},
            {"type": "error", "errorText": "<e>"},
        )
        by_kind: dict[str, Any] = {d.kind: d for d in ai_sdk.DEFINITIONS}
        for node in ai_sdk.PROTOCOL.replay(events):
            definition = by_kind[node.kind]
            assert isinstance(definition.render_text(node), str)
            fragment = definition.render_html(node)
            for raw in ("<script", "<r>", "<t>", "<k>", "<o>", "<d>", "<e>", "<m>"):
                assert raw not in fragment


# -- generated streams ---------------------------------------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-99, 99) | SHORT_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(SHORT_TEXT, inner, max_size=3),
    max_leaves=6,
)


@st.composite
def aisdk_stream(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Several messages (agent loop) whose part ids repeat across messages, steps with
    reasoning, text, interleaved tool calls with JSON split mid-token (some never
    completed, so the reference's partial-JSON repair shows), outputs, data parts."""
    events: list[dict[str, Any]] = []
    for index in range(draw(st.integers(1, 3))):
        start: dict[str, Any] = {"type": "start", "messageId": f"msg{index}"}
        if draw(st.booleans()):
            start["messageMetadata"] = {"n": index}
        events.append(start)
        for step in range(draw(st.integers(1, 2))):
            events.append({"type": "start-step"})
            if draw(st.booleans()):
                events += part("reasoning", "r", *draw(st.lists(SHORT_TEXT, max_size=3)))
            if draw(st.booleans()):
                events += part("text", "0", *draw(st.lists(SHORT_TEXT, max_size=4)))
            calls = draw(st.integers(0, 3))
            pieces = []
            for call in range(calls):
                tool_call_id = f"call_{index}_{step}_{call}"
                start_call: dict[str, Any] = {
                    "type": "tool-input-start",
                    "toolCallId": tool_call_id,
                    "toolName": f"tool{call}",
                }
                if draw(st.booleans()):
                    start_call["dynamic"] = True
                events.append(start_call)
                value = draw(st.dictionaries(SHORT_TEXT, _JSON, max_size=3))
                raw = json.dumps(value, ensure_ascii=draw(st.booleans()))
                complete = draw(st.booleans())
                if not complete:
                    raw = raw[: draw(st.integers(0, len(raw)))]
                cuts = draw(st.lists(st.integers(0, 99), max_size=3))
                pieces.append(
                    [
                        {
                            "type": "tool-input-delta",
                            "toolCallId": tool_call_id,
                            "inputTextDelta": p,
                        }
                        for p in cut_into(raw, cuts)
                    ]
                )
                if complete and draw(st.booleans()):
                    available: dict[str, Any] = {
                        "type": "tool-input-available",
                        "toolCallId": tool_call_id,
                        "toolName": f"tool{call}",
                        "input": value,
                    }
                    if start_call.get("dynamic"):
                        available["dynamic"] = True
                    pieces[-1].append(available)
            # the calls' input chunks, interleaved
            events += [chunk for _, chunk in draw(interleave(pieces))]
            for call in draw(st.permutations(range(calls))):
                tool_call_id = f"call_{index}_{step}_{call}"
                outcome = draw(
                    st.sampled_from(["output", "error", "none", "approval", "denied", "bad-input"])
                )
                if outcome in ("approval", "denied"):
                    events.append(
                        {
                            "type": "tool-approval-request",
                            "toolCallId": tool_call_id,
                            "approvalId": f"a{call}",
                        }
                    )
                if outcome == "denied":
                    events.append({"type": "tool-output-denied", "toolCallId": tool_call_id})
                elif outcome == "bad-input":
                    events.append(
                        {
                            "type": "tool-input-error",
                            "toolCallId": tool_call_id,
                            "toolName": f"tool{call}",
                            "input": "{bad",
                            "errorText": "invalid input",
                        }
                    )
                if outcome == "output":
                    events.append(
                        {
                            "type": "tool-output-available",
                            "toolCallId": tool_call_id,
                            "output": draw(_JSON),
                        }
                    )
                elif outcome == "error":
                    events.append(
                        {"type": "tool-output-error", "toolCallId": tool_call_id, "errorText": "e"}
                    )
            if draw(st.booleans()):
                events.append({"type": "data-status", "id": "s", "data": draw(_JSON)})
                events.append({"type": "data-status", "id": "s", "data": draw(_JSON)})
            if draw(st.booleans()):
                events.append({"type": "source-url", "sourceId": "src", "url": "https://x.test/"})
            if draw(st.booleans()):
                events.append(
                    {
                        "type": "source-document",
                        "sourceId": "d",
                        "mediaType": "text/plain",
                        "title": draw(SHORT_TEXT),
                    }
                )
                events.append({"type": "file", "mediaType": "image/png", "url": "data:,x"})
            if draw(st.booleans()):
                events.append({"type": "message-metadata", "messageMetadata": {"step": step}})
            events.append({"type": "finish-step"})
        events.append({"type": "finish", "finishReason": "stop"})
    return events


@pytest.mark.slow
@oracles.BATCHES
@given(st.lists(aisdk_stream(), min_size=10, max_size=20))
def test_generated_streams_match_reference(streams: list[list[dict[str, Any]]]) -> None:
    """Batches of random valid streams rebuild every message the reference yields."""
    for stream, expected in oracles.batch_results("aisdk", streams):
        oracles.assert_same(
            expected["messages"], ai_sdk.PROTOCOL.accumulate(stream), "generated messages"
        )


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(aisdk_stream(), st.data())
def test_window_never_misattributes(stream: list[dict[str, Any]], data: st.DataObject) -> None:
    """A window cut anywhere shows whole messages for the starts it holds, and nothing of
    the cut-off message's parts except those that start inside the window."""
    cut = data.draw(st.integers(0, len(stream)), label="cut")
    window = stream[cut:]
    full = {m["id"]: m for m in ai_sdk.PROTOCOL.accumulate(stream)}
    starts = {e["messageId"] for e in window if e["type"] == "start"}
    for message in ai_sdk.PROTOCOL.accumulate(window):
        if message["id"] in starts:
            assert message == full[message["id"]]
        else:  # the message whose start was cut: only parts that started in the window
            assert message["id"] == ""
            assert len(message["parts"]) <= len(full[stream_message_at(stream, cut)]["parts"])


def stream_message_at(stream: list[dict[str, Any]], cut: int) -> str:
    """The id of the message open at position ``cut`` of ``stream``."""
    current = ""
    for event in stream[:cut]:
        if event["type"] == "start":
            current = event.get("messageId", current)
    return current
