"""Provider requests and answers read back as generic messages: the inverse of the
gateways' ``items()``.

A recorded model call holds the request the agent sent (its whole input: system
prompt, the history, the new turn) and the provider's answer. ``request_messages``
reads a request body of one of the five APIs a recording names (``APIS``) as generic
``engine.Message``s, system messages first, in request order; ``answer_message``
reads a provider's final answer object (the one its protocol set rebuilds, or a
non-streamed response body) as one assistant ``Message``.

Assistant turns inside a request and answers are read by the provider's own gateway
(``message(output)``), so a turn the agent sends back reads exactly as the answer it
came from. A block no generic part carries is a ``Native`` part of that
provider, as the gateways make them; ``cache_control`` markers are dropped (agents
move them from turn to turn: they say nothing of the conversation). A tool result
gets the name of the call it answers when an earlier turn of the request made it
(Gemini wants names). Requests are read leniently: what is not an object where an
object belongs is left out, never an error (a recording holds whatever was sent).

Imports only ``engine`` and the other definitions modules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final
from urllib.parse import unquote

import msgspec

from engine import (
    Compaction,
    File,
    Image,
    Message,
    Native,
    Part,
    Role,
    Text,
    ToolCall,
    ToolResult,
)

from ._gateways import (
    _DOCUMENT_FORMATS,
    _FOREIGN_SIGNATURE,
    AnthropicGateway,
    BedrockGateway,
    GeminiGateway,
    OpenAIChatGateway,
    OpenAIResponsesGateway,
    _base64,
)

__all__ = [
    "APIS",
    "PROVIDERS",
    "answer_message",
    "api_of",
    "api_of_url",
    "compacted_window",
    "continues_previous",
    "model_of_url",
    "request_messages",
]

APIS: Final[Mapping[str, str]] = {
    "anthropic.messages": "anthropic",
    "openai.chat": "openai_chat",
    "openai.responses": "openai_responses",
    "openai.responses.compact": "openai_responses",
    "gemini.generate_content": "gemini",
    "bedrock.converse": "bedrock",
}
"""Every API a recording names -> the protocol set that folds its stream."""

PROVIDERS: Final[Mapping[str, str]] = {
    "anthropic.messages": "anthropic",
    "openai.chat": "openai-chat",
    "openai.responses": "openai-responses",
    "openai.responses.compact": "openai-responses",
    "gemini.generate_content": "gemini",
    "bedrock.converse": "bedrock",
}
"""Every API a recording names -> the gateway that writes its requests."""

_ANTHROPIC: Final = AnthropicGateway()
_CHAT: Final = OpenAIChatGateway()
_RESPONSES: Final = OpenAIResponsesGateway()
_GEMINI: Final = GeminiGateway()
_CONVERSE: Final = BedrockGateway()
_BEDROCK: Final = _CONVERSE.name  # the provider tag of Bedrock's native blocks


def api_of_url(url: str) -> str | None:
    """The API a request URL's path names (``"anthropic.messages"`` for
    ``.../v1/messages``), or ``None`` for a path of none of them."""
    path = url.split("?", 1)[0].rstrip("/")
    if path.endswith("/messages"):
        return "anthropic.messages"
    if path.endswith("/chat/completions"):
        return "openai.chat"
    if path.endswith("/responses"):
        return "openai.responses"
    if path.endswith("/responses/compact"):  # its answer is a compaction (compacted_window)
        return "openai.responses.compact"
    if path.endswith((":generateContent", ":streamGenerateContent")):
        return "gemini.generate_content"
    if path.endswith(("/converse", "/converse-stream")):
        return "bedrock.converse"
    return None


def api_of(event: Mapping[str, Any]) -> str | None:
    """The API a ``recording/request`` event names: its ``api``, else its URL's."""
    api = event.get("api")
    if api is None and isinstance(event.get("url"), str):
        api = api_of_url(event["url"])
    return api if isinstance(api, str) else None


def model_of_url(url: str) -> str:
    """The model a request URL's path names (Gemini's ``.../models/M:generateContent``,
    Bedrock's ``.../model/M/converse``, an Azure OpenAI deployment's
    ``.../deployments/M/chat/completions``), or ``""``."""
    path = unquote(url.split("?", 1)[0].rstrip("/"))
    if "/deployments/" in path:
        return path.split("/deployments/", 1)[1].split("/", 1)[0]
    if "/models/" in path and ":" in path.rsplit("/models/", 1)[1]:
        return path.rsplit("/models/", 1)[1].split(":", 1)[0]
    if "/model/" in path and path.endswith(("/converse", "/converse-stream")):
        return path.rsplit("/model/", 1)[1].rsplit("/", 1)[0]
    return ""


def _json(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def _objects(value: Any) -> list[dict[str, Any]]:
    """The objects of a list (anything else: none)."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _uncached(block: dict[str, Any]) -> dict[str, Any]:
    return (
        {k: v for k, v in block.items() if k != "cache_control"}
        if "cache_control" in block
        else block
    )


def _text_of(content: Any) -> str:
    """A system prompt or a text-only content as one string."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = content.get("parts") or content.get("content") or ()
    return "".join(str(b.get("text", "")) for b in _objects(content))


def _data_url(url: str) -> tuple[str, str] | None:
    """``(media type, base64 data)`` of a ``data:`` URL, or ``None``."""
    if not url.startswith("data:") or ";base64," not in url:
        return None
    head, data = url[5:].split(";base64,", 1)
    return head, data


class _Names:
    """The tool name of each call id made so far in one request."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def saw(self, message: Message) -> Message:
        for part in message.parts:
            call = part.call if isinstance(part, Native) else part
            if isinstance(call, ToolCall):
                self.names[call.id] = call.name
        return message


def request_messages(api: str, body: Any) -> list[Message]:
    """The input of a request body of ``api`` (a key of ``APIS``) as generic messages,
    system messages first. ``ValueError`` for an unknown API; a body that is not an
    object reads as no messages."""
    reader = _READERS.get(api)
    if reader is None:
        raise ValueError(f"unknown API {api!r}; expected one of {', '.join(APIS)}")
    if not isinstance(body, dict):
        return []
    return reader(body, _Names())


def continues_previous(api: str, body: Any) -> bool:
    """Whether the request carries only what is new since an earlier response the
    provider keeps (OpenAI Responses' ``previous_response_id``)."""
    return (
        api == "openai.responses"
        and isinstance(body, dict)
        and bool(body.get("previous_response_id"))
    )


# -- Anthropic Messages ---------------------------------------------------------------


def _anthropic(body: dict[str, Any], names: _Names) -> list[Message]:
    out: list[Message] = []
    system = _text_of(body.get("system"))
    if system:
        out.append(Message(role=Role.system, content=system))
    for item in _objects(body.get("messages")):
        content = item.get("content")
        role = Role.assistant if item.get("role") == "assistant" else Role.user
        if isinstance(content, str):
            out.append(Message(role=role, content=content))
            continue
        blocks = [_uncached(b) for b in _objects(content)]
        if role is Role.assistant:
            out.append(names.saw(_ANTHROPIC.message({"content": blocks})))
        else:
            out.append(Message(role=role, content=tuple(_anthropic_part(b, names) for b in blocks)))
    return out


def _anthropic_part(block: dict[str, Any], names: _Names) -> Part:
    kind = block.get("type")
    if kind == "text" and set(block) <= {"type", "text"}:
        return Text(str(block.get("text", "")))
    if kind in ("image", "document"):
        media = _anthropic_media(kind, block)
        if media is not None:
            return media
    if kind == "tool_result":
        call_id = str(block.get("tool_use_id"))
        content = block.get("content")
        result: str | tuple[Text | Image | File, ...]
        if isinstance(content, str) or content is None:
            result = content or ""
        else:
            result = tuple(
                _result_part(_anthropic_part(_uncached(b), names)) for b in _objects(content)
            )
        return ToolResult(
            call_id, result, is_error=bool(block.get("is_error")), name=names.names.get(call_id)
        )
    text = block.get("text") if kind == "text" else None
    return Native("anthropic", _json(block), text if isinstance(text, str) else "")


def _anthropic_media(kind: str, block: dict[str, Any]) -> Image | File | None:
    source = block.get("source")
    if not isinstance(source, dict) or set(block) - {"type", "source", "title"}:
        return None
    media_type = str(source.get("media_type", ""))
    data = source.get("data") if source.get("type") == "base64" else None
    url = source.get("url") if source.get("type") == "url" else None
    if data is None and url is None:
        return None
    if kind == "image":
        return Image(media_type, data=data, url=url)
    return File(media_type or "application/pdf", data=data, url=url, name=block.get("title"))


def _result_part(part: Part) -> Text | Image | File:
    """A part inside a tool result: text, an image or a file (anything else as text)."""
    if isinstance(part, Text | Image | File):
        return part
    return Text(part.text if isinstance(part, Native) else "")


# -- OpenAI Chat Completions ---------------------------------------------------------


def _chat(body: dict[str, Any], names: _Names) -> list[Message]:
    out: list[Message] = []
    results: list[Part] = []  # the tool messages in a row: one caller turn

    def flush() -> None:
        if results:
            out.append(Message(role=Role.user, content=tuple(results)))
            results.clear()

    for item in _objects(body.get("messages")):
        role = item.get("role")
        content = item.get("content")
        if role == "tool":
            call_id = str(item.get("tool_call_id"))
            result = content if isinstance(content, str) else _text_of(content)
            results.append(ToolResult(call_id, result, name=names.names.get(call_id)))
            continue
        flush()
        if role in ("system", "developer"):
            out.append(Message(role=Role.system, content=_text_of(content)))
        elif role == "assistant":
            if isinstance(content, list):  # text parts: the gateway reads one string
                item = {**item, "content": _text_of(content)}
            out.append(names.saw(_CHAT.message({"message": item})))
        elif isinstance(content, str):
            out.append(Message(role=Role.user, content=content))
        else:
            out.append(
                Message(role=Role.user, content=tuple(_chat_part(p) for p in _objects(content)))
            )
    flush()
    return out


def _chat_part(part: dict[str, Any]) -> Part:
    kind = part.get("type")
    if kind == "text":
        return Text(str(part.get("text", "")))
    if kind == "image_url":
        image = part.get("image_url") or {}
        url = str(image.get("url", "")) if isinstance(image, dict) else ""
        inline = _data_url(url)
        if inline is not None:
            return Image(inline[0], data=inline[1])
        return Image("", url=url)
    if kind == "file":
        file = part.get("file") or {}
        inline = _data_url(str(file.get("file_data", ""))) if isinstance(file, dict) else None
        if inline is not None:
            return File(inline[0], data=inline[1], name=file.get("filename"))
    return Native("openai-chat", _json(part))


# -- OpenAI Responses -------------------------------------------------------------------

# Input items the model made (sent back as they came): everything but caller messages
# and tool outputs.
_CALLER_ITEMS: Final = frozenset({"function_call_output", "custom_tool_call_output"})


def _responses(body: dict[str, Any], names: _Names) -> list[Message]:
    out: list[Message] = []
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        out.append(Message(role=Role.system, content=instructions))
    items = body.get("input")
    if isinstance(items, str):
        out.append(Message(role=Role.user, content=items))
        return out
    model: list[Part] = []  # the model's items in a row: one model turn
    caller: list[Part] = []  # tool outputs in a row: one caller turn

    def flush_model() -> None:
        if model:
            if isinstance(model[0], Compaction):
                model[0] = msgspec.structs.replace(model[0], carried=_kept_users(out))
            out.append(names.saw(Message(role=Role.assistant, content=tuple(model))))
            model.clear()

    def flush_caller() -> None:
        if caller:
            out.append(Message(role=Role.user, content=tuple(caller)))
            caller.clear()

    for item in _objects(items):
        kind = item.get("type")
        role = item.get("role")
        if kind in _CALLER_ITEMS:
            flush_model()
            call_id = str(item.get("call_id"))
            output = item.get("output")
            result: str | tuple[Text | Image | File, ...]
            if isinstance(output, str):
                result = output
            else:
                result = tuple(_result_part(_responses_part(p)) for p in _objects(output))
            caller.append(ToolResult(call_id, result, name=names.names.get(call_id)))
        elif kind in (None, "message") and role in ("user", "system", "developer"):
            flush_model()
            flush_caller()
            content = item.get("content")
            speaker = Role.user if role == "user" else Role.system
            if isinstance(content, str):
                out.append(Message(role=speaker, content=content))
            elif speaker is Role.system:
                out.append(Message(role=speaker, content=_text_of(content)))
            else:
                parts = tuple(_responses_part(p) for p in _objects(content))
                out.append(Message(role=speaker, content=parts))
        else:
            flush_caller()
            if kind is None and role == "assistant":  # an easy input message
                model.append(Text(_text_of(item.get("content"))))
            else:
                model.extend(_RESPONSES.message([item]).parts)
    flush_model()
    flush_caller()
    return out


def _responses_part(part: dict[str, Any]) -> Part:
    kind = part.get("type")
    if kind in ("input_text", "output_text"):
        return Text(str(part.get("text", "")))
    if kind == "input_image":
        url = str(part.get("image_url") or "")
        inline = _data_url(url)
        if inline is not None:
            return Image(inline[0], data=inline[1])
        if url:
            return Image("", url=url)
    if kind == "input_file":
        inline = _data_url(str(part.get("file_data") or ""))
        if inline is not None:
            return File(inline[0], data=inline[1], name=part.get("filename"))
        if part.get("file_url"):
            return File("", url=str(part["file_url"]), name=part.get("filename"))
    return Native("openai-responses", _json(part))


# -- Gemini generateContent -------------------------------------------------------------


def _gemini(body: dict[str, Any], names: _Names) -> list[Message]:
    out: list[Message] = []
    system = _text_of(body.get("systemInstruction") or body.get("system_instruction"))
    if system:
        out.append(Message(role=Role.system, content=system))
    for item in _objects(body.get("contents")):
        if item.get("role") == "model":
            # The placeholder a gateway puts on a call Gemini did not sign is no
            # signature: it would read as reasoning the model never gave.
            signed = [
                {k: v for k, v in p.items() if k != "thoughtSignature"}
                if p.get("thoughtSignature") == _FOREIGN_SIGNATURE
                else p
                for p in _objects(item.get("parts"))
            ]
            out.append(names.saw(_GEMINI.message({"content": {"parts": signed}})))
            continue
        parts = tuple(_gemini_part(p, names) for p in _objects(item.get("parts")))
        out.append(Message(role=Role.user, content=parts))
    return out


def _gemini_part(part: dict[str, Any], names: _Names) -> Part:
    if set(part) == {"text"}:
        return Text(str(part["text"]))
    inline = part.get("inlineData") or part.get("inline_data")
    if isinstance(inline, dict) and len(part) == 1:
        media_type = str(inline.get("mimeType") or inline.get("mime_type") or "")
        data = str(inline.get("data", ""))
        return (
            Image(media_type, data=data)
            if media_type.startswith("image/")
            else File(media_type, data=data)
        )
    linked = part.get("fileData") or part.get("file_data")
    if isinstance(linked, dict) and len(part) == 1:
        media_type = str(linked.get("mimeType") or linked.get("mime_type") or "")
        url = str(linked.get("fileUri") or linked.get("file_uri") or "")
        return (
            Image(media_type, url=url)
            if media_type.startswith("image/")
            else File(media_type, url=url)
        )
    response = part.get("functionResponse") or part.get("function_response")
    if isinstance(response, dict) and len(part) == 1:
        name = str(response.get("name", ""))
        answer = response.get("response")
        failed = isinstance(answer, dict) and set(answer) == {"error"}
        if isinstance(answer, dict) and len(answer) == 1 and ("output" in answer or failed):
            value = next(iter(answer.values()))
            text = value if isinstance(value, str) else _json(value)
        else:
            text = _json(answer)
        call_id = str(response.get("id") or "")
        return ToolResult(call_id, text, is_error=failed, name=name or names.names.get(call_id))
    return Native("gemini", _json(part), str(part.get("text", "")))


# -- Bedrock Converse ------------------------------------------------------------------


def _converse(body: dict[str, Any], names: _Names) -> list[Message]:
    out: list[Message] = []
    system = _text_of(body.get("system"))
    if system:
        out.append(Message(role=Role.system, content=system))
    for item in _objects(body.get("messages")):
        if item.get("role") == "assistant":
            out.append(names.saw(_CONVERSE.message(item)))
            continue
        parts = tuple(_converse_part(b, names) for b in _objects(item.get("content")))
        out.append(Message(role=Role.user, content=parts))
    return out


def _converse_part(block: dict[str, Any], names: _Names) -> Part:
    if set(block) == {"text"}:
        return Text(str(block["text"]))
    result = block.get("toolResult")
    if isinstance(result, dict) and len(block) == 1:
        call_id = str(result.get("toolUseId"))
        pieces = [
            str(p["text"]) if "text" in p else _json(p.get("json", p))
            for p in _objects(result.get("content"))
        ]
        return ToolResult(
            call_id,
            "".join(pieces),
            is_error=result.get("status") == "error",
            name=names.names.get(call_id),
        )
    for key, make in _CONVERSE_MEDIA.items():
        media = block.get(key)
        if isinstance(media, dict) and len(block) == 1:
            source = media.get("source") or {}
            data = source.get("bytes") if isinstance(source, dict) else None
            if data is not None:
                return make(str(media.get("format", "")), _base64(data), media.get("name"))
    return Native(_BEDROCK, _json(block), str(block.get("text", "")))


_MEDIA_TYPES: Final = {fmt: media for media, fmt in _DOCUMENT_FORMATS.items()}
_CONVERSE_MEDIA: Final[dict[str, Callable[[str, str, Any], Image | File]]] = {
    "image": lambda fmt, data, name: Image(f"image/{fmt}", data=data),
    "document": lambda fmt, data, name: File(
        _MEDIA_TYPES.get(fmt, f"text/{fmt}"), data=data, name=name
    ),
}


_READERS: Final[dict[str, Callable[[dict[str, Any], _Names], list[Message]]]] = {
    "anthropic.messages": _anthropic,
    "openai.chat": _chat,
    "openai.responses": _responses,
    "openai.responses.compact": _responses,
    "gemini.generate_content": _gemini,
    "bedrock.converse": _converse,
}


# -- answers ------------------------------------------------------------------------------


def _kept_users(messages: Sequence[Message]) -> int:
    """How many user messages (no tool results among them) end ``messages``: those a
    Responses ``compaction`` input item after them carries over. ``/responses/compact``
    returns the user messages it kept, then the item, and a client sends that window
    back as it is, so the request after it starts with them."""
    count = 0
    for message in reversed(messages):
        if message.role is not Role.user or any(isinstance(p, ToolResult) for p in message.parts):
            break
        count += 1
    return count


def compacted_window(outputs: Sequence[Any]) -> list[Message]:
    """A ``/responses/compact`` answer (``CompactedResponse``: its user messages, then
    one ``compaction`` item) as the messages the conversation goes on from: its output
    read as the input it becomes, the compaction carrying the user messages over
    (``Compaction.carried``), so the next request starts with them and the
    counterfactual leaves them out."""
    return [
        message
        for output in outputs
        if isinstance(output, dict)
        for message in _responses({"input": output.get("output")}, _Names())
    ]


def answer_message(api: str, outputs: Sequence[Any]) -> Message:
    """The provider's final answer objects of one call (normally one: the message,
    completion, response its protocol set rebuilds, or the non-streamed body) as one
    assistant message, their parts in order."""
    read: Callable[[Any], Message] = {
        "anthropic.messages": _ANTHROPIC.message,
        "openai.chat": _CHAT.message,
        "openai.responses": _RESPONSES.message,
        "openai.responses.compact": _RESPONSES.message,
        "gemini.generate_content": _GEMINI.message,
        "bedrock.converse": _CONVERSE.message,
    }[api]
    parts: list[Part] = []
    for output in outputs:
        if isinstance(output, dict):
            parts.extend(read(output).parts)
    return Message(role=Role.assistant, content=tuple(parts))
