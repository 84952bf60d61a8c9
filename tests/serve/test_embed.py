"""The live view in someone else's app: mounted under a prefix with its lifespan run
by the host, over a store, an open store or engines pushed from another thread, in a
page template of the host's own, with a kind that brings its stylesheet."""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests._shared import require_serve

require_serve()

from starlette.applications import Starlette  # noqa: E402
from starlette.routing import Mount  # noqa: E402

from definitions import builtin  # noqa: E402
from engine import create_conversation_engine  # noqa: E402
from replay import SQLiteStore  # noqa: E402
from replay.serve import ServeOptions, create_app  # noqa: E402
from tests.serve._helpers import SseStream, running  # noqa: E402

DOCS = Path(__file__).parents[2] / "docs" / "live.md"
EXAMPLE_TEST = "test_the_docs_example_mounts_a_styled_kind_following_an_agent"


def docs_example() -> str:
    text = DOCS.read_text(encoding="utf-8")
    found = re.search(rf"<!-- test: by {EXAMPLE_TEST} -->\n```python\n(.*?)```", text, re.S)
    assert found is not None, f"docs/live.md has no example marked for {EXAMPLE_TEST}"
    return found.group(1)


def test_the_docs_example_mounts_a_styled_kind_following_an_agent() -> None:
    """The example of docs/live.md: the host's page holds the server-rendered plan,
    its stylesheet is served under the mount, and the agent's pushes from its own
    thread reach a stream opened under the prefix."""
    namespace: dict[str, Any] = {}
    exec(compile(docs_example(), str(DOCS), "exec"), namespace)
    app, agent = namespace["app"], namespace["agent"]
    agent.push({"type": "plan", "id": "p", "steps": ["read <the> code", "fix it"]})

    async def scenario() -> None:
        async with running(app) as client:
            page = (await client.get("/")).text
            assert "<h1>My agent</h1>" in page
            assert '<ul class="plan"><li>☐ read &lt;the&gt; code</li>' in page
            assert 'data-stream="/chat/conversations/agent/stream"' in page
            assert '<link rel="stylesheet" href="/chat/kinds.css">' in page
            assert '<script src="/chat/static/convo.js" defer></script>' in page
            css = await client.get("/chat/kinds.css")
            assert css.headers["content-type"].startswith("text/css")
            assert ".plan{" in css.text
            assert (await client.get("/chat/static/convo.css")).status_code == 200
            listing = (await client.get("/chat/")).text
            assert 'href="/chat/conversations/agent"' in listing
            position = int(re.search(r'data-position="(\d+)"', page).group(1))  # type: ignore[union-attr]
            async with SseStream(app, f"/chat/conversations/agent/stream?after={position}") as s:
                await s.ready()
                pusher = threading.Thread(
                    target=agent.push, args=({"type": "plan.check", "id": "p", "step": "fix it"},)
                )
                pusher.start()
                pusher.join()
                patch = await s.patch()
                assert [node["key"] for node in patch["nodes"]] == ["plan:p"]
                assert "☑ fix it" in patch["nodes"][0]["html"]

    asyncio.run(scenario())


@pytest.mark.parametrize("opened", [False, True], ids=["named", "open"])
def test_a_mounted_store_view_follows_while_the_host_runs_its_lifespan(
    tmp_path: Path, opened: bool
) -> None:
    """Mounted under /view, the host's lifespan starts the view's follower (events
    from another connection arrive) and stops it; a store the app opened is closed,
    one it was handed is left open."""
    path = tmp_path / "events.sqlite"
    first = {"type": "message.start", "id": "m", "role": "user", "text": "hi"}
    with SQLiteStore(path) as store:
        store.append("c", [first])
    handed = SQLiteStore(path) if opened else None
    view = create_app(handed or path, ServeOptions(poll_interval=0.02))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with view.router.lifespan_context(view):
            yield

    host = Starlette(routes=[Mount("/view", view)], lifespan=lifespan)

    async def scenario() -> None:
        live = view.state.live
        async with running(host) as client:
            assert live._follower is not None  # started by the host's lifespan
            page = (await client.get("/view/conversations/c")).text
            assert 'data-stream="/view/conversations/c/stream"' in page
            assert 'href="/view/static/convo.css"' in page
            async with SseStream(host, "/view/conversations/c/stream?after=1") as stream:
                await stream.ready()
                with SQLiteStore(path) as other:  # another process, as it were
                    other.append("c", [{"type": "message.delta", "id": "m", "text": " there"}])
                patch = await stream.patch()
                assert patch["position"] == 2
        assert live._follower is None  # stopped with the host
        if handed is not None:
            assert handed.length("c") == 2  # still open: the app never closes it
            handed.close()

    asyncio.run(scenario())


def test_engines_serve_no_ingest_and_unknown_ids_are_404() -> None:
    engine = create_conversation_engine(builtin.DEFINITIONS)
    app = create_app({"e": engine}, ServeOptions(token="t" * 16))

    async def scenario() -> None:
        async with running(app) as client:
            assert (await client.get("/conversations/e")).status_code == 200
            assert (await client.get("/conversations/other")).status_code == 404
            assert (await client.get("/conversations/other/stream")).status_code == 404
            posted = await client.post(
                "/conversations/e/events",
                content=b'{"type": "message.start", "id": "m", "role": "user"}',
                headers={"authorization": "Bearer " + "t" * 16},
            )
            assert posted.status_code == 403
            assert "engines" in posted.json()["error"]

    asyncio.run(scenario())


class Styled:
    """A kind with a stylesheet that tries to end the static page's <style>."""

    kind = "styled"
    stylesheet = ".styled{color:red}</style><script>alert(1)</script>"

    def match(self, event: Any) -> None:
        return None

    def start(self, event: Any, reader: Any) -> None:
        return None

    def update(self, state: Any, event: Any) -> None:
        return None


def test_stylesheets_are_served_under_the_policy_and_inlined_inertly(tmp_path: Path) -> None:
    """The options' and the definitions' CSS, each once, as kinds.css with the
    page's CSP (no link when there is none); the static page inlines the same CSS,
    unable to close its <style> element."""
    from replay import render_html
    from replay.serve._app import CSP

    definitions = [*builtin.DEFINITIONS, Styled()]
    mine = [".mine{margin:0}", Styled.stylesheet]  # given twice: served once
    options = ServeOptions(definitions=definitions, stylesheets=mine)
    plain = create_app(tmp_path / "a.sqlite")
    app = create_app(tmp_path / "b.sqlite", options)

    async def scenario() -> None:
        async with running(plain) as client:
            assert "kinds.css" not in (await client.get("/")).text
        async with running(app) as client:
            assert '<link rel="stylesheet" href="/kinds.css">' in (await client.get("/")).text
            css = await client.get("/kinds.css")
            assert css.text == f".mine{{margin:0}}\n{Styled.stylesheet}"
            assert css.headers["content-security-policy"] == CSP

    asyncio.run(scenario())
    page = render_html([], definitions)
    assert page.count(".styled{color:red}") == 1
    assert page.count("</style>") == 1  # the kind's CSS cannot end the element
    assert "<script" not in page.split("</style>")[1]  # in the style's raw text, inert
