"""The conversation as messages: built-in kinds by hand, provider sets on recordings.

A recorded model turn goes back to its provider exactly as the SDK returned it:
recorded stream -> nodes -> generic messages -> the gateway's items equals the
SDK's final message converted to a request param by the SDK's own types. Two
normalizations, both provider rules: ``null`` fields are absent (the API reads
them so), and Anthropic's empty text blocks are left out (the API refuses them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from definitions import builtin, event_type
from definitions.conversation import NO_RESULT, answer_unanswered, conversation_messages
from definitions.gateways import ANTHROPIC, OPENAI_CHAT, OPENAI_RESPONSES
from engine import (
    Message,
    Reasoning,
    Role,
    Text,
    ToolCall,
    ToolResult,
    create_conversation_engine,
)
from replay import detect_protocol, load_events, protocol_definitions
from tests._shared import shared_files

from ..conformance import _python_oracles as oracles


def nodes_of(events: list[Any]) -> Any:
    return protocol_definitions(detect_protocol(events).protocol).replay(events)


def fold_builtin(events: list[dict[str, Any]]) -> list[Message]:
    engine = create_conversation_engine(builtin.DEFINITIONS, event_type=event_type)
    engine.push_many(events)
    return conversation_messages(engine.nodes())


# -- built-in kinds -------------------------------------------------------------------


def test_builtin_turns_results_and_denials() -> None:
    events = [
        {"type": "message.start", "id": "u1", "role": "user", "text": "fix it"},
        {"type": "reasoning.start", "id": "r1"},
        {"type": "reasoning.delta", "id": "r1", "text": "look first"},
        {"type": "message.start", "id": "a1", "role": "assistant", "text": "Looking."},
        {"type": "tool_call.start", "id": "t1", "name": "ls"},
        {"type": "tool_call.arguments_delta", "id": "t1", "text": '{"p": "."}'},
        {"type": "tool_call.start", "id": "t2", "name": "rm"},
        {"type": "approval.request", "id": "ap", "action": "rm", "tool_call_id": "t2"},
        {"type": "approval.decision", "id": "ap", "decision": "denied", "reason": "no"},
        {"type": "tool_call.result", "id": "t1", "output": "a b"},
        {"type": "message.start", "id": "a2", "role": "assistant", "text": "Done."},
        {"type": "tool_call.start", "id": "t3", "name": "cat"},
        {"type": "tool_call.error", "id": "t3", "message": "boom"},
        {"type": "message.start", "id": "u2", "role": "user", "text": "thanks"},
    ]
    assert fold_builtin(events) == [
        Message(role=Role.user, content="fix it"),
        Message(
            role=Role.assistant,
            content=(
                Reasoning("look first"),
                Text("Looking."),
                ToolCall("t1", "ls", '{"p": "."}'),
                ToolCall("t2", "rm", ""),
            ),
        ),
        Message(
            role=Role.user,
            content=(
                ToolResult("t1", "a b", name="ls"),
                ToolResult("t2", "no", is_error=True, denied=True, name="rm"),
            ),
        ),
        Message(role=Role.assistant, content=(Text("Done."), ToolCall("t3", "cat", ""))),
        Message(role=Role.user, content=(ToolResult("t3", "boom", is_error=True, name="cat"),)),
        Message(role=Role.user, content="thanks"),
    ]


def test_unanswered_calls_get_a_neutral_result_once() -> None:
    turn = Message(role=Role.assistant, content=(ToolCall("a", "f"), ToolCall("b", "g")))
    later = Message(role=Role.user, content=(ToolResult("a", "x"), Text("go")))
    answered: set[str] = set()
    closed = answer_unanswered([turn, later], answered)
    assert closed[1] == Message(
        role=Role.user,
        content=(
            ToolResult("b", NO_RESULT, is_error=True, name="g"),
            ToolResult("a", "x"),
            Text("go"),
        ),
    )
    # b's real result, arriving in a later batch, would be a second result: dropped
    assert (
        answer_unanswered([Message(role=Role.user, content=(ToolResult("b", "y"),))], answered)
        == []
    )


def test_example_logs_read_as_conversations() -> None:
    root = Path(__file__).resolve().parents[2]
    for path in [*root.glob("definitions/examples/*.jsonl"), *root.glob("replay/examples/*.jsonl")]:
        events = list(load_events(path).events)
        messages = conversation_messages(nodes_of(events))
        assert all(isinstance(m, Message) for m in messages), path.name


# -- provider sets on recordings ------------------------------------------------------


def drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [drop_nulls(v) for v in value]
    return value


def model_turns(path: Path) -> list[Message]:
    events = list(load_events(path).events)
    return [m for m in conversation_messages(nodes_of(events)) if m.role is Role.assistant]


ANTHROPIC_FIXTURES = [
    *shared_files("fixtures", "recorded", pattern="*anthropic*"),
    *shared_files("fixtures", "synthetic", pattern="anthropic_*"),
]


@pytest.mark.parametrize("path", ANTHROPIC_FIXTURES)
def test_anthropic_turns_go_back_as_the_sdk_returned_them(path: Path) -> None:
    from anthropic._models import construct_type
    from anthropic._utils._json import openapi_dumps
    from anthropic.types import Message as SDKMessage

    from ..conformance.test_anthropic import per_message_reference

    reference = per_message_reference(oracles.anthropic_read_events(path))
    expected = []
    for message in reference:
        # construct_type: how the SDK itself builds a response (lenient to new blocks)
        sdk_message: Any = construct_type(type_=SDKMessage, value=message)
        param = json.loads(openapi_dumps(sdk_message.to_param()))
        param["content"] = [
            b for b in param["content"] if not (b.get("type") == "text" and not b.get("text"))
        ]
        if param["content"]:
            expected.append(drop_nulls(param))
    got = [item for m in model_turns(path) for item in ANTHROPIC.items(m)]
    assert drop_nulls(got) == expected


CHAT_FIXTURES = [
    *shared_files("fixtures", "recorded", pattern="openai-python-*"),
    *shared_files("fixtures", "recorded", pattern="openai_chat_*"),
    *shared_files("fixtures", "recorded", pattern="vercel-openai-chat-*"),
    *shared_files("fixtures", "synthetic", pattern="openai_chat_*"),
]


def typed(value: dict[str, Any], param: Any) -> dict[str, Any]:
    """``value`` cut to the keys of the SDK's TypedDict ``param``."""
    return {k: v for k, v in value.items() if k in param.__annotations__ and v is not None}


@pytest.mark.parametrize("path", CHAT_FIXTURES)
def test_openai_chat_turns_go_back_as_the_sdk_returned_them(path: Path) -> None:
    from openai.types.chat import (
        ChatCompletion,
        ChatCompletionAssistantMessageParam,
        ChatCompletionMessageFunctionToolCallParam,
    )
    from openai.types.chat.chat_completion_message_function_tool_call_param import Function

    events = oracles.openai_read_events(path)
    if not events or "choices" not in events[0]:
        pytest.skip("not a Chat Completions stream (a Responses recording of openai-python)")
    completion = ChatCompletion.model_validate(oracles.openai_chat(events))
    message = completion.choices[0].message.model_dump(mode="json")
    expected = typed(
        {**message, "content": message.get("content") or None}, ChatCompletionAssistantMessageParam
    )
    if "tool_calls" in expected:
        expected["tool_calls"] = [
            {
                **typed(c, ChatCompletionMessageFunctionToolCallParam),
                "function": typed(c["function"], Function),
            }
            for c in expected["tool_calls"]
        ]
    got = [item for m in model_turns(path) for item in OPENAI_CHAT.items(m)]
    assert got == ([expected] if len(expected) > 1 else [])


RESPONSES_FIXTURES = [
    *shared_files("fixtures", "recorded", pattern="vercel-openai-responses-*"),
    *shared_files("fixtures", "recorded", pattern="openai_responses_*"),
    *shared_files("fixtures", "synthetic", pattern="openai_responses_*"),
]


@pytest.mark.slow
@pytest.mark.parametrize("path", RESPONSES_FIXTURES)
def test_openai_responses_turns_go_back_as_the_sdk_returned_them(path: Path) -> None:
    from openai._models import construct_type
    from openai.types.responses import Response

    try:
        finals = [r["final"] for r in oracles.openai_responses(oracles.openai_read_events(path))]
    except Exception as exc:  # see tests/conformance/test_openai_responses.py REFUSED
        pytest.skip(f"the SDK refuses this stream: {type(exc).__name__}")
    expected = [
        drop_nulls(item.model_dump(exclude_unset=True, mode="json"))
        for final in finals
        if final
        # construct_type: how the SDK itself builds a response (lenient to new fields)
        for item in construct_type(type_=Response, value=final).output
    ]
    got = [item for m in model_turns(path) for item in OPENAI_RESPONSES.items(m)]
    assert drop_nulls(got) == expected


def shape(messages: list[Message]) -> list[tuple[str, list[str]]]:
    return [(m.role.value, [type(p).__name__ for p in m.parts]) for m in messages]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "aisdk_ui_chunks_react_agent_tool_calling.json",
            [
                ("assistant", ["Reasoning", "ToolCall", "ToolCall"]),
                ("user", ["ToolResult", "ToolResult"]),
                ("assistant", ["Text"]),
            ],
        ),
        (
            "agui_parallel_tool_calls.json",
            [
                ("assistant", ["ToolCall"]),
                ("user", ["ToolResult"]),
                ("assistant", ["ToolCall"]),
                ("user", ["ToolResult"]),
                ("assistant", ["Text"]),
            ],
        ),
        ("agui-dotnet-step07-thinking.json", [("assistant", ["Reasoning", "Text"])]),
    ],
)
def test_ui_protocols_read_as_turns(name: str, expected: list[tuple[str, list[str]]]) -> None:
    """AI SDK steps and AG-UI messages become model turns answered by their results."""
    (param,) = shared_files("fixtures", "recorded", pattern=name)
    path = param.values[0]  # type: ignore[attr-defined]
    if path is None:
        pytest.skip("../shared is absent")
    events = list(load_events(path).events)
    messages = conversation_messages(nodes_of(events))
    assert shape(messages) == expected
    calls = [p.id for m in messages for p in m.parts if isinstance(p, ToolCall)]
    results = [p.call_id for m in messages for p in m.parts if isinstance(p, ToolResult)]
    assert calls == results
