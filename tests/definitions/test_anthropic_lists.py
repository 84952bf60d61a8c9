"""A list item split across Anthropic text blocks by a citation reads as one item.

Claude streams a cited list as ``"...include:\\n- "`` (a text block ending with the
item's marker alone), then the item's text as its own block (carrying the
citation). Rendered block by block, the first would end in an empty bullet (or, under
a line of text, a Markdown heading underline) and the item would lose its bullet. The
block after a marker carries it (``BlockState.marker``, read at its start through
the reader); the block before leaves it out.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from definitions import anthropic
from definitions._render import list_item_text, trailing_marker
from engine import create_conversation_engine

CITATION = {
    "type": "web_search_result_location",
    "url": "https://example.com/a",
    "title": "A",
    "cited_text": "a",
    "encrypted_index": "x",
}


def stream(
    texts: list[str], *, cited: Collection[int] = (), between: int | None = None
) -> list[Any]:
    """One message of text blocks, one per text (``cited``: those indexes carry a
    citation); ``between``: a tool-use block inserted before that index."""
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}}
    ]
    index = 0
    for at, text in enumerate(texts):
        if at == between:
            events += [
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}},
                },
                {"type": "content_block_stop", "index": index},
            ]
            index += 1
        block: dict[str, Any] = {"type": "text", "text": ""}
        if at in cited:
            block["citations"] = []
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        if at in cited:
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "citations_delta", "citation": CITATION},
                }
            )
        events += [
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": text},
            },
            {"type": "content_block_stop", "index": index},
        ]
        index += 1
    events += [
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
        {"type": "message_stop"},
    ]
    return events


def view(events: list[Any]) -> tuple[list[Any], list[Any]]:
    engine = create_conversation_engine(anthropic.DEFINITIONS, event_type=anthropic.event_type)
    engine.push_many(anthropic.prepare(events))
    nodes = [n for n in engine.nodes() if n.kind == anthropic.BLOCK.kind]
    return nodes, anthropic.PROTOCOL.accumulate(events)


SPLIT = [
    "Key highlights include:\n- ",
    "Microsoft shook up its AI stack.",
    "\n- ",
    "Oracle raised $15B.",
]


def test_an_item_split_off_by_a_citation_keeps_its_bullet() -> None:
    nodes, _ = view(stream(SPLIT, cited={1, 3}))
    texts = [anthropic.BLOCK.render_text(n) for n in nodes]
    assert texts == [
        "Key highlights include:",
        "- Microsoft shook up its AI stack. [A <https://example.com/a>]",
        "",
        "- Oracle raised $15B. [A <https://example.com/a>]",
    ]
    html = [anthropic.BLOCK.render_html(n) for n in nodes]
    assert "<h2>" not in html[0]  # "include:\n-" is no heading underline
    assert "<li>" not in html[0]
    assert html[2] == ""  # the marker alone shows nothing
    for item in (html[1], html[3]):
        assert re.search(r"<ul>\s*<li>", item), item
        assert 'class="cite"' in item  # the citation stays with its text


def test_the_rebuilt_message_is_the_streamed_text() -> None:
    """The marker is for reading only: the fold's message keeps every block's text."""
    _, messages = view(stream(SPLIT, cited={1, 3}))
    assert [b["text"] for b in messages[0]["content"]] == SPLIT


def test_a_marker_is_carried_only_by_the_next_text_block() -> None:
    # A tool call between: the text after it starts no list item.
    nodes, _ = view(stream(["See:\n- ", "after the call"], between=1))
    texts = [anthropic.BLOCK.render_text(n) for n in nodes if n.state.block["type"] == "text"]
    assert texts == ["See:", "after the call"]


def test_a_marker_inside_a_text_is_left_alone() -> None:
    nodes, _ = view(stream(["- one\n- two", "three"]))
    assert [anthropic.BLOCK.render_text(n) for n in nodes] == ["- one\n- two", "three"]


markers = st.sampled_from(["-", "*", "+", "1.", "2)", "10."])
words = st.text(st.characters(categories=["L", "N"]), min_size=1, max_size=8)


@given(st.text(max_size=20), markers, st.sampled_from(["", " ", "  "]))
def test_trailing_marker_is_the_last_line_when_it_is_a_marker_alone(
    head: str, marker: str, pad: str
) -> None:
    text = f"{head}\n{pad}{marker}{pad}"
    assert trailing_marker(text) == f"{marker} "
    assert trailing_marker(f"{text}x") == ""  # the item has begun: no longer alone


@given(words, markers, words)
def test_list_item_text_moves_the_marker_from_one_block_to_the_next(
    before: str, marker: str, item: str
) -> None:
    first, second = f"{before}\n{marker} ", item
    carried = trailing_marker(first)
    assert list_item_text(first, "") == before
    assert list_item_text(second, carried) == f"{marker} {item}"
