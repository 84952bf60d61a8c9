"""The live page's block patches: a streamed text sent as its changed blocks only.

Whatever the deltas and wherever the frames fall, the fragment the page has after
applying every patch (modelled on the HTML as the browser sees it,
``_helpers.apply_blocks``) is the fragment a fresh render of the final text gives;
and while a message streams, every frame is a patch, never the whole text.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import attrs
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._shared import require_serve

require_serve()

from definitions import builtin  # noqa: E402
from engine import Node, create_conversation_engine  # noqa: E402
from replay import HtmlRenderer  # noqa: E402
from tests.serve._helpers import SseStream, apply, apply_blocks, running  # noqa: E402
from tests.serve.test_app import app_for, final_view, make_store  # noqa: E402

# Pieces a model's Markdown is made of, with block boundaries, fences and hostile bits.
PIECES = (
    "the engine folds events ",
    "into *nodes*. ",
    "\n",
    "\n\n",
    "```python\n",
    "```\n",
    "- item `x`\n",
    "# heading\n",
    "    indented code\n",
    "> quoted\n",
    "<script>alert(1)</script> ",
    "[x](javascript:alert(2)) ",
    "\u202e",
    "x" * 300,
    " word" * 60,
)


def whole(node: Node) -> str:
    """The node's fragment from a fresh renderer, its text a plain string (no lineage)."""
    plain = msgspec.structs.replace(node.state, text=str(node.state.text))
    return HtmlRenderer(builtin.DEFINITIONS).fragment(msgspec.structs.replace(node, state=plain))


def deltas(text: str, cuts: list[int]) -> list[str]:
    bounds = sorted({0, len(text), *(cut % (len(text) + 1) for cut in cuts)})
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(PIECES), max_size=60),
    cuts=st.lists(st.integers(0, 20_000), max_size=40),
    frames=st.lists(st.booleans(), min_size=1, max_size=10),
)
def test_patched_fragment_is_the_fragment_rendered_whole(
    pieces: list[str], cuts: list[int], frames: list[bool]
) -> None:
    engine = create_conversation_engine(builtin.DEFINITIONS)
    renderer = HtmlRenderer(builtin.DEFINITIONS)
    engine.push({"type": "message.start", "id": "m", "role": "assistant"})
    (node,) = engine.nodes()
    page, since = renderer.fragment(node), (node.state, node.seq)
    text = "".join(pieces)
    events = [{"type": "message.delta", "id": "m", "text": d} for d in deltas(text, cuts)]
    events.append({"type": "message.end", "id": "m"})
    for n, event in enumerate(events):
        engine.push(event)
        if not (frames[n % len(frames)] or n == len(events) - 1):
            continue
        (node,) = engine.nodes()
        patches = renderer.patch(node, *since)
        if event["type"] == "message.delta":
            assert patches is not None  # a streaming text is never sent whole
        if patches is None:
            page = renderer.fragment(node)
        else:
            page = apply_blocks(page, [attrs.asdict(patch) for patch in patches])
        assert page == whole(node)
        since = (node.state, node.seq)


def test_a_patch_is_the_size_of_what_changed() -> None:
    """Per frame, the blocks sent are the last ones, not the text: 100 KB of text,
    each frame's patch a few hundred characters."""
    engine = create_conversation_engine(builtin.DEFINITIONS)
    renderer = HtmlRenderer(builtin.DEFINITIONS)
    engine.push({"type": "message.start", "id": "m", "role": "assistant"})
    (node,) = engine.nodes()
    renderer.fragment(node)
    since = (node.state, node.seq)
    paragraph = "the engine folds events into nodes " * 5 + "\n\n"
    sizes = []
    for _ in range(600):
        engine.push({"type": "message.delta", "id": "m", "text": paragraph})
        (node,) = engine.nodes()
        patches = renderer.patch(node, *since)
        assert patches is not None
        sizes.append(sum(len(patch.html) for patch in patches))
        since = (node.state, node.seq)
    assert len(renderer.fragment(node)) > 100_000
    assert max(sizes) < 1_000


@pytest.mark.slow
@settings(
    max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cuts=st.lists(st.integers(1, 120), max_size=6), drop=st.integers(0, 2))
def test_the_stream_patches_and_a_resume_rebuilds(
    tmp_path_factory: pytest.TempPathFactory, cuts: list[int], drop: int
) -> None:
    """Through the server: a client that keeps up is sent patches, one that resumes
    (``Last-Event-ID``) whole nodes, and the page ends as a fresh replay renders it."""
    text = "".join(PIECES) * 4
    step = 40
    events: list[dict[str, Any]] = [{"type": "message.start", "id": "m", "role": "assistant"}]
    events += [
        {"type": "message.delta", "id": "m", "text": text[at : at + step]}
        for at in range(0, len(text), step)
    ]
    events.append({"type": "message.end", "id": "m"})
    path = tmp_path_factory.mktemp("patch") / "s.sqlite"
    make_store(path, {"c": events[:1]})
    # At least six appends: patches need a client that had the version before.
    steps = range(1, len(events), len(events) // 6)
    bounds = sorted({*steps, *(min(cut, len(events)) for cut in cuts), len(events)})

    async def scenario() -> None:
        app = app_for(path)
        async with running(app):
            live = app.state.live
            view: dict[str, tuple[int, str]] = {}
            last, patched = 0, 0
            stream = SseStream(app, "/conversations/c/stream")
            await stream.__aenter__()
            for n, (lo, hi) in enumerate(itertools.pairwise(bounds)):
                await live.append("c", events[lo:hi], lo)
                if n == drop:
                    await stream.close()  # the tab lost its connection here
                    stream = SseStream(app, "/conversations/c/stream", {"Last-Event-ID": str(last)})
                    await stream.__aenter__()
                    resumed = await stream.until(hi)
                    assert all("html" in node for node in resumed[0]["nodes"])  # whole first
                    for patch in resumed:
                        apply(view, patch)
                        last = patch["position"]
                    continue
                for patch in await stream.until(hi):
                    patched += apply(view, patch)
                    last = patch["position"]
            await stream.close()
            assert view == final_view(events)
            assert patched > 0

    asyncio.run(scenario())
