"""The next request is sendable: model, tools, tool choice and settings carried from the
last recorded request (verbatim to its provider, translated to another, what cannot
cross said), flags overriding; no model or no conversation is an error."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from definitions._requests_read import model_of_url, request_messages
from definitions._settings import carry, limited, written
from definitions.gateways import GATEWAYS, Settings, Tool, read_settings
from replay import load_events
from replay.cli import main
from replay.context import ContextOptions, next_request
from replay.context._requests import requests

ROOT = Path(__file__).resolve().parents[2]
AGENT = (
    ROOT
    / "tests/recording/recordings/test_example_agent/test_the_agent_answers_with_the_weather.jsonl"
)
SAMPLES = Path(__file__).parent / "samples"
THINKING = SAMPLES / "pydantic-ai-test_anthropic_tool_with_thinking.yaml"


def _events(path: Path) -> list[Any]:
    return list(load_events(path).events)


def test_the_recorded_model_tools_and_settings_go_to_the_same_provider() -> None:
    events = _events(AGENT)
    last = [e for e in events if e["type"] == "recording/request"][-1]["body"]
    made = next_request(events, "anthropic")
    request = made.request
    assert made.problems == ()
    assert made.notes == ()
    for key in ("model", "max_tokens", "tools", "stream"):
        assert request[key] == last[key], key
    assert request["max_tokens"] == 256  # as recorded, not a default
    # the recorded messages (read back alike: the SDK echoed null fields), then the
    # answer: one more assistant turn
    sent = request_messages("anthropic.messages", last)
    assert request_messages("anthropic.messages", request)[: len(sent)] == sent
    assert len(request["messages"]) == len(last["messages"]) + 1
    assert request["messages"][-1]["role"] == "assistant"


def test_flags_override_what_was_recorded() -> None:
    events = _events(AGENT)
    options = ContextOptions(model="claude-other", max_tokens=77)
    request = next_request(events, "anthropic", options=options).request
    assert (request["model"], request["max_tokens"]) == ("claude-other", 77)
    gemini = next_request(events, "gemini", options=options).request
    assert gemini["generationConfig"] == {"maxOutputTokens": 77}
    bedrock = next_request(events, "bedrock", options=options).request
    assert bedrock["inferenceConfig"] == {"maxTokens": 77}
    assert bedrock["modelId"] == "claude-other"


@pytest.mark.parametrize("provider", [p for p in GATEWAYS if p != "anthropic"])
def test_another_provider_gets_the_tools_in_its_shape(provider: str) -> None:
    events = _events(AGENT)
    with pytest.raises(ValueError, match=rf"no model known for {provider} \(the log's model"):
        next_request(events, provider)
    made = next_request(events, provider, options=ContextOptions(model="m"))
    assert made.problems == ()
    text = json.dumps(made.request)
    assert "get_weather" in text
    assert "The weather at a place." in text
    # what did not cross is said: Gemini and Bedrock stream by their endpoint
    assert any("stream" in note for note in made.notes) == (provider in ("gemini", "bedrock"))


def test_what_a_provider_has_no_place_for_is_said() -> None:
    events = _events(THINKING)
    made = next_request(events, "openai-chat", options=ContextOptions(model="gpt"))
    assert made.notes == ("not carried from anthropic to openai-chat: thinking",)
    assert made.request["tool_choice"] == "auto"
    assert made.request["max_completion_tokens"] == 4096
    server = {"type": "web_search_20250305", "name": "web_search"}
    body = {"model": "c", "max_tokens": 5, "top_k": 3, "tools": [server], "messages": []}
    carried = carry("openai-responses", "anthropic", body)
    assert carried.notes == (
        "not carried from anthropic to openai-responses: tool web_search",
        "not carried from anthropic to openai-responses: top_k (openai-responses has no such "
        "setting)",
    )
    assert "tools" not in carried.options


def test_each_call_carries_the_settings_of_its_own_request(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A real two-call tool loop (pydantic-ai's) whose first call an agent made with a
    cheaper model, a smaller limit and a temperature, without thinking: each call's
    request carries its own recorded request's settings, the one after the log the
    last's; to another provider, each translated."""
    events = _events(THINKING)
    first = next(e for e in events if e["type"] == "recording/request")
    body = {k: v for k, v in first["body"].items() if k != "thinking"}
    cheap = {"model": "claude-3-5-haiku-latest", "max_tokens": 512, "temperature": 0.2}
    events[events.index(first)] = {**first, "body": {**body, **cheap}}
    recorded = [e["body"] for e in events if e["type"] == "recording/request"]
    calls = requests(events, "anthropic")
    assert len(calls) == 3  # before each call, then after the log
    for call, sent in zip(calls, [*recorded, recorded[-1]], strict=True):
        assert call.problems == ()
        assert {k: v for k, v in call.request.items() if k != "messages"} == {
            k: v for k, v in sent.items() if k != "messages"
        }
    log = tmp_path / "two-models.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in events))
    status, out, _ = _cli(capsys, str(log), "-p", "anthropic", "--calls")
    lines = [json.loads(line) for line in out.splitlines()]
    assert status == 0
    assert [(r["model"], r["max_tokens"], r.get("temperature")) for r in lines] == [
        ("claude-3-5-haiku-latest", 512, 0.2),
        ("claude-sonnet-4-0", 4096, None),
    ]
    status, out, _ = _cli(capsys, str(log), "-p", "openai-chat", "--calls", "--model", "gpt")
    lines = [json.loads(line) for line in out.splitlines()]
    assert [(r["max_completion_tokens"], r.get("temperature")) for r in lines] == [
        (512, 0.2),
        (4096, None),
    ]


def test_a_log_with_no_conversation_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ValueError, match="no conversation to continue"):
        next_request([], "anthropic", options=ContextOptions(model="m"))


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["context", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_the_command_refuses_what_could_not_be_sent(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    status, out, err = _cli(capsys, str(empty), "-p", "anthropic", "--model", "m")
    assert (status, out) == (2, "")
    assert err.count("\n") == 1
    assert "no conversation to continue" in err
    embeddings = tmp_path / "embeddings.jsonl"
    call = {
        "type": "recording/request",
        "call": 0,
        "url": "https://api.openai.com/v1/embeddings",
        "body": {"model": "text-embedding-3-small", "input": "hello"},
    }
    embeddings.write_text(json.dumps(call) + "\n")
    status, out, err = _cli(capsys, str(embeddings), "-p", "openai-chat", "--model", "m")
    assert (status, out) == (2, "")
    assert "embeddings" in err or "unknown api" in err
    # Bedrock InvokeModel (no model API a gateway speaks) and `codex exec --json`
    # (events, no conversation of any set) hold nothing to continue.
    invoke = tmp_path / "invoke.json"
    url = "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-v2/invoke"
    answer = {"string": json.dumps({"completion": "hello"})}
    interaction = {
        "request": {"method": "POST", "uri": url, "body": json.dumps({"prompt": "hi"})},
        "response": {"status": {"code": 200}, "headers": {}, "body": answer},
    }
    invoke.write_text(json.dumps({"interactions": [interaction], "version": 1}))
    codex = tmp_path / "codex-exec.jsonl"
    codex.write_text(
        '{"type":"thread.started","thread_id":"t"}\n{"type":"turn.started"}\n'
        '{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"Done."}}\n'
    )
    for path in (invoke, codex):
        status, out, err = _cli(capsys, str(path), "-p", "bedrock", "--model", "m")
        assert (status, out) == (2, ""), path.name
        assert err.count("\n") == 1, err
    status, out, err = _cli(capsys, str(AGENT), "-p", "openai-chat")
    assert (status, out) == (2, "")
    assert "name one with --model" in err
    status, out, err = _cli(capsys, str(AGENT), "-p", "anthropic", "--max-tokens", "9")
    assert status == 0
    assert json.loads(out)["max_tokens"] == 9


# -- property: settings carried across providers still validate -----------------------

NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True)
SCHEMAS = st.sampled_from(
    [
        {"type": "object", "properties": {}},
        {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        {
            "type": "object",
            "properties": {"n": {"type": "integer"}, "tags": {"type": "array", "items": {}}},
        },
    ]
)


@st.composite
def generic_settings(draw: st.DrawFn) -> Settings:
    tools = draw(
        st.lists(
            st.builds(Tool, name=NAMES, description=st.text(max_size=8), parameters=SCHEMAS),
            max_size=3,
            unique_by=lambda t: t.name,
        )
    )
    choice = draw(st.sampled_from([None, "auto", "any", "none", "tool"])) if tools else None
    return Settings(
        max_tokens=draw(st.none() | st.integers(1, 64_000)),
        temperature=draw(st.none() | st.floats(0, 1)),
        top_p=draw(st.none() | st.floats(0, 1)),
        top_k=draw(st.none() | st.integers(1, 500)),
        stop=tuple(draw(st.lists(st.text(min_size=1, max_size=4), max_size=3))),
        tools=tuple(tools),
        tool_choice=choice,
        tool_name=tools[0].name if choice == "tool" else None,
        parallel=draw(st.none() | st.booleans()) if tools else None,
    )


@functools.cache
def _converse_shape() -> Any:
    import botocore.session

    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    return model.operation_model("Converse").input_shape


@functools.cache
def _adapter(kind: Any) -> Any:
    import pydantic

    return pydantic.TypeAdapter(kind)


def _sdk_check(provider: str, options: dict[str, Any]) -> None:
    """``options`` as the provider's SDK types them: every key a create parameter,
    tools and tool choice of their types (Bedrock: botocore's request model)."""
    if provider == "bedrock":
        from botocore.validate import ParamValidator

        params = {"modelId": "m", "messages": [], **options}
        report = ParamValidator().validate(params, _converse_shape())
        assert not report.has_errors(), report.generate_report()
        return
    if provider == "gemini":
        from google.genai import types

        if "tools" in options:
            for tool in options["tools"]:
                types.Tool.model_validate(tool)
        types.ToolConfig.model_validate(options.get("toolConfig", {}))
        types.GenerationConfig.model_validate(options.get("generationConfig", {}))
        assert set(options) <= {"tools", "toolConfig", "generationConfig"}
        return
    if provider == "anthropic":
        from anthropic.types import ToolChoiceParam, ToolParam
        from anthropic.types.message_create_params import MessageCreateParamsBase as Params

        tool, choice = ToolParam, ToolChoiceParam
    elif provider == "openai-chat":
        from openai.types.chat import (
            ChatCompletionFunctionToolParam,
            ChatCompletionToolChoiceOptionParam,
        )
        from openai.types.chat.completion_create_params import (
            CompletionCreateParamsBase as Params,
        )

        tool, choice = ChatCompletionFunctionToolParam, ChatCompletionToolChoiceOptionParam
    else:
        from openai.types.responses import FunctionToolParam
        from openai.types.responses.response_create_params import (
            ResponseCreateParamsBase as Params,
        )
        from openai.types.responses.response_create_params import (
            ToolChoice,
        )

        tool, choice = FunctionToolParam, ToolChoice
    known = Params.__required_keys__ | Params.__optional_keys__ | {"stream"}
    assert set(options) <= known, set(options) - known
    for item in options.get("tools", ()):
        _adapter(tool).validate_python(item)
    if "tool_choice" in options:
        _adapter(choice).validate_python(options["tool_choice"])


def _kept(provider: str, s: Settings) -> Settings:
    """What of ``s`` ``provider`` has a place for."""
    import attrs

    dropped: dict[str, Any] = {}
    if provider == "anthropic":
        dropped.update(temperature=None, top_p=None, top_k=None)
        if s.parallel is False and s.tool_choice is None:  # said in the tool choice
            dropped["tool_choice"] = "auto"
        if s.parallel is True:  # the default, which Anthropic cannot say
            dropped["parallel"] = None
    if provider in ("openai-chat", "openai-responses", "bedrock"):
        dropped["top_k"] = None
    if provider == "openai-responses":
        dropped["stop"] = ()
    if provider in ("gemini", "bedrock"):
        dropped["parallel"] = None
    if provider == "bedrock" and s.tool_choice == "none":
        dropped["tool_choice"] = None
    return attrs.evolve(s, **dropped)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(generic_settings(), st.sampled_from(sorted(GATEWAYS)), st.sampled_from(sorted(GATEWAYS)))
def test_settings_carried_across_providers_validate_and_keep_what_fits(
    s: Settings, source: str, target: str
) -> None:
    body, _ = written(source, s)
    carried = carry(target, source, body)
    _sdk_check(target, dict(carried.options))
    got = read_settings(target, carried.options)
    assert got == _kept(target, _kept(source, s))


def test_the_output_limit_is_set_where_each_provider_reads_it() -> None:
    # Chat's older max_tokens gives way to max_completion_tokens, not beside it.
    assert limited("openai-chat", {"max_tokens": 5, "n": 1}, 9) == {
        "n": 1,
        "max_completion_tokens": 9,
    }
    nested = {"generationConfig": {"temperature": 0.5}}
    assert limited("gemini", nested, 9) == {
        "generationConfig": {"temperature": 0.5, "maxOutputTokens": 9}
    }
    assert limited("openai-responses", {}, 9) == {"max_output_tokens": 9}


@pytest.mark.parametrize(
    ("url", "model"),
    [
        (
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse",
            "gemini-2.0-flash",
        ),
        (
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-3-7-sonnet-20250219-v1%3A0/converse",
            "us.anthropic.claude-3-7-sonnet-20250219-v1:0",
        ),
        (
            "https://x.openai.azure.com/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21",
            "gpt-4o-mini",
        ),
        ("https://api.anthropic.com/v1/messages", ""),
    ],
)
def test_the_model_a_url_names(url: str, model: str) -> None:
    """Gemini, Bedrock and Azure name the model in the URL, not the body."""
    assert model_of_url(url) == model
