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
    "declared",
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


# -- sampling settings: one table for every provider -----------------------------------

_SAMPLING: Final[Mapping[str, Mapping[str, str]]] = {
    "anthropic": {
        "max_tokens": "max_tokens",
        "temperature": "temperature",
        "top_p": "top_p",
        "top_k": "top_k",
        "stop": "stop_sequences",
    },
    "openai-chat": {
        "max_tokens": "max_completion_tokens",
        "temperature": "temperature",
        "top_p": "top_p",
        "stop": "stop",
    },
    "openai-responses": {
        "max_tokens": "max_output_tokens",
        "temperature": "temperature",
        "top_p": "top_p",
    },
    "gemini": {
        "max_tokens": "maxOutputTokens",
        "temperature": "temperature",
        "top_p": "topP",
        "top_k": "topK",
        "stop": "stopSequences",
    },
    "bedrock": {
        "max_tokens": "maxTokens",
        "temperature": "temperature",
        "top_p": "topP",
        "stop": "stopSequences",
    },
}
"""Per provider, where each sampling setting goes (absent: the provider has none)."""

_NESTED: Final[Mapping[str, str]] = {"gemini": "generationConfig", "bedrock": "inferenceConfig"}
"""The providers whose sampling settings sit in one object of the request."""

_RETIRED: Final[Mapping[str, frozenset[str]]] = {
    # The Messages API of the pinned SDK takes no sampling settings any more; older
    # recordings hold them (read, and carried verbatim to Anthropic only).
    "anthropic": frozenset({"temperature", "top_p", "top_k"}),
}

_STREAMED_BY_ENDPOINT: Final[Mapping[str, str]] = {
    "gemini": "streamGenerateContent",
    "bedrock": "converse-stream",
}
"""The providers that stream by their endpoint, not a field of the request."""

_KINDS: Final[Mapping[str, Callable[[Any], Any]]] = {
    "max_tokens": lambda v: _int(v),
    "temperature": lambda v: _number(v),
    "top_p": lambda v: _number(v),
    "top_k": lambda v: _int(v),
    "stop": lambda v: _strings(v),
}


def _read_sampling(provider: str, body: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The sampling settings and ``stream`` of a request body, and the other keys of
    its nested settings object (named, for notes)."""
    nest = _NESTED.get(provider)
    container = _dict(body.get(nest)) if nest else dict(body)
    table = _SAMPLING[provider]
    fields = {field: _KINDS[field](container.get(key)) for field, key in table.items()}
    if provider == "openai-chat" and fields["max_tokens"] is None:
        fields["max_tokens"] = _int(body.get("max_tokens"))  # the older name
    stream = body.get("stream")
    fields["stream"] = stream if isinstance(stream, bool) else None
    other = []
    if nest:
        known = set(table.values())
        other = [f"{nest}.{k}" for k, v in container.items() if k not in known and _set(v)]
    return fields, other


def _write_sampling(provider: str, s: Settings, notes: list[str]) -> dict[str, Any]:
    """``s``'s sampling settings and ``stream`` in ``provider``'s shape."""
    table = _SAMPLING[provider]
    retired = _RETIRED.get(provider, frozenset())
    container: dict[str, Any] = {}
    for field in _KINDS:
        value = getattr(s, field)
        if value is None or value == ():
            continue
        if field in table and field not in retired:
            container[table[field]] = list(value) if field == "stop" else value
        else:
            notes.append(f"{field} ({provider} has no such setting)")
    nest = _NESTED.get(provider)
    out: dict[str, Any] = {nest: container} if nest and container else container
    endpoint = _STREAMED_BY_ENDPOINT.get(provider)
    if s.stream and endpoint is not None:
        notes.append(f"stream ({provider} streams by its endpoint, {endpoint})")
    elif s.stream is not None and endpoint is None:
        out["stream"] = s.stream
    return out


def _sampling_keys(provider: str) -> frozenset[str]:
    """The top-level request keys the sampling settings and ``stream`` fill."""
    nest = _NESTED.get(provider)
    if nest:
        return frozenset({nest})
    extra = {"max_tokens"} if provider == "openai-chat" else set()
    return frozenset({*_SAMPLING[provider].values(), *extra, "stream"})


# -- tools and the tool choice: one reader and one writer per provider ------------------


def _function_tool(name: Any, description: Any, parameters: Any) -> Tool:
    return Tool(
        name=str(name or ""),
        description=str(description or ""),
        parameters=_dict(parameters) or {"type": "object"},
    )


def _read_anthropic(body: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    tools: list[Tool] = []
    other: list[str] = []
    for tool in body.get("tools") or ():
        custom = isinstance(tool, dict) and tool.get("type") in (None, "custom")
        if custom and "input_schema" in tool:
            tools.append(
                _function_tool(tool.get("name"), tool.get("description"), tool["input_schema"])
            )
        else:
            other.append(f"tool {_tool_name(tool)}")
    choice = _dict(body.get("tool_choice"))
    kind = choice.get("type")
    disable = choice.get("disable_parallel_tool_use")
    return {
        "tools": tuple(tools),
        "tool_choice": kind if kind in ("auto", "any", "none", "tool") else None,
        "tool_name": choice.get("name") if kind == "tool" else None,
        "parallel": (not disable) if isinstance(disable, bool) else None,
    }, other


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


def _read_openai(body: dict[str, Any], nested: bool) -> tuple[dict[str, Any], list[str]]:
    """Chat Completions (``nested``: a tool's function under ``function``) or Responses."""
    tools: list[Tool] = []
    other: list[str] = []
    for tool in body.get("tools") or ():
        spec = (_dict(tool.get("function")) if nested else tool) if isinstance(tool, dict) else {}
        if isinstance(tool, dict) and tool.get("type") == "function" and "name" in spec:
            tools.append(
                _function_tool(spec["name"], spec.get("description"), spec.get("parameters"))
            )
        else:
            other.append(f"tool {_tool_name(tool)}")
    choice, name = _openai_choice(body.get("tool_choice"))
    parallel = body.get("parallel_tool_calls")
    return {
        "tools": tuple(tools),
        "tool_choice": choice,
        "tool_name": name,
        "parallel": parallel if isinstance(parallel, bool) else None,
    }, other


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
                if isinstance(declaration, dict):
                    schema = declaration.get("parametersJsonSchema") or _lowered(
                        declaration.get("parameters")
                    )
                    name, said = declaration.get("name"), declaration.get("description")
                    tools.append(_function_tool(name, said, schema))
    calling = _dict(_dict(body.get("toolConfig")).get("functionCallingConfig"))
    mode = _GEMINI_MODES.get(str(calling.get("mode", "")).upper())
    allowed = _strings(calling.get("allowedFunctionNames"))
    name = None
    if mode == "any" and len(allowed) == 1:
        mode, name = "tool", allowed[0]
    return {"tools": tuple(tools), "tool_choice": mode, "tool_name": name}, other


def _read_bedrock(body: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    tools: list[Tool] = []
    other: list[str] = []
    config = _dict(body.get("toolConfig"))
    for tool in config.get("tools") or ():
        spec = _dict(tool).get("toolSpec")
        if isinstance(spec, dict):
            schema = _dict(spec.get("inputSchema")).get("json")
            tools.append(_function_tool(spec.get("name"), spec.get("description"), schema))
        elif _dict(tool).keys() != {"cachePoint"}:  # a cache marker is no tool
            other.append(f"tool {_tool_name(tool)}")
    choice = _dict(config.get("toolChoice"))
    kind = next((k for k in ("auto", "any", "tool") if k in choice), None)
    name = _dict(choice.get("tool")).get("name")
    return {
        "tools": tuple(tools),
        "tool_choice": kind,
        "tool_name": name if kind == "tool" and isinstance(name, str) else None,
    }, other


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
    "anthropic": (_read_anthropic, frozenset({"tools", "tool_choice"})),
    "openai-chat": (
        lambda body: _read_openai(body, nested=True),
        frozenset({"tools", "tool_choice", "parallel_tool_calls"}),
    ),
    "openai-responses": (
        lambda body: _read_openai(body, nested=False),
        frozenset({"tools", "tool_choice", "parallel_tool_calls"}),
    ),
    "gemini": (_read_gemini, frozenset({"tools", "toolConfig"})),
    "bedrock": (_read_bedrock, frozenset({"toolConfig"})),
}
"""Per provider, the reader of its tools and tool choice, and the keys it reads."""


def read_settings(provider: str, body: Mapping[str, Any], *, model: str = "") -> Settings:
    """The settings of a request body ``provider`` sent (``model`` when the body does
    not name it: Gemini and Bedrock name it in the URL)."""
    read, known = _READERS[provider]
    plain = dict(body)
    sampling, other = _read_sampling(provider, plain)
    tools, unknown = read(plain)
    skipped = CONVERSATION_KEYS[provider] | known | _sampling_keys(provider)
    other += unknown + [k for k, v in plain.items() if k not in skipped and _set(v)]
    named = plain.get("modelId" if provider == "bedrock" else "model")
    return Settings(
        model=named if isinstance(named, str) and named else model,
        other=tuple(other),
        **sampling,
        **tools,
    )


# -- writing: tools and the tool choice, one function per provider ------------------------


def _write_anthropic(s: Settings, notes: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
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


def _write_openai(s: Settings, nested: bool) -> dict[str, Any]:
    """Chat Completions (``nested``: a tool's function under ``function``) or Responses."""
    out: dict[str, Any] = {}
    if s.tools:
        functions = [
            {"name": t.name, "description": t.description, "parameters": _object_schema(t)}
            for t in s.tools
        ]
        out["tools"] = [
            {"type": "function", "function": f}
            if nested
            # Strict schemas must close every object: a carried schema need not.
            else {"type": "function", **f, "strict": False}
            for f in functions
        ]
        if s.parallel is not None:
            out["parallel_tool_calls"] = s.parallel
    if s.tool_choice == "tool":
        named = {"name": s.tool_name}
        out["tool_choice"] = (
            {"type": "function", "function": named} if nested else {"type": "function", **named}
        )
    elif s.tool_choice is not None:
        out["tool_choice"] = {"auto": "auto", "any": "required", "none": "none"}[s.tool_choice]
    return out


def _write_gemini(s: Settings, notes: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if s.tools:
        declarations = [
            {
                "name": t.name,
                "description": t.description,
                "parametersJsonSchema": _object_schema(t),
            }
            for t in s.tools
        ]
        out["tools"] = [{"functionDeclarations": declarations}]
        _parallel_lost(s, "gemini", notes)
    if s.tool_choice is not None:
        mode = {"auto": "AUTO", "any": "ANY", "none": "NONE", "tool": "ANY"}[s.tool_choice]
        calling: dict[str, Any] = {"mode": mode}
        if s.tool_choice == "tool":
            calling["allowedFunctionNames"] = [s.tool_name]
        out["toolConfig"] = {"functionCallingConfig": calling}
    return out


def _write_bedrock(s: Settings, notes: list[str]) -> dict[str, Any]:
    if not s.tools:
        return {}
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
    elif s.tool_choice == "none":
        notes.append("tool choice none (bedrock has no such setting)")
    _parallel_lost(s, "bedrock", notes)
    return {"toolConfig": config}


def _parallel_lost(s: Settings, provider: str, notes: list[str]) -> None:
    if s.parallel is False:
        notes.append(f"one call at a time ({provider} has no such setting)")


def _object_schema(tool: Tool) -> dict[str, Any]:
    """The tool's parameters as an object schema (every provider wants one)."""
    schema = dict(tool.parameters)
    schema.setdefault("type", "object")
    return schema


_WRITERS: Final[Mapping[str, Callable[[Settings, list[str]], dict[str, Any]]]] = {
    "anthropic": _write_anthropic,
    "openai-chat": lambda s, notes: _write_openai(s, nested=True),
    "openai-responses": lambda s, notes: _write_openai(s, nested=False),
    "gemini": _write_gemini,
    "bedrock": _write_bedrock,
}
"""Per provider, the writer of its tools and tool choice."""


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
    out = _write_sampling(provider, settings, notes)
    out.update(_WRITERS[provider](settings, notes))
    return out, tuple(notes)


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


def declared(provider: str, request: dict[str, Any]) -> dict[str, Any]:
    """``request`` with the tools its history calls declared, where ``provider``
    refuses tool blocks in a request that declares no tools (Bedrock: "The toolConfig
    field must be defined when using toolUse and toolResult content blocks"): each
    called tool by its name, with an open schema (none was recorded). Anything else
    unchanged."""
    if provider != "bedrock" or _dict(request.get("toolConfig")).get("tools"):
        return request
    names: dict[str, None] = {}
    results = False
    for message in request.get("messages") or ():
        for block in _dict(message).get("content") or ():
            use = _dict(block).get("toolUse")
            if use:
                names[str(_dict(use).get("name", ""))] = None
            results = results or "toolResult" in _dict(block)
    if not names and not results:
        return request
    specs = [
        {"toolSpec": {"name": name or "tool", "inputSchema": {"json": {"type": "object"}}}}
        for name in names or {"tool": None}
    ]
    config = {**_dict(request.get("toolConfig")), "tools": specs}
    return {**request, "toolConfig": config}
