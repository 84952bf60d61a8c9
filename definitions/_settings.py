"""What a request carries beside its conversation: model, tools, tool choice, settings.

A recorded request names its model, the tools it offers, how the model may use them
and its sampling settings (max tokens, temperature, ...), each provider in its own
shape. The request an agent sends next carries them over (``carry``):

- to the provider that recorded them, verbatim: every key but the conversation's
  (``CONVERSATION_KEYS``: the messages and the system prompt, which the gateway
  builds from the conversation) and the model;
- to another provider, through one generic record (``Settings``, read by
  ``read_settings``): the model is not carried (a model name means nothing to
  another provider); each tool with a JSON-schema form, the tool choice and the
  common settings are written in the target's shape; what the target has no place
  for (a server tool, ``top_k`` to OpenAI, a provider's own options such as
  Anthropic's ``thinking``) is left out and named in ``Carried.notes``.

Provider names are the gateways' (``anthropic``, ``openai-chat``,
``openai-responses``, ``gemini``, ``bedrock``). Imports only ``engine`` and the other
definitions modules; pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

import attrs

__all__ = [
    "CONVERSATION_KEYS",
    "Carried",
    "Settings",
    "Tool",
    "carry",
    "limited",
    "read_settings",
    "written",
]

CONVERSATION_KEYS: Final[Mapping[str, frozenset[str]]] = {
    "anthropic": frozenset({"model", "messages", "system"}),
    "openai-chat": frozenset({"model", "messages"}),
    "openai-responses": frozenset({"model", "input", "instructions", "previous_response_id"}),
    "gemini": frozenset({"model", "contents", "systemInstruction", "system_instruction"}),
    "bedrock": frozenset({"modelId", "messages", "system"}),
}
"""Per provider, the request keys the conversation and the model fill (never carried
verbatim: the gateway writes them)."""

Choice = Literal["auto", "any", "none", "tool"]


@attrs.frozen(kw_only=True)
class Tool:
    """A function tool: ``name``, ``description`` and its ``parameters`` (a JSON
    schema); every provider has this form."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = attrs.field(factory=lambda: {"type": "object"})


@attrs.frozen(kw_only=True)
class Settings:
    """A request's settings in no provider's shape. ``None`` (or empty) is "not set".

    ``tool_choice`` is ``auto`` (the model decides), ``any`` (it must call one),
    ``none`` (it must not) or ``tool`` (it must call ``tool_name``); ``parallel``
    ``False`` asks for one call at a time. ``other`` names what the request set
    that has no generic form (a server tool, a provider's own option): it is carried
    only to the same provider, verbatim.
    """

    model: str = ""
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    stop: tuple[str, ...] = ()
    stream: bool | None = None
    tools: tuple[Tool, ...] = ()
    tool_choice: Choice | None = None
    tool_name: str | None = None
    parallel: bool | None = None
    other: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class Carried:
    """What a request for ``provider`` takes from a recorded one: ``model`` (empty:
    none known) and ``options`` (keyword arguments of the gateway's ``request``, in
    the provider's shape), and ``notes``, one sentence per thing left out;
    ``recorded`` is the model the recorded request named (carried or not)."""

    provider: str
    model: str = ""
    options: Mapping[str, Any] = attrs.field(factory=dict)
    notes: tuple[str, ...] = ()
    recorded: str = ""


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        return tuple(s for s in value if isinstance(s, str))
    return ()


def _set(value: Any) -> bool:
    """Whether a recorded value says anything (``None``, ``{}``, ``[]`` do not)."""
    return value is not None and value != {} and value != [] and value != ""


def _lowered(schema: Any) -> Any:
    """A Gemini schema as JSON Schema: its type names (``OBJECT``) lower-cased."""
    if isinstance(schema, list):
        return [_lowered(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            out[key] = value.lower()
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: _lowered(v) for name, v in value.items()}
        elif key in ("items", "anyOf", "oneOf", "allOf", "additionalProperties"):
            out[key] = _lowered(value)
        else:
            out[key] = value
    return out


# -- reading: one function per provider ----------------------------------------------


def _read_anthropic(body: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    tools: list[Tool] = []
    other: list[str] = []
    for tool in body.get("tools") or ():
        if (
            isinstance(tool, dict)
            and "input_schema" in tool
            and tool.get("type") in (None, "custom")
        ):
            tools.append(
                Tool(
                    name=str(tool.get("name", "")),
                    description=str(tool.get("description") or ""),
                    parameters=_dict(tool.get("input_schema")),
                )
            )
        else:
            other.append(f"tool {_tool_name(tool)}")
    choice = _dict(body.get("tool_choice"))
    kind = choice.get("type")
    disable = choice.get("disable_parallel_tool_use")
    return {
        "max_tokens": _int(body.get("max_tokens")),
        "temperature": _number(body.get("temperature")),
        "top_p": _number(body.get("top_p")),
        "top_k": _int(body.get("top_k")),
        "stop": _strings(body.get("stop_sequences")),
        "stream": body.get("stream") if isinstance(body.get("stream"), bool) else None,
        "tools": tuple(tools),
        "tool_choice": kind if kind in ("auto", "any", "none", "tool") else None,
        "tool_name": choice.get("name") if kind == "tool" else None,
        "parallel": (not disable) if isinstance(disable, bool) else None,
    }, other


_ANTHROPIC_READ: Final = frozenset(
    {"max_tokens", "temperature", "top_p", "top_k", "stop_sequences", "stream", "tools",
     "tool_choice"}
)  # fmt: skip


def _openai_choice(value: Any) -> tuple[Choice | None, str | None]:
    if value == "required":
        return "any", None
    if value in ("auto", "none"):
        return value, None
    if isinstance(value, dict):
        function = _dict(value.get("function"))
        name = function.get("name") or value.get("name")
        if isinstance(name, str):
            return "tool", name
    return None, None


def _read_chat(body: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    tools: list[Tool] = []
    other: list[str] = []
    for tool in body.get("tools") or ():
        function = _dict(tool.get("function")) if isinstance(tool, dict) else {}
        if isinstance(tool, dict) and tool.get("type") == "function" and "name" in function:
            tools.append(
                Tool(
                    name=str(function["name"]),
                    description=str(function.get("description") or ""),
                    parameters=_dict(function.get("parameters")) or {"type": "object"},
                )
            )
        else:
            other.append(f"tool {_tool_name(tool)}")
    choice, name = _openai_choice(body.get("tool_choice"))
    limit = body.get("max_completion_tokens", body.get("max_tokens"))
    parallel = body.get("parallel_tool_calls")
    return {
        "max_tokens": _int(limit),
        "temperature": _number(body.get("temperature")),
        "top_p": _number(body.get("top_p")),
        "stop": _strings(body.get("stop")),
        "stream": body.get("stream") if isinstance(body.get("stream"), bool) else None,
        "tools": tuple(tools),
        "tool_choice": choice,
        "tool_name": name,
        "parallel": parallel if isinstance(parallel, bool) else None,
    }, other


_CHAT_READ: Final = frozenset(
    {"max_completion_tokens", "max_tokens", "temperature", "top_p", "stop", "stream", "tools",
     "tool_choice", "parallel_tool_calls"}
)  # fmt: skip


def _read_responses(body: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    tools: list[Tool] = []
    other: list[str] = []
    for tool in body.get("tools") or ():
        if isinstance(tool, dict) and tool.get("type") == "function" and "name" in tool:
            tools.append(
                Tool(
                    name=str(tool["name"]),
                    description=str(tool.get("description") or ""),
                    parameters=_dict(tool.get("parameters")) or {"type": "object"},
                )
            )
        else:
            other.append(f"tool {_tool_name(tool)}")
    choice, name = _openai_choice(body.get("tool_choice"))
    parallel = body.get("parallel_tool_calls")
    return {
        "max_tokens": _int(body.get("max_output_tokens")),
        "temperature": _number(body.get("temperature")),
        "top_p": _number(body.get("top_p")),
        "stream": body.get("stream") if isinstance(body.get("stream"), bool) else None,
        "tools": tuple(tools),
        "tool_choice": choice,
        "tool_name": name,
        "parallel": parallel if isinstance(parallel, bool) else None,
    }, other


_RESPONSES_READ: Final = frozenset(
    {"max_output_tokens", "temperature", "top_p", "stream", "tools", "tool_choice",
     "parallel_tool_calls"}
)  # fmt: skip

_GEMINI_MODES: Final[Mapping[str, Choice]] = {"AUTO": "auto", "ANY": "any", "NONE": "none"}


def _read_gemini(body: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    tools: list[Tool] = []
    other: list[str] = []
    for tool in body.get("tools") or ():
        for key, value in _dict(tool).items():
            if key not in ("functionDeclarations", "function_declarations"):
                other.append(f"tool {key}")
                continue
            for declaration in value if isinstance(value, list) else ():
                if not isinstance(declaration, dict):
                    continue
                schema = declaration.get("parametersJsonSchema") or _lowered(
                    declaration.get("parameters")
                )
                tools.append(
                    Tool(
                        name=str(declaration.get("name", "")),
                        description=str(declaration.get("description") or ""),
                        parameters=_dict(schema) or {"type": "object"},
                    )
                )
    config = _dict(body.get("generationConfig"))
    calling = _dict(_dict(body.get("toolConfig")).get("functionCallingConfig"))
    mode = _GEMINI_MODES.get(str(calling.get("mode", "")).upper())
    allowed = _strings(calling.get("allowedFunctionNames"))
    if mode == "any" and len(allowed) == 1:
        mode, name = "tool", allowed[0]
    else:
        name = None
    other += [
        f"generationConfig.{k}" for k, v in config.items() if k not in _GEMINI_CONFIG and _set(v)
    ]
    return {
        "max_tokens": _int(config.get("maxOutputTokens")),
        "temperature": _number(config.get("temperature")),
        "top_p": _number(config.get("topP")),
        "top_k": _int(config.get("topK")),
        "stop": _strings(config.get("stopSequences")),
        "tools": tuple(tools),
        "tool_choice": mode,
        "tool_name": name,
    }, other


_GEMINI_CONFIG: Final = frozenset(
    {"maxOutputTokens", "temperature", "topP", "topK", "stopSequences"}
)
_GEMINI_READ: Final = frozenset({"generationConfig", "tools", "toolConfig"})


def _read_bedrock(body: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    tools: list[Tool] = []
    other: list[str] = []
    config = _dict(body.get("toolConfig"))
    for tool in config.get("tools") or ():
        spec = _dict(tool).get("toolSpec")
        if isinstance(spec, dict):
            tools.append(
                Tool(
                    name=str(spec.get("name", "")),
                    description=str(spec.get("description") or ""),
                    parameters=_dict(_dict(spec.get("inputSchema")).get("json"))
                    or {"type": "object"},
                )
            )
        elif _dict(tool).keys() != {"cachePoint"}:  # a cache marker is no tool
            other.append(f"tool {_tool_name(tool)}")
    choice = _dict(config.get("toolChoice"))
    kind: Choice | None = None
    name = None
    if "auto" in choice:
        kind = "auto"
    elif "any" in choice:
        kind = "any"
    elif "tool" in choice:
        kind, name = "tool", _dict(choice["tool"]).get("name")
    inference = _dict(body.get("inferenceConfig"))
    return {
        "max_tokens": _int(inference.get("maxTokens")),
        "temperature": _number(inference.get("temperature")),
        "top_p": _number(inference.get("topP")),
        "stop": _strings(inference.get("stopSequences")),
        "tools": tuple(tools),
        "tool_choice": kind,
        "tool_name": name if isinstance(name, str) else None,
    }, other


_BEDROCK_READ: Final = frozenset({"inferenceConfig", "toolConfig"})


def _tool_name(tool: Any) -> str:
    if isinstance(tool, dict):
        for key in ("name", "type"):
            if isinstance(tool.get(key), str):
                return str(tool[key])
        if tool:
            return str(next(iter(tool)))
    return repr(tool)


_READERS: Final[
    Mapping[
        str, tuple[Callable[[dict[str, Any]], tuple[dict[str, Any], list[str]]], frozenset[str]]
    ]
] = {
    "anthropic": (_read_anthropic, _ANTHROPIC_READ),
    "openai-chat": (_read_chat, _CHAT_READ),
    "openai-responses": (_read_responses, _RESPONSES_READ),
    "gemini": (_read_gemini, _GEMINI_READ),
    "bedrock": (_read_bedrock, _BEDROCK_READ),
}


def read_settings(provider: str, body: Mapping[str, Any], *, model: str = "") -> Settings:
    """The settings of a request body ``provider`` sent (``model`` when the body does
    not name it: Gemini and Bedrock name it in the URL)."""
    read, known = _READERS[provider]
    plain = dict(body)
    fields, other = read(plain)
    skipped = CONVERSATION_KEYS[provider] | known
    other += [k for k, v in plain.items() if k not in skipped and _set(v)]
    named = plain.get("modelId" if provider == "bedrock" else "model")
    return Settings(
        model=named if isinstance(named, str) and named else model,
        other=tuple(other),
        **fields,
    )


# -- writing: one function per provider -------------------------------------------------


def _write_anthropic(s: Settings, notes: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if s.max_tokens is not None:
        out["max_tokens"] = s.max_tokens
    # The Messages API of the pinned SDK takes no sampling settings any more.
    _lost(notes, "temperature", s.temperature, "anthropic")
    _lost(notes, "top_p", s.top_p, "anthropic")
    _lost(notes, "top_k", s.top_k, "anthropic")
    if s.stop:
        out["stop_sequences"] = list(s.stop)
    _put(out, "stream", s.stream)
    if s.tools:
        out["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": _object_schema(t)}
            for t in s.tools
        ]
    choice: dict[str, Any] = {}
    if s.tool_choice is not None:
        choice["type"] = s.tool_choice
        if s.tool_choice == "tool":
            choice["name"] = s.tool_name
    if s.parallel is False and s.tools:
        choice = {"type": "auto", **choice, "disable_parallel_tool_use": True}
    if choice:
        out["tool_choice"] = choice
    return out


def _write_chat(s: Settings, notes: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    _put(out, "max_completion_tokens", s.max_tokens)
    _put(out, "temperature", s.temperature)
    _put(out, "top_p", s.top_p)
    _lost(notes, "top_k", s.top_k, "openai-chat")
    if s.stop:
        out["stop"] = list(s.stop)
    _put(out, "stream", s.stream)
    if s.tools:
        out["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": _object_schema(t),
                },
            }
            for t in s.tools
        ]
        _put(out, "parallel_tool_calls", s.parallel)
    choice = _openai_written(s)
    if choice is not None:
        out["tool_choice"] = (
            {"type": "function", "function": {"name": s.tool_name}}
            if s.tool_choice == "tool"
            else choice
        )
    return out


def _openai_written(s: Settings) -> Any:
    if s.tool_choice is None:
        return None
    return {"auto": "auto", "any": "required", "none": "none"}.get(s.tool_choice, s.tool_choice)


def _write_responses(s: Settings, notes: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    _put(out, "max_output_tokens", s.max_tokens)
    _put(out, "temperature", s.temperature)
    _put(out, "top_p", s.top_p)
    _lost(notes, "top_k", s.top_k, "openai-responses")
    _lost(notes, "stop sequences", s.stop or None, "openai-responses")
    _put(out, "stream", s.stream)
    if s.tools:
        out["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": _object_schema(t),
                # Strict schemas must close every object: a carried schema need not.
                "strict": False,
            }
            for t in s.tools
        ]
        _put(out, "parallel_tool_calls", s.parallel)
    choice = _openai_written(s)
    if choice is not None:
        out["tool_choice"] = (
            {"type": "function", "name": s.tool_name} if s.tool_choice == "tool" else choice
        )
    return out


def _write_gemini(s: Settings, notes: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    config: dict[str, Any] = {}
    _put(config, "maxOutputTokens", s.max_tokens)
    _put(config, "temperature", s.temperature)
    _put(config, "topP", s.top_p)
    _put(config, "topK", s.top_k)
    if s.stop:
        config["stopSequences"] = list(s.stop)
    if config:
        out["generationConfig"] = config
    if s.stream:
        notes.append("stream (gemini streams by its endpoint, streamGenerateContent)")
    if s.tools:
        out["tools"] = [
            {
                "functionDeclarations": [
                    {
                        "name": t.name,
                        "description": t.description,
                        "parametersJsonSchema": _object_schema(t),
                    }
                    for t in s.tools
                ]
            }
        ]
        _lost(
            notes,
            "one call at a time (parallel tool calls off)",
            s.parallel is False or None,
            "gemini",
        )
    if s.tool_choice is not None:
        mode = {"auto": "AUTO", "any": "ANY", "none": "NONE", "tool": "ANY"}[s.tool_choice]
        calling: dict[str, Any] = {"mode": mode}
        if s.tool_choice == "tool":
            calling["allowedFunctionNames"] = [s.tool_name]
        out["toolConfig"] = {"functionCallingConfig": calling}
    return out


def _write_bedrock(s: Settings, notes: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    inference: dict[str, Any] = {}
    _put(inference, "maxTokens", s.max_tokens)
    _put(inference, "temperature", s.temperature)
    _put(inference, "topP", s.top_p)
    if s.stop:
        inference["stopSequences"] = list(s.stop)
    if inference:
        out["inferenceConfig"] = inference
    _lost(notes, "top_k", s.top_k, "bedrock")
    if s.stream:
        notes.append("stream (bedrock streams by its endpoint, converse-stream)")
    if s.tools:
        specs = []
        for t in s.tools:
            spec: dict[str, Any] = {"name": t.name, "inputSchema": {"json": _object_schema(t)}}
            if t.description:  # Bedrock refuses an empty description
                spec["description"] = t.description
            specs.append({"toolSpec": spec})
        config: dict[str, Any] = {"tools": specs}
        if s.tool_choice == "tool":
            config["toolChoice"] = {"tool": {"name": s.tool_name}}
        elif s.tool_choice in ("auto", "any"):
            config["toolChoice"] = {s.tool_choice: {}}
        _lost(notes, "tool choice none", s.tool_choice == "none" or None, "bedrock")
        _lost(
            notes,
            "one call at a time (parallel tool calls off)",
            s.parallel is False or None,
            "bedrock",
        )
        out["toolConfig"] = config
    return out


def _object_schema(tool: Tool) -> dict[str, Any]:
    """The tool's parameters as an object schema (every provider wants one)."""
    schema = dict(tool.parameters)
    schema.setdefault("type", "object")
    return schema


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


def _lost(notes: list[str], what: str, value: Any, provider: str) -> None:
    if value is not None:
        notes.append(f"{what} ({provider} has no such setting)")


_WRITERS: Final[Mapping[str, Callable[[Settings, list[str]], dict[str, Any]]]] = {
    "anthropic": _write_anthropic,
    "openai-chat": _write_chat,
    "openai-responses": _write_responses,
    "gemini": _write_gemini,
    "bedrock": _write_bedrock,
}


def carry(
    provider: str,
    recorded: str | None,
    body: Mapping[str, Any],
    *,
    model: str = "",
) -> Carried:
    """What a request for ``provider`` takes from the request ``body`` that provider
    ``recorded`` sent (``model``: the one its URL names, when the body does not).
    ``recorded`` ``None`` (no request recorded) carries nothing."""
    if recorded is None:
        return Carried(provider=provider)
    if recorded == provider:
        keys = CONVERSATION_KEYS[provider]
        named = body.get("modelId" if provider == "bedrock" else "model")
        named = named if isinstance(named, str) and named else model
        return Carried(
            provider=provider,
            model=named,
            options={k: v for k, v in body.items() if k not in keys},
            recorded=named,
        )
    settings = read_settings(recorded, body, model=model)
    options, lost = written(provider, settings)
    notes = [f"not carried from {recorded} to {provider}: {what}" for what in settings.other]
    notes += [f"not carried from {recorded} to {provider}: {what}" for what in lost]
    return Carried(provider=provider, options=options, notes=tuple(notes), recorded=settings.model)


def written(provider: str, settings: Settings) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``settings`` in ``provider``'s shape (the gateway ``request`` keywords), and
    what it has no place for."""
    notes: list[str] = []
    return _WRITERS[provider](settings, notes), tuple(notes)


def limited(provider: str, options: Mapping[str, Any], max_tokens: int) -> dict[str, Any]:
    """``options`` (``provider``'s request keywords) with its output limit set to
    ``max_tokens``, in the provider's shape (merged into a nested config)."""
    out = dict(options)
    if provider == "openai-chat":
        out.pop("max_tokens", None)  # the older name of max_completion_tokens
    for key, value in written(provider, Settings(max_tokens=max_tokens))[0].items():
        nested = out.get(key)
        out[key] = {**nested, **value} if isinstance(nested, dict) else value
    return out
