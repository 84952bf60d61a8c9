"""The live web view over ASGI: routes, SSE framing, resume, live tail, ingest, safety."""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._shared import require_serve

# Loud skips (failures under CI=true) before anything imports starlette: the serve
# extra is optional.
require_serve()

from definitions import builtin, event_type  # noqa: E402
from replay import HtmlRenderer, SQLiteStore, replay  # noqa: E402
from replay.serve import ServeOptions, create_app  # noqa: E402
from replay.serve._app import CSP, parse_events  # noqa: E402
from tests.serve._helpers import (  # noqa: E402
    PAYLOADS,
    SseStream,
    apply,
    hostile_events,
    markup_problems,
    running,
)

EXAMPLE = Path(__file__).parents[2] / "replay" / "examples" / "agent_session.jsonl"


def example_events() -> list[dict[str, Any]]:
    return [json.loads(line) for line in EXAMPLE.read_text().splitlines() if line.strip()]


def final_view(events: list[Any]) -> dict[str, tuple[int, str]]:
    """The keyed fragments of the view after ``events``, as a fresh replay renders them."""
    renderer = HtmlRenderer(builtin.DEFINITIONS)
    nodes = replay(events, builtin.DEFINITIONS, event_type=event_type)
    return {node.key: (node.seq, renderer.fragment(node)) for node in nodes}


TOKEN = "s3cret-s3cret-s3cret"  # tokens are at least 16 characters


def make_store(path: Path, conversations: dict[str, list[Any]]) -> Path:
    with SQLiteStore(path) as store:
        for conversation, events in conversations.items():
            store.append(conversation, events)
    return path


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return make_store(tmp_path / "events.sqlite", {"session": example_events()})


def app_for(store: Path, **options: Any) -> Any:
    # A long poll interval: tests that need the store read kick the poller (or wait on
    # data_version from another connection, which the poller sees on its next tick).
    options.setdefault("poll_interval", 0.02)
    return create_app(store, ServeOptions(**options))


def test_bad_definitions_fail_when_the_app_is_made(store: Path) -> None:
    """Registered once for every conversation: a broken definition is named up front,
    not on the first page someone opens."""
    from engine import RegistrationError

    with pytest.raises(RegistrationError, match="kinds must be unique"):
        app_for(store, definitions=[*builtin.DEFINITIONS, builtin.DEFINITIONS[0]])


class TestIndex:
    """GET / lists the store's conversations."""

    def test_lists_with_escaped_ids_and_quoted_links(self, tmp_path: Path) -> None:
        path = make_store(
            tmp_path / "s.sqlite",
            {
                "plain": [{"type": "status.update", "id": "x", "status": "running", "label": "l"}],
                '<img src=x onerror="a()">/b': [{"type": "reasoning.start", "id": "r"}],
            },
        )

        async def scenario() -> None:
            async with running(app_for(path)) as client:
                response = await client.get("/")
                assert response.status_code == 200
                assert response.headers["content-security-policy"] == CSP
                problems, text = markup_problems(response.text)
                assert problems == []
                assert '<img src=x onerror="a()">/b' in text
                assert (
                    'href="/conversations/%3Cimg%20src%3Dx%20onerror%3D%22a%28%29%22%3E%2Fb"'
                    in (response.text)
                )
                assert 'href="/conversations/plain"' in response.text

        asyncio.run(scenario())

    def test_empty_store(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            async with running(app_for(tmp_path / "empty.sqlite")) as client:
                response = await client.get("/")
                # The stylesheet says "No conversations" on an empty list.
                assert '<ul class="conversations" data-stream="/index/stream"></ul>' in (
                    response.text
                )

        asyncio.run(scenario())

    def test_the_index_follows_the_store(self, tmp_path: Path) -> None:
        """The index's stream sends the listing, then again as conversations appear
        and grow (written by another connection, as another process would)."""
        path = make_store(tmp_path / "s.sqlite", {"a": [{"type": "reasoning.start", "id": "r"}]})
        start = {"type": "message.start", "id": "m", "role": "user"}

        async def scenario() -> None:
            app = app_for(path)
            async with running(app), SseStream(app, "/index/stream") as stream:
                await stream.ready()
                first = await stream.message()
                assert first["event"] == "index"
                assert json.loads(first["data"])["html"].count("<li>") == 1
                with SQLiteStore(path) as other:
                    other.append("b", [start])
                    other.append("a", [start])
                html = ""
                while "2 events" not in html or 'href="/conversations/b"' not in html:
                    html = json.loads((await stream.message())["data"])["html"]
                problems, _ = markup_problems(html)
                assert problems == []

        asyncio.run(scenario())


class TestPage:
    """GET /conversations/{id} is the complete view, rendered on the server."""

    def test_server_rendered_view_matches_a_replay(self, store: Path) -> None:
        async def scenario() -> None:
            async with running(app_for(store)) as client:
                response = await client.get("/conversations/session")
                assert response.status_code == 200
                html = response.text
                view = final_view(example_events())
                # Every node, in seq order, each exactly as the replay renderer makes it.
                fragments = [f for _, f in sorted(view.values())]
                positions = [html.index(f) for f in fragments]
                assert positions == sorted(positions)
                assert f'data-position="{len(example_events())}"' in html
                assert 'data-stream="/conversations/session/stream"' in html
                assert '<script src="/static/convo.js" defer></script>' in html
                assert html.count("<script") == 1  # no inline script: the CSP forbids it
                assert "style=" not in html
                assert response.headers["content-security-policy"] == CSP
                assert response.headers["x-content-type-options"] == "nosniff"

        asyncio.run(scenario())

    def test_a_conversation_with_no_events_yet_waits_and_goes_live(self, store: Path) -> None:
        """A page opened before the first event: an empty section with its stream,
        which brings the first events when they come; an id that cannot be one is 404."""

        async def scenario() -> None:
            app = app_for(store)
            async with running(app) as client:
                response = await client.get("/conversations/later")
                assert response.status_code == 200
                assert 'data-stream="/conversations/later/stream"' in response.text
                assert 'data-position="0"' in response.text
                assert 'data-position="0" data-live="off"></section>' in response.text
                async with SseStream(app, "/conversations/later/stream?after=0") as stream:
                    await stream.ready()
                    with SQLiteStore(store) as other:
                        other.append(
                            "later", [{"type": "message.start", "id": "m", "role": "user"}]
                        )
                    patch = await stream.patch()
                    assert patch["position"] == 1
                    assert [n["key"] for n in patch["nodes"]] == ["message:m"]
                bad = "/conversations/" + "x" * 300
                assert (await client.get(bad)).status_code == 404
                assert (await client.get(bad + "/stream")).status_code == 404

        asyncio.run(scenario())

    def test_ids_with_slashes_and_reserved_characters(self, tmp_path: Path) -> None:
        path = make_store(
            tmp_path / "s.sqlite", {"team/run 1?x": [{"type": "reasoning.start", "id": "r"}]}
        )

        async def scenario() -> None:
            async with running(app_for(path)) as client:
                response = await client.get("/conversations/team%2Frun%201%3Fx")
                assert response.status_code == 200
                assert 'data-stream="/conversations/team%2Frun%201%3Fx/stream"' in response.text

        asyncio.run(scenario())


class TestStatic:
    """The client script and stylesheet are served from the package."""

    @pytest.mark.parametrize(
        ("name", "media"), [("convo.js", "javascript"), ("convo.css", "text/css")]
    )
    def test_served(self, store: Path, name: str, media: str) -> None:
        async def scenario() -> None:
            async with running(app_for(store)) as client:
                response = await client.get(f"/static/{name}")
                assert response.status_code == 200
                assert media in response.headers["content-type"]
                assert response.headers["content-security-policy"] == CSP

        asyncio.run(scenario())

    def test_script_knows_no_kind(self) -> None:
        script = (Path(__file__).parents[2] / "replay" / "static" / "convo.js").read_text()
        for definition in builtin.DEFINITIONS:
            for literal in (f'"{definition.kind}', f"'{definition.kind}", f".{definition.kind}"):
                assert literal not in script
        assert 'createElement("template")' in script  # fragments are parsed inertly
        assert "eval(" not in script


class TestStream:
    """GET /conversations/{id}/stream: SSE framing, catch-up, live tail, resume."""

    def test_framing_and_catch_up_from_zero(self, store: Path) -> None:
        async def scenario() -> None:
            app = app_for(store)
            async with running(app), SseStream(app, "/conversations/session/stream") as stream:
                patch = await stream.patch()
                assert stream.status == 200
                assert stream.headers["content-type"].startswith("text/event-stream")
                assert stream.headers["cache-control"] == "no-store"
                assert stream.raw.startswith(b"retry: 1000\n\n")
                length = len(example_events())
                assert patch["position"] == length
                assert patch["reset"] is False
                view: dict[str, tuple[int, str]] = {}
                apply(view, patch)
                assert view == final_view(example_events())

        asyncio.run(scenario())

    def test_live_tail_from_another_connection_coalesces_a_burst(self, tmp_path: Path) -> None:
        path = make_store(
            tmp_path / "s.sqlite", {"c": [{"type": "message.start", "id": "m", "role": "user"}]}
        )
        deltas = [{"type": "message.delta", "id": "m", "text": f"{i} "} for i in range(500)]

        async def scenario() -> None:
            app = app_for(path)
            async with running(app), SseStream(app, "/conversations/c/stream?after=1") as stream:
                # Another writer (a separate connection, as another process would be).
                with SQLiteStore(path) as other:
                    other.append("c", deltas)
                patch = await stream.patch()
                # 500 animation-frame deltas folded in one poll: one frame, one message.
                assert patch["position"] == 501
                assert [n["key"] for n in patch["nodes"]] == ["message:m"]
                assert "498 499" in patch["nodes"][0]["html"]
                hub = app.state.live.conversations["c"]
                assert hub.engine.statistics().notifications == 2  # the start, the burst

        asyncio.run(scenario())

    def test_live_tail_from_another_process(self, tmp_path: Path) -> None:
        path = make_store(
            tmp_path / "s.sqlite", {"c": [{"type": "message.start", "id": "m", "role": "user"}]}
        )
        writer = (
            "import sys; from replay import SQLiteStore\n"
            "with SQLiteStore(sys.argv[1]) as s:\n"
            "    s.append('c', [{'type': 'message.delta', 'id': 'm', 'text': 'from afar'},"
            " {'type': 'message.end', 'id': 'm'}], expected_position=1)\n"
        )

        async def scenario() -> None:
            app = app_for(path)
            async with running(app), SseStream(app, "/conversations/c/stream?after=1") as stream:
                process = await asyncio.create_subprocess_exec(
                    sys.executable, "-c", writer, str(path)
                )
                assert await process.wait() == 0
                patches = await stream.until(3)
                assert "from afar" in patches[-1]["nodes"][0]["html"]
                assert 'data-status="done"' in patches[-1]["nodes"][0]["html"]

        asyncio.run(scenario())

    def test_resume_sends_only_what_was_missed(self, tmp_path: Path) -> None:
        first = [
            {"type": "message.start", "id": "a", "role": "user", "text": "hi"},
            {"type": "message.end", "id": "a"},
            {"type": "message.start", "id": "b", "role": "assistant"},
        ]
        path = make_store(tmp_path / "s.sqlite", {"c": first})

        async def scenario() -> None:
            app = app_for(path)
            async with running(app):
                live = app.state.live
                async with SseStream(app, "/conversations/c/stream") as stream:
                    seen = await stream.patch()
                assert seen["position"] == 3
                await live.append("c", [{"type": "message.delta", "id": "b", "text": "yo"}], 3)
                await live.append(
                    "c", [{"type": "status.update", "id": "s", "status": "done", "label": "ok"}], 4
                )
                headers = {"Last-Event-ID": "3"}
                # Last-Event-ID wins over ?after= (the browser keeps the first URL).
                async with SseStream(app, "/conversations/c/stream?after=0", headers) as resumed:
                    patch = await resumed.until(5)
                keys = [node["key"] for p in patch for node in p["nodes"]]
                assert sorted(set(keys)) == ["message:b", "status:s"]
                assert "message:a" not in keys
                view: dict[str, tuple[int, str]] = {}
                apply(view, seen)
                for p in patch:
                    apply(view, p)
                assert view == final_view(
                    [
                        *first,
                        {"type": "message.delta", "id": "b", "text": "yo"},
                        {"type": "status.update", "id": "s", "status": "done", "label": "ok"},
                    ]
                )

        asyncio.run(scenario())

    def test_resume_beyond_the_store_resets(self, store: Path) -> None:
        async def scenario() -> None:
            app = app_for(store)
            async with running(app):
                headers = {"Last-Event-ID": "100000"}
                async with SseStream(app, "/conversations/session/stream", headers) as stream:
                    patch = await stream.patch()
                assert patch["reset"] is True
                assert patch["position"] == len(example_events())
                assert len(patch["nodes"]) == len(final_view(example_events()))

        asyncio.run(scenario())

    @pytest.mark.parametrize("bad", ["-1", "x", "1.5"])
    def test_bad_resume_id_is_400(self, store: Path, bad: str) -> None:
        async def scenario() -> None:
            async with running(app_for(store)) as client:
                response = await client.get(
                    "/conversations/session/stream", headers={"Last-Event-ID": bad}
                )
                assert response.status_code == 400

        asyncio.run(scenario())

    @pytest.mark.slow
    def test_a_stalled_client_blocks_nobody_and_a_gone_one_is_dropped(self, tmp_path: Path) -> None:
        path = make_store(
            tmp_path / "s.sqlite", {"c": [{"type": "message.start", "id": "m", "role": "user"}]}
        )

        async def scenario() -> None:
            app = app_for(path)
            async with running(app):
                live = app.state.live
                async with (
                    SseStream(app, "/conversations/c/stream?after=1", stalled=True) as stalled,
                    SseStream(app, "/conversations/c/stream?after=1") as reader,
                ):
                    await stalled.ready()
                    await reader.ready()
                    hub = live.conversations["c"]
                    # The stalled client's send blocks on its first message; the other
                    # client gets every append meanwhile, and the hub queues nothing.
                    for i in range(50):
                        event = {
                            "type": "status.update",
                            "id": f"s{i}",
                            "status": "running",
                            "label": str(i),
                        }
                        await live.append("c", [event], 1 + i)
                        await reader.until(2 + i)
                    assert len(hub.clients) == 2
                    # Reading again, it gets the message in flight and one merged catch-up.
                    stalled.unstall()
                    in_flight, catch_up = await stalled.until(51)
                    assert in_flight["position"] == 2
                    assert catch_up["position"] == 51
                    # 49 changed since, but its cursor is older than the notifications
                    # a catch-up is merged from: every node, as for a new client.
                    assert len(catch_up["nodes"]) == 51
                    await stalled.close()
                    assert len(hub.clients) == 1
                assert hub.clients == set()

        asyncio.run(scenario())


class TestIngest:
    """POST /conversations/{id}/events: off by default, token, formats, concurrency."""

    EVENT: ClassVar[dict[str, Any]] = {
        "type": "message.start",
        "id": "m",
        "role": "user",
        "text": "hello",
    }

    def test_off_without_a_token(self, store: Path) -> None:
        async def scenario() -> None:
            async with running(app_for(store)) as client:
                response = await client.post("/conversations/x/events", json=self.EVENT)
                assert response.status_code == 403
                assert "--token" in response.json()["error"]

        asyncio.run(scenario())

    @pytest.mark.parametrize(
        "authorization", [None, "Bearer wrong", f"Basic {TOKEN}", "Bearer", f"bearer {TOKEN[:-1]}"]
    )
    def test_wrong_or_missing_token_is_401(self, store: Path, authorization: str | None) -> None:
        async def scenario() -> None:
            async with running(app_for(store, token=TOKEN)) as client:
                headers = {} if authorization is None else {"Authorization": authorization}
                response = await client.post(
                    "/conversations/x/events", json=self.EVENT, headers=headers
                )
                assert response.status_code == 401
                assert response.headers["www-authenticate"] == "Bearer"
                with SQLiteStore(store) as check:
                    assert check.length("x") == 0

        asyncio.run(scenario())

    @pytest.mark.parametrize(
        ("body", "count"),
        [
            (json.dumps(EVENT), 1),
            (json.dumps([EVENT, {"type": "message.end", "id": "m"}]), 2),
            (json.dumps(EVENT) + "\n\n" + json.dumps({"type": "message.end", "id": "m"}) + "\n", 2),
        ],
        ids=["object", "array", "jsonl"],
    )
    def test_appends_and_shows_up_live(self, store: Path, body: str, count: int) -> None:
        async def scenario() -> None:
            app = app_for(store, token=TOKEN)
            async with running(app) as client:
                response = await client.post(
                    "/conversations/new/events",
                    content=body,
                    headers={"Authorization": f"Bearer {TOKEN}", "X-Expected-Position": "0"},
                )
                assert response.status_code == 201, response.text
                assert response.json() == {
                    "conversation": "new",
                    "appended": count,
                    "position": count,
                }
                page = await client.get("/conversations/new")
                assert "hello" in page.text
                assert f'data-position="{count}"' in page.text

        asyncio.run(scenario())

    @pytest.mark.parametrize("where", ["header", "query"])
    def test_concurrency_conflict_is_409_and_writes_nothing(self, store: Path, where: str) -> None:
        async def scenario() -> None:
            async with running(app_for(store, token=TOKEN)) as client:
                length = len(example_events())
                url = "/conversations/session/events"
                headers = {"Authorization": f"Bearer {TOKEN}"}
                if where == "header":
                    headers["X-Expected-Position"] = "3"
                else:
                    url += "?expected_position=3"
                response = await client.post(url, json=self.EVENT, headers=headers)
                assert response.status_code == 409
                assert response.json()["expected"] == 3
                assert response.json()["actual"] == length
                with SQLiteStore(store) as check:
                    assert check.length("session") == length

        asyncio.run(scenario())

    @pytest.mark.parametrize(
        ("body", "expected", "problem"),
        [
            (b'{"type": "x"}\n{"broken', None, "line 2"),
            (b"[1, 2]", None, "item 0"),
            (b"", None, "no events"),
            (b"[]", None, "no events"),
            (b'"text"', None, "the body"),
            (b'{"type": "x"}', "-2", "expected position"),
        ],
    )
    def test_bad_requests_are_400(
        self, store: Path, body: bytes, expected: str | None, problem: str
    ) -> None:
        async def scenario() -> None:
            async with running(app_for(store, token=TOKEN)) as client:
                headers = {"Authorization": f"Bearer {TOKEN}"}
                if expected is not None:
                    headers["X-Expected-Position"] = expected
                response = await client.post(
                    "/conversations/c/events", content=body, headers=headers
                )
                assert response.status_code == 400
                assert problem in response.json()["error"]

        asyncio.run(scenario())

    def test_get_is_not_allowed(self, store: Path) -> None:
        async def scenario() -> None:
            async with running(app_for(store, token=TOKEN)) as client:
                response = await client.get("/conversations/session/events")
                assert response.status_code in (404, 405)

        asyncio.run(scenario())


class TestParseEvents:
    """parse_events: the three body formats agree."""

    @settings(max_examples=50)
    @given(
        st.lists(
            st.dictionaries(st.text(max_size=5), st.text(max_size=5) | st.integers(), max_size=3),
            min_size=1,
            max_size=5,
        )
    )
    def test_array_and_jsonl_round_trip(self, events: list[dict[str, Any]]) -> None:
        assert parse_events(json.dumps(events).encode()) == events
        assert parse_events("\n".join(json.dumps(e) for e in events).encode()) == events


class TestSafety:
    """Hostile content through every kind leaves no live markup in any response."""

    def test_page_and_stream_are_inert(self, tmp_path: Path) -> None:
        events = hostile_events()
        path = make_store(tmp_path / "s.sqlite", {"evil": events})
        assert {e["type"].split(".")[0] for e in events} >= {
            d.kind.replace("_", "_") for d in builtin.DEFINITIONS
        }

        async def scenario() -> None:
            app = app_for(path)
            async with running(app) as client:
                page = await client.get("/conversations/evil")
                problems, text = markup_problems(page.text)
                assert problems == []
                for bad in PAYLOADS:
                    assert bad in text  # shown as text, not dropped
                assert "\u202e" not in page.text
                assert "abc[U+202E]def[U+2066]ghi" in text
                async with SseStream(app, "/conversations/evil/stream") as stream:
                    patch = await stream.patch()
                html = "".join(node["html"] for node in patch["nodes"])
                problems, text = markup_problems(html)
                assert problems == []
                assert len(patch["nodes"]) == len(final_view(events))

        asyncio.run(scenario())


class TestResumeProperty:
    """However a client's connection drops, resuming ends in the server's view."""

    @pytest.mark.slow
    @settings(
        max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        cuts=st.lists(st.integers(1, 60), min_size=1, max_size=6),
        drops=st.lists(st.booleans(), min_size=6, max_size=6),
    )
    def test_drops_and_resumes_converge(
        self, tmp_path_factory: pytest.TempPathFactory, cuts: list[int], drops: list[bool]
    ) -> None:
        events = example_events()[:120]
        path = tmp_path_factory.mktemp("resume") / "s.sqlite"
        make_store(path, {"c": events[:1]})
        bounds = sorted({1, *(min(c * 2, len(events)) for c in cuts), len(events)})

        async def scenario() -> None:
            app = app_for(path)
            async with running(app):
                live = app.state.live
                view: dict[str, tuple[int, str]] = {}
                last = 0
                stream = SseStream(app, "/conversations/c/stream")
                await stream.__aenter__()
                for step, (lo, hi) in enumerate(itertools.pairwise(bounds)):
                    await live.append("c", events[lo:hi], lo)
                    if drops[step % len(drops)]:
                        await stream.close()  # the tab lost its connection here
                        headers = {"Last-Event-ID": str(last)} if last else {}
                        stream = SseStream(app, "/conversations/c/stream", headers)
                        await stream.__aenter__()
                    for patch in await stream.until(hi):
                        apply(view, patch)
                        last = patch["position"]
                await stream.close()
                assert last == len(events)
                assert view == final_view(events)

        asyncio.run(scenario())


class TestEviction:
    """Idle conversations are dropped, but never one a stream is about to use."""

    def test_a_just_opened_conversation_is_kept_whatever_the_limit(self, tmp_path: Path) -> None:
        event = {"type": "reasoning.start", "id": "r"}
        path = make_store(tmp_path / "s.sqlite", {f"c{i}": [event] for i in range(6)})

        async def scenario() -> None:
            app = app_for(path)
            async with running(app):
                live = app.state.live
                live.conversations.max_loaded = 0
                hubs = [await live.open(f"c{i}") for i in range(5)]
                assert all(live.conversations[f"c{i}"] is hubs[i] for i in range(5))
                for hub in hubs[:3]:
                    assert hub is not None
                    hub.last_used -= 3600  # long unused
                await live.open("c5")  # opening a new one evicts the long-unused
                assert sorted(live.conversations) == ["c3", "c4", "c5"]

        asyncio.run(scenario())


class TestDetection:
    """Each conversation of one store is folded by the set of its own protocol."""

    def test_a_store_of_two_protocols_shows_both(self, tmp_path: Path) -> None:
        from replay import load_events
        from tests._shared import shared_path

        anthropic = load_events(
            shared_path("fixtures", "recorded", "anthropic_thinking.chunks.jsonl")
        )
        path = make_store(
            tmp_path / "s.sqlite",
            {"session": example_events(), "claude": anthropic.events},
        )

        async def scenario() -> None:
            app = app_for(path)
            async with running(app) as client:
                session = (await client.get("/conversations/session")).text
                claude = (await client.get("/conversations/claude")).text
                live = app.state.live
                assert live.conversations["claude"].chosen.label.startswith("Anthropic")
                assert "925 ÷ 5 = 185" in claude
                assert "CI started failing" in session
                assert "unclaimed" not in claude + session

        asyncio.run(scenario())

    def test_given_definitions_that_claim_nothing_say_so_on_the_page(self, tmp_path: Path) -> None:
        path = make_store(tmp_path / "s.sqlite", {"c": [{"type": "mystery", "id": "x"}] * 3})

        async def scenario() -> None:
            async with running(app_for(path, definitions=builtin.DEFINITIONS)) as client:
                page = (await client.get("/conversations/c")).text
                assert '<p class="note unclaimed">3 of 3 events claimed by no definition' in page
                assert "try another -d" in page  # no known protocol to point to

        asyncio.run(scenario())


def test_a_bad_event_is_said_on_the_page_never_a_500(tmp_path: Path) -> None:
    """An event a definition refuses, or a type no reader routes, stored by other
    means: the page shows the rest and says what was skipped."""
    path = make_store(
        tmp_path / "s.sqlite",
        {
            "c": [
                {"type": "message.start", "id": "m", "role": "user", "text": "kept"},
                {"type": "message.delta", "id": "m", "text": None},
            ],
            "d": [{"type": [1], "id": "x"}],
        },
    )

    async def scenario() -> None:
        async with running(app_for(path)) as client:
            page = await client.get("/conversations/c")
            assert page.status_code == 200
            assert "kept" in page.text
            assert "1 event could not be shown; the first, event #1: DefinitionError" in page.text
            assert (await client.get("/conversations/d")).status_code == 200

    asyncio.run(scenario())


def test_catch_ups_are_few_whatever_cursors_clients_send() -> None:
    """A catch-up is encoded per cursor, and cursors are clamped: made-up ones (any
    web page can open a stream) share the encodings of recent notifications, so a
    conversation holds at most _RECENT + 2 whatever clients send, and each still
    brings its client everything it misses."""
    from definitions import event_type
    from engine import ManualScheduler, Registration
    from replay.serve._app import _RECENT, _Folded

    chosen = builtin.PROTOCOL
    registration = Registration(builtin.DEFINITIONS, event_type=event_type)

    async def scenario() -> None:
        hub = _Folded("c", lambda _: (chosen, registration), ManualScheduler())
        events = [
            {"type": "status.update", "id": f"s{i}", "status": "running", "label": str(i)}
            for i in range(3 * _RECENT)
        ]
        for position, event in enumerate(events):
            hub.fold([event], position)
            assert hub.engine is not None
            hub.engine.flush()
        assert hub.notified == len(events)
        for cursor in range(len(events) + 50):
            message = hub.frame_since(cursor, first=True)
            if cursor == len(events):
                assert message is None
                continue
            assert message is not None
            data = json.loads(message[0].split(b"data: ", 1)[1])
            sent = {node["key"] for node in data["nodes"]}
            missed = {f"status:s{i}" for i in range(min(cursor, len(events)), len(events))}
            assert missed <= sent or data["reset"]
        assert len(hub._catch_ups) <= _RECENT + 2

    asyncio.run(scenario())


def test_a_long_conversation_page_carries_its_latest_nodes(tmp_path: Path) -> None:
    """Past WINDOW nodes the page holds the latest WINDOW, says how many came before
    and links to the whole page (?all=1, for a browser without the script)."""
    from replay.serve._app import WINDOW

    rows = [
        {"type": "status.update", "id": f"s{i}", "status": "done", "label": f"row {i}"}
        for i in range(WINDOW + 7)
    ]
    path = make_store(tmp_path / "s.sqlite", {"c": rows, "short": rows[:3]})

    async def scenario() -> None:
        async with running(app_for(path)) as client:
            page = (await client.get("/conversations/c")).text
            assert page.count("<article") == WINDOW
            assert 'id="status:s7"' in page
            assert 'id="status:s6"' not in page
            assert 'data-earlier="7"' in page
            assert '<a href="/conversations/c?all=1">7 earlier nodes</a>' in page
            whole = (await client.get("/conversations/c?all=1")).text
            assert whole.count("<article") == WINDOW + 7
            assert "data-earlier" not in whole
            short = (await client.get("/conversations/short")).text
            assert short.count("<article") == 3
            assert "data-earlier" not in short

    asyncio.run(scenario())
