"""definitions.gemini: each folding rule, the pre-pass, misuse, typed chunks, rendering."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from definitions import gemini
from engine import ConversationError, create_conversation_engine
from replay import detect_protocol, load_events
from replay.cli import main
from tests.conformance._provider_strategies import SIGNATURES, gemini_stream


def chunk(*parts: dict[str, Any], index: int = 0, **extra: Any) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}}
    if index:
        candidate["index"] = index
    fields = {k: v for k, v in extra.items() if k in ("finishReason", "safetyRatings")}
    candidate.update(fields)
    top = {k: v for k, v in extra.items() if k not in fields}
    return {"candidates": [candidate], **top}


def parts(events: list[dict[str, Any]], index: int = 0) -> list[dict[str, Any]]:
    [response] = gemini.PROTOCOL.accumulate(events)
    [candidate] = [c for c in response["candidates"] if c["index"] == index]
    result: list[dict[str, Any]] = candidate["content"]["parts"]
    return result


class TestText:
    def test_pieces_of_one_kind_join_and_a_thought_is_its_own_part(self) -> None:
        events = [
            chunk({"text": "think", "thought": True}),
            chunk({"text": "ing", "thought": True}),
            chunk({"text": "Hel"}),
            chunk({"text": "lo"}),
        ]
        assert parts(events) == [{"text": "thinking", "thought": True}, {"text": "Hello"}]

    @given(SIGNATURES, st.text(min_size=1))
    def test_a_signature_on_an_empty_part_signs_the_text_before_it_as_sent(
        self, signature: str, text: str
    ) -> None:
        events = [chunk({"text": text}), chunk({"text": "", "thoughtSignature": signature})]
        assert parts(events) == [{"text": text, "thoughtSignature": signature}]

    def test_text_after_a_signature_is_a_new_part(self) -> None:
        events = [
            chunk({"text": "a", "thoughtSignature": "S1"}),
            chunk({"text": "b"}),
            chunk({"text": "", "thoughtSignature": "S2"}),
        ]
        assert parts(events) == [
            {"text": "a", "thoughtSignature": "S1"},
            {"text": "b", "thoughtSignature": "S2"},
        ]

    def test_an_empty_carrier_part_adds_nothing(self) -> None:
        events = [
            chunk({"functionCall": {"name": "f", "args": {}}}),
            chunk({"text": ""}, finishReason="STOP"),
        ]
        [response] = gemini.PROTOCOL.accumulate(events)
        [candidate] = response["candidates"]
        assert candidate["content"]["parts"] == [{"functionCall": {"name": "f", "args": {}}}]
        assert candidate["finishReason"] == "STOP"

    def test_a_non_string_text_names_the_problem(self) -> None:
        with pytest.raises(ConversationError, match="text must be a string"):
            gemini.PROTOCOL.accumulate([chunk({"text": 5})])


class TestUsageAndFields:
    @given(st.lists(st.integers(0, 10**6), min_size=1, max_size=8))
    def test_cumulative_usage_is_replaced_never_summed(self, counts: list[int]) -> None:
        events = [chunk({"text": "x"}, usageMetadata={"candidatesTokenCount": n}) for n in counts]
        [response] = gemini.PROTOCOL.accumulate(events)
        assert response["usageMetadata"] == {"candidatesTokenCount": counts[-1]}

    def test_a_chunk_without_usage_keeps_the_last_one(self) -> None:
        events = [chunk({"text": "a"}, usageMetadata={"totalTokenCount": 3}), chunk({"text": "b"})]
        assert gemini.PROTOCOL.accumulate(events)[0]["usageMetadata"] == {"totalTokenCount": 3}

    def test_candidate_fields_last_value_wins(self) -> None:
        events = [
            chunk({"text": "a"}, safetyRatings=[1]),
            chunk({"text": "b"}, safetyRatings=[2], finishReason="STOP"),
        ]
        [candidate] = gemini.PROTOCOL.accumulate(events)[0]["candidates"]
        assert (candidate["safetyRatings"], candidate["finishReason"]) == ([2], "STOP")


class TestCandidates:
    def test_several_candidates_stay_apart_in_index_order(self) -> None:
        events = [
            chunk({"text": "B1"}, index=1),
            chunk({"text": "A1"}),
            chunk({"text": "B2"}, index=1),
        ]
        [response] = gemini.PROTOCOL.accumulate(events)
        assert [(c["index"], c["content"]["parts"]) for c in response["candidates"]] == [
            (0, [{"text": "A1"}]),
            (1, [{"text": "B1B2"}]),
        ]

    def test_a_bad_index_names_the_problem(self) -> None:
        with pytest.raises(ConversationError, match="index must be an int"):
            gemini.PROTOCOL.accumulate([{"candidates": [{"index": "0"}]}])


class TestCalls:
    def test_whole_calls_keep_their_ids_and_args_as_sent(self) -> None:
        events = [
            chunk({"functionCall": {"id": "c1", "name": "a", "args": {"x": 1}}}),
            chunk({"functionCall": {"name": "b"}, "thoughtSignature": "S"}),
        ]
        assert parts(events) == [
            {"functionCall": {"id": "c1", "name": "a", "args": {"x": 1}}},
            {"functionCall": {"name": "b"}, "thoughtSignature": "S"},
        ]

    def test_a_streamed_call_is_rebuilt_with_args_not_partial_args(self) -> None:
        events = [
            chunk({"functionCall": {"name": "f", "willContinue": True}, "thoughtSignature": "S"}),
            chunk({"functionCall": {"partialArgs": [_s("$.a", "Bo", True)], "willContinue": True}}),
            chunk({"functionCall": {"willContinue": True}}),  # only says it goes on
            chunk(
                {"functionCall": {"partialArgs": [_s("$.a", "ston", True)], "willContinue": True}}
            ),
            chunk({"functionCall": {"partialArgs": [_s("$.a", "")], "willContinue": True}}),
            chunk({"functionCall": {}}),
            chunk({"functionCall": {"partialArgs": [_s("$.b", "late")]}}),  # no call open
        ]
        assert parts(events) == [
            {"functionCall": {"name": "f", "args": {"a": "Boston"}}, "thoughtSignature": "S"}
        ]

    def test_a_streamed_call_closes_when_its_arguments_stop_continuing(self) -> None:
        events = [
            chunk({"functionCall": {"name": "f", "willContinue": True}}),
            chunk({"functionCall": {"partialArgs": [{"jsonPath": "$.n", "numberValue": 2}]}}),
            chunk({"functionCall": {"name": "g", "willContinue": True}}),
            chunk({"functionCall": {}}),
        ]
        assert parts(events) == [
            {"functionCall": {"name": "f", "args": {"n": 2}}},
            {"functionCall": {"name": "g", "args": {}}},
        ]

    def test_arguments_fill_the_innermost_open_call(self) -> None:
        events = [
            chunk({"functionCall": {"name": "outer", "willContinue": True}}),
            chunk({"functionCall": {"name": "inner", "willContinue": True}}),
            chunk({"functionCall": {"partialArgs": [_s("$.x", "1")], "willContinue": True}}),
            chunk({"functionCall": {}}),
            chunk({"functionCall": {"partialArgs": [_s("$.y", "2")], "willContinue": True}}),
            chunk({"functionCall": {}}),
        ]
        assert [p["functionCall"] for p in parts(events)] == [
            {"name": "outer", "args": {"y": "2"}},
            {"name": "inner", "args": {"x": "1"}},
        ]

    def test_a_bad_partial_args_entry_names_the_problem(self) -> None:
        events = [
            chunk({"functionCall": {"name": "f", "willContinue": True}}),
            chunk({"functionCall": {"partialArgs": [{"stringValue": "x"}], "willContinue": True}}),
        ]
        with pytest.raises(ConversationError, match="jsonPath"):
            gemini.PROTOCOL.accumulate(events)


def _s(path: str, value: str, more: bool = False) -> dict[str, Any]:
    entry: dict[str, Any] = {"jsonPath": path, "stringValue": value}
    if more:
        entry["willContinue"] = True
    return entry


class TestBuildArgs:
    @pytest.mark.parametrize(
        ("entries", "args"),
        [
            ([{"jsonPath": "$.a.b", "numberValue": 1}], {"a": {"b": 1}}),
            ([{"jsonPath": "$.l[1]", "boolValue": False}], {"l": [None, False]}),
            ([{"jsonPath": "$.l[0].k", "nullValue": None}], {"l": [{"k": None}]}),
            ([{"jsonPath": "$.m[0][1]", "numberValue": 0.5}], {"m": [[None, 0.5]]}),
            ([_s("$.s", "ab", True), _s("$.s", "c", True), _s("$.s", "")], {"s": "abc"}),
            ([{"jsonPath": "$.l[]"}], {"l": []}),  # an empty array
            ([{"jsonPath": "$.o"}], {"o": {}}),  # an empty object
            ([{"jsonPath": "$.o", "willContinue": True}], {}),  # more to come: nothing yet
            ([{"jsonPath": "$.n", "numberValue": 1}, {"jsonPath": "$.n"}], {"n": 1}),
            ([{"jsonPath": "$", "numberValue": 1}], {}),  # the root: no key
            ([{"jsonPath": "$.n", "numberValue": 1}, _s("$.n", "x")], {"n": "x"}),
        ],
    )
    def test_rules(self, entries: list[dict[str, Any]], args: dict[str, Any]) -> None:
        assert gemini.build_args(entries) == args

    @given(st.dictionaries(st.text("abc", min_size=1), st.text(min_size=1), max_size=4))
    def test_strings_streamed_in_pieces_rebuild_the_object(self, value: dict[str, str]) -> None:
        entries = []
        for key, text in value.items():
            entries += [_s(f"$.{key}", ch, True) for ch in text]
            entries.append(_s(f"$.{key}", ""))
        assert gemini.build_args(entries) == value


class TestScope:
    def test_a_new_response_id_opens_a_response_and_none_joins_the_current(self) -> None:
        events = [
            chunk({"text": "a"}, responseId="r1"),
            chunk({"text": "b"}),
            chunk({"text": "c"}, responseId="r2"),
        ]
        folded = gemini.PROTOCOL.accumulate(events)
        assert [(r["responseId"], r["candidates"][0]["content"]["parts"]) for r in folded] == [
            ("r1", [{"text": "ab"}]),
            ("r2", [{"text": "c"}]),
        ]

    @settings(max_examples=40, deadline=None)
    @given(gemini_stream())
    def test_the_live_engine_shows_what_fold_rebuilds(self, events: list[dict[str, Any]]) -> None:
        engine = gemini.PROTOCOL.engine()
        for event in events:
            engine.push(event)
        assert gemini.responses(engine.nodes()) == gemini.PROTOCOL.accumulate(events)

    @settings(max_examples=40, deadline=None)
    @given(gemini_stream(), st.integers(0, 30))
    def test_a_window_cut_anywhere_folds(self, events: list[dict[str, Any]], cut: int) -> None:
        """Arguments whose call was cut off are dropped; the rest folds."""
        [response] = gemini.PROTOCOL.accumulate(events[cut:] or events)
        assert response["candidates"][0]["finishReason"]


class TestMisuse:
    def test_raw_chunks_without_the_pre_pass_name_the_fix(self) -> None:
        engine = create_conversation_engine(gemini.PROTOCOL.registration)
        with pytest.raises(ConversationError, match=r"gemini\.PROTOCOL\.engine\(\)"):
            engine.push(chunk({"text": "x"}))

    @pytest.mark.parametrize("event", [5, "text", None, [1]])
    def test_a_non_object_names_what_was_pushed(self, event: Any) -> None:
        with pytest.raises(ConversationError, match="cannot fold a"):
            gemini.PROTOCOL.engine().push(event)

    @pytest.mark.parametrize(
        "event", [{"type": "message_start"}, {"id": "c", "choices": [], "object": "x"}]
    )
    def test_an_event_of_another_protocol_is_refused(self, event: dict[str, Any]) -> None:
        with pytest.raises(ConversationError, match="another protocol"):
            gemini.PROTOCOL.engine().push(event)


class TestTypedChunks:
    """google-genai's typed responses, by shape: a pydantic model with camelCase
    aliases and bytes signatures (the SDK's model config), built here without the SDK."""

    def test_typed_chunks_fold_as_their_json(self) -> None:
        pydantic = pytest.importorskip("pydantic")
        from pydantic.alias_generators import to_camel

        class Model(pydantic.BaseModel):
            model_config = pydantic.ConfigDict(
                alias_generator=to_camel, populate_by_name=True, ser_json_bytes="base64"
            )

        class FunctionCall(Model):
            name: str | None = None
            args: dict[str, Any] | None = None

        class Part(Model):
            text: str | None = None
            thought: bool | None = None
            thought_signature: bytes | None = None
            function_call: FunctionCall | None = None

        class Content(Model):
            role: str | None = None
            parts: list[Part] | None = None

        class Candidate(Model):
            content: Content | None = None
            finish_reason: str | None = None
            index: int | None = None

        class Response(Model):
            candidates: list[Candidate] | None = None
            response_id: str | None = None
            sdk_http_response: dict[str, Any] | None = None

        raw = b"\xfb\xff\xfe signature"  # standard base64 has + and / here
        signature = base64.b64encode(raw).decode()
        assert "+" in signature or "/" in signature
        dicts = [
            chunk({"text": "Hi", "thoughtSignature": signature}, responseId="r"),
            chunk({"functionCall": {"name": "f", "args": {"snake_key": 1}}}, responseId="r"),
        ]
        typed = [
            Response(
                candidates=[
                    Candidate(
                        content=Content(
                            role="model", parts=[Part(text="Hi", thought_signature=raw)]
                        )
                    )
                ],
                response_id="r",
                sdk_http_response={"headers": {}},
            ),
            Response(
                candidates=[
                    Candidate(
                        content=Content(
                            role="model",
                            parts=[
                                Part(function_call=FunctionCall(name="f", args={"snake_key": 1}))
                            ],
                        )
                    )
                ],
                response_id="r",
            ),
        ]
        assert gemini.PROTOCOL.accumulate(typed) == gemini.PROTOCOL.accumulate(dicts)

    def test_a_typed_object_of_another_protocol_is_refused(self) -> None:
        class Event:
            type = "message_start"

            def to_dict(self, mode: str = "python") -> dict[str, Any]:
                return {"type": "message_start", "message": {}}

        with pytest.raises(ConversationError, match="not an event of this protocol"):
            gemini.PROTOCOL.engine().push(Event())


class TestRender:
    def test_text_calls_and_finish(self) -> None:
        events = [
            chunk({"text": "hm", "thought": True}),
            chunk({"text": "<b>hi</b>"}),
            chunk({"functionCall": {"name": "f", "args": {"x": 1}}}, finishReason="STOP"),
        ]
        [node] = gemini.PROTOCOL.replay(events)
        definition = gemini.RESPONSE
        assert definition.render_text(node) == (
            'assistant [STOP]\n\n[thought] hm\n\n<b>hi</b>\n\ntool f called\n  arguments: {"x": 1}'
        )
        html = definition.render_html(node)
        assert "<b>" not in html
        assert "&lt;b&gt;hi&lt;/b&gt;" in html


class TestReplay:
    """``convo`` reads a Gemini recording in each of its containers and detects it."""

    @pytest.mark.parametrize("container", ["sse", "json", "jsonl"])
    def test_every_container_replays_and_checks(
        self, container: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        events = [
            chunk({"text": "Hel"}, responseId="r"),
            chunk({"text": "lo"}, responseId="r", finishReason="STOP"),
        ]
        text = {
            "sse": "".join(f"data: {json.dumps(e)}\r\n\r\n" for e in events),
            "json": json.dumps(events, indent=1),  # the REST array, one chunk per element
            "jsonl": "".join(json.dumps(e) + "\n" for e in events),
        }[container]
        path = tmp_path / f"stream.{container}"
        path.write_text(text, encoding="utf-8")
        loaded = load_events(path)
        assert (loaded.format, loaded.events) == (container, events)
        assert detect_protocol(loaded.events).protocol == "gemini"
        assert main(["replay", str(path)]) == 0
        assert "Hello\n" in capsys.readouterr().out
        assert main(["check", str(path)]) == 0
