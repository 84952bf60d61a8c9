"""The economy on every real session: valid requests for every gateway under every
policy set, spill files holding what was cut, prefix stability, determinism; and the
gateways' validators on random sessions under random policies."""

from __future__ import annotations

import json
import random
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

from definitions import builtin, event_type
from definitions.gateways import GATEWAYS, declared
from definitions.harness import glance
from engine import Economy, Marks, Message, Text, ToolResult, economize
from replay import replay
from replay.context._economy import Conversation, conversation, measure, requests
from replay.context._workbench import Workbench
from replay.logs.sessions import read_transcript
from tests._shared import shared_path
from tests.economy._sessions import economies, sessions

FILES = [
    "claude-code/37f83ec9-f2ea-42a9-925e-0d5c105cb6e8.jsonl",
    "claude-code/ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl",
    "claude-code/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
    "codex/rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl",
    "openhands/multi_swe_bench_examples_output.jsonl",
    "swe-agent/pydicom__pydicom-1458.traj",
    "swe-agent/marshmallow-code__marshmallow-1867.traj",
]
POLICIES = {
    "none": Economy.none(),
    "live": Economy.live(),
    "resume": Economy.resume(glance=glance),
    "wide": Economy(glance=glance, trim=True, keep_recent=2, keep_denials=0),
}


@cache
def threads(name: str) -> tuple[tuple[str, tuple[dict[str, Any], ...]], ...]:
    path = shared_path("fixtures", "transcripts", *name.split("/"))
    transcript = read_transcript(path.read_bytes(), path=str(path))
    assert transcript is not None
    return tuple((t.name, tuple(t.events)) for t in transcript.threads)


@cache
def talk(name: str, thread: int, batch: int | None = None) -> Conversation:
    events = threads(name)[thread][1]
    return conversation(replay(events, builtin.DEFINITIONS, event_type=event_type, batch=batch))


def all_threads(name: str) -> range:
    return range(len(threads(name)))


@pytest.mark.slow
@pytest.mark.parametrize("name", FILES)
def test_zero_invalid_requests(name: str) -> None:
    for thread in all_threads(name):
        for gateway in GATEWAYS.values():
            for policy, economy in POLICIES.items():
                for request in requests(talk(name, thread), gateway, economy):
                    assert not request.problems, (name, thread, gateway.name, policy, request.call)


@pytest.mark.parametrize("name", FILES)
def test_live_requests_only_grow(name: str) -> None:
    for thread in all_threads(name):
        figures = measure(requests(talk(name, thread), GATEWAYS["anthropic"], Economy.live()))
        assert figures.breaks == 0
        assert figures.mean_reuse == 1.0


@pytest.mark.parametrize("name", FILES)
def test_spill_files_hold_everything_cut(name: str, tmp_path: Path) -> None:
    for thread in all_threads(name):
        bench = Workbench(tmp_path / str(thread))
        conversation_ = talk(name, thread)
        calls = list(
            requests(conversation_, GATEWAYS["openai-chat"], Economy.live(), workbench=bench)
        )
        if not calls:
            continue
        last = calls[-1]
        big = [
            p.content
            for m in conversation_.messages[: conversation_.calls[-1]]
            for p in m.parts
            if isinstance(p, ToolResult) and isinstance(p.content, str) and len(p.content) > 4000
        ]
        held = {bench.read(f.name) for f in bench.spill_dir.glob("*.txt")} if big else set()
        assert set(big) <= held
        text = json.dumps(last.payload)
        assert all(json.dumps(b[:400])[1:-1] in text for b in big)


@pytest.mark.slow
@pytest.mark.parametrize("name", FILES[:5])
def test_every_batching_gives_the_same_requests(name: str) -> None:
    rng = random.Random(name)
    gateway = GATEWAYS["openai-responses"]
    for thread in all_threads(name)[:2]:
        digest = measure(
            requests(talk(name, thread), gateway, Economy.resume(glance=glance))
        ).digest
        batched = talk(name, thread, batch=rng.randint(1, 40))
        assert measure(requests(batched, gateway, Economy.resume(glance=glance))).digest == digest


class TestTheClaudeCodeSession:
    NAME = FILES[0]

    @pytest.mark.slow
    def test_resume_cuts_at_least_thirty_percent(self) -> None:
        sizes = {
            policy: measure(requests(talk(self.NAME, 0), GATEWAYS["anthropic"], economy)).total
            for policy, economy in POLICIES.items()
        }
        assert sizes["resume"] <= 0.7 * sizes["none"]
        assert sizes["wide"] < sizes["resume"] < sizes["live"] < sizes["none"]

    def test_the_latest_denial_stays(self) -> None:
        conversation_ = talk(self.NAME, 0)
        denied = [
            p.call_id
            for m in conversation_.messages
            for p in m.parts
            if isinstance(p, ToolResult) and p.denied
        ]
        assert len(denied) == 2
        out = economize(conversation_.messages, Economy.resume(glance=glance), conversation_.marks)
        assert out.pruned == {denied[0]}
        # the harness's interruption notices stay, in the user turns
        texts = [p.text for m in out.messages for p in m.parts if isinstance(p, Text)]
        assert texts.count("[Request interrupted by user for tool use]") == 2


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(sessions(), economies())
def test_every_gateway_accepts_every_policy(
    session: tuple[list[Message], Marks], economy: Economy
) -> None:
    messages, marks = session
    out = economize(messages, economy, marks)
    for gateway in GATEWAYS.values():
        items = [item for m in out.messages for item in gateway.items(m)]
        # As every request the library builds (replay.context._requests.build): with
        # the called tools declared where a provider refuses undeclared ones (Bedrock).
        request = declared(gateway.name, gateway.request(items, model="m"))
        assert gateway.validate(request) == [], (gateway.name, out.messages)
