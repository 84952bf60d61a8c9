"""Properties of random recordings: random calls on every API, random splits of the
caller's turns (user text, tool results), streamed or whole, cut streams and refused
calls. Each folds alike in batch, one event at a time and in every way the
determinism checker tries; reads back as the last request then the answer; is
continued validly by every gateway; and ``convo check``'s comparison finds nothing
in an agent that never edits its history."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from definitions import recorded
from definitions._requests_read import request_messages
from definitions.conversation import conversation_messages
from definitions.gateways import GATEWAYS
from engine import Message, Role, ToolResult
from replay import check_determinism
from replay.context._recorded import reproduce
from replay.context._requests import requests

from ._build import APIS, Agent, Answer

_WORDS = st.text(alphabet="abcdefgh ", min_size=1, max_size=12).filter(str.strip)


@st.composite
def agents(draw: st.DrawFn) -> Agent:
    api = draw(st.sampled_from(APIS))
    agent = Agent(api, system=draw(st.sampled_from(["", "Be brief."])))
    agent.say(Message(role=Role.user, content=draw(_WORDS)))
    pending: list[tuple[str, str]] = []
    for n in range(draw(st.integers(1, 4))):
        if pending:  # the caller answers the calls, in one turn or split over two
            results = tuple(ToolResult(i, draw(_WORDS), name=name) for i, name in pending)
            split = draw(st.integers(0, len(results)))
            if split and split < len(results) and api != "gemini.generate_content":
                agent.say(Message(role=Role.user, content=results[:split]))
                agent.say(Message(role=Role.user, content=results[split:]))
            else:
                agent.say(Message(role=Role.user, content=results))
            pending = []
        elif n:
            agent.say(Message(role=Role.user, content=draw(_WORDS)))
        calls = tuple(
            (f"c{n}_{k}", f"tool_{k}", {"q": draw(_WORDS)}) for k in range(draw(st.integers(0, 2)))
        )
        text = draw(_WORDS) if not calls or draw(st.booleans()) else ""
        answer = Answer(text, calls, pieces=draw(st.integers(1, 3)))
        fault = draw(st.sampled_from(["none", "none", "none", "cut", "refused"]))
        if fault == "cut":
            agent.call(answer, cut=draw(st.integers(1, 3)))
        elif fault == "refused":
            agent.call(answer, status=500, error_body={"error": {"message": "boom"}})
        # After a fault the agent retries the same request.
        agent.call(answer, streamed=draw(st.booleans()))
        pending = [(i, name) for i, name, _ in calls]
    return agent


FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow
@FAST
@given(agents())
def test_batch_and_one_event_at_a_time_agree(agent: Agent) -> None:
    batch = recorded.PROTOCOL.replay(agent.events)
    engine = recorded.PROTOCOL.engine()
    for event in agent.events:
        engine.push(event)
    assert engine.nodes() == batch
    report = check_determinism(
        agent.events,
        recorded.DEFINITIONS,
        event_type=recorded.event_type,
        prepare=recorded.prepare,
        rounds=1,
        samples=64,
    )
    assert report.ok, report.describe()


@FAST
@given(agents())
def test_the_conversation_is_the_last_request_then_the_answer(agent: Agent) -> None:
    assert agent.last_body is not None
    assert agent.last_answer is not None
    got = conversation_messages(recorded.PROTOCOL.replay(agent.events))
    want = [
        m for m in [*request_messages(agent.api, agent.last_body), agent.last_answer] if m.content
    ]
    assert got == want
    figure = reproduce(agent.events)
    assert figure.requests == agent.calls
    # Each request is the one projected after the call before it; the simulated agent
    # edits nothing but, at random, whether a call streams.
    assert len(figure.compared) == agent.calls - 1
    for request in figure.compared:
        if request.verdict != "reproduced":
            assert request.verdict == "edit", request.describe()
            assert request.difference.startswith("it changed stream"), request.describe()


@FAST
@given(agents())
def test_every_gateway_continues_it(agent: Agent) -> None:
    for provider in GATEWAYS:
        final: Any = requests(agent.events, provider)[-1]
        assert final.problems == (), (provider, final.problems)
