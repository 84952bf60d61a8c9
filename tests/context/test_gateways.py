"""Gateways: items and requests per provider, exact reasoning round trips, validators."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from definitions.gateways import (
    ANTHROPIC,
    BEDROCK,
    GATEWAYS,
    GEMINI,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    declared,
    gateway,
)
from engine import (
    Context,
    Image,
    Message,
    Native,
    Reasoning,
    Role,
    Text,
    ToolCall,
    ToolResult,
)

ALL = list(GATEWAYS.values())
IDS = list(GATEWAYS)


def request(gw: Any, messages: list[Message]) -> dict[str, Any]:
    context = Context(gw)
    for m in messages:
        context.emplace_message(m)
    # As the context's requests are built: the called tools declared where the
    # provider wants them (Bedrock).
    result: dict[str, Any] = declared(gw.name, gw.request(context, model="m"))
    return result


def codes(gw: Any, messages: list[Message]) -> list[str]:
    return [p.code for p in gw.validate(request(gw, messages))]


SYSTEM = Message(role=Role.system, content="Be brief.")
ASK = Message(role=Role.user, content="What is in /tmp?")


def call(id_: str = "c1", *extra: Any) -> Message:
    return Message(role=Role.assistant, content=(*extra, ToolCall(id_, "ls", '{"path": "/tmp"}')))


def result(id_: str = "c1", *extra: Any, **kw: Any) -> Message:
    return Message(role=Role.user, content=(ToolResult(id_, "a b", name="ls", **kw), *extra))


ANSWER = Message(role=Role.assistant, content="a and b")


def test_gateway_by_name() -> None:
    assert gateway("gemini") is GEMINI
    assert gateway("bedrock") is BEDROCK
    with pytest.raises(ValueError, match="choose one of anthropic, bedrock, gemini"):
        gateway("cohere")


# -- requests ----------------------------------------------------------------------


def test_anthropic_request_lifts_the_system_prompt() -> None:
    payload = request(ANTHROPIC, [SYSTEM, ASK, call(), result(), ANSWER])
    assert payload["system"] == [{"type": "text", "text": "Be brief."}]
    assert payload["messages"] == [
        {"role": "user", "content": "What is in /tmp?"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c1", "name": "ls", "input": {"path": "/tmp"}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "a b"}],
        },
        {"role": "assistant", "content": "a and b"},
    ]
    assert payload["max_tokens"] == 4096


def test_openai_chat_request_splits_tool_results_into_tool_messages() -> None:
    payload = request(OPENAI_CHAT, [SYSTEM, ASK, call(), result("c1", Text("go on")), ANSWER])
    assert payload["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is in /tmp?"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "ls", "arguments": '{"path": "/tmp"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a b"},
        {"role": "user", "content": [{"type": "text", "text": "go on"}]},
        {"role": "assistant", "content": "a and b"},
    ]


def test_openai_responses_request_is_a_flat_item_list() -> None:
    payload = request(OPENAI_RESPONSES, [ASK, call(), result(), ANSWER])
    assert payload["input"] == [
        {"role": "user", "content": "What is in /tmp?"},
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": '{"path": "/tmp"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "a b"},
        {"role": "assistant", "content": "a and b"},
    ]


def test_gemini_request_has_system_instruction_and_named_function_responses() -> None:
    payload = request(GEMINI, [SYSTEM, ASK, call(), result(), ANSWER])
    assert payload["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    contents = payload["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user", "model"]
    assert contents[2]["parts"] == [
        {"functionResponse": {"name": "ls", "response": {"output": "a b"}, "id": "c1"}}
    ]


def test_gemini_merges_consecutive_roles() -> None:
    payload = request(GEMINI, [ASK, Message(role=Role.user, content="and /var?")])
    assert payload["contents"] == [
        {"role": "user", "parts": [{"text": "What is in /tmp?"}, {"text": "and /var?"}]}
    ]


def test_late_system_message_is_sent_as_a_caller_turn() -> None:
    late = Message(role=Role.system, content="Stop soon.")
    assert request(ANTHROPIC, [ASK, late])["messages"][1]["role"] == "user"
    assert request(GEMINI, [ASK, late])["contents"][-1]["parts"][-1] == {"text": "Stop soon."}


@pytest.mark.parametrize("gw", ALL, ids=IDS)
def test_denied_call_is_an_error_result(gw: Any) -> None:
    denied = Message(role=Role.user, content=(ToolResult("c1", "", denied=True, name="ls"),))
    payload = request(gw, [ASK, call(), denied])
    assert gw.validate(payload) == []
    text = str(payload)
    assert "is_error" in text or "error" in text or "denied" in text


@pytest.mark.parametrize("gw", ALL, ids=IDS)
def test_images_are_sent_in_the_providers_form(gw: Any) -> None:
    picture = Message(role=Role.user, content=(Text("see"), Image("image/png", data="AAAA")))
    payload = request(gw, [picture])
    assert "AAAA" in str(payload)
    assert gw.validate(payload) == []


# -- exact round trips of provider reasoning ------------------------------------------


def test_anthropic_thinking_and_redacted_thinking_round_trip() -> None:
    output = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "let me see", "signature": "sig=="},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "t1", "name": "ls", "input": {"a": [1, {"b": None}]}},
            {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"q": "x"}},
        ],
    }
    message = ANTHROPIC.message(output)
    assert message.content[0] == Reasoning("let me see", "anthropic", signature="sig==")
    assert isinstance(message.content[4], Native)
    assert ANTHROPIC.items(message) == [output]


def test_openai_encrypted_reasoning_round_trips() -> None:
    output = [
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [
                {"type": "summary_text", "text": "one"},
                {"type": "summary_text", "text": "two"},
            ],
            "encrypted_content": "gAAA",
        },
        {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "reasoning", "id": "rs_2", "summary": []},
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "hi", "annotations": []}],
        },
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
    ]
    message = OPENAI_RESPONSES.message(output)
    items = OPENAI_RESPONSES.items(message)
    output[1]["status"] = "completed"  # a completed call is echoed with its status
    assert items == output


def test_gemini_thought_signatures_round_trip() -> None:
    content = {
        "role": "model",
        "parts": [
            {"text": "thinking...", "thought": True, "thoughtSignature": "ts1"},
            {"functionCall": {"name": "ls", "args": {"p": 1}}, "thoughtSignature": "ts2"},
            {"functionCall": {"name": "cat", "args": {}}},
            {"text": "done", "thoughtSignature": "ts3"},
            {"executableCode": {"language": "PYTHON", "code": "1"}},
        ],
    }
    assert GEMINI.items(GEMINI.message(content)) == [content]


def test_openai_chat_message_round_trips() -> None:
    output = {
        "role": "assistant",
        "content": "x",
        "refusal": None,
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }
    message = OPENAI_CHAT.message({"choices": [{"message": output}]})
    del output["refusal"]
    assert OPENAI_CHAT.items(message) == [output]


# -- crossing providers --------------------------------------------------------------

SIGNED = {
    "anthropic": Reasoning("hm", "anthropic", signature="SIG-ANTHROPIC"),
    "openai-responses": Reasoning("hm", "openai-responses", encrypted="ENC-OPENAI", id="rs"),
    "gemini": Reasoning("", "gemini", signature="SIG-GEMINI"),
    "openai-chat": Reasoning("THOUGHT-CHAT", "openai-chat"),
}


@pytest.mark.parametrize("source", list(SIGNED))
@pytest.mark.parametrize("gw", ALL, ids=IDS)
def test_signed_reasoning_crosses_to_no_other_provider(gw: Any, source: str) -> None:
    reasoning = SIGNED[source]
    conversation = [ASK, call("c1", reasoning), result(), ANSWER]
    payload = request(gw, conversation)
    assert gw.validate(payload) == []
    secret = reasoning.signature or reasoning.encrypted or reasoning.text
    if gw.name != source:
        assert secret not in str(payload)
    elif gw.name != "openai-chat":  # Chat Completions takes no reasoning back
        assert secret in str(payload)


@pytest.mark.parametrize("gw", ALL, ids=IDS)
def test_native_parts_cross_as_their_text(gw: Any) -> None:
    cited = Native("elsewhere", '{"type": "cited"}', text="quoted")
    hidden = Native("elsewhere", '{"type": "server_tool"}')
    payload = request(gw, [ASK, Message(role=Role.assistant, content=(cited, hidden))])
    assert "quoted" in str(payload)
    assert "server_tool" not in str(payload)


# -- validators -------------------------------------------------------------------------

BROKEN = {
    "call-without-result": [ASK, call(), ANSWER, ASK],
    "unanswered-call-at-end": [ASK, call()],
    "result-without-call": [ASK, result("zz")],
    "result-not-after-call": [ASK, call(), ASK, result()],
    "duplicate-result": [ASK, call(), result(), result(), ANSWER],
}


@pytest.mark.parametrize("code", list(BROKEN))
@pytest.mark.parametrize("gw", ALL, ids=IDS)
def test_validator_reports_each_refusal(gw: Any, code: str) -> None:
    assert code in codes(gw, BROKEN[code])


def test_result_behind_other_content_is_not_right_after_its_call() -> None:
    late = Message(role=Role.user, content=(Text("first"), ToolResult("c1", "x")))
    # the gateways put results first, so build the request by hand
    payload = {
        "messages": [
            {"role": "user", "content": "q"},
            ANTHROPIC.items(call())[0],
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "first"},
                    *ANTHROPIC.items(late)[0]["content"][:1],
                ],
            },
        ]
    }
    assert [p.code for p in ANTHROPIC.validate(payload)] == ["result-not-after-call"]


@pytest.mark.parametrize(
    ("gw", "reasoning"),
    [
        (ANTHROPIC, Reasoning("hm", "anthropic", signature="s")),
        (OPENAI_RESPONSES, Reasoning("hm", "openai-responses", id="rs")),
        (GEMINI, Reasoning("hm", "gemini")),
    ],
    ids=["anthropic", "openai-responses", "gemini"],
)
def test_reasoning_separated_from_its_turn(gw: Any, reasoning: Reasoning) -> None:
    alone = Message(role=Role.assistant, content=(reasoning,))
    assert "reasoning-separated" in codes(gw, [ASK, alone, ASK])
    assert codes(gw, [ASK, call("c1", reasoning), result()]) == []


def test_gemini_requires_alternating_roles() -> None:
    payload = {"contents": [{"role": "user", "parts": [{"text": "a"}]}] * 2}
    assert [p.code for p in GEMINI.validate(payload)] == ["roles-not-alternating"]


@pytest.mark.parametrize("gw", ALL, ids=IDS)
def test_malformed_requests_are_reported_not_raised(gw: Any) -> None:
    assert [p.code for p in gw.validate({})] == ["malformed"]


# -- property: a well-paired conversation is valid everywhere ---------------------------


@st.composite
def conversations(draw: st.DrawFn) -> list[Message]:
    messages = [ASK]
    for turn in range(draw(st.integers(0, 5))):
        calls = draw(st.integers(0, 3))
        provider = draw(st.sampled_from([*SIGNED, ""]))
        parts: list[Any] = []
        if provider:
            parts.append(SIGNED[provider])
        if draw(st.booleans()) or not calls:
            parts.append(Text(draw(st.text(min_size=1, max_size=5))))
        ids = [f"c{turn}_{i}" for i in range(calls)]
        parts += [
            ToolCall(i, "f", draw(st.sampled_from(["{}", '{"a": 1}', "not json"]))) for i in ids
        ]
        messages.append(Message(role=Role.assistant, content=tuple(parts)))
        if ids:
            results = tuple(
                ToolResult(i, "ok", is_error=draw(st.booleans()), name="f") for i in ids
            )
            extra = (Text("more"),) if draw(st.booleans()) else ()
            messages.append(Message(role=Role.user, content=(*results, *extra)))
        else:
            messages.append(Message(role=Role.user, content="next"))
    return messages


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(conversations())
def test_well_paired_conversations_are_valid_for_every_provider(messages: list[Message]) -> None:
    for gw in ALL:
        assert gw.validate(request(gw, messages)) == [], gw.name


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(conversations(), st.data())
def test_dropping_a_result_is_always_caught(messages: list[Message], data: st.DataObject) -> None:
    with_results = [
        i for i, m in enumerate(messages) if any(isinstance(p, ToolResult) for p in m.parts)
    ]
    if not with_results:
        return
    index = data.draw(st.sampled_from(with_results))
    broken = messages[:index] + messages[index + 1 :]
    for gw in ALL:
        assert gw.validate(request(gw, broken)) != [], gw.name


# -- Bedrock Converse against botocore's request model ---------------------------------


def converse_problems(payload: dict[str, Any]) -> str:
    """What botocore's own validator (the one ``client.converse`` runs) says of the
    request: empty when it accepts it."""
    import botocore.session
    from botocore.validate import ParamValidator

    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    shape = model.operation_model("Converse").input_shape
    report = ParamValidator().validate(payload, shape)
    return str(report.generate_report()) if report.has_errors() else ""


def test_bedrock_request_lifts_the_system_prompt_and_pairs_tool_use() -> None:
    payload = request(BEDROCK, [SYSTEM, ASK, call(), result(), ANSWER])
    assert payload["modelId"] == "m"
    assert payload["system"] == [{"text": "Be brief."}]
    assert payload["messages"] == [
        {"role": "user", "content": [{"text": "What is in /tmp?"}]},
        {
            "role": "assistant",
            "content": [{"toolUse": {"toolUseId": "c1", "name": "ls", "input": {"path": "/tmp"}}}],
        },
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "c1", "content": [{"text": "a b"}]}}],
        },
        {"role": "assistant", "content": [{"text": "a and b"}]},
    ]
    assert converse_problems(payload) == ""


def test_bedrock_reasoning_and_unknown_blocks_round_trip() -> None:
    output = {
        "role": "assistant",
        "content": [
            {"reasoningContent": {"reasoningText": {"text": "hm", "signature": "sig"}}},
            {"reasoningContent": {"redactedContent": "b3BhcXVl"}},
            {"text": "Looking."},
            {"toolUse": {"toolUseId": "t1", "name": "ls", "input": {"a": [1]}}},
            {"citationsContent": {"content": [{"text": "x"}], "citations": []}},
        ],
    }
    message = BEDROCK.message({"output": {"message": output}})
    assert message.parts[0] == Reasoning("hm", "bedrock", signature="sig")
    assert isinstance(message.parts[4], Native)
    assert BEDROCK.items(message) == [output]


def test_bedrock_media_is_sent_as_bytes_or_named_in_text() -> None:
    picture = Message(
        role=Role.user,
        content=(Text("see"), Image("image/png", data="AAAA"), Image("image/png", url="http://x")),
    )
    payload = request(BEDROCK, [picture])
    assert payload["messages"][0]["content"] == [
        {"text": "see"},
        {"image": {"format": "png", "source": {"bytes": "AAAA"}}},
        {"text": "[image http://x]"},
    ]
    assert converse_problems(payload) == ""


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(conversations())
def test_every_bedrock_request_passes_botocores_request_model(messages: list[Message]) -> None:
    payload = request(BEDROCK, [SYSTEM, *messages])
    assert converse_problems(payload) == ""


def test_bedrock_wants_the_tools_its_history_calls_declared() -> None:
    bare = BEDROCK.request(Context(BEDROCK), model="m")
    context = Context(BEDROCK)
    for message in [ASK, call(), result(), ANSWER]:
        context.emplace_message(message)
    bare = BEDROCK.request(context, model="m")
    assert [p.code for p in BEDROCK.validate(bare)] == ["tools-undeclared"]
    made = declared("bedrock", bare)
    assert made["toolConfig"] == {
        "tools": [{"toolSpec": {"name": "ls", "inputSchema": {"json": {"type": "object"}}}}]
    }
    assert BEDROCK.validate(made) == []
    assert declared("anthropic", bare) is bare
