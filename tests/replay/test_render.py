"""Renderers: JSON, terminal text, HTML; untrusted content never escapes its place."""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Claim, Node, Reader, create_conversation_engine
from replay._replay import replay
from replay.render._common import RenderError, render_json
from replay.render._html import HtmlRenderer, render_html
from replay.render._text import render_text, strip_controls

from ._kinds import BareKind, CounterKind, MessageKind, conversation, kinds

HOSTILE = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    '<a href="javascript:alert(1)">x</a>',
    "\"' onmouseover=alert(1) x='",
]


SAFE_TAGS = {
    "html", "head", "meta", "title", "style", "body", "main", "h1", "div", "article",
    "header", "pre", "p",
}  # fmt: skip
URL_ATTRIBUTES = {"href", "src", "action", "formaction", "srcset", "xlink:href", "poster"}


class Elements(HTMLParser):
    """What a browser would build: every tag with its attributes, and all text."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def assert_inert(page: str, content: str) -> None:
    """No element, handler or URL came from ``content``; its text survived intact."""
    parsed = Elements(page)
    for tag, attrs in parsed.tags:
        assert tag in SAFE_TAGS, tag
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            assert name not in URL_ATTRIBUTES, (tag, name, value)  # no javascript: anywhere
    assert content in "".join(parsed.text) or content in str(parsed.tags)


def bare(content: str, id: str = "b") -> tuple[Node, ...]:
    return replay([{"type": "bare", "id": id, "content": content}], [BareKind()])


class TestRenderJson:
    """render_json(nodes, definitions)"""

    def test_default_is_the_state(self) -> None:
        data = msgspec.json.decode(render_json(replay(conversation(), kinds()), kinds()))
        assert data[0] == {
            "id": "m1",
            "key": "message:m1",
            "kind": "message",
            "seq": 0,
            "state": {"done": False, "role": "user", "text": "Again"},  # StreamedText as str
        }
        assert data[1]["state"] == {"value": 3}

    def test_render_json_member(self) -> None:
        class Terse(CounterKind):
            def render_json(self, node: Node) -> object:
                return ["count", node.state.value]

        events = [{"type": "count", "id": "c", "reset": True}, {"type": "count", "id": "c"}]
        nodes = replay(events, [Terse()])
        assert msgspec.json.decode(render_json(nodes, [Terse()]))[0]["state"] == ["count", 1]

    def test_equal_views_equal_bytes(self) -> None:
        """Canonical: dict key order does not leak into the output."""
        a = Node("k:1", "k", "1", 0, {"b": 1, "a": 2})
        b = Node("k:1", "k", "1", 0, {"a": 2, "b": 1})
        assert render_json([a], []) == render_json([b], [])

    def test_indent(self) -> None:
        text = render_json(bare("x"), [BareKind()], indent=2).decode()
        assert text.startswith("[\n  {\n")

    def test_no_json_form(self) -> None:
        node = Node("odd:1", "odd", "1", 0, object())
        with pytest.raises(RenderError, match=r"odd:1 has no JSON form.*render_json\(node\)"):
            render_json([node], [])


class TestStripControls:
    """strip_controls: content cannot drive the terminal."""

    @pytest.mark.parametrize(
        ("raw", "clean"),
        [
            ("\x1b[31mred\x1b[0m", "red"),
            ("\x1b]0;owned title\x07after", "after"),
            ("\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\", "link"),
            ("a\rb\x08c\x07d", "abcd"),
            ("\x9b31mx\x85y", "31mxy"),
            ("\x1bPdevice control\x1b\\ok", "ok"),
            ("\x1b[2J\x1b[Hx", "x"),
            ("tab\tand\nnewline", "tab\tand\nnewline"),
            ("plain", "plain"),
            ("\x1b", ""),
        ],
    )
    def test_examples(self, raw: str, clean: str) -> None:
        assert strip_controls(raw) == clean

    @settings(max_examples=200)
    @given(st.text())
    def test_no_control_survives(self, text: str) -> None:
        out = strip_controls(text)
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", out)


class TestRenderText:
    """render_text(nodes, definitions, color=...)"""

    def test_plain(self) -> None:
        text = render_text(replay(conversation()[:3], kinds()), kinds(), color=False)
        assert text == "user: Hello\n"
        keyed = render_text(replay(conversation()[:3], kinds()), kinds(), color=False, keys=True)
        assert keyed == "#0 message:m1\n  user: Hello\n"

    def test_fallback_is_indented_json(self) -> None:
        text = render_text(bare("hi"), [BareKind()], color=False)
        assert text == '{\n  "content": "hi"\n}\n'

    def test_strips_content_and_ids(self) -> None:
        events = [
            {"type": "message.start", "id": "m\x1b]0;title\x07", "role": "user"},
            {"type": "message.delta", "id": "m\x1b]0;title\x07", "delta": "\x1b[2Jwiped\r"},
        ]
        text = render_text(replay(events, [MessageKind()]), [MessageKind()], color=False)
        assert "\x1b" not in text
        assert "\r" not in text
        assert "wiped" in text

    def test_not_a_terminal_is_plain(self, capsys: pytest.CaptureFixture[str]) -> None:
        """color=None under capture (no tty): no escape codes."""
        text = render_text(replay(conversation(), kinds()), kinds())
        assert "\x1b" not in text

    def test_color_without_rich_is_plain(self, monkeypatch: pytest.MonkeyPatch) -> None:
        for name in [m for m in sys.modules if m == "rich" or m.startswith("rich.")]:
            monkeypatch.delitem(sys.modules, name)
        monkeypatch.setitem(sys.modules, "rich", None)  # import rich -> ImportError
        nodes = replay(conversation()[:3], kinds())
        assert render_text(nodes, kinds(), color=True) == render_text(nodes, kinds(), color=False)

    def test_color_with_rich(self) -> None:
        pytest.importorskip("rich")
        events = [
            {"type": "message.start", "id": "m", "role": "user"},
            {"type": "message.delta", "id": "m", "delta": "[bold]x[/bold] \x1b]0;t\x07y"},
        ]
        text = render_text(replay(events, [MessageKind()]), [MessageKind()], color=True)
        assert "\x1b[" in text  # styled
        assert "[bold]x[/bold]" in text  # content is not rich markup
        assert "\x1b]" not in text  # but content's own sequences are gone
        assert "\x07" not in text

    def test_render_member_error(self) -> None:
        class Broken(BareKind):
            def render_text(self, node: Node) -> str:
                raise KeyError("oops")

        with pytest.raises(RenderError, match=r"'bare' raised in render_text\(\) for node bare:b"):
            render_text(bare("x"), [Broken()], color=False)


class TestRenderHtml:
    """render_html(nodes, definitions, title=...)"""

    @pytest.mark.parametrize("content", HOSTILE)
    def test_fallback_escapes(self, content: str) -> None:
        page = render_html(bare(content, id=content), [BareKind()])
        assert_inert(page, content)
        assert [a["data-key"] for t, a in Elements(page).tags if t == "article"] == [
            f"bare:{content}"
        ]

    @pytest.mark.parametrize("title", HOSTILE)
    def test_title_escaped(self, title: str) -> None:
        page = render_html(bare("x"), [BareKind()], title=title)
        assert_inert(page, title)
        assert "".join(Elements(page).text).count(title) == 2  # <title> and <h1>

    def test_page_structure(self) -> None:
        nodes = replay(conversation(), kinds())
        page = render_html(nodes, kinds(), title="Demo")
        assert page.startswith("<!DOCTYPE html>")
        assert page.rstrip().endswith("</html>")
        assert "<title>Demo</title>" in page
        assert "<style>" in page
        assert "Content-Security-Policy" in page
        assert "default-src 'none'" in page
        assert "<script" not in page
        for node in nodes:
            assert (
                f'id="{node.key}" data-key="{node.key}" data-kind="{node.kind}" '
                f'data-seq="{node.seq}"'
            ) in page
        assert "<p>assistant: Hi there!</p>" in page  # the definition's render_html
        assert "&lt;b&gt;raw&lt;/b&gt;" in page  # the bare kind's fallback

    def test_kind_without_definition(self) -> None:
        """A node whose kind no definition claims still renders, as escaped JSON."""
        node = Node("ghost:1", "ghost", "1", 0, {"x": "<i>"})
        page = render_html([node], [])
        assert 'data-kind="ghost"' in page
        assert "&lt;i&gt;" in page

    def test_unencodable_state_falls_back_to_repr(self) -> None:
        class Odd:
            def __repr__(self) -> str:
                return "<Odd>"

        page = render_html([Node("odd:1", "odd", "1", 0, Odd())], [])
        assert "&lt;Odd&gt;" in page


class TestHtmlRenderer:
    """HtmlRenderer: unchanged nodes are not rendered again."""

    def test_cache_hits_across_notifications(self) -> None:
        calls: list[str] = []

        class Counting(MessageKind):
            def render_html(self, node: Node) -> str:
                calls.append(node.key)
                return super().render_html(node)

        definitions = [Counting(), CounterKind()]
        renderer = HtmlRenderer(definitions)
        engine = create_conversation_engine(definitions)
        pages: list[str] = []
        engine.subscribe(lambda nodes: pages.append(renderer.render(nodes)))
        engine.push({"type": "message.start", "id": "a", "role": "user"})
        engine.push({"type": "message.start", "id": "b", "role": "assistant"})
        engine.push({"type": "count", "id": "c", "reset": True})  # publication "none"
        assert calls == ["message:a", "message:b"]  # a rendered once, for two pages
        assert (renderer.hits, renderer.misses) == (1, 2)
        calls.clear()
        engine.push({"type": "message.delta", "id": "b", "delta": "hel"})
        assert calls == ["message:b"]
        assert (renderer.hits, renderer.misses) == (2, 4)  # the counter's first render
        engine.push({"type": "message.delta", "id": "b", "delta": "lo"})
        assert calls == ["message:b", "message:b"]  # a and the counter from the cache
        assert (renderer.hits, renderer.misses) == (4, 5)
        assert "hello" in pages[-1]
        assert pages[-1] == render_html(engine.nodes(), definitions)

    def test_same_state_new_seq_is_rerendered(self) -> None:
        renderer = HtmlRenderer([])
        state = {"v": 1}
        renderer.fragment(Node("k:1", "k", "1", 0, state))
        html = renderer.fragment(Node("k:1", "k", "1", 5, state))
        assert 'data-seq="5"' in html
        assert renderer.misses == 2

    def test_cache_forgets_absent_keys(self) -> None:
        renderer = HtmlRenderer([BareKind()])
        renderer.render_nodes(bare("x", id="one"))
        renderer.render_nodes(bare("y", id="two"))
        renderer.render_nodes(bare("x", id="one"))
        assert renderer.hits == 0

    def test_render_member_used_per_kind(self) -> None:
        class Shouting(BareKind):
            def render_html(self, node: Node) -> str:
                return "<b>LOUD</b>"

        assert "<b>LOUD</b>" in render_html(bare("x"), [Shouting()])


def test_new_kind_renders_without_touching_renderers() -> None:
    """A kind written here (no render members) goes through every renderer."""

    class Fresh:
        kind = "fresh"

        def match(self, event: Any) -> Claim | None:
            return Claim("1", "start")

        def start(self, event: Any, reader: Reader) -> Any:
            return {"seen": event}

        def update(self, state: Any, event: Any) -> Any:
            return state

    nodes = replay(["<x>"], [Fresh()])
    assert msgspec.json.decode(render_json(nodes, [Fresh()]))[0]["state"] == {"seen": "<x>"}
    assert '"seen": "<x>"' in render_text(nodes, [Fresh()], color=False)
    assert "&lt;x&gt;" in render_html(nodes, [Fresh()])


def test_bundled_example_renders_inert() -> None:
    """The built-in kinds' HTML of the example log adds no element, handler or URL."""
    from .test_determinism import example_events

    builtin, events = example_events()
    nodes = replay(events, builtin.DEFINITIONS)
    page = render_html(nodes, builtin.DEFINITIONS, title="example")
    parsed = Elements(page)
    for tag, attrs in parsed.tags:
        for name in attrs:
            assert not name.startswith("on"), (tag, name)
            assert name not in URL_ATTRIBUTES, (tag, name)
    assert len([t for t, _ in parsed.tags if t == "article"]) == len(nodes)
    assert "\x1b" not in render_text(nodes, builtin.DEFINITIONS, color=False)
    assert msgspec.json.decode(render_json(nodes, builtin.DEFINITIONS))


class TestReadablePage:
    """The page a person reads: no key shown, nothing empty shown, the same sheet live."""

    def test_keys_stay_in_ids_and_data_attributes(self) -> None:
        from definitions import builtin
        from replay import load_events
        from replay.serve._command import EXAMPLE

        nodes = replay(load_events(EXAMPLE).events, builtin.DEFINITIONS)
        parsed = Elements(render_html(nodes, builtin.DEFINITIONS))
        text = "".join(parsed.text)
        articles = [attrs for tag, attrs in parsed.tags if tag == "article"]
        assert [a["data-key"] for a in articles] == [node.key for node in nodes]
        assert all(a["id"] == a["data-key"] for a in articles)
        assert not any(node.key in text for node in nodes)
        assert "header" not in {tag for tag, _ in parsed.tags}

    def test_a_node_with_nothing_to_show_is_a_hidden_article(self) -> None:
        class Quiet:
            kind = "bare"

            def match(self, event: Any) -> Claim:
                return Claim(event["id"], "start")

            def start(self, event: Any, reader: Any) -> str:
                return ""

            def update(self, state: str, event: Any) -> str:
                return state

            def render_html(self, node: Node) -> str:
                return ""

        nodes = replay([{"type": "bare", "id": "s"}], [Quiet()])
        page = render_html(nodes, [Quiet()])
        assert '<article class="node" id="bare:s" data-key="bare:s" data-kind="bare" ' in page
        assert 'data-seq="0" hidden></article>' in page

    def test_the_static_page_inlines_the_live_stylesheet(self) -> None:
        sheet = (Path(__file__).parents[2] / "replay" / "static" / "convo.css").read_text()
        assert sheet in render_html((), [])
