"""The live view of a conversation with branches, in process: each leaf's stream
is the view of its path (the one rule of ``definitions.branch``) with a switcher on
each node that has sibling versions, kept so as the log grows live; a leaf the log
lacks is a 404 naming it; a log without branch events is served as before."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from tests._shared import require_serve

require_serve()

from definitions import builtin  # noqa: E402
from definitions.branch import Branches, path_events  # noqa: E402
from replay import SQLiteStore  # noqa: E402
from tests.replay.test_branches import CHAT  # noqa: E402
from tests.serve._helpers import SseStream, apply, running  # noqa: E402
from tests.serve.test_app import app_for, final_view, make_store  # noqa: E402

_NAV = re.compile(r"\n?" r'<nav class="versions"[^>]*>.*?</nav>\n', re.S)
_SHOWN = re.compile(r"<span>(\d+/\d+)</span>")


def expected(leaf: str) -> tuple[dict[str, tuple[int, str]], dict[str, str]]:
    """The fragments of ``leaf``'s path folded alone, and its markers ("2/3") by key."""
    branches = Branches(CHAT, builtin.DEFINITIONS)
    view = final_view(path_events(CHAT, branches.tree, leaf))
    marks = {k: f"{v.index}/{v.count}" for k, v in branches.markers(leaf).items()}
    return view, marks


def split(view: dict[str, tuple[int, str]]) -> tuple[dict[str, tuple[int, str]], dict[str, str]]:
    """A page's view without its switchers, and what each switcher shows, by key."""
    plain = {k: (seq, _NAV.sub("", html)) for k, (seq, html) in view.items()}
    marks = {}
    for key, (_, html) in view.items():
        nav = _NAV.search(html)
        if nav is not None:
            found = _SHOWN.search(nav.group())
            assert found is not None
            marks[key] = found.group(1)
    return plain, marks


@pytest.mark.parametrize(
    ("leaf", "first"),
    [("main", 4), ("main", 7), ("r1", 5), ("r1", 9), ("e1", 8), ("e1", 12)],
)
def test_a_leafs_stream_is_its_path_as_the_log_grows(tmp_path: Path, leaf: str, first: int) -> None:
    """Opened on the log's first ``first`` events, followed while the rest arrive:
    markers that change on the way (a second version appears) are resent."""
    path = make_store(tmp_path / "s.sqlite", {"chat": CHAT[:first]})

    async def scenario() -> None:
        app = app_for(path)
        async with running(app) as client:
            page = await client.get(f"/conversations/chat?leaf={leaf}")
            assert page.status_code == 200
            assert f'data-stream="/conversations/chat/stream?leaf={leaf}"' in page.text
            view: dict[str, tuple[int, str]] = {}
            async with SseStream(app, f"/conversations/chat/stream?leaf={leaf}&after=0") as s:
                await s.ready()
                with SQLiteStore(path) as other:
                    for at in range(first, len(CHAT)):
                        other.append("chat", [CHAT[at]])
                # A leaf whose path the rest does not touch gets nothing more: wait
                # for the expected view, each message with a deadline (a hang guard).
                want = expected(leaf)
                while split(view) != want:
                    apply(view, await asyncio.wait_for(s.patch(), 20))
            assert split(view) == want

    asyncio.run(scenario())


def test_the_active_path_by_default_and_an_unknown_leaf_is_a_404(tmp_path: Path) -> None:
    path = make_store(tmp_path / "s.sqlite", {"chat": CHAT, "plain": CHAT[:4]})

    async def scenario() -> None:
        async with running(app_for(path)) as client:
            page = (await client.get("/conversations/chat")).text
            assert "What is 3+3?" in page
            assert "2+2" not in page
            assert 'href="?leaf=r1" data-leaf="r1" aria-label="previous version"' in page
            for url in ("/conversations/chat?leaf=nope", "/conversations/chat/stream?leaf=nope"):
                response = await client.get(url)
                assert response.status_code == 404
                assert "&#x27;nope&#x27;" in response.text or "'nope'" in response.text
            plain = (await client.get("/conversations/plain")).text
            assert "versions" not in plain
            assert 'data-stream="/conversations/plain/stream"' in plain

    asyncio.run(scenario())


def test_a_leaf_id_is_escaped_in_the_switcher() -> None:
    from definitions.branch import Version
    from replay.render._branches import switcher_html

    html = switcher_html(Version(1, 2, ("", '"><b>x')), lambda leaf: f"?leaf={leaf}")
    assert "<b>" not in html
    assert 'data-leaf="&quot;&gt;&lt;b&gt;x"' in html
