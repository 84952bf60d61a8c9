"""The live view in other front-ends' formats, read by their real readers.

A store conversation is streamed through ``/ui-message-stream`` and ``/ag-ui`` while
its events are appended, the bytes go to the Node oracles (``ai``'s
``readUIMessageStream``, ``@ag-ui/client``'s reducer) and their final messages are
compared with the view a fresh replay gives.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._shared import require_serve

require_serve()

from definitions import builtin, event_type  # noqa: E402
from engine import Node  # noqa: E402
from replay import replay  # noqa: E402
from replay.serve._wire import AgUiEncoder, UIMessageEncoder  # noqa: E402
from tests.conformance._node_oracles import run_batch, run_oracle  # noqa: E402
from tests.serve._helpers import SseStream, running  # noqa: E402
from tests.serve.test_app import app_for, example_events, make_store  # noqa: E402

ROUTES = {"aisdk": "ui-message-stream", "agui": "ag-ui"}


def view(events: list[Any]) -> tuple[Node, ...]:
    return replay(events, builtin.DEFINITIONS, event_type=event_type)


def _outcome(state: Any) -> str:
    if state.status == "failed":
        return f"error: {state.error}"
    return f"denied: {state.reason or ''}"


def expected_parts(nodes: tuple[Node, ...]) -> list[dict[str, Any]]:
    """The UI message parts the view should read as (see ``UIMessageEncoder``)."""
    parts: list[dict[str, Any]] = []
    for node in nodes:
        state = node.state
        if node.kind == "message" and state.role != "assistant":
            parts.append(
                {
                    "type": "data-message",
                    "id": node.key,
                    "data": {"role": state.role, "text": str(state.text)},
                }
            )
        elif node.kind in ("message", "reasoning"):
            parts.append(
                {"type": "text" if node.kind == "message" else "reasoning", "text": str(state.text)}
            )
        elif node.kind == "tool_call":
            part: dict[str, Any] = {
                "type": "dynamic-tool",
                "toolCallId": node.id,
                "toolName": state.name,
            }
            if state.status == "done":
                part["output"] = state.output
            elif state.status in ("failed", "denied"):
                part["errorText"] = state.error if state.status == "failed" else _outcome(state)
            parts.append(part)
        elif node.kind == "status":
            parts.append(
                {"type": "data-status", "id": node.id, "status": state.status, "label": state.label}
            )
    return parts


def read_parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The oracle's parts with the fields ``expected_parts`` names."""
    parts = []
    for part in message["parts"]:
        kind = part["type"]
        if kind in ("text", "reasoning"):
            parts.append({"type": kind, "text": part["text"]})
        elif kind == "dynamic-tool":
            got = {"type": kind, "toolCallId": part["toolCallId"], "toolName": part["toolName"]}
            for field in ("output", "errorText"):
                if field in part:
                    got[field] = part[field]
            parts.append(got)
        elif kind == "data-status":
            data = part["data"]
            parts.append(
                {"type": kind, "id": part["id"], "status": data["status"], "label": data["label"]}
            )
        elif kind == "data-message":
            parts.append({"type": kind, "id": part["id"], "data": part["data"]})
    return parts


def expected_messages(nodes: tuple[Node, ...]) -> list[dict[str, Any]]:
    """The AG-UI messages the view should read as (see ``AgUiEncoder``)."""
    messages: list[dict[str, Any]] = []
    for node in nodes:
        state = node.state
        if node.kind == "message":
            role = state.role if state.role in ("user", "system", "developer") else "assistant"
            messages.append({"id": node.key, "role": role, "content": str(state.text)})
        elif node.kind == "tool_call":
            function = {"name": state.name, "arguments": str(state.arguments)}
            call = {"id": node.id, "type": "function", "function": function}
            messages.append({"id": node.key, "role": "assistant", "toolCalls": [call]})
            if state.status in ("done", "failed", "denied"):
                output = state.output
                content = (
                    (
                        output
                        if isinstance(output, str)
                        else json.dumps(output, separators=(",", ":"))
                    )
                    if state.status == "done"
                    else _outcome(state)
                )
                messages.append(
                    {
                        "id": f"{node.key}:result",
                        "role": "tool",
                        "toolCallId": node.id,
                        "content": content,
                    }
                )
    return messages


def read_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    fields = ("id", "role", "content", "toolCalls", "toolCallId")
    return [{f: m[f] for f in fields if f in m} for m in messages]


async def stream_while_appending(
    tmp_path: Path, route: str, events: list[Any], opened_at: int, step: int
) -> tuple[str, int]:
    """The SSE text a client of ``route`` receives when it opens after ``opened_at``
    events and the rest are appended ``step`` at a time, up to the final position."""
    path = make_store(tmp_path / "s.sqlite", {"c": events[:opened_at]})
    app = app_for(path)
    async with running(app):
        live = app.state.live
        async with SseStream(app, f"/conversations/c/{route}") as stream:
            fields = await stream.message()
            assert stream.status == 200
            position = opened_at
            while position < len(events):
                batch = events[position : position + step]
                await live.append("c", batch, position)
                position += len(batch)
            while fields.get("id") != str(len(events)):
                fields = await stream.message()
            text = stream.raw.decode()
            headers = stream.headers
    if route == ROUTES["aisdk"]:
        assert headers["x-vercel-ai-ui-message-stream"] == "v1"
    return text[: text.rindex("\n\n") + 2], len(events)


@pytest.mark.slow
@pytest.mark.parametrize(("opened_at", "step"), [(0, 1), (1, 7), (200, 3), (431, 1)])
def test_ai_sdk_reader_gets_the_view(tmp_path: Path, opened_at: int, step: int) -> None:
    """``readUIMessageStream`` over the stream, opened at any point of the log and
    followed while events come, ends with the view's texts, tool calls and results."""
    events = example_events()
    text, _ = asyncio.run(
        stream_while_appending(tmp_path, ROUTES["aisdk"], events, opened_at, step)
    )
    fixture = tmp_path / "stream.sse"
    fixture.write_text(text)
    result = run_oracle("oracle_aisdk.mjs", fixture)
    assert "error" not in result, result["error"]
    message = result["message"]
    assert message["role"] == "assistant"
    assert message["id"] == "c"
    assert read_parts(message) == expected_parts(view(events))
    assert any(p["type"] == "dynamic-tool" and "output" in p for p in message["parts"])


@pytest.mark.slow
@pytest.mark.parametrize(("opened_at", "step"), [(0, 1), (1, 7), (200, 3), (431, 1)])
def test_ag_ui_client_gets_the_view(tmp_path: Path, opened_at: int, step: int) -> None:
    """``@ag-ui/client``'s reducer (with its event verification) over the stream ends
    with the view's messages, tool calls and results, and the statuses in the state."""
    events = example_events()
    text, _ = asyncio.run(stream_while_appending(tmp_path, ROUTES["agui"], events, opened_at, step))
    fixture = tmp_path / "stream.sse"
    fixture.write_text(text)
    result = run_oracle("oracle_agui.mjs", fixture)
    assert "error" not in result, result["error"]
    nodes = view(events)
    assert read_messages(result["messages"]) == expected_messages(nodes)
    statuses = {n.id: n.state.label for n in nodes if n.kind == "status"}
    assert {k: v["label"] for k, v in result["state"]["statuses"].items()} == statuses


# -- the encoders alone, against the readers, over generated conversations -------------

_IDS = st.sampled_from(["a", "b", "c/~1"])
_TEXT = st.text(alphabet='ab <>"\\é\n', max_size=4)
_EVENT = st.one_of(
    st.builds(
        lambda i, r, t: {"type": "message.start", "id": i, "role": r, "text": t},
        _IDS,
        st.sampled_from(["user", "assistant"]),
        _TEXT,
    ),
    st.builds(lambda i, t: {"type": "message.delta", "id": i, "text": t}, _IDS, _TEXT),
    st.builds(lambda i: {"type": "message.end", "id": i}, _IDS),
    st.builds(lambda i: {"type": "reasoning.start", "id": i}, _IDS),
    st.builds(lambda i, t: {"type": "reasoning.delta", "id": i, "text": t}, _IDS, _TEXT),
    st.builds(lambda i: {"type": "reasoning.end", "id": i}, _IDS),
    st.builds(
        lambda i, n: {"type": "tool_call.start", "id": i, "name": n},
        _IDS,
        st.sampled_from(["ls", "cat"]),
    ),
    st.builds(
        lambda i, t: {"type": "tool_call.arguments_delta", "id": i, "text": t},
        _IDS,
        st.sampled_from(['{"p"', ": 1", "}", "x"]),
    ),
    st.builds(lambda i: {"type": "tool_call.arguments_end", "id": i}, _IDS),
    st.builds(
        lambda i, o: {"type": "tool_call.result", "id": i, "output": o},
        _IDS,
        st.one_of(_TEXT, st.dictionaries(_TEXT, st.integers(), max_size=2)),
    ),
    st.builds(lambda i, m: {"type": "tool_call.error", "id": i, "message": m}, _IDS, _TEXT),
    st.builds(
        lambda i, s, label: {"type": "status.update", "id": i, "status": s, "label": label},
        _IDS,
        st.sampled_from(["running", "done"]),
        _TEXT,
    ),
)


def _chunks(
    encoder: UIMessageEncoder | AgUiEncoder, events: list[Any], cuts: list[int]
) -> list[Any]:
    """What ``wire_frames`` sends a client that opens after the first cut and is
    notified at each later one."""
    engine_nodes = [tuple(view(events[:cut])) for cut in [*sorted(set(cuts)), len(events)]]
    chunks = encoder.opening()
    if isinstance(encoder, AgUiEncoder):
        chunks += encoder.snapshot(engine_nodes[0])
    for nodes in engine_nodes:
        chunks += encoder.update(nodes)
    decoded: list[Any] = json.loads(json.dumps(chunks))
    return decoded


@pytest.mark.slow
@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(
        st.tuples(
            st.lists(_EVENT, min_size=1, max_size=25), st.lists(st.integers(0, 25), max_size=4)
        ),
        min_size=40,
        max_size=40,
    )
)
def test_generated_conversations_read_as_their_view(
    cases: list[tuple[list[Any], list[int]]],
) -> None:
    """Forty generated conversations (unfinished nodes, failures, out-of-order ends),
    each notified at generated cuts, through both readers in one node process each."""
    cases = [(events, [min(c, len(events)) for c in cuts]) for events, cuts in cases]
    jobs: list[dict[str, Any]] = [
        {"protocol": "aisdk", "events": _chunks(UIMessageEncoder("c"), e, c)} for e, c in cases
    ]
    jobs += [
        {"protocol": "agui", "events": _chunks(AgUiEncoder("c"), e, c), "verify": True}
        for e, c in cases
    ]
    results = run_batch(jobs)
    for (events, _), result in zip(cases, results[: len(cases)], strict=True):
        assert "error" not in result, (events, result)
        assert [m["id"] for m in result["messages"]] == ["c"]
        assert read_parts(result["messages"][0]) == expected_parts(view(events)), events
    for (events, _), result in zip(cases, results[len(cases) :], strict=True):
        assert "error" not in result, (events, result)
        nodes = view(events)
        assert read_messages(result["messages"]) == expected_messages(nodes), events
        statuses = {n.id: n.state.label for n in nodes if n.kind == "status"}
        got = result["state"].get("statuses", {})
        assert {k: v["label"] for k, v in got.items()} == statuses, events


DOCS = Path(__file__).parents[2] / "docs" / "live.md"


def test_the_docs_example_serves_a_store_to_the_ai_sdk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The example of docs/live.md: the view mounted under ``/live`` answers the
    AI SDK's reconnection URL with a UI message stream of the store's conversation."""
    marker = "<!-- test: by test_the_docs_example_serves_a_store_to_the_ai_sdk -->\n```python\n"
    code = DOCS.read_text(encoding="utf-8").split(marker, 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    hello = [
        {"type": "message.start", "id": "m", "role": "assistant", "text": "hello <b>"},
        {"type": "message.end", "id": "m"},
    ]
    make_store(tmp_path / "convo.db", {"session": hello})
    namespace: dict[str, Any] = {}
    exec(compile(code, str(DOCS), "exec"), namespace)
    app = namespace["app"]

    async def scenario() -> list[Any]:
        async with running(app):
            path = "/live/conversations/session/ui-message-stream"
            async with SseStream(app, path) as stream:
                fields = await stream.message()
                chunks = [json.loads(fields["data"])]
                while "id" not in fields:
                    fields = await stream.message()
                    chunks.append(json.loads(fields["data"]))
                assert fields["id"] == "2"
                assert stream.headers["x-vercel-ai-ui-message-stream"] == "v1"
        return chunks

    assert asyncio.run(scenario()) == [
        {"type": "start", "messageId": "session"},
        {"type": "text-start", "id": "message:m"},
        {"type": "text-delta", "id": "message:m", "delta": "hello <b>"},
        {"type": "text-end", "id": "message:m"},
    ]


@pytest.mark.parametrize("route", ROUTES.values())
def test_a_conversation_nothing_can_show_is_404(tmp_path: Path, route: str) -> None:
    path = make_store(tmp_path / "s.sqlite", {"c": example_events()[:3]})

    async def scenario() -> int:
        async with running(app_for(path)) as client:
            return (await client.get(f"/conversations/a/b/{route}")).status_code

    assert asyncio.run(scenario()) == 404


def _data(sse: str) -> list[Any]:
    """The JSON values of an SSE text's messages."""
    return [json.loads(line[6:]) for line in sse.split("\n") if line.startswith("data: ")]


@pytest.mark.slow
@pytest.mark.parametrize("cut", [3, 150, 300])
def test_ag_ui_resumes_by_log_position(tmp_path: Path, cut: int) -> None:
    """A client that read up to position ``cut`` and reconnects with ``Last-Event-ID``
    gets only what it missed (an open message started again, which its reducer keeps,
    and continued): the reducer over both streams ends with the view, and the second
    stream passes the client's event verification alone."""
    events = example_events()
    path = make_store(tmp_path / "s.sqlite", {"c": events[:cut]})

    async def scenario() -> tuple[str, str]:
        app = app_for(path)
        async with running(app):
            async with SseStream(app, "/conversations/c/ag-ui") as first:
                fields = await first.message()
                while fields.get("id") != str(cut):
                    fields = await first.message()
            await app.state.live.append("c", events[cut:], cut)
            headers = {"Last-Event-ID": str(cut)}
            async with SseStream(app, "/conversations/c/ag-ui", headers) as second:
                fields = await second.message()
                while fields.get("id") != str(len(events)):
                    fields = await second.message()
        return first.raw.decode(), second.raw.decode()

    before, after = asyncio.run(scenario())
    resumed = _data(after)
    assert not any(e["type"] == "MESSAGES_SNAPSHOT" for e in resumed)
    both, alone = run_batch(
        [
            {"protocol": "agui", "events": _data(before) + resumed, "verify": False},
            {"protocol": "agui", "events": resumed, "verify": True},
        ]
    )
    assert "error" not in both, both
    assert "error" not in alone, alone
    assert read_messages(both["messages"]) == expected_messages(view(events))


@pytest.mark.parametrize("route", ROUTES.values())
def test_a_bad_resume_position_is_400(tmp_path: Path, route: str) -> None:
    path = make_store(tmp_path / "s.sqlite", {"c": example_events()[:3]})

    async def scenario() -> int:
        async with running(app_for(path)) as client:
            return (await client.get(f"/conversations/c/{route}?after=-1")).status_code

    assert asyncio.run(scenario()) == 400
