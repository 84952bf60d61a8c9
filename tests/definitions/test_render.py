"""definitions._render.payload: JSON for a reader, opaque tokens shortened."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from definitions import anthropic
from definitions._render import payload
from engine import create_conversation_engine

TOKEN = "Ev0YCioICBgCIiRiY2Jj" * 20  # 400 characters, no whitespace: base64-like


def test_opaque_token_is_shown_by_its_start_and_length() -> None:
    assert payload({"encrypted_content": TOKEN, "title": "News"}) == (
        '{"encrypted_content": "Ev0YCioICBgCIiRi… (400 chars)", "title": "News"}'
    )


def test_text_and_short_tokens_are_shown_whole() -> None:
    prose = "word " * 100  # long, but text a reader reads
    short = "x" * 119
    value = {"b": [prose, short], "a": {"nested": ("é", 1, None)}}
    assert json.loads(payload(value)) == {"a": {"nested": ["é", 1, None]}, "b": [prose, short]}
    assert "é" in payload(value)  # non-ASCII kept, not escaped


def test_nested_tokens_and_values_json_cannot_hold() -> None:
    text = payload({"list": [{"sig": TOKEN}], "when": object}, indent=2)
    assert TOKEN not in text
    assert "(400 chars)" in text
    assert "<class 'object'>" in text  # shown as its str


@given(st.recursive(st.text(), lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner)))
def test_always_valid_json_and_never_a_long_token(value: Any) -> None:
    text = payload(value)
    json.loads(text)
    # A run of 120+ non-space characters can only come from JSON punctuation joining
    # short pieces, never from one string value left whole.
    for string in re.findall(r'"((?:[^"\\]|\\.)*)"', text):
        assert not re.fullmatch(r"\S{120,}", json.loads(f'"{string}"'))


def test_anthropic_server_tool_result_renders_its_titles_not_its_blob() -> None:
    result = {
        "type": "web_search_tool_result",
        "tool_use_id": "t1",
        "content": [{"type": "web_search_result", "title": "News", "encrypted_content": TOKEN}],
    }
    events = [
        {"type": "message_start", "message": {"id": "m1", "role": "assistant", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": result},
        {"type": "content_block_stop", "index": 0},
    ]
    engine = create_conversation_engine(anthropic.DEFINITIONS, event_type=anthropic.event_type)
    engine.push_many(anthropic.scope(events))
    block = engine.nodes()[1]
    text = anthropic.BLOCK.render_text(block)
    assert '"title": "News"' in text
    assert TOKEN not in text
    assert TOKEN not in anthropic.BLOCK.render_html(block)
