"""Gateways: generic messages <-> the request items of five provider APIs.

Each gateway is one small class with the same members: ``items(message)`` (the
``engine.Gateway`` protocol: a message's native request items), ``request(items,
...)`` (the payload the official SDK's create call takes as keyword arguments),
``message(output)`` (the provider's response turn as a generic ``Message``, so a
recorded turn is sent back exactly as returned) and ``validate(request)``.

Rules that hold for every gateway (written here once):

- Reasoning, ``Native`` and ``Compaction`` items go back only to the provider
  that made them (``provider`` equals the gateway's ``name``): another provider's
  signature or encrypted payload would be refused, so it is left out; a
  ``Native`` part's ``text`` and a compaction's summary cross as plain text.
  Chat Completions takes no reasoning back at all.
- Tool results come first in a caller turn (Anthropic wants them first in the
  message, Chat and Responses as items right after the call); a turn's other
  content follows them.
- A message whose parts all leave becomes no item.
- System messages: Anthropic, Gemini and Bedrock take the system prompt apart from the
  messages, so ``request`` lifts the leading system items into ``system`` /
  ``systemInstruction``; a system message after the conversation began is sent
  as a caller turn (moving it up would change the cached prefix). Chat and
  Responses keep system messages where they are.
- Gemini and Bedrock require alternating roles, so their ``request`` merges
  consecutive contents of one role (Anthropic merges them on its side).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, Final

import msgspec

from engine import (
    Compaction,
    File,
    Image,
    Message,
    Native,
    Part,
    Reasoning,
    Role,
    Text,
    ToolCall,
    ToolResult,
)

from ._gateway_check import (
    Entry,
    Problem,
    Side,
    Turn,
    add,
    alternation,
    check,
    not_a_list,
    with_roles,
)

__all__ = [
    "AnthropicGateway",
    "BedrockGateway",
    "GeminiGateway",
    "OpenAIChatGateway",
    "OpenAIResponsesGateway",
]

_encode = msgspec.json.encode
_decode = msgspec.json.decode


def _arguments(value: Any) -> str:
    return _encode(value).decode()


def _object(arguments: str) -> Any:
    """Tool arguments as the object providers with structured input want.

    Arguments that are not a JSON object (a model may write anything) are kept
    whole under ``"arguments"`` rather than dropped.
    """
    try:
        value = _decode(arguments)
    except msgspec.DecodeError:
        return {"arguments": arguments}
    return value if isinstance(value, dict) else {"arguments": value}


def _data_url(media_type: str, data: str) -> str:
    return f"data:{media_type};base64,{data}"


DENIED: Final = "The person denied this call."
"""What a denied call's result says when the denial gave no reason."""


def _denied_or(result: ToolResult, content: Any) -> Any:
    """``content`` (a result as the gateway converted it), or ``DENIED`` for a denied
    call whose result says nothing: an empty result would read as a success."""
    return DENIED if result.denied and not content else content


def _text_item(message: Message) -> list[dict[str, Any]]:
    """A plain-text message as one ``{"role", "content"}`` item, none when empty: the
    same in the Anthropic, Chat Completions and Responses requests."""
    if not message.content:
        return []
    return [{"role": message.role.value, "content": message.content}]


def _result_text(result: ToolResult) -> str:
    if isinstance(result.content, str):
        return result.content
    return "".join(p.text for p in result.content if isinstance(p, Text))


def _item(part: Part, convert: Callable[[Part], dict[str, Any] | None]) -> dict[str, Any] | None:
    """``part`` as a request item: a ``Native`` part as its provider stored it, any
    other through the gateway's ``convert`` (``None``: nothing to send)."""
    if isinstance(part, Native):
        native: dict[str, Any] = _decode(part.data)
        return native
    return convert(part)


def _items(
    parts: Iterable[Part], convert: Callable[[Part], dict[str, Any] | None]
) -> list[dict[str, Any]]:
    """Each of ``parts`` as a request item (``_item``), the ones with none left out."""
    return [item for part in parts if (item := _item(part, convert)) is not None]


def _blocks_item(
    message: Message,
    provider: str,
    result: Callable[[ToolResult], dict[str, Any]],
    block: Callable[[Part], dict[str, Any] | None],
) -> list[dict[str, Any]]:
    """The message as one ``{"role", "content": [blocks]}`` item (none when nothing is
    left), its tool results first (``_split``): the Anthropic and Converse form."""
    results, rest = _split(message, provider)
    blocks = [result(r) for r in results]
    blocks.extend(_items(rest, block))
    if not blocks:
        return []
    return [{"role": message.role.value, "content": blocks}]


def _split(message: Message, provider: str) -> tuple[list[ToolResult], list[Part]]:
    """A turn's tool results (sent first) and the other parts ``provider`` may get.

    The crossing rule lives here: another provider's reasoning is left out, its
    ``Native`` parts become their ``call`` or ``text`` (or nothing); empty text is
    left out too (providers refuse empty text blocks).
    """
    results: list[ToolResult] = []
    rest: list[Part] = []
    for part in message.parts:
        if isinstance(part, ToolResult):
            results.append(part)
        elif isinstance(part, Text):
            if part.text:
                rest.append(part)
        elif isinstance(part, Reasoning):
            if part.provider == provider:
                rest.append(part)
        elif isinstance(part, Native) and part.provider != provider:
            if part.call is not None:
                rest.append(part.call)
            elif part.text:
                rest.append(Text(part.text))
        elif isinstance(part, Compaction):
            if part.provider == provider and part.data is not None:
                rest.append(Native(provider, part.data, part.text))
            elif part.text:
                rest.append(Text(part.text))
        else:
            rest.append(part)
    return results, rest


def crossing(part: Compaction, provider: str) -> str | None:
    """What ``provider`` gets instead of a compaction made by another provider, said
    for a person (``None`` when it gets the compaction as made): the rule of
    ``_split``, worded."""
    if part.data is None or part.provider == provider:
        return None
    if part.text:
        return (
            f"the {part.provider} compaction item is sent to {provider} as its summary "
            f"text ({len(part.text):,} chars)"
        )
    return (
        f"the {part.provider} compaction item is encrypted and carries no summary text: "
        f"{provider} gets nothing in its place (the compacted history is lost)"
    )


def _payload(
    head: dict[str, Any], tools: Sequence[dict[str, Any]], options: dict[str, Any]
) -> dict[str, Any]:
    """A request: ``head`` (model, system, items), then ``tools``, then the caller's options."""
    payload = dict(head)
    if tools:
        payload["tools"] = list(tools)
    payload.update(options)
    return payload


def _alternating(
    items: Iterable[dict[str, Any]], key: str
) -> tuple[list[Any], list[dict[str, Any]]]:
    """For a provider that wants roles alternating (Gemini, Bedrock): the leading
    system items' entries under ``key`` (the system prompt), and the rest, a later
    system item as a caller turn, consecutive items of one role merged."""
    listed = list(items)
    lead = _leading_system(listed)
    merged: list[dict[str, Any]] = []
    for item in listed[lead:]:
        role = "user" if item.get("role") == "system" else item.get("role")
        if merged and merged[-1]["role"] == role:
            merged[-1] = {"role": role, key: [*merged[-1][key], *item[key]]}
        else:
            merged.append({**item, "role": role})
    return [entry for item in listed[:lead] for entry in item[key]], merged


def _leading_system(items: Sequence[dict[str, Any]]) -> int:
    count = 0
    for item in items:
        if item.get("role") != "system":
            break
        count += 1
    return count


# -- Anthropic Messages --------------------------------------------------------


class AnthropicGateway:
    """Anthropic Messages: ``{"role", "content": [blocks]}`` items; system apart."""

    name: ClassVar[str] = "anthropic"

    def items(self, message: Message) -> list[dict[str, Any]]:
        """The message as one Anthropic message param (none when nothing is left)."""
        if isinstance(message.content, str):
            return _text_item(message)
        return _blocks_item(message, self.name, self._result, self._block)

    def _result(self, result: ToolResult) -> dict[str, Any]:
        content: Any = result.content
        if not isinstance(content, str):
            content = _items(content, self._block)
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": result.call_id,
            "content": _denied_or(result, content),
        }
        if result.is_error or result.denied:
            block["is_error"] = True
        return block

    def _block(self, part: Part) -> dict[str, Any] | None:
        if isinstance(part, Text):
            return {"type": "text", "text": part.text}
        if isinstance(part, Reasoning):
            if part.encrypted is not None:
                return {"type": "redacted_thinking", "data": part.encrypted}
            return {"type": "thinking", "thinking": part.text, "signature": part.signature or ""}
        if isinstance(part, ToolCall):
            return {
                "type": "tool_use",
                "id": part.id,
                "name": part.name,
                "input": _object(part.arguments),
            }
        if isinstance(part, Image | File):
            kind = "image" if isinstance(part, Image) else "document"
            if part.url is not None:
                source = {"type": "url", "url": part.url}
            else:
                source = {"type": "base64", "media_type": part.media_type, "data": part.data or ""}
            block = {"type": kind, "source": source}
            if isinstance(part, File) and part.name:
                block["title"] = part.name
            return block
        return None

    def request(
        self,
        items: Iterable[dict[str, Any]],
        *,
        model: str = "",
        max_tokens: int = 4096,
        tools: Sequence[dict[str, Any]] = (),
        **options: Any,
    ) -> dict[str, Any]:
        """``client.messages.create(**request)``: leading system items become ``system``."""
        listed = list(items)
        lead = _leading_system(listed)
        system = [b for item in listed[:lead] for b in _blocks(item["content"])]
        messages = [
            {**item, "role": "user"} if item.get("role") == "system" else item
            for item in listed[lead:]
        ]
        head: dict[str, Any] = {"model": model, "max_tokens": max_tokens}
        if system:
            head["system"] = system
        head["messages"] = messages
        return _payload(head, tools, options)

    def message(self, output: dict[str, Any]) -> Message:
        """An SDK ``Message`` dict (``to_dict(mode="json")``) as a generic message."""
        parts: list[Part] = []
        for block in output.get("content") or ():
            parts.append(self._part(block))
        return Message(role=Role.assistant, content=tuple(parts))

    def _part(self, block: dict[str, Any]) -> Part:
        kind = block.get("type")
        present = {k for k, v in block.items() if v is not None}
        if kind == "text" and present <= {"type", "text"}:
            return Text(block["text"])
        if kind == "thinking" and present <= {"type", "thinking", "signature"}:
            return Reasoning(block["thinking"], self.name, signature=block.get("signature"))
        if kind == "redacted_thinking" and present <= {"type", "data"}:
            return Reasoning(provider=self.name, encrypted=block["data"])
        if kind == "compaction" and block.get("content") is not None:
            # A failed compaction (no content) is a no-op the server ignores: Native.
            return Compaction(str(block["content"]), self.name, _arguments(block))
        call = None
        if kind == "tool_use":
            call = ToolCall(
                str(block.get("id")), block.get("name", ""), _arguments(block.get("input", {}))
            )
            if present <= {"type", "id", "name", "input"}:
                return call
        text = block.get("text") if kind == "text" else None
        return Native(self.name, _arguments(block), text if isinstance(text, str) else "", call)

    def validate(self, request: dict[str, Any]) -> list[Problem]:
        """Every way Anthropic would refuse ``request`` (see ``definitions.gateways``)."""
        problems, messages = with_roles(request, "messages", ("user", "assistant"))
        turns: list[Turn] = []
        for index, item, role in messages:
            content = item.get("content")
            entries = [_anthropic_entry(index, b) for b in _blocks(content)]
            if not entries:
                problems.append(Problem("empty-content", index, "a message with no content"))
            add(turns, "model" if role == "assistant" else "caller", index, entries)
        return sorted(problems + check(turns), key=lambda p: p.index)


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content or ())


def _anthropic_entry(index: int, block: dict[str, Any]) -> Entry:
    kind = block.get("type")
    if kind == "tool_use":
        return Entry("call", index, str(block.get("id")))
    if kind == "tool_result":
        return Entry("result", index, str(block.get("tool_use_id")))
    if kind in ("thinking", "redacted_thinking"):
        return Entry("reasoning", index)
    return Entry("content", index)


# -- OpenAI Chat Completions ------------------------------------------------------


class OpenAIChatGateway:
    """OpenAI Chat Completions: ``{"role", "content", "tool_calls"}`` messages;
    each tool result is its own ``"tool"`` message."""

    name: ClassVar[str] = "openai-chat"

    def items(self, message: Message) -> list[dict[str, Any]]:
        """The message as Chat Completions message params (tool messages first)."""
        role = message.role.value
        if isinstance(message.content, str):
            return _text_item(message)
        results, rest = _split(message, self.name)
        out: list[dict[str, Any]] = [
            {"role": "tool", "tool_call_id": r.call_id, "content": self._result(r)} for r in results
        ]
        is_model = message.role is Role.assistant
        item = self._assistant(rest) if is_model else self._caller(role, rest)
        if item is not None:
            out.append(item)
        return out

    def _result(self, result: ToolResult) -> Any:
        content: Any = result.content
        if not isinstance(content, str):
            # Tool messages take text parts only.
            content = [{"type": "text", "text": p.text} for p in content if isinstance(p, Text)]
        return _denied_or(result, content)

    def _assistant(self, parts: list[Part]) -> dict[str, Any] | None:
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        extra: dict[str, Any] = {}
        for part in parts:
            if isinstance(part, Text):
                texts.append(part.text)
            elif isinstance(part, ToolCall):
                calls.append(
                    {
                        "id": part.id,
                        "type": "function",
                        "function": {"name": part.name, "arguments": part.arguments},
                    }
                )
            elif isinstance(part, Native):
                extra.update(_decode(part.data))
        if not texts and not calls and not extra:
            return None
        item: dict[str, Any] = {"role": "assistant"}
        if len(texts) == 1:
            item["content"] = texts[0]
        elif texts:
            item["content"] = [{"type": "text", "text": t} for t in texts]
        item.update(extra)
        if calls:
            item["tool_calls"] = calls
        return item

    def _caller(self, role: str, parts: list[Part]) -> dict[str, Any] | None:
        content: list[dict[str, Any]] = []
        for part in parts:
            if isinstance(part, Text):
                content.append({"type": "text", "text": part.text})
            elif isinstance(part, Image):
                url = part.url or _data_url(part.media_type, part.data or "")
                content.append({"type": "image_url", "image_url": {"url": url}})
            elif isinstance(part, File):
                file: dict[str, Any] = {"file_data": _data_url(part.media_type, part.data or "")}
                if part.name:
                    file["filename"] = part.name
                content.append({"type": "file", "file": file})
            elif isinstance(part, Native):
                content.append(_decode(part.data))
        if not content:
            return None
        if role == "system":
            return {"role": role, "content": "".join(c.get("text", "") for c in content)}
        return {"role": role, "content": content}

    def request(
        self,
        items: Iterable[dict[str, Any]],
        *,
        model: str = "",
        tools: Sequence[dict[str, Any]] = (),
        **options: Any,
    ) -> dict[str, Any]:
        """``client.chat.completions.create(**request)``."""
        return _payload({"model": model, "messages": list(items)}, tools, options)

    def message(self, output: dict[str, Any]) -> Message:
        """A ``ChatCompletion`` dict's first choice (or a choice's ``message``) as a
        generic message."""
        if "choices" in output:
            choices = output.get("choices") or [{}]
            output = choices[0].get("message") or {}
        elif "message" in output:
            output = output["message"]
        parts: list[Part] = []
        reasoning = output.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            parts.append(Reasoning(reasoning, self.name))
        content = output.get("content")
        if isinstance(content, str) and content:
            parts.append(Text(content))
        if output.get("refusal") is not None:
            parts.append(Native(self.name, _arguments({"refusal": output["refusal"]})))
        for call in output.get("tool_calls") or ():
            function = call.get("function") or {}
            parts.append(
                ToolCall(
                    str(call.get("id")), function.get("name", ""), function.get("arguments", "")
                )
            )
        return Message(role=Role.assistant, content=tuple(parts))

    def validate(self, request: dict[str, Any]) -> list[Problem]:
        """Every way Chat Completions would refuse ``request``."""
        roles = ("system", "developer", "user", "assistant", "tool")
        problems, messages = with_roles(request, "messages", roles)
        turns: list[Turn] = []
        for index, item, role in messages:
            entries: list[Entry] = []
            if role == "tool":
                entries.append(Entry("result", index, str(item.get("tool_call_id"))))
            else:
                if item.get("content") or item.get("refusal"):
                    entries.append(Entry("content", index))
                for call in item.get("tool_calls") or ():
                    entries.append(Entry("call", index, str(call.get("id"))))
                if not entries:
                    problems.append(Problem("empty-content", index, "a message with no content"))
            # Two assistant messages in a row are two model turns to Chat.
            side: Side = "model" if role == "assistant" else "caller"
            add(turns, side, index, entries, merge=side == "caller")
        return sorted(problems + check(turns), key=lambda p: p.index)


# -- OpenAI Responses --------------------------------------------------------------

_OUTPUT_TEXT_KEYS = frozenset({"type", "text", "annotations"})


class OpenAIResponsesGateway:
    """OpenAI Responses: a flat list of input items (messages, reasoning,
    ``function_call``, ``function_call_output``)."""

    name: ClassVar[str] = "openai-responses"

    def items(self, message: Message) -> list[dict[str, Any]]:
        """The message as Responses input items, in order."""
        role = message.role.value
        if isinstance(message.content, str):
            return _text_item(message)
        results, rest = _split(message, self.name)
        out: list[dict[str, Any]] = [self._result(r) for r in results]
        if message.role is Role.assistant:
            out.extend(self._assistant(rest))
        else:
            content = _items(rest, self._input)
            if content:
                out.append({"role": role, "content": content})
        return out

    def _result(self, result: ToolResult) -> dict[str, Any]:
        output: Any = result.content
        if not isinstance(output, str):
            output = _items(output, self._input)
        output = _denied_or(result, output)
        return {"type": "function_call_output", "call_id": result.call_id, "output": output}

    def _input(self, part: Part) -> dict[str, Any] | None:
        if isinstance(part, Text):
            return {"type": "input_text", "text": part.text}
        if isinstance(part, Image):
            url = part.url or _data_url(part.media_type, part.data or "")
            return {"type": "input_image", "image_url": url, "detail": "auto"}
        if isinstance(part, File):
            file: dict[str, Any] = {"type": "input_file"}
            if part.url is not None:
                file["file_url"] = part.url
            else:
                file["file_data"] = _data_url(part.media_type, part.data or "")
            if part.name:
                file["filename"] = part.name
            return file
        return None

    def _assistant(self, parts: list[Part]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for part in parts:
            if isinstance(part, Reasoning):
                last = out[-1] if out else None
                if (
                    last is not None
                    and last.get("type") == "reasoning"
                    and last.get("id") == part.id
                    and part.id is not None
                ):
                    if part.text:
                        last["summary"].append({"type": "summary_text", "text": part.text})
                    continue
                item: dict[str, Any] = {"type": "reasoning"}
                if part.id is not None:
                    item["id"] = part.id
                item["summary"] = [{"type": "summary_text", "text": part.text}] if part.text else []
                if part.encrypted is not None:
                    item["encrypted_content"] = part.encrypted
                out.append(item)
            elif isinstance(part, Text):
                if part.id is None:
                    out.append({"role": "assistant", "content": part.text})
                else:
                    out.append(
                        {
                            "id": part.id,
                            "type": "message",
                            "role": "assistant",
                            "status": "completed",
                            "content": [
                                {"type": "output_text", "text": part.text, "annotations": []}
                            ],
                        }
                    )
            elif isinstance(part, ToolCall):
                call: dict[str, Any] = {
                    "type": "function_call",
                    "call_id": part.id,
                    "name": part.name,
                    "arguments": part.arguments,
                }
                if part.item_id is not None:
                    call["id"] = part.item_id
                    call["status"] = "completed"
                out.append(call)
            elif isinstance(part, Native):
                out.append(_decode(part.data))
        return out

    def request(
        self,
        items: Iterable[dict[str, Any]],
        *,
        model: str = "",
        tools: Sequence[dict[str, Any]] = (),
        **options: Any,
    ) -> dict[str, Any]:
        """``client.responses.create(**request)``."""
        return _payload({"model": model, "input": list(items)}, tools, options)

    def message(self, output: dict[str, Any] | Sequence[dict[str, Any]]) -> Message:
        """A ``Response`` dict (or its ``output`` list) as a generic message."""
        items = output.get("output") or () if isinstance(output, dict) else output
        parts: list[Part] = []
        for item in items:
            parts.extend(self._parts(item))
        return Message(role=Role.assistant, content=tuple(parts))

    def _parts(self, item: dict[str, Any]) -> list[Part]:
        kind = item.get("type")
        present = {k for k, v in item.items() if v is not None}
        if kind == "reasoning" and present <= {"type", "id", "summary", "encrypted_content"}:
            summary = item.get("summary") or []
            if all(
                isinstance(s, dict)
                and s.get("type") == "summary_text"
                and set(s) <= {"type", "text"}
                and s.get("text")
                for s in summary
            ):
                # One part per summary part; the first carries the encrypted state.
                texts = [s["text"] for s in summary] or [""]
                encrypted = item.get("encrypted_content")
                return [
                    Reasoning(t, self.name, encrypted=None if n else encrypted, id=item.get("id"))
                    for n, t in enumerate(texts)
                ]
        if kind == "message" and item.get("role") == "assistant":
            content = item.get("content") or []
            if (
                present <= {"type", "id", "role", "status", "content"}
                and item.get("status") in (None, "completed")
                and len(content) == 1
                and content[0].get("type") == "output_text"
                and content[0].get("annotations") == []
                and {k for k, v in content[0].items() if k != "parsed" or v is not None}
                <= _OUTPUT_TEXT_KEYS  # the SDK's rebuild adds "parsed": null
                and content[0].get("text")
                and "id" in present
            ):
                return [Text(content[0]["text"], id=item["id"])]
            text = "".join(c.get("text", "") for c in content if isinstance(c, dict))
            return [Native(self.name, _arguments(item), text)]
        if kind == "compaction":
            return [Compaction("", self.name, _arguments(item))]
        call = None
        if kind == "function_call":
            call = ToolCall(
                str(item.get("call_id")),
                item.get("name", ""),
                item.get("arguments", ""),
                item_id=item.get("id"),
            )
            if present <= {"type", "id", "call_id", "name", "arguments", "status"} and item.get(
                "status"
            ) in (None, "completed"):
                return [call]
        return [Native(self.name, _arguments(item), call=call)]

    def validate(self, request: dict[str, Any]) -> list[Problem]:
        """Every way Responses would refuse ``request``."""
        items = request.get("input")
        if isinstance(items, str):
            return []
        if not isinstance(items, list):
            return not_a_list(items, "input")
        problems: list[Problem] = []
        turns: list[Turn] = []
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                problems.append(Problem("malformed", index, "an input item that is not an object"))
                continue
            kind = item.get("type", "message")
            side: Side = "model"
            if kind == "function_call":
                entry = Entry("call", index, str(item.get("call_id")))
            elif kind == "function_call_output":
                entry, side = Entry("result", index, str(item.get("call_id"))), "caller"
            elif kind == "reasoning":
                entry = Entry("reasoning", index)
            elif kind == "message":
                role = item.get("role")
                if role not in ("user", "assistant", "system", "developer"):
                    problems.append(Problem("malformed", index, f"role {role!r}"))
                    continue
                if not item.get("content"):
                    problems.append(Problem("empty-content", index, "a message with no content"))
                entry = Entry("content", index)
                side = "model" if role == "assistant" else "caller"
            else:
                # Server tool items (web search, MCP, ...) are the model's own output.
                entry = Entry("content", index)
            add(turns, side, index, [entry])
        return sorted(problems + check(turns), key=lambda p: p.index)


# -- Gemini generateContent ----------------------------------------------------------

# Google's documented placeholder for a function call that Gemini did not make
# (a conversation carried over from another model): it skips the signature check.
_FOREIGN_SIGNATURE = "skip_thought_signature_validator"
_CALL_KEYS = frozenset({"name", "args", "id"})


class GeminiGateway:
    """Gemini ``generateContent``: ``{"role": "user"|"model", "parts": [...]}`` contents;
    the system prompt is ``systemInstruction``."""

    name: ClassVar[str] = "gemini"

    def items(self, message: Message) -> list[dict[str, Any]]:
        """The message as one Gemini content (none when nothing is left)."""
        role = {"assistant": "model"}.get(message.role.value, message.role.value)
        results, rest = _split(message, self.name)
        parts: list[dict[str, Any]] = [self._result(r) for r in results]
        signature: str | None = None
        signed_call = False
        for part in rest:
            if isinstance(part, Reasoning):
                if not part.text and part.signature is not None:
                    signature = part.signature  # rides on the part that follows
                    continue
                thought: dict[str, Any] = {"text": part.text, "thought": True}
                if part.signature is not None:
                    thought["thoughtSignature"] = part.signature
                parts.append(thought)
                continue
            native = _item(part, self._part)
            if native is None:
                continue
            if signature is not None:
                native["thoughtSignature"] = signature
                signature = None
            if "functionCall" in native:
                if "thoughtSignature" not in native and not signed_call:
                    native["thoughtSignature"] = _FOREIGN_SIGNATURE
                signed_call = True
            parts.append(native)
        if not parts:
            return []
        return [{"role": role, "parts": parts}]

    def _result(self, result: ToolResult) -> dict[str, Any]:
        text = _denied_or(result, _result_text(result))
        key = "error" if result.is_error or result.denied else "output"
        response: dict[str, Any] = {"name": result.name or "", "response": {key: text}}
        if result.call_id:
            response["id"] = result.call_id
        return {"functionResponse": response}

    def _part(self, part: Part) -> dict[str, Any] | None:
        if isinstance(part, Text):
            return {"text": part.text}
        if isinstance(part, ToolCall):
            call: dict[str, Any] = {"name": part.name, "args": _object(part.arguments)}
            if part.id:
                call["id"] = part.id
            return {"functionCall": call}
        if isinstance(part, Image | File):
            if part.url is not None:
                return {"fileData": {"mimeType": part.media_type, "fileUri": part.url}}
            return {"inlineData": {"mimeType": part.media_type, "data": part.data or ""}}
        return None

    def request(
        self,
        items: Iterable[dict[str, Any]],
        *,
        model: str = "",
        tools: Sequence[dict[str, Any]] = (),
        **options: Any,
    ) -> dict[str, Any]:
        """The ``generateContent`` body (``model`` names the path, so it is kept apart
        as ``"model"``): leading system contents become ``systemInstruction``;
        consecutive contents of one role are merged."""
        system, contents = _alternating(items, "parts")
        head: dict[str, Any] = {"model": model}
        if system:
            head["systemInstruction"] = {"parts": system}
        head["contents"] = contents
        return _payload(head, tools, options)

    def message(self, output: dict[str, Any]) -> Message:
        """A candidate's ``content`` (or a response's first candidate) as a generic message."""
        if "candidates" in output:
            output = (output.get("candidates") or [{}])[0].get("content") or {}
        elif "content" in output:
            output = output["content"]
        parts: list[Part] = []
        for part in output.get("parts") or ():
            signature = part.get("thoughtSignature")
            present = set(part) - {"thoughtSignature"}
            if part.get("thought") is True and present <= {"text", "thought"}:
                parts.append(Reasoning(part.get("text", ""), self.name, signature=signature))
                continue
            if signature is not None:
                parts.append(Reasoning("", self.name, signature=signature))
            if present == {"text"}:
                parts.append(Text(part["text"]))
            elif present == {"functionCall"} and set(part["functionCall"]) <= {
                "name",
                "args",
                "id",
            }:
                call = part["functionCall"]
                parts.append(
                    ToolCall(
                        call.get("id", ""), call.get("name", ""), _arguments(call.get("args", {}))
                    )
                )
            else:
                rest = {k: v for k, v in part.items() if k != "thoughtSignature"}
                parts.append(Native(self.name, _arguments(rest), part.get("text", "")))
        return Message(role=Role.assistant, content=tuple(parts))

    def validate(self, request: dict[str, Any]) -> list[Problem]:
        """Every way Gemini would refuse ``request``."""
        problems, contents = with_roles(request, "contents", ("user", "model", "function"))
        turns: list[Turn] = []
        roles: list[tuple[int, str]] = []
        for index, item, role in contents:
            roles.append((index, "model" if role == "model" else "user"))
            entries: list[Entry] = []
            parts = item.get("parts") or []
            if not parts:
                problems.append(Problem("empty-content", index, "a content with no parts"))
            for part in parts:
                if "functionCall" in part:
                    call = part["functionCall"]
                    entries.append(Entry("call", index, str(call.get("id") or call.get("name"))))
                elif "functionResponse" in part:
                    response = part["functionResponse"]
                    if not response.get("name"):
                        problems.append(
                            Problem("malformed", index, "a functionResponse without its name")
                        )
                    entries.append(
                        Entry("result", index, str(response.get("id") or response.get("name")))
                    )
                elif part.get("thought") is True:
                    entries.append(Entry("reasoning", index))
                else:
                    entries.append(Entry("content", index))
            add(turns, "model" if role == "model" else "caller", index, entries)
        return sorted(problems + alternation(roles) + check(turns), key=lambda p: p.index)


# -- Bedrock Converse ------------------------------------------------------------------

_IMAGE_FORMATS: Final = frozenset({"png", "jpeg", "gif", "webp"})
_DOCUMENT_FORMATS: Final[dict[str, str]] = {
    "application/pdf": "pdf",
    "text/csv": "csv",
    "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/html": "html",
    "text/plain": "txt",
    "text/markdown": "md",
}


class BedrockGateway:
    """Bedrock Converse: ``{"role", "content": [blocks]}`` messages, each block an
    object with one key (``text``, ``toolUse``, ``toolResult``, ``reasoningContent``,
    ``image``, ``document``); the system prompt is ``system``. Binary data (image and
    document bytes, redacted reasoning) is base64 text, as on the wire: decode it
    before handing the request to boto3, which takes bytes."""

    name: ClassVar[str] = "bedrock"

    def items(self, message: Message) -> list[dict[str, Any]]:
        """The message as one Converse message (none when nothing is left)."""
        if isinstance(message.content, str):
            text = message.content
            return [{"role": message.role.value, "content": [{"text": text}]}] if text else []
        return _blocks_item(message, self.name, self._result, self._block)

    def _result(self, result: ToolResult) -> dict[str, Any]:
        content: list[dict[str, Any]]
        if isinstance(result.content, str):
            text = _denied_or(result, result.content)
            content = [{"text": text}] if text else []
        else:
            content = _items(result.content, self._block)
            if not content and result.denied:
                content = [{"text": DENIED}]
        block: dict[str, Any] = {"toolUseId": result.call_id, "content": content}
        if result.is_error or result.denied:
            block["status"] = "error"
        return {"toolResult": block}

    def _block(self, part: Part) -> dict[str, Any] | None:
        if isinstance(part, Text):
            return {"text": part.text}
        if isinstance(part, Reasoning):
            if part.encrypted is not None:
                return {"reasoningContent": {"redactedContent": part.encrypted}}
            said: dict[str, Any] = {"text": part.text}
            if part.signature is not None:
                said["signature"] = part.signature
            return {"reasoningContent": {"reasoningText": said}}
        if isinstance(part, ToolCall):
            return {
                "toolUse": {
                    "toolUseId": part.id,
                    "name": part.name,
                    "input": _object(part.arguments),
                }
            }
        if isinstance(part, Image):
            kind = part.media_type.partition("/")[2]
            source = self._source(part.data, part.url)
            if kind in _IMAGE_FORMATS and source is not None:
                return {"image": {"format": kind, "source": source}}
            return {"text": f"[image {part.url or part.media_type}]"}
        if isinstance(part, File):
            kind = _DOCUMENT_FORMATS.get(part.media_type, "")
            source = self._source(part.data, part.url)
            if kind and source is not None:
                name = part.name or "document"
                return {"document": {"format": kind, "name": name, "source": source}}
            return {"text": f"[file {part.name or part.url or part.media_type}]"}
        return None

    @staticmethod
    def _source(data: str | None, url: str | None) -> dict[str, Any] | None:
        """Where Converse reads media from: the bytes, or an S3 object (no other URL)."""
        if data is not None:
            return {"bytes": data}
        if url is not None and url.startswith("s3://"):
            return {"s3Location": {"uri": url}}
        return None

    def request(
        self,
        items: Iterable[dict[str, Any]],
        *,
        model: str = "",
        tools: Sequence[dict[str, Any]] = (),
        **options: Any,
    ) -> dict[str, Any]:
        """``client.converse(**request)`` (blobs as base64 text: see the class):
        leading system items become ``system``; consecutive messages of one role are
        merged (Converse wants them alternating). ``tools`` go in ``toolConfig``."""
        system, messages = _alternating(items, "content")
        head: dict[str, Any] = {"modelId": model}
        if system:
            head["system"] = system
        head["messages"] = messages
        if tools:
            config = dict(options.pop("toolConfig", None) or {})
            config["tools"] = [*config.get("tools", ()), *tools]
            options["toolConfig"] = config
        return _payload(head, (), options)

    def message(self, output: Any) -> Message:
        """A Converse response (``{"output": {"message": ...}}``), or its message, as a
        generic assistant message: text, tool use, reasoning (Bedrock's own, so only
        Bedrock takes it back), any other block ``Native``."""
        if isinstance(output, dict) and "output" in output:
            output = (output.get("output") or {}).get("message") or {}
        content = output.get("content") if isinstance(output, dict) else None
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        return Message(role=Role.assistant, content=tuple(self._part(b) for b in blocks))

    def _part(self, block: dict[str, Any]) -> Part:
        if set(block) == {"text"}:
            return Text(str(block["text"]))
        use = block.get("toolUse")
        if isinstance(use, dict) and len(block) == 1:
            return ToolCall(
                str(use.get("toolUseId")),
                str(use.get("name", "")),
                _arguments(use.get("input", {})),
            )
        reasoning = block.get("reasoningContent")
        if isinstance(reasoning, dict) and len(block) == 1:
            said = reasoning.get("reasoningText")
            if isinstance(said, dict):
                return Reasoning(
                    str(said.get("text", "")), self.name, signature=said.get("signature")
                )
            redacted = reasoning.get("redactedContent")
            if redacted is not None:
                return Reasoning(provider=self.name, encrypted=_base64(redacted))
        return Native(self.name, _arguments(block), str(block.get("text", "")))

    def validate(self, request: dict[str, Any]) -> list[Problem]:
        """Every way Converse would refuse ``request``."""
        problems, messages = with_roles(request, "messages", ("user", "assistant"))
        turns: list[Turn] = []
        roles: list[tuple[int, str]] = []
        for index, item, role in messages:
            roles.append((index, role))
            content = item.get("content")
            blocks = content if isinstance(content, list) else []
            if not blocks:
                problems.append(Problem("empty-content", index, "a message with no content"))
            entries: list[Entry] = []
            for block in blocks:
                if not isinstance(block, dict):
                    problems.append(
                        Problem("malformed", index, "a content block that is not an object")
                    )
                    continue
                if "toolUse" in block:
                    entries.append(Entry("call", index, str(block["toolUse"].get("toolUseId"))))
                elif "toolResult" in block:
                    entries.append(
                        Entry("result", index, str(block["toolResult"].get("toolUseId")))
                    )
                elif "reasoningContent" in block:
                    entries.append(Entry("reasoning", index))
                else:
                    if block.keys() == {"text"} and not block["text"]:
                        problems.append(Problem("empty-content", index, "a blank text block"))
                    entries.append(Entry("content", index))
            add(turns, "model" if role == "assistant" else "caller", index, entries)
        tools = request.get("toolConfig")
        blocks = [e for t in turns for e in t.entries if e.what in ("call", "result")]
        if blocks and not (isinstance(tools, dict) and tools.get("tools")):
            problems.append(
                Problem("tools-undeclared", blocks[0].index, "tool blocks but no toolConfig tools")
            )
        return sorted(problems + alternation(roles) + check(turns), key=lambda p: p.index)


def _base64(value: Any) -> str:
    """Bytes as base64 text (a recording holds them so already)."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return str(value)
