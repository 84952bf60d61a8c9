"""Compaction in the model context: the request after a compaction starts at it, on
every provider, and the view before it is unchanged (properties over random logs),
plus the restart rule itself (``engine.since_compaction``)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from definitions import builtin, event_type
from definitions.conversation import conversation_messages
from definitions.gateways import GATEWAYS
from engine import (
    Compaction,
    ManualScheduler,
    Message,
    Node,
    Role,
    create_conversation_engine,
    since_compaction,
    without_compactions,
)
from replay.context._requests import ContextOptions, requests

SUMMARY = "SUMMARY-OF-EVERYTHING"


def fold(events: list[dict[str, Any]]) -> tuple[Node, ...]:
    engine = create_conversation_engine(
        builtin.DEFINITIONS, ManualScheduler(), event_type=event_type
    )
    engine.push_many(events)
    return engine.nodes()


@st.composite
def turns(draw: st.DrawFn) -> list[list[dict[str, Any]]]:
    """A random built-in session as turns of events, each text unique (``t<n>``)."""
    out: list[list[dict[str, Any]]] = [
        [
            {"type": "message.start", "id": "sys", "role": "system", "text": "be brief"},
            {"type": "message.end", "id": "sys"},
        ]
    ]
    for n in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["user", "assistant", "call", "failed"]))
        if kind in ("user", "assistant"):
            out.append(
                [
                    {"type": "message.start", "id": f"m{n}", "role": kind, "text": f"t{n}"},
                    {"type": "message.end", "id": f"m{n}"},
                ]
            )
            continue
        arguments = json.dumps({"command": f"t{n}a"})
        call = [
            {"type": "tool_call.start", "id": f"c{n}", "name": "Bash"},
            {"type": "tool_call.arguments_delta", "id": f"c{n}", "text": arguments},
            {"type": "tool_call.arguments_end", "id": f"c{n}"},
        ]
        if kind == "call":
            call.append({"type": "tool_call.result", "id": f"c{n}", "output": f"t{n}r"})
        else:
            call.append({"type": "tool_call.error", "id": f"c{n}", "message": f"t{n}r"})
        out.append(call)
    return out


@st.composite
def compacted(draw: st.DrawFn) -> tuple[list[list[dict[str, Any]]], int, dict[str, Any]]:
    """Turns, where a compaction goes (after turn ``at``), and the mark."""
    session = draw(turns())
    at = draw(st.integers(1, len(session) - 1))
    mark: dict[str, Any] = {"type": "compaction.mark", "id": "k", "summary": SUMMARY}
    form = draw(st.sampled_from(["text", "anthropic", "openai-responses"]))
    if form == "anthropic":
        mark["provider"] = "anthropic"
        mark["item"] = {"type": "compaction", "content": SUMMARY, "encrypted_content": "E"}
    elif form == "openai-responses":
        mark["provider"] = "openai-responses"
        mark["item"] = {"type": "compaction", "encrypted_content": "E"}
        if draw(st.booleans()):
            mark["preserved"] = [{"role": "user", "text": "PRESERVED"}]
    through = draw(st.integers(0, at))  # replaces turns 1..through (0: all before it)
    if through:
        first = session[through][0]
        mark["through"] = f"{first['type'].split('.')[0]}:{first['id']}"
    return session, at, mark


def texts_of(turn: list[dict[str, Any]]) -> set[str]:
    found = set()
    for event in turn:
        for key in ("text", "output", "message"):
            if isinstance(event.get(key), str) and event[key].startswith("t"):
                found.add(event[key].split('"')[0])
    return {t for t in found if t[1:2].isdigit()}


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(compacted())
def test_the_request_after_a_compaction_starts_at_it_on_every_provider(
    case: tuple[list[list[dict[str, Any]]], int, dict[str, Any]],
) -> None:
    session, at, mark = case
    events = [e for turn in session[: at + 1] for e in turn]
    events.append(mark)
    events += [e for turn in session[at + 1 :] for e in turn]
    through = 0
    if "through" in mark:
        through = next(
            n for n, turn in enumerate(session) if mark["through"].endswith(":" + turn[0]["id"])
        )
    else:
        through = at
    replaced = set().union(*(texts_of(t) for t in session[1 : through + 1]))
    kept = set().union(*(texts_of(t) for t in session[through + 1 :]))
    for provider in GATEWAYS:
        last = requests(events, provider)[-1]
        assert last.problems == (), (provider, last.problems)
        body = msgspec.json.encode(last.request).decode()
        opaque = "item" in mark and mark["provider"] == provider
        if not opaque or provider == "anthropic":
            assert SUMMARY in body
        if opaque:
            assert '"encrypted_content":"E"' in body
        if "preserved" in mark:
            assert "PRESERVED" in body
        assert "be brief" in body  # the system prompt is not history
        for text in replaced:
            assert f'"{text}"' not in body, (provider, text)
            assert f"{text}r" not in body, (provider, text)
        for text in kept:
            assert text in body, (provider, text)
        # the counterfactual holds everything and no summary
        before = requests(events, provider, options=ContextOptions(compaction=False))[-1]
        whole = msgspec.json.encode(before.request).decode()
        assert SUMMARY not in whole
        assert "PRESERVED" not in whole
        for text in replaced | kept:
            assert text in whole


@settings(max_examples=60, deadline=None)
@given(compacted())
def test_the_view_before_a_compaction_is_unchanged(
    case: tuple[list[list[dict[str, Any]]], int, dict[str, Any]],
) -> None:
    session, at, mark = case
    plain = [e for turn in session for e in turn]
    cut = sum(len(turn) for turn in session[: at + 1])
    with_mark = fold([*plain[:cut], mark, *plain[cut:]])
    without = fold(plain)
    [compaction] = [n for n in with_mark if n.kind == "compaction"]
    assert compaction.state.summary == SUMMARY
    rest = [n for n in with_mark if n.kind != "compaction"]
    assert [(n.key, n.state) for n in rest] == [(n.key, n.state) for n in without]
    assert all(a == b for a, b in zip(with_mark, without, strict=False) if a.seq < compaction.seq)


def test_the_calls_before_a_compaction_keep_the_whole_history() -> None:
    """Each model call is made with the context of its moment: before the compaction
    the whole history, after it the summary."""
    events = [
        {"type": "message.start", "id": "u1", "role": "user", "text": "first"},
        {"type": "message.start", "id": "a1", "role": "assistant", "text": "one"},
        {"type": "compaction.mark", "id": "k", "summary": SUMMARY},
        {"type": "message.start", "id": "u2", "role": "user", "text": "second"},
        {"type": "message.start", "id": "a2", "role": "assistant", "text": "two"},
    ]
    calls = requests(events, "openai-chat")

    def texts(index: int) -> list[str]:
        return [
            m["content"] if isinstance(m["content"], str) else m["content"][0]["text"]
            for m in calls[index].request["messages"]
        ]

    assert texts(0) == ["first"]
    assert texts(1) == [SUMMARY, "second"]
    assert texts(2) == [SUMMARY, "second", "two"]


class TestRestart:
    """``since_compaction`` and ``without_compactions`` on generic messages."""

    def test_no_compaction_keeps_everything(self) -> None:
        messages = [Message(role=Role.user, content="a")]
        assert since_compaction(messages) == messages
        assert without_compactions(messages) == messages

    def test_system_carried_and_cut(self) -> None:
        system = Message(role=Role.system, content="s")
        old = Message(role=Role.user, content="old")
        carried = Message(role=Role.user, content="carried")
        part = Compaction("sum", carried=1)
        answer = Message(role=Role.assistant, content=(Compaction("x"),))
        mark = Message(role=Role.assistant, content=(answer.parts[0], part))
        after = Message(role=Role.user, content="after")
        messages = [system, old, carried, mark, after]
        assert since_compaction(messages) == [
            system,
            carried,
            Message(role=Role.assistant, content=(part,)),
            after,
        ]
        assert without_compactions(messages) == [system, old, after]

    def test_echo_is_left_out_of_the_counterfactual(self) -> None:
        kept = Message(role=Role.user, content="kept")
        mark = Message(role=Role.user, content=(Compaction("sum", echo=1),))
        messages = [Message(role=Role.user, content="old"), kept, mark, kept]
        assert since_compaction(messages) == [mark, kept]
        assert without_compactions(messages) == messages[:2]


def test_conversation_of_a_compaction_node() -> None:
    """The summary is a user turn holding a ``Compaction`` part, never a message node."""
    nodes = fold([{"type": "compaction.mark", "id": "k", "summary": SUMMARY}])
    assert conversation_messages(nodes) == [Message(role=Role.user, content=(Compaction(SUMMARY),))]


# -- a provider compaction's own tokens on its row --------------------------------------


def _views(events: list[Any]) -> tuple[str, str]:
    """The text and HTML views of a log, its protocol detected as ``convo replay`` does."""
    from replay import detect_protocol, protocol_definitions, render_html, render_text

    protocol = protocol_definitions(detect_protocol(events).protocol)
    nodes = protocol.replay(events)
    return (
        render_text(nodes, protocol.definitions, color=False),
        render_html(nodes, protocol.definitions),
    )


def test_an_anthropic_compaction_row_shows_its_iteration_tokens() -> None:
    """The shared recording's ``message_delta`` carries ``usage.iterations``, the
    compaction iteration's tokens among them (60,385 read, 522 written); the SDK's
    beta accumulator keeps them, and the compaction row shows them, streamed or
    recorded whole."""
    from replay import load_events
    from tests._shared import shared_path

    path = shared_path("fixtures", "recorded", "vercel-anthropic-anthropic-compaction.1.chunks.txt")
    events = load_events(path).events
    text, html = _views(events)
    assert "compaction (read 60,385 tokens, wrote 522): ## Summary" in text
    assert "compaction: read 60,385 tokens, wrote 522" in html
    from definitions import anthropic

    [message] = anthropic.PROTOCOL.accumulate(events)
    assert [i["type"] for i in message["usage"]["iterations"]] == ["compaction", "message"]
    # The same message recorded whole (a non-streamed call) shows the same row.
    recording = [
        {"type": "recording/request", "call": 0, "api": "anthropic.messages", "body": {}},
        {"type": "recording/response", "call": 0, "status": 200, "headers": {}},
        {"type": "recording/body", "call": 0, "body": message},
    ]
    text, html = _views(recording)
    assert "compaction (read 60,385 tokens, wrote 522): ## Summary" in text
    assert "compaction: read 60,385 tokens, wrote 522" in html


def test_a_responses_compact_call_is_a_compaction() -> None:
    """A recording of ``POST /responses/compact`` alone (``samples/responses-compact.jsonl``,
    see its README) is read as a Responses compaction: the view shows the compaction
    row with the pass's tokens, and the next request starts from its window (the user
    messages it kept, then its compaction item); the counterfactual is the history."""
    from pathlib import Path

    from definitions._requests_read import api_of_url
    from replay import load_events

    assert api_of_url("https://api.openai.com/v1/responses/compact") == "openai.responses.compact"
    assert api_of_url("https://api.openai.com/v1/responses") == "openai.responses"
    path = Path(__file__).parent / "samples" / "responses-compact.jsonl"
    events = load_events(path).events
    text, html = _views(events)
    row = "compaction (read 1,840 tokens, wrote 412, 2 user messages kept, encrypted summary)"
    assert text.endswith(row + "\n")
    assert "compaction: read 1,840 tokens, wrote 412, 2 user messages kept" in html
    [last] = requests(events, "openai-responses")[-1:]
    assert last.problems == ()
    kinds = [item.get("role") or item["type"] for item in last.request["input"]]
    assert kinds == ["system", "user", "user", "compaction"]
    assert last.request["input"][-1]["encrypted_content"].startswith("gAAAAA")
    before = requests(events, "openai-responses", options=ContextOptions(compaction=False))[-1]
    kinds = [item.get("role") or item["type"] for item in before.request["input"]]
    assert kinds == ["system", "user", "assistant", "user", "assistant"]


def test_the_call_after_a_responses_compact_call_continues_from_its_window() -> None:
    """The client sends the compacted window back, then its new input: the view shows
    that input only (the window is the compact call's answer, echoed), and the request
    after it starts with the kept user messages, then the compaction item."""
    from pathlib import Path

    from replay import load_events

    path = Path(__file__).parent / "samples" / "responses-compact.jsonl"
    events = load_events(path).events
    [body] = [e["body"] for e in events if e["type"] == "recording/body"]
    window = [
        {"role": "user", "content": item["content"]} if item["type"] == "message" else item
        for item in body["output"]
    ]
    request = {
        "model": "gpt-5.1-codex-max",
        "instructions": "You are a careful coding agent.",
        "input": [*window, {"role": "user", "content": "Now add a changelog entry."}],
    }
    answer = {
        "id": "resp_2",
        "object": "response",
        "status": "completed",
        "model": "gpt-5.1-codex-max",
        "output": [
            {
                "id": "msg_9",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "annotations": [], "text": "Added."}],
            }
        ],
    }
    url = "https://api.openai.com/v1/responses"
    events += [
        {"type": "recording/request", "call": 1, "url": url, "body": request},
        {"type": "recording/response", "call": 1, "status": 200, "headers": {}},
        {"type": "recording/body", "call": 1, "body": answer},
    ]
    text, _ = _views(events)
    assert "rewrote" not in text
    assert text.count("Fix it in dates.py") == 1
    last = requests(events, "openai-responses")[-1]
    kinds = [item.get("role") or item["type"] for item in last.request["input"]]
    assert kinds == ["system", "user", "user", "compaction", "user", "assistant"]
    before = requests(events, "openai-responses", options=ContextOptions(compaction=False))[-1]
    kinds = [item.get("role") or item["type"] for item in before.request["input"]]
    assert kinds == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
