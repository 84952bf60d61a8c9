"""definitions._render: JSON for a reader (opaque tokens shortened), and the HTML
building blocks every definition renders with: safe Markdown, code, cards, rows."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from definitions import StreamedText, anthropic
from definitions import _render as render
from definitions._render import clean, code, line, markdown, payload, plain, safe_url, tool_card
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


@pytest.mark.slow
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
    engine.push_many(anthropic.prepare(events))
    block = engine.nodes()[1]
    text = anthropic.BLOCK.render_text(block)
    assert '"title": "News"' in text
    assert TOKEN not in text
    assert TOKEN not in anthropic.BLOCK.render_html(block)


# -- HTML blocks ----------------------------------------------------------------------


def links(html: str) -> list[str]:
    return re.findall(r'<a [^>]*href="([^"]*)"', html)


class TestMarkdown:
    def test_renders_commonmark_and_keeps_line_breaks(self) -> None:
        html = markdown("## Plan\n\n- **one**\n- `two`\n\nline one\nline two")
        assert "<h2>Plan</h2>" in html
        assert "<li><strong>one</strong></li>" in html
        assert "<code>two</code>" in html
        assert "line one<br>\nline two" in html

    def test_fenced_code_is_highlighted_and_escaped(self) -> None:
        html = markdown("```python\nif x < 1: print('<b>')\n```")
        assert '<span class="hl-k">if</span>' in html
        assert "&lt;b&gt;" in html
        assert "<b>" not in html

    @pytest.mark.parametrize(
        "source",
        [
            "[x](javascript:alert(1))",
            "[x](JaVaScRiPt:alert(1))",
            "[x](java\tscript:alert(1))",
            "<javascript:alert(1)>",
            "[x](data:text/html,<script>alert(1)</script>)",
            "[x](vbscript:msgbox(1))",
            "![i](data:image/svg+xml,<svg onload=alert(1)>)",
            "![i](https://example.com/tracker.png)",
            "[x][r]\n\n[r]: javascript:alert(1)",
        ],
    )
    def test_links_only_to_web_and_mail_and_no_images(self, source: str) -> None:
        html = markdown(source)
        assert "<img" not in html
        assert all(safe_url(href) for href in links(html)), html

    def test_web_links_do_not_hand_over_the_opener(self) -> None:
        html = markdown("[a](https://example.com) <mailto:x@example.com>")
        assert links(html) == ["https://example.com", "mailto:x@example.com"]
        assert html.count('rel="noopener noreferrer nofollow"') == 2

    def test_raw_html_is_text(self) -> None:
        html = markdown('<div onclick="alert(1)">x</div>\n\n<script>alert(2)</script> <b>y</b>')
        assert "<script" not in html
        assert "<div onclick" not in html
        assert "&lt;script&gt;" in html
        assert "&lt;b&gt;y&lt;/b&gt;" in html

    def test_bidi_controls_are_shown_not_obeyed(self) -> None:
        for html in (markdown("a\u202eb"), plain("a\u2066b"), code("a\u202db")):
            assert not any(chr(c) in html for c in (0x202D, 0x202E, 0x2066))
        assert clean("a\u202eb\u2069") == "a[U+202E]b[U+2069]"
        assert clean("\u200fmark") == "\u200fmark"  # a mark only hints a direction

    def test_without_markdown_it_text_is_escaped_with_its_line_breaks(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(render, "_markdown_it", lambda: None)
        assert markdown("**a**\n<b>") == '<div class="plain text" dir="auto">**a**\n&lt;b&gt;</div>'


# Markdown-ish text: words, blank lines, fences, list items, indented continuations.
_PIECES = ["word ", "word\n", "\n\n", "```\n", "~~~\n", "`x` ", "- item\n", "  more\n"]


@given(
    st.lists(st.sampled_from(_PIECES), max_size=400),
    st.lists(st.integers(min_value=1, max_value=700), min_size=1, max_size=40),
)
def test_a_streamed_text_renders_as_its_string_does(pieces: list[str], cuts: list[int]) -> None:
    """Block by block, the settled blocks kept per lineage: every version renders
    exactly as a fresh render of its string (the cache never shows stale blocks)."""
    text = "".join(pieces)
    streamed = StreamedText()
    position = 0
    for cut in cuts * (len(text) // sum(cuts) + 1):
        if position >= len(text):
            break
        streamed = streamed.append(text[position : position + cut])
        position += cut
        assert markdown(streamed) == markdown(str(streamed))
    # An older version of the same lineage, after newer ones were rendered.
    assert markdown(StreamedText(text[:10])) == markdown(text[:10])


class TestCards:
    def test_a_tool_card_has_name_arguments_result_and_status(self) -> None:
        html = tool_card("read_file", "done", arguments='{"path": "a.py"}', result="ok")
        assert html.startswith('<details class="tool" data-status="done">')
        assert '<span class="tool-name">read_file</span>' in html
        assert "&quot;path&quot;" in html or "hl-" in html
        assert ">ok<" in html

    @pytest.mark.parametrize(
        ("arguments", "preview"),
        [
            ('{"query": "tech news today"}', "tech news today"),  # one argument: its value
            ({"path": "a.py", "limit": 20}, "limit: 20, path: a.py"),  # as payload: sorted
            ({"limit": 20, "path": "a.py"}, "limit: 20, path: a.py"),  # so any order alike
            ('{"path": "a.py", "flags": ["-n"]}', "flags: [&quot;-n&quot;], path: a.py"),
            ('{"query": "unfini', "{&quot;query&quot;: &quot;unfini"),  # streaming: as written
            ("ls -la", "ls -la"),
            ([1, 2], "[1, 2]"),
            ({"text": "x" * 100}, "x" * 79 + "…"),
            ({"q": "<b>&"}, "&lt;b&gt;&amp;"),  # escaped like everything else
        ],
    )
    def test_the_summary_line_reads_the_arguments_by_name(
        self, arguments: object, preview: str
    ) -> None:
        html = tool_card("tool", "called", arguments=arguments)
        assert f'<span class="args">{preview}</span>' in html

    def test_a_failed_call_is_open_and_a_long_result_folded(self) -> None:
        assert " open>" in tool_card("x", "failed", error="boom")
        long = tool_card("x", "done", result="line\n" * 50)
        assert '<details class="long"><summary>result (51 lines' in long

    def test_a_row_keeps_its_fields_apart_and_drops_empty_ones(self) -> None:
        html = line("approval", ("decision", "approved"), ("by", ""), ("reason", "<ok>"))
        assert html == (
            '<div class="row approval"><span class="decision">approved</span>'
            '<span class="reason">&lt;ok&gt;</span></div>'
        )


@pytest.mark.slow
def test_versions_of_one_lineage_rendered_from_several_threads() -> None:
    """The settled blocks are shared state: threads rendering one lineage at once
    each get exactly a fresh render of their version."""
    import threading

    versions = [StreamedText()]
    for n in range(300):
        versions.append(versions[-1].append(f"paragraph {n} " * 8 + "\n\n"))
    expected = {id(v): markdown(str(v)) for v in versions}
    failures: list[int] = []
    barrier = threading.Barrier(4)

    def work(offset: int) -> None:
        barrier.wait()
        for version in versions[offset::4]:
            if markdown(version) != expected[id(version)]:
                failures.append(id(version))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_inline_parts_of_a_row_are_safe_inline_markdown() -> None:
    html = line("approval", ("action", "Run `rm` [x](javascript:alert(1)) <b>"), inline=("action",))
    assert (
        '<span class="action">Run <code>rm</code> [x](javascript:alert(1)) &lt;b&gt;</span>' in html
    )
