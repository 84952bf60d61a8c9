"""Anything but an envelope pushed into an engine of a set's definitions, past the
pre-pass (a raw dict, an SDK's typed object, any other object), is an error naming
the fix, never 0 nodes (issue #17, "misuse never silent").

The sets that route their envelopes by class (``event_type=type``) see such an object
reach no definition of theirs; one definition of each set is a ``fallback`` (or an
``Unrouted``), so the engine hands it every type no other definition admits.
Anthropic routes with a function of the event that refuses it itself.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from engine import ConversationError, create_conversation_engine

from ._sdk import require
from ._sets import WIRE as SETS


def _anthropic() -> Any:
    types = require("anthropic.types")
    return types.RawMessageStartEvent.model_validate(
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        }
    )


def _openai_chat() -> Any:
    chunk = require("openai.types.chat").ChatCompletionChunk
    return chunk.model_validate(
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": "hi"}}],
        }
    )


def _openai_responses() -> Any:
    created = require("openai.types.responses").ResponseCreatedEvent
    return created.model_validate(
        {
            "type": "response.created",
            "sequence_number": 0,
            "response": {
                "id": "r",
                "object": "response",
                "created_at": 1,
                "model": "gpt",
                "output": [],
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": [],
            },
        }
    )


def _gemini() -> Any:
    types = require("google.genai.types")
    return types.GenerateContentResponse.model_validate(
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "index": 0}]}
    )


# What the official SDK yields for each set that has one in the test extra (boto3
# yields Bedrock's events as dicts; AG-UI and the AI SDK have no Python client here).
SDK_OBJECTS = {
    "anthropic": _anthropic,
    "openai_chat": _openai_chat,
    "openai_responses": _openai_responses,
    "gemini": _gemini,
}


class Foreign:
    """An object of no protocol."""


class Tagged(msgspec.Struct, tag="message_start"):
    """A typed event of nobody's SDK (a tagged Struct, as ``load_events(types=)``)."""


FOREIGN = [Foreign(), 7, "message_start", Tagged(), {"type": "message_start"}]


def _engines(name: str) -> list[Any]:
    """Engines of the set's definitions with the routing its own fold uses, and routed
    by hand with its key."""
    protocol = SETS[name].PROTOCOL
    return [
        create_conversation_engine(protocol.registration),
        create_conversation_engine(protocol.definitions, event_type=protocol.event_type),
    ]


def _refused(name: str, event: object) -> None:
    fix = rf"{name}\.PROTOCOL\.engine\(\)"
    for engine in _engines(name):
        with pytest.raises(ConversationError, match=fix) as info:
            engine.push(event)
        assert engine.nodes() == ()
        # The message names what was pushed, too.
        assert type(event).__qualname__ in str(info.value)


@pytest.mark.parametrize("name", SDK_OBJECTS)
def test_an_sdk_typed_object_past_the_pre_pass_names_the_fix(name: str) -> None:
    _refused(name, SDK_OBJECTS[name]())


@pytest.mark.parametrize("name", SETS)
@pytest.mark.parametrize("event", FOREIGN, ids=lambda event: type(event).__name__)
def test_any_other_object_past_the_pre_pass_names_the_fix(name: str, event: object) -> None:
    _refused(name, event)


@pytest.mark.parametrize("name", SDK_OBJECTS)
def test_the_live_engine_takes_the_same_object(name: str) -> None:
    """The fallback changes nothing for the set's own envelopes: through its pre-pass
    (the live engine's first push hook) the object folds."""
    engine = SETS[name].PROTOCOL.engine()
    engine.push(SDK_OBJECTS[name]())
    assert engine.nodes() != ()
