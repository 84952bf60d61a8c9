"""Prompt replay and the targets: requests rebuilt from the log byte for byte, every
recorded fixture valid for every provider at every call, prefixes stable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from definitions.conversation import conversation_messages
from definitions.gateways import GATEWAYS, declared, gateway
from engine import AreaFlowState, AreaLifeState, Context, CoopContext, Message, Role
from replay import detect_protocol, load_events, protocol_definitions
from replay.cli import main
from replay.context._requests import (
    ContextOptions,
    Feeder,
    check_requests,
    render_event,
    request_bytes,
    requests,
)
from tests._shared import shared_files

ROOT = Path(__file__).resolve().parents[2]
SESSION = ROOT / "replay" / "examples" / "agent_session.jsonl"
PROVIDERS = list(GATEWAYS)


class Notes:
    """A yielded area: a system prompt once, then a note every third call."""

    def __init__(self) -> None:
        self.calls = 0
        self.life_state = AreaLifeState.retain
        self.flow_state = AreaFlowState.yielded

    def observe(self, snapshot: Any) -> None:
        assert len(snapshot) >= 1

    def render(self) -> list[Message]:
        self.calls += 1
        if self.calls == 1:
            return [Message(role=Role.system, content="You are a careful agent.")]
        if self.calls % 3 == 0:
            return [Message(role=Role.user, content=f"Note {self.calls}: keep going.")]
        return []

    def promote(self) -> tuple[Message, ...]:
        return ()

    def gc_prologue(self) -> None:
        pass


class SubTask:
    """Exclusive for three calls, then retired; collected into its result."""

    def __init__(self) -> None:
        self.steps = ["Sub-task: list the suspects.", "Narrow them down.", "Report."]
        self.life_state = AreaLifeState.retain
        self.flow_state = AreaFlowState.exclusive

    def observe(self, snapshot: Any) -> None:
        pass

    def render(self) -> list[Message]:
        step = self.steps.pop(0)
        if not self.steps:
            self.life_state = AreaLifeState.retired
            self.flow_state = AreaFlowState.yielded
        return [Message(role=Role.user, content=step)]

    def promote(self) -> tuple[Message, ...]:
        return (Message(role=Role.user, content="Sub-task result: the date parser."),)

    def gc_prologue(self) -> None:
        pass


def call_points(events: list[Any]) -> list[int]:
    """Positions before each event that starts a model turn (after a caller event)."""
    model = ("reasoning.start", "tool_call.start")
    points = []
    previous_model = False
    for index, event in enumerate(events):
        kind = event.get("type") if isinstance(event, dict) else getattr(event, "type", None)
        role = event.get("role") if isinstance(event, dict) else None
        is_model = kind in model or (kind == "message.start" and role == "assistant")
        is_caller = (kind == "message.start" and role == "user") or kind == "tool_call.result"
        if is_model and not previous_model:
            points.append(index)
        if is_model:
            previous_model = True
        elif is_caller:
            previous_model = False
    return points


def live_run(events: list[Any], provider: str) -> tuple[list[Any], list[bytes]]:
    """An agent loop over ``events``: render with areas before each model turn, log
    each render as an event, keep each request's bytes."""
    definition_set = protocol_definitions(detect_protocol(events).protocol)
    target = gateway(provider)
    coop = CoopContext(Context(target))
    coop.register(Notes())
    feeder = Feeder(ContextOptions())
    log: list[Any] = []
    sent: list[bytes] = []
    points = set(call_points(events))
    for index, event in enumerate([*events, None]):
        if index in points or event is None:
            if len(sent) == 2:
                coop.register(SubTask())
            nodes = definition_set.replay([e for e in log if e.get("type") != "context.render"])
            coop.extend(feeder.feed(conversation_messages(nodes)))
            context = coop.render()
            record = coop.last_record
            assert record is not None
            log.append(render_event(record))
            payload = declared(target.name, target.request(context, model=""))
            sent.append(request_bytes(payload))
        if event is not None:
            log.append(event)
    return log, sent


@pytest.fixture(scope="module")
def session() -> list[Any]:
    return [dict(e) for e in load_events(SESSION).events]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_log_rebuilds_every_request_without_the_areas(
    session: list[Any], provider: str
) -> None:
    log, sent = live_run(session, provider)
    rebuilt = requests(json.loads(json.dumps(log)), provider)
    assert [request_bytes(c.request) for c in rebuilt[:-1]] == sent
    collected = [e for e in log if e.get("type") == "context.render" and e["record"]["collection"]]
    assert collected, "the sub-task was never collected: the test lost its point"
    assert all(not c.problems for c in rebuilt)


def test_random_batchings_give_identical_requests(session: list[Any]) -> None:
    log, _ = live_run(session, "anthropic")
    assert check_requests(log, "anthropic", seed=7, rounds=2) is None
    assert check_requests(session, "gemini", seed=7, rounds=2) is None


def test_a_record_that_does_not_fit_the_log_is_named(session: list[Any]) -> None:
    log, _ = live_run(session, "anthropic")
    first = next(i for i, e in enumerate(log) if e.get("type") == "context.render")
    log[first] = {**log[first], "record": {**log[first]["record"], "conversation": 99}}
    with pytest.raises(ValueError, match=rf"event #{first}: render record of call 0"):
        requests(log, "anthropic")


# -- targets ---------------------------------------------------------------------------

RECORDINGS = [
    *shared_files("fixtures", "recorded"),
    *shared_files("fixtures", "synthetic"),
]


@pytest.mark.slow
@pytest.mark.parametrize("path", RECORDINGS)
def test_every_call_of_every_recording_is_valid_for_every_provider(path: Path) -> None:
    events = list(load_events(path, lenient=True).events)
    for provider in PROVIDERS:
        for call in requests(events, provider):
            assert call.problems == (), (provider, call.index, call.problems)


ITEMS = {
    "anthropic": "messages",
    "openai-chat": "messages",
    "openai-responses": "input",
    "gemini": "contents",
    "bedrock": "messages",
}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_prefix_stability_without_collections(session: list[Any], provider: str) -> None:
    """Each request is the previous one plus what was appended, byte for byte: the
    context's items, and the serialized item list of the payload (Gemini and Bedrock
    merge a role's consecutive contents, so the last may grow: all before it stay)."""
    target = gateway(provider)
    coop = CoopContext(Context(target))
    coop.register(Notes())
    feeder = Feeder(ContextOptions())
    conversation = conversation_messages(protocol_definitions("builtin").replay(session))
    previous: list[bytes] = []
    previous_payload: list[Any] = []
    calls = 0
    for index, message in enumerate(conversation):
        if message.role is not Role.assistant:
            continue
        coop.extend(feeder.feed(conversation, index))
        items = [request_bytes(item) for item in coop.render()]
        assert items[: len(previous)] == previous
        listed = target.request(coop.context, model="m")[ITEMS[provider]]
        kept = previous_payload[:-1] if provider in ("gemini", "bedrock") else previous_payload
        before = request_bytes(kept)[:-1]  # without the closing bracket
        assert request_bytes(listed).startswith(before)
        previous, previous_payload = items, listed
        calls += 1
    assert calls > 5


def test_cli_prints_the_request_and_the_calls(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["context", str(SESSION), "--provider", "openai-responses"]) == 2
    assert "no model known for openai-responses" in capsys.readouterr().err
    assert main(["context", str(SESSION), "-p", "openai-responses", "--model", "m"]) == 0
    request = json.loads(capsys.readouterr().out)
    assert request["input"][0]["role"] == "user"
    assert main(["context", str(SESSION), "-p", "anthropic", "--calls", "--model", "m"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(requests(list(load_events(SESSION).events), "anthropic")) - 1
    assert all("messages" in json.loads(line) for line in lines)
    assert main(["context", str(SESSION), "-p", "gemini", "--at", "3", "--model", "m"]) == 0
    assert json.loads(capsys.readouterr().out)["contents"][0]["role"] == "user"
    assert main(["context", str(SESSION), "-p", "gemini", "--at", "100000"]) == 2
    assert "the log has only" in capsys.readouterr().err


def test_the_determinism_checker_covers_the_requests(
    session: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from replay import _determinism, check_determinism

    builtin = protocol_definitions("builtin")
    log, _ = live_run(session, "openai-chat")
    plain = [e for e in log if e.get("type") != "context.render"]
    kwargs: dict[str, Any] = {
        "event_type": builtin.event_type,
        "ways": ("whole",),
        "rounds": 1,
        "context": "openai-chat",
    }
    report = check_determinism(log, builtin.definitions, **kwargs)
    assert report.ok
    assert report.ways[-1] == "context"
    assert check_determinism(plain, builtin.definitions, **kwargs).ok
    monkeypatch.setattr(_determinism, "check_requests", lambda *a, **k: "call 3 differs")
    report = check_determinism(plain, builtin.definitions, **kwargs)
    assert not report.ok
    assert report.divergence is not None
    assert report.divergence.reason == "call 3 differs"
