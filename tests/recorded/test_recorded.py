"""A recording of model calls read as a conversation: the view, detection, reading
back as generic messages, continuing it with every gateway (``convo context``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from definitions import recorded
from definitions._requests_read import answer_message, request_messages
from definitions.conversation import conversation_messages
from definitions.gateways import GATEWAYS
from engine import EventError, Message, Role, Text, ToolResult, create_conversation_engine
from replay import load_events
from replay.context._recorded import reproduce
from replay.context._requests import requests
from replay.protocols._detect import detect_protocol
from replay.render._text import render_text

from ._build import APIS, Agent, Answer, log_lines

HERE = Path(__file__).parent
WEATHER = HERE / "weather.jsonl"


def _weather(api: str, *, streamed: bool = True) -> Agent:
    agent = Agent(api, system="You are terse.")
    agent.say(Message(role=Role.user, content="What is the weather in Paris?"))
    agent.call(
        Answer("Let me look.", (("call_1", "get_weather", {"city": "Paris"}),)), streamed=streamed
    )
    agent.say(Message(role=Role.user, content=(ToolResult("call_1", "Sunny", name="get_weather"),)))
    agent.call(Answer("It is sunny in Paris."), streamed=streamed)
    return agent


def _nodes(events: list[dict[str, Any]]) -> tuple[Any, ...]:
    return recorded.PROTOCOL.replay(events)


def _texts(message: Message) -> str:
    if isinstance(message.content, str):
        return message.content
    return "".join(p.text for p in message.parts if isinstance(p, Text))


# -- the view -------------------------------------------------------------------------------


def test_the_hand_made_recording_is_the_weather_agent_on_anthropic() -> None:
    # The committed file is what the builder makes: regenerate it if the builder changes.
    assert WEATHER.read_bytes() == log_lines(_weather("anthropic.messages").events)


def test_the_view_shows_each_input_once_then_the_answer() -> None:
    loaded = load_events(WEATHER)
    assert detect_protocol(loaded.events).protocol == "recorded"
    text = render_text(_nodes(loaded.events), recorded.DEFINITIONS, color=False)
    assert text.count("What is the weather in Paris?") == 1
    assert text.count("system: You are terse.") == 1
    assert text.count("Let me look.") == 1  # the answer, not its echo in call 1's request
    # The call and its result are one card (the result came in call 1's request).
    card = 'tool get_weather [call_1] done\n  arguments: {"city": "Paris"}\n  output: Sunny'
    assert card in text
    assert "tool result" not in text
    order = [
        text.index(s)
        for s in ("system:", "user:", "Let me look.", "get_weather", "Sunny", "sunny in Paris")
    ]
    assert order == sorted(order)


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "whole"])
def test_every_api_reads_as_the_conversation_the_last_request_continues(
    api: str, streamed: bool
) -> None:
    agent = _weather(api, streamed=streamed)
    nodes = _nodes(agent.events)
    got = conversation_messages(nodes)
    assert agent.last_body is not None
    assert agent.last_answer is not None
    want = [*request_messages(api, agent.last_body), agent.last_answer]
    assert got == want
    assert [m.role for m in got] == ["system", "user", "assistant", "user", "assistant"]
    assert _texts(got[-1]) == "It is sunny in Paris."
    # Each request's new input is shown once: the echo of the first answer is not.
    shown = [n.state.messages for n in nodes if n.kind == "recorded_request"]
    assert [len(m) for m in shown] == [2, 1]
    assert all(isinstance(p, ToolResult) for p in shown[1][0].parts)


@pytest.mark.parametrize("api", APIS)
def test_continuing_a_recording_passes_every_gateways_validator(api: str) -> None:
    agent = _weather(api)
    agent.say(Message(role=Role.user, content="And tomorrow?"))
    agent.call(Answer("", (("call_2", "get_forecast", {"city": "Paris"}),)))
    conversation = conversation_messages(_nodes(agent.events))
    for provider, gateway in GATEWAYS.items():
        final = requests(agent.events, provider)[-1]
        assert final.problems == (), (provider, final.problems)
        # The last request's messages, then the answer, in P's shape (the call the
        # answer left open closed with the neutral result).
        items = [i for m in conversation for i in gateway.items(m)]
        sent = (
            final.request.get("messages") or final.request.get("input") or final.request["contents"]
        )
        assert len(sent) >= len(items) - 1, provider


def test_a_cut_stream_and_a_refused_call_are_errors_after_what_came() -> None:
    agent = Agent("anthropic.messages")
    agent.say(Message(role=Role.user, content="Hi"))
    agent.call(Answer("Hello there, how can I help?", pieces=4), cut=4)
    agent.call(
        Answer(),
        status=529,
        error_body={
            "type": "error",
            "error": {"type": "overloaded_error", "message": "Overloaded"},
        },
    )
    agent.call(Answer("Hello!"))
    nodes = _nodes(agent.events)
    text = render_text(nodes, recorded.DEFINITIONS, color=False)
    assert "[failed] call 0: RemoteProtocolError: peer closed connection" in text
    assert "[failed] call 1: HTTP 529: overloaded_error: Overloaded" in text
    assert text.index("Hello there") < text.index("[failed] call 0")
    # The retries repeat the request: nothing new to show, and the failed partial
    # answer is not part of the conversation.
    assert [_texts(m) for m in conversation_messages(nodes)] == ["Hi", "Hello!"]


def test_a_rewritten_history_is_said_and_read_as_the_last_request_had_it() -> None:
    agent = _weather("openai.chat")
    agent.history = [Message(role=Role.user, content="Summary: it was sunny in Paris.")]
    agent.say(Message(role=Role.user, content="Thanks!"))
    agent.call(Answer("You're welcome."))
    nodes = _nodes(agent.events)
    text = render_text(nodes, recorded.DEFINITIONS, color=False)
    assert "call 2's request rewrote the conversation: it kept the first 0 messages" in text
    got = [_texts(m) for m in conversation_messages(nodes)]
    assert got == ["Summary: it was sunny in Paris.", "Thanks!", "You're welcome."]
    # convo check says where the request left the projection before it.
    figure = reproduce(agent.events)
    assert figure.requests == 3
    assert [(r.call, r.verdict) for r in figure.compared] == [(1, "reproduced"), (2, "edit")]
    assert figure.compared[1].describe() == (
        "call 2 (event #19): the agent's edit: it changed its system prompt: the projection "
        "has system 'You are terse.', the request sent user 'Summary: it was sunny in Paris. "
        "Thanks!'"
    )


def test_ids_repeating_across_calls_make_distinct_nodes() -> None:
    nodes = _nodes(_weather("gemini.generate_content").events)
    keys = [n.key for n in nodes]
    assert len(keys) == len(set(keys))
    assert "gemini_response:call-0/response-1" in keys
    assert "gemini_response:call-1/response-1" in keys


def test_one_event_at_a_time_folds_as_the_batch() -> None:
    for api in APIS:
        events = _weather(api).events
        engine = recorded.PROTOCOL.engine()
        for event in events:
            engine.push(event)
        assert engine.nodes() == _nodes(events), api


def test_bad_input_names_the_event_position() -> None:
    events = _weather("anthropic.messages").events
    with pytest.raises(EventError, match=r"recording event #5: .*second recording/request"):
        list(recorded.prepare([*events[:5], events[0]]))
    bad = {**events[0], "api": "cohere.chat"}
    with pytest.raises(EventError, match=r"recording event #0: call 0: unknown api 'cohere.chat'"):
        list(recorded.prepare([bad]))
    with pytest.raises(EventError, match=r"recorded\.PROTOCOL\.engine"):
        create_conversation_engine(recorded.PROTOCOL.registration).push(events[0])


def test_answers_read_by_the_gateways_are_the_calls_outputs() -> None:
    agent = _weather("openai.responses")
    calls = recorded.calls(_nodes(agent.events))
    assert [c["call"] for c in calls] == [0, 1]
    assert calls[1]["output"][0]["status"] == "completed"
    assert answer_message("openai.responses", calls[1]["output"]) == agent.last_answer


# -- the command line ------------------------------------------------------------------------


def _convo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "replay", *args], capture_output=True, text=True, check=False
    )


@pytest.mark.slow
def test_convo_replay_context_and_check_read_a_recording(tmp_path: Path) -> None:
    shown = _convo("replay", str(WEATHER), "--color", "never")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.count("What is the weather in Paris?") == 1
    page = _convo("replay", str(WEATHER), "--format", "html")
    assert page.returncode == 0
    assert 'data-kind="recorded_request"' in page.stdout
    unnamed = _convo("context", str(WEATHER), "--provider", "gemini")
    assert unnamed.returncode == 2
    assert "no model known for gemini (the log's model 'test-model'" in unnamed.stderr
    context = _convo("context", str(WEATHER), "--provider", "gemini", "--model", "g")
    assert context.returncode == 0, context.stderr
    request = msgspec.json.decode(context.stdout)
    assert request["model"] == "g"
    assert request["systemInstruction"] == {"parts": [{"text": "You are terse."}]}
    assert [c["role"] for c in request["contents"]] == ["user", "model", "user", "model"]
    checked = _convo("check", str(WEATHER))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_server_folds_a_recording_without_skipping_an_event(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A recording's response heads and ends give the live pre-pass nothing to fold
    (None): the server passes over them, folding the rest to the replayed view."""
    from engine import ManualScheduler, Registration
    from replay import protocol_definitions
    from replay.serve._app import _Folded

    events = load_events(Path(__file__).parent / "weather.jsonl").events
    chosen = protocol_definitions(detect_protocol(events).protocol)
    registration = Registration(chosen.definitions, event_type=chosen.event_type)
    hub = _Folded("c", lambda first: (chosen, registration), ManualScheduler())
    hub.fold(events, 0)
    assert hub.failures == 0
    assert "skipped" not in caplog.text
    assert hub.engine is not None
    assert [n.state for n in hub.engine.nodes()] == [n.state for n in chosen.replay(events)]
