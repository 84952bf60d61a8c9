"""definitions.bedrock: the event-stream frames, each folding rule, misuse, rendering."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from definitions import bedrock
from definitions._eventstream import EventStreamDecoder, decode_frames, encode_frame
from engine import ConversationError, create_conversation_engine
from replay import LogError, load_events
from replay.cli import main
from tests.conformance._provider_oracles import eventstream
from tests.conformance._provider_strategies import bedrock_stream


def delta(index: int, **body: Any) -> dict[str, Any]:
    return {"contentBlockDelta": {"contentBlockIndex": index, "delta": body}}


def stop(index: int) -> dict[str, Any]:
    return {"contentBlockStop": {"contentBlockIndex": index}}


def tool(index: int, name: str = "f") -> dict[str, Any]:
    start = {"toolUse": {"toolUseId": f"t{index}", "name": name}}
    return {"contentBlockStart": {"contentBlockIndex": index, "start": start}}


END = {"messageStop": {"stopReason": "end_turn"}}


def content(events: list[Any]) -> list[dict[str, Any]]:
    [message] = bedrock.PROTOCOL.accumulate(events)
    result: list[dict[str, Any]] = message["output"]["message"]["content"]
    return result


class TestFrames:
    @pytest.mark.slow
    @settings(max_examples=60, deadline=None)
    @given(bedrock_stream(), st.data())
    def test_a_body_fed_in_any_pieces_decodes_to_its_events(
        self, events: list[dict[str, Any]], data: st.DataObject
    ) -> None:
        body = eventstream(events)
        cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=10)))
        decoder = EventStreamDecoder()
        frames = []
        for start, end in zip([0, *cuts], [*cuts, len(body)], strict=True):
            frames += decoder.feed(body[start:end])
        decoder.close()
        decoded = [{f.headers[":event-type"]: json.loads(f.payload)} for f in frames]
        assert decoded == events
        assert bedrock.events_from_eventstream(body) == events

    @settings(max_examples=60, deadline=None)
    @given(bedrock_stream(), st.data())
    def test_any_flipped_byte_is_an_error_naming_its_frame(
        self, events: list[dict[str, Any]], data: st.DataObject
    ) -> None:
        body = bytearray(eventstream(events))
        at = data.draw(st.integers(0, len(body) - 1))
        body[at] ^= 1 << data.draw(st.integers(0, 7))
        starts = [f.offset for f in decode_frames(eventstream(events))]
        frame = max(s for s in starts if s <= at)
        with pytest.raises(bedrock.EventStreamError) as raised:
            bedrock.events_from_eventstream(bytes(body))
        # A flipped length may make the decoder see the frame end elsewhere; the error
        # still names the frame the byte is in (its prelude CRC or message CRC fails).
        assert raised.value.offset == frame
        assert f"at byte {frame}:" in str(raised.value)

    def test_a_cut_body_names_where_the_unfinished_frame_starts(self) -> None:
        body = eventstream([{"messageStart": {"role": "assistant"}}, END])
        first = len(eventstream([{"messageStart": {"role": "assistant"}}]))
        with pytest.raises(bedrock.EventStreamError, match=f"at byte {first}: the stream ends"):
            bedrock.events_from_eventstream(body[:-1])

    def test_every_header_type_decodes(self) -> None:
        block = b"".join(
            [
                b"\x01t\x00",
                b"\x01f\x01",
                b"\x01b\x02\xff",
                b"\x01s\x03" + struct.pack(">h", -2),
                b"\x01i\x04" + struct.pack(">i", 7),
                b"\x01l\x05" + struct.pack(">q", 2**40),
                b"\x01y\x06" + struct.pack(">H", 2) + b"\x00\x01",
                b"\x01z\x07" + struct.pack(">H", 2) + "é".encode(),
                b"\x01d\x08" + struct.pack(">q", 1000),
                b"\x01u\x09" + bytes(range(16)),
            ]
        )
        prelude = struct.pack(">II", 16 + len(block), len(block))
        prelude += struct.pack(">I", zlib.crc32(prelude))
        frame = prelude + block
        frame += struct.pack(">I", zlib.crc32(frame))
        [decoded] = decode_frames(frame)
        assert decoded.headers == {
            "t": True,
            "f": False,
            "b": -1,
            "s": -2,
            "i": 7,
            "l": 2**40,
            "y": b"\x00\x01",
            "z": "é",
            "d": 1000,
            "u": "00010203-0405-0607-0809-0a0b0c0d0e0f",
        }

    def test_exception_and_error_frames_become_events(self) -> None:
        exception = {":exception-type": "throttlingException", ":message-type": "exception"}
        error = {":error-code": "InternalFailure", ":message-type": "error", ":error-message": "x"}
        body = encode_frame(exception, b'{"message": "slow down"}') + encode_frame(error, b"")
        assert bedrock.events_from_eventstream(body) == [
            {"throttlingException": {"message": "slow down"}},
            {"InternalFailure": {"message": "x"}},
        ]

    def test_a_payload_that_is_not_json_names_its_frame(self) -> None:
        body = eventstream([END]) + encode_frame(
            {":event-type": "metadata", ":message-type": "event"}, b"{oops"
        )
        with pytest.raises(bedrock.EventStreamError, match=f"at byte {len(eventstream([END]))}"):
            bedrock.events_from_eventstream(body)

    def test_replay_reads_a_raw_body_and_names_a_bad_frame(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        events = [{"messageStart": {"role": "assistant"}}, delta(0, text="hi"), stop(0), END]
        path = tmp_path / "body.bin"
        path.write_bytes(eventstream(events))
        loaded = load_events(path)
        assert (loaded.format, loaded.events) == ("eventstream", events)
        assert main(["replay", str(path)]) == 0
        assert "assistant [end_turn]\n\nhi\n" in capsys.readouterr().out
        broken = bytearray(eventstream(events))
        broken[-1] ^= 1
        path.write_bytes(bytes(broken))
        with pytest.raises(LogError, match=r"body\.bin: bad event-stream frame at byte \d+"):
            load_events(path)
        assert main(["check", str(path)]) == 2  # said, with no traceback
        assert "bad event-stream frame at byte" in capsys.readouterr().err


class TestMessages:
    def test_message_start_opens_and_metadata_after_stop_stays(self) -> None:
        usage = {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}
        events = [
            {"messageStart": {"role": "assistant"}},
            delta(0, text="a"),
            END,
            {"metadata": {"usage": usage}},
            {"messageStart": {"role": "assistant"}},
            delta(0, text="b"),
        ]
        first, second = bedrock.PROTOCOL.accumulate(events)
        assert first == {
            "output": {"message": {"role": "assistant", "content": [{"text": "a"}]}},
            "stopReason": "end_turn",
            "usage": usage,
        }
        assert second["output"]["message"]["content"] == [{"text": "b"}]

    def test_events_before_any_message_start_open_a_message(self) -> None:
        assert content([delta(0, text="x"), stop(0), END]) == [{"text": "x"}]

    def test_blocks_in_index_order_tool_input_joined_and_parsed(self) -> None:
        events = [
            tool(1, "g"),
            delta(1, toolUse={"input": '{"a": '}),
            delta(0, text="hi"),
            delta(1, toolUse={"input": "[1]}"}),
            tool(2),
            delta(2, toolUse={"input": ""}),
        ]
        assert content(events) == [
            {"text": "hi"},
            {"toolUse": {"toolUseId": "t1", "name": "g", "input": {"a": [1]}}},
            {"toolUse": {"toolUseId": "t2", "name": "f", "input": {}}},
        ]

    def test_bad_tool_input_names_the_block(self) -> None:
        with pytest.raises(ValueError, match="tool input of block 0"):
            bedrock.PROTOCOL.accumulate([tool(0), delta(0, toolUse={"input": "{]"})])

    def test_reasoning_text_signature_and_redacted_bytes(self) -> None:
        events = [
            delta(0, reasoningContent={"text": "hm"}),
            delta(0, reasoningContent={"signature": "S"}),
            delta(1, reasoningContent={"redactedContent": b"ab"}),
            delta(1, reasoningContent={"redactedContent": b"cd"}),
        ]
        assert content(events) == [
            {"reasoningContent": {"reasoningText": {"text": "hm", "signature": "S"}}},
            {"reasoningContent": {"redactedContent": b"abcd"}},
        ]

    def test_a_stream_exception_is_kept(self) -> None:
        events = [delta(0, text="a"), {"throttlingException": {"message": "slow"}}]
        [message] = bedrock.PROTOCOL.accumulate(events)
        assert message["exceptions"] == [{"throttlingException": {"message": "slow"}}]

    def test_an_unknown_event_type_is_left_out(self) -> None:
        assert content([delta(0, text="a"), {"somethingNew": {}}]) == [{"text": "a"}]

    @settings(max_examples=40, deadline=None)
    @given(bedrock_stream())
    def test_the_live_engine_shows_what_fold_rebuilds(self, events: list[dict[str, Any]]) -> None:
        engine = bedrock.PROTOCOL.engine()
        for event in events:
            engine.push(event)
        assert bedrock.messages(engine.nodes()) == bedrock.PROTOCOL.accumulate(events)
        assert bedrock.PROTOCOL.accumulate(eventstream(events)) == bedrock.PROTOCOL.accumulate(
            events
        )


class TestMisuse:
    def test_raw_events_without_the_pre_pass_name_the_fix(self) -> None:
        engine = create_conversation_engine(bedrock.PROTOCOL.registration)
        with pytest.raises(ConversationError, match=r"bedrock\.PROTOCOL\.engine\(\)"):
            engine.push(END)

    @pytest.mark.parametrize("event", [5, "text", None, [1]])
    def test_a_non_object_names_what_was_pushed(self, event: Any) -> None:
        with pytest.raises(ConversationError, match="cannot fold a"):
            bedrock.PROTOCOL.engine().push(event)

    @pytest.mark.parametrize("event", [{}, {"messageStart": {}, "messageStop": {}}])
    def test_an_event_needs_exactly_one_key(self, event: dict[str, Any]) -> None:
        with pytest.raises(ConversationError, match="exactly one key"):
            bedrock.PROTOCOL.engine().push(event)

    def test_an_event_of_another_protocol_is_refused(self) -> None:
        with pytest.raises(ConversationError, match="another protocol"):
            bedrock.PROTOCOL.engine().push({"type": "message_start"})

    def test_a_bad_index_names_the_problem(self) -> None:
        with pytest.raises(ConversationError, match="contentBlockIndex must be an int"):
            bedrock.PROTOCOL.accumulate([{"contentBlockStop": {"contentBlockIndex": "0"}}])


class TestRender:
    def test_blocks_and_stop_reason_escaped(self) -> None:
        events = [
            delta(0, reasoningContent={"text": "hm"}),
            delta(1, text="<i>x</i>"),
            tool(2, "get"),
            delta(2, toolUse={"input": '{"q": 1}'}),
            END,
        ]
        [node] = bedrock.PROTOCOL.replay(events)
        assert bedrock.MESSAGE.render_text(node) == (
            "assistant [end_turn]\n\n[reasoning] hm\n\n<i>x</i>\n\n"
            f"tool get [{node.state.blocks[2].start['toolUse']['toolUseId']}] called\n"
            '  arguments: {"q": 1}'
        )
        html = bedrock.MESSAGE.render_html(node)
        assert "<i>" not in html
        assert "&lt;i&gt;x&lt;/i&gt;" in html
