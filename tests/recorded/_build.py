"""Recordings made by hand for the tests: a simulated agent loop for each API.

``Answer`` is what the model says in one call (text, tool calls); ``stream(api, n,
answer)`` is that answer as the API streams it, ``body(api, n, answer)`` as its
non-streamed body; ``request(api, history)`` is the request an agent sends for a
generic history (through the gateways; Bedrock by hand); ``Agent`` runs the loop
and writes the recording events, in the format ``replay.record`` writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import msgspec

from definitions._requests_read import answer_message
from definitions.gateways import ANTHROPIC, GEMINI, OPENAI_CHAT, OPENAI_RESPONSES, Gateway
from engine import Message, Role, Text, ToolCall, ToolResult

APIS = (
    "anthropic.messages",
    "openai.chat",
    "openai.responses",
    "gemini.generate_content",
    "bedrock.converse",
)
URLS = {
    "anthropic.messages": "https://api.anthropic.com/v1/messages",
    "openai.chat": "https://api.openai.com/v1/chat/completions",
    "openai.responses": "https://api.openai.com/v1/responses",
    "gemini.generate_content": "https://generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent?alt=sse",
    "bedrock.converse": "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse-stream",
}


@attrs.frozen
class Answer:
    """What the model says in one call: text (cut in ``pieces``), then tool calls."""

    text: str = ""
    calls: tuple[tuple[str, str, dict[str, Any]], ...] = ()  # (id, name, arguments)
    pieces: int = 2


def _cut(text: str, pieces: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _json(value: Any) -> str:
    return msgspec.json.encode(value).decode()


# -- streams ---------------------------------------------------------------------------


def stream(api: str, n: int, answer: Answer) -> list[dict[str, Any]]:
    """``answer`` as call ``n`` of ``api`` streams it (ids repeat across calls on
    purpose: the recorded set scopes them by call)."""
    return {
        "anthropic.messages": _anthropic_stream,
        "openai.chat": _chat_stream,
        "openai.responses": _responses_stream,
        "gemini.generate_content": _gemini_stream,
        "bedrock.converse": _bedrock_stream,
    }[api](answer)


def _anthropic_stream(answer: Answer) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 3, "output_tokens": 1},
            },
        }
    ]
    index = 0
    if answer.text:
        events.append(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            }
        )
        for piece in _cut(answer.text, answer.pieces):
            events.append(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": piece},
                }
            )
        events.append({"type": "content_block_stop", "index": 0})
        index = 1
    for offset, (call_id, name, arguments) in enumerate(answer.calls):
        at = index + offset
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        events.append({"type": "content_block_start", "index": at, "content_block": block})
        for piece in _cut(_json(arguments), answer.pieces):
            delta = {"type": "input_json_delta", "partial_json": piece}
            events.append({"type": "content_block_delta", "index": at, "delta": delta})
        events.append({"type": "content_block_stop", "index": at})
    stop = "tool_use" if answer.calls else "end_turn"
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 5},
        }
    )
    events.append({"type": "message_stop"})
    return events


def _chat_stream(answer: Answer) -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-test",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    chunks = [chunk({"role": "assistant", "content": ""})]
    for piece in _cut(answer.text, answer.pieces):
        chunks.append(chunk({"content": piece}))
    for index, (call_id, name, arguments) in enumerate(answer.calls):
        head = {"index": index, "id": call_id, "type": "function"}
        chunks.append(
            chunk({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]})
        )
        for piece in _cut(_json(arguments), answer.pieces):
            chunks.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            )
    chunks.append(chunk({}, "tool_calls" if answer.calls else "stop"))
    return chunks


def _responses_items(answer: Answer) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if answer.text:
        content = [{"type": "output_text", "text": answer.text, "annotations": []}]
        items.append(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": content,
            }
        )
    for index, (call_id, name, arguments) in enumerate(answer.calls):
        items.append(
            {
                "id": f"fc_{index}",
                "type": "function_call",
                "call_id": call_id,
                "name": name,
                "arguments": _json(arguments),
                "status": "completed",
            }
        )
    return items


def _response(status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "model": "gpt-test",
        "status": status,
        "output": output,
        "error": None,
    }


def _responses_stream(answer: Answer) -> list[dict[str, Any]]:
    items = _responses_items(answer)
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": _response("in_progress", [])}
    ]
    for index, item in enumerate(items):
        if item["type"] == "message":
            added = {**item, "status": "in_progress", "content": []}
            events.append(
                {"type": "response.output_item.added", "output_index": index, "item": added}
            )
            part = {"type": "output_text", "text": "", "annotations": []}
            events.append(
                {
                    "type": "response.content_part.added",
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": 0,
                    "part": part,
                }
            )
            for piece in _cut(answer.text, answer.pieces):
                events.append(
                    {
                        "type": "response.output_text.delta",
                        "item_id": item["id"],
                        "output_index": index,
                        "content_index": 0,
                        "delta": piece,
                    }
                )
        else:
            added = {**item, "status": "in_progress", "arguments": ""}
            events.append(
                {"type": "response.output_item.added", "output_index": index, "item": added}
            )
            for piece in _cut(item["arguments"], answer.pieces):
                events.append(
                    {
                        "type": "response.function_call_arguments.delta",
                        "item_id": item["id"],
                        "output_index": index,
                        "delta": piece,
                    }
                )
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": _response("completed", items)})
    return events


def _gemini_stream(answer: Answer) -> list[dict[str, Any]]:
    def chunk(parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        return {"candidates": [candidate], "modelVersion": "gemini-test", "responseId": "r1"}

    chunks = [chunk([{"text": piece}]) for piece in _cut(answer.text, answer.pieces)]
    for call_id, name, arguments in answer.calls:
        chunks.append(chunk([{"functionCall": {"id": call_id, "name": name, "args": arguments}}]))
    chunks.append(chunk([{"text": ""}], "STOP"))
    return chunks


def _bedrock_stream(answer: Answer) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
    index = 0
    if answer.text:
        for piece in _cut(answer.text, answer.pieces):
            delta = {"contentBlockIndex": 0, "delta": {"text": piece}}
            events.append({"contentBlockDelta": delta})
        events.append({"contentBlockStop": {"contentBlockIndex": 0}})
        index = 1
    for offset, (call_id, name, arguments) in enumerate(answer.calls):
        at = index + offset
        start = {"toolUse": {"toolUseId": call_id, "name": name}}
        events.append({"contentBlockStart": {"contentBlockIndex": at, "start": start}})
        for piece in _cut(_json(arguments), answer.pieces):
            delta = {"contentBlockIndex": at, "delta": {"toolUse": {"input": piece}}}
            events.append({"contentBlockDelta": delta})
        events.append({"contentBlockStop": {"contentBlockIndex": at}})
    events.append({"messageStop": {"stopReason": "tool_use" if answer.calls else "end_turn"}})
    events.append({"metadata": {"usage": {"inputTokens": 3, "outputTokens": 5, "totalTokens": 8}}})
    return events


# -- whole bodies ------------------------------------------------------------------------


def body(api: str, answer: Answer) -> dict[str, Any]:
    """``answer`` as the non-streamed response body of ``api``."""
    if api == "anthropic.messages":
        content: list[dict[str, Any]] = (
            [{"type": "text", "text": answer.text}] if answer.text else []
        )
        content += [
            {"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in answer.calls
        ]
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": content,
            "stop_reason": "tool_use" if answer.calls else "end_turn",
            "usage": {"input_tokens": 3, "output_tokens": 5},
        }
    if api == "openai.chat":
        message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
        if answer.calls:
            message["tool_calls"] = [
                {"id": i, "type": "function", "function": {"name": n, "arguments": _json(a)}}
                for i, n, a in answer.calls
            ]
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "gpt-test",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }
    if api == "openai.responses":
        return _response("completed", _responses_items(answer))
    if api == "gemini.generate_content":
        parts: list[dict[str, Any]] = [{"text": answer.text}] if answer.text else []
        parts += [{"functionCall": {"id": i, "name": n, "args": a}} for i, n, a in answer.calls]
        candidate = {
            "content": {"role": "model", "parts": parts},
            "finishReason": "STOP",
            "index": 0,
        }
        return {"candidates": [candidate], "modelVersion": "gemini-test"}
    blocks: list[dict[str, Any]] = [{"text": answer.text}] if answer.text else []
    blocks += [{"toolUse": {"toolUseId": i, "name": n, "input": a}} for i, n, a in answer.calls]
    return {
        "output": {"message": {"role": "assistant", "content": blocks}},
        "stopReason": "tool_use" if answer.calls else "end_turn",
        "usage": {"inputTokens": 3, "outputTokens": 5, "totalTokens": 8},
    }


# -- requests ------------------------------------------------------------------------------

_GATEWAYS: dict[str, Gateway] = {
    "anthropic.messages": ANTHROPIC,
    "openai.chat": OPENAI_CHAT,
    "openai.responses": OPENAI_RESPONSES,
    "gemini.generate_content": GEMINI,
}


def request(api: str, history: Sequence[Message], *, stream: bool = True) -> dict[str, Any]:
    """The request body an agent sends for ``history`` (generic messages)."""
    gateway = _GATEWAYS.get(api)
    if gateway is None:
        return _converse_request(history)
    items = [item for message in history for item in gateway.items(message)]
    payload: dict[str, Any] = gateway.request(items, model="test-model")
    if api == "gemini.generate_content":
        payload.pop("model")
    elif stream:
        payload["stream"] = True
    return payload


def _converse_request(history: Sequence[Message]) -> dict[str, Any]:
    system = [{"text": m.content} for m in history if m.role is Role.system]
    messages = []
    for message in history:
        if message.role is Role.system:
            continue
        blocks: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, Text):
                blocks.append({"text": part.text})
            elif isinstance(part, ToolCall):
                use = {
                    "toolUseId": part.id,
                    "name": part.name,
                    "input": msgspec.json.decode(part.arguments),
                }
                blocks.append({"toolUse": use})
            elif isinstance(part, ToolResult):
                result: dict[str, Any] = {
                    "toolUseId": part.call_id,
                    "content": [{"text": part.content}],
                }
                if part.is_error:
                    result["status"] = "error"
                blocks.append({"toolResult": result})
        messages.append({"role": message.role.value, "content": blocks})
    out: dict[str, Any] = {"messages": messages}
    if system:
        out["system"] = system
    return out


# -- the loop -----------------------------------------------------------------------------


class Agent:
    """A simulated agent on one API, writing the recording events of each call."""

    def __init__(self, api: str, system: str = "") -> None:
        self.api = api
        self.history: list[Message] = [Message(role=Role.system, content=system)] if system else []
        self.events: list[dict[str, Any]] = []
        self.calls = 0
        self.last_body: dict[str, Any] | None = None
        self.last_answer: Message | None = None

    def say(self, message: Message) -> None:
        """The caller's turn: a user text or tool results."""
        self.history.append(message)

    def call(
        self,
        answer: Answer,
        *,
        streamed: bool = True,
        cut: int | None = None,
        status: int = 200,
        error_body: dict[str, Any] | None = None,
    ) -> None:
        """One model call: the request for the history so far, then ``answer``
        (streamed, or as a whole body), cut after ``cut`` stream events, or refused
        with ``status`` and ``error_body``. The answer joins the history as the
        agent reads it back (only when the call succeeded)."""
        n = self.calls
        self.calls += 1
        payload = request(self.api, self.history, stream=streamed)
        self.last_body = payload
        self.events.append(
            {
                "type": "recording/request",
                "call": n,
                "api": self.api,
                "method": "POST",
                "url": URLS[self.api],
                "headers": {"content-type": "application/json"},
                "body": payload,
                "stream": streamed,
            }
        )
        kind = "text/event-stream" if streamed else "application/json"
        if status >= 400:
            kind = "application/json"
        self.events.append(
            {
                "type": "recording/response",
                "call": n,
                "status": status,
                "headers": {"content-type": kind},
            }
        )
        if status >= 400:
            self.events.append({"type": "recording/body", "call": n, "body": error_body or {}})
            self.events.append({"type": "recording/end", "call": n, "complete": True})
            return
        if streamed:
            events = stream(self.api, n, answer)
            shown = events if cut is None else events[:cut]
            for event in shown:
                self.events.append({"type": "recording/event", "call": n, "event": event})
            if cut is not None:
                self.events.append(
                    {
                        "type": "recording/end",
                        "call": n,
                        "complete": False,
                        "error": "RemoteProtocolError: peer closed connection",
                    }
                )
                return
            if self.api == "openai.chat":
                self.events.append({"type": "recording/event", "call": n, "done": True})
            final = body(self.api, answer)
        else:
            final = body(self.api, answer)
            self.events.append({"type": "recording/body", "call": n, "body": final})
        self.events.append({"type": "recording/end", "call": n, "complete": True})
        read = answer_message(self.api, [final])
        self.last_answer = read
        self.history.append(read)


def log_lines(events: Sequence[dict[str, Any]]) -> bytes:
    """The events as our JSON Lines log (``{"position", "event", "time"}`` lines)."""
    return b"".join(
        msgspec.json.encode({"position": p, "event": e, "time": 1700000000.0 + p}) + b"\n"
        for p, e in enumerate(events)
    )
