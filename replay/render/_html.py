"""The HTML renderer: a self-contained page, each node's fragment cached by state.

Conversation content is untrusted. The page escapes everything it writes itself
(the title, keys, kinds, the fallback's JSON) with ``html.escape(..., quote=True)``
and puts nothing from content in a URL, a script or an event handler. Bodies come
from the definitions' ``render_html``, which escape their own content by contract;
as a second line of defence the page carries a Content-Security-Policy that
forbids scripts, so a definition that forgets to escape cannot run code.

States are immutable values, so a node whose state object (and place) did not
change renders to the same HTML: ``HtmlRenderer`` keeps the last fragment per key
and re-renders only nodes whose state object is new. A streaming message then
costs one fragment per notification, not one per node. A fragment is kept as the
HTML around its Markdown containers and their blocks (``render_blocks``), so the
live page can be sent, for a streaming text, only the blocks that changed
(``HtmlRenderer.patch``); the whole fragment is that HTML with the blocks put back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from html import escape
from importlib import resources
from typing import Any

import attrs

from definitions._render import (
    BLOCK_MARK,
    NOT_JOINED,
    Blocks,
    Joined,
    joined,
    render_blocks,
    unjoined,
)
from engine import Node

from .._errors import RenderError
from ._common import Paragraphs, ToolJoin, call_member, members, pretty_state

__all__ = ["BlockPatch", "HtmlRenderer", "kind_stylesheets", "render_html"]

# The one stylesheet of every view: the static page inlines it, the live page links
# it (replay/static/convo.css), so both look the same.
_STYLE = resources.files("replay").joinpath("static/convo.css").read_text(encoding="utf-8")

# No script may run, whatever a body contains; styles only from the inline sheet.
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'"


def kind_stylesheets(definitions: Iterable[Any]) -> list[str]:
    """The CSS the definitions bring, each once, in order: a definition's
    ``stylesheet`` attribute (CSS text) styles its kind wherever it is shown (the
    static page inlines it, the live page serves it as ``kinds.css``)."""
    found = (getattr(definition, "stylesheet", None) for definition in definitions)
    return list(dict.fromkeys(css for css in found if isinstance(css, str) and css))


_TURN = re.compile(r'<div class="msg" data-role="([^"]*)"')  # definitions._render.bubble


def _fallback(node: Node) -> str:
    try:
        text = pretty_state(node.state)
    except (RecursionError, TypeError, ValueError) as exc:  # a state with no JSON form
        raise RenderError(
            f"node {node.key} ({node.kind!r}) has no JSON form to show: "
            f"{type(exc).__name__}: {exc}",
            kind=node.kind,
            key=node.key,
            method="render_html",
        ) from exc
    return f'<pre class="state">{escape(text, quote=True)}</pre>'


def _error_card(node: Node, exc: RenderError) -> str:
    """What a node shows when its definition cannot render it: the error, escaped."""
    key = escape(node.key, quote=True)
    return (
        f"\n<header>#{node.seq} {key}</header>\n"
        f'<div class="body"><pre class="error">{escape(str(exc), quote=True)}</pre></div>\n'
    )


@attrs.frozen
class BlockPatch:
    """In a fragment's Markdown container ``at`` (``[data-blocks]`` elements in
    document order), the last ``drop`` blocks (each a ``BLOCK_MARK`` comment and what
    follows it) replaced by ``html``: blocks, each after its mark."""

    at: int
    drop: int
    html: str


class _Rendered:
    """One node version's fragment: ``pieces`` around ``blocks`` (one piece more)."""

    __slots__ = ("_html", "blocks", "join", "kind", "pieces", "seq", "state", "turn")

    def __init__(
        self,
        node: Node,
        join: Joined,
        pieces: tuple[str, ...],
        blocks: tuple[Blocks, ...],
        turn: str = "",
    ) -> None:
        self.state, self.seq, self.kind, self.join = node.state, node.seq, node.kind, join
        self.pieces, self.blocks, self.turn = pieces, blocks, turn
        self._html: str | None = None

    def html(self) -> str:
        if self._html is None:
            parts = [self.pieces[0]]
            for blocks, piece in zip(self.blocks, self.pieces[1:], strict=True):
                parts += (blocks.html(), piece)
            self._html = "".join(parts)
        return self._html


def _block_patch(at: int, old: Blocks, new: Blocks) -> BlockPatch | None:
    """The patch from ``old`` to ``new``, reading only the blocks after ``old``'s
    settled ones; ``None`` unless ``new`` extends the same lineage (or ``old`` had
    none settled)."""
    if old.count and (new.settled is not old.settled or new.count < old.count):
        return None
    before = old.fresh
    after = [*new.settled[old.count : new.count], *new.fresh]
    same = 0
    while same < len(before) and same < len(after) and before[same] == after[same]:
        same += 1
    changed = after[same:]
    return BlockPatch(at, len(before) - same, "".join(BLOCK_MARK + html for html in changed))


class HtmlRenderer:
    """Renders views to HTML, re-rendering only the nodes whose state changed.

    Use one per live view (e.g. as a subscriber's renderer): ``fragment(node)`` is
    the node's ``<article>``; ``render_nodes(nodes)`` their concatenation;
    ``render(nodes)`` the complete page; ``patch(node, ...)`` what changed in its
    Markdown since the version last rendered; ``join(nodes)`` joins tool calls and
    their results over the view (one card each: see ``definitions._render``) and a
    text a citation split into nodes (one paragraph, shown by its first node:
    ``Paragraphs``), and names the nodes whose fragment that changed. The cache
    holds one fragment per key of the last view rendered (keys absent from it are
    dropped), keyed by the state object's identity, so it never grows beyond the
    view. ``hits`` and ``misses`` count fragment lookups.
    """

    def __init__(self, definitions: Iterable[Any], *, title: str = "Conversation") -> None:
        self.title = title
        definitions = tuple(definitions)
        self.stylesheets = kind_stylesheets(definitions)
        self._render: dict[str, Callable[[Node], Any]] = members(definitions, "render_html")
        # key -> the last version rendered; holding the state keeps its identity unique.
        self._cache: dict[str, _Rendered] = {}
        self._tools = ToolJoin(definitions)
        self._paragraphs = Paragraphs(definitions)
        self._tool_joins: dict[str, Joined] = {}  # the tool join last read
        self._joins: dict[str, Joined] = {}
        self.hits = 0
        self.misses = 0

    def join(self, nodes: Iterable[Node], changed: Iterable[Node] | None = None) -> set[str]:
        """Join the tool calls and results of ``nodes`` (the whole view) for the
        fragments rendered next; the keys whose fragment the join changed.
        ``changed``: the nodes new or changed since the last join, when known (a live
        view's notification): only those are read."""
        nodes = tuple(nodes)
        changed = None if changed is None else tuple(changed)
        tools = self._tools.of(nodes, changed)
        keys = self._paragraphs.of(nodes, changed)
        before = self._tool_joins
        if tools is not before:
            self._tool_joins = tools
            keys |= {
                key
                for key in before.keys() | tools.keys()
                if before.get(key, NOT_JOINED) != tools.get(key, NOT_JOINED)
            }
        texts = self._paragraphs.joined
        out: set[str] = set()
        for key in keys:
            joined = tools.get(key, NOT_JOINED)
            text = texts.get(key)
            if text is not None:  # a text split into nodes: the paragraph its first shows
                joined = attrs.evolve(joined, paragraph=text.paragraph, continued=text.continued)
            if self._joins.get(key, NOT_JOINED) == joined:
                continue
            out.add(key)
            if joined == NOT_JOINED:
                self._joins.pop(key, None)
            else:
                self._joins[key] = joined
        return out

    def fragment(self, node: Node) -> str:
        """The node wrapped in ``<article id=key data-key data-kind data-seq>``."""
        return self._rendered(node).html()

    def patch(self, node: Node, state: object, seq: int) -> list[BlockPatch] | None:
        """The block patches that turn the node's fragment as of ``state`` at ``seq``
        into its fragment now, when that version is the one last rendered and only
        Markdown blocks changed; ``None`` when the fragment must be sent whole.
        Costs what changed, not the fragment's length."""
        old = self._cache.get(node.key)
        new = self._rendered(node)
        if old is None or old.state is not state or old.seq != seq or old.kind != new.kind:
            return None
        if old.pieces != new.pieces:
            return None
        patches: list[BlockPatch] = []
        for at, (before, after) in enumerate(zip(old.blocks, new.blocks, strict=True)):
            patch = _block_patch(at, before, after)
            if patch is None:
                return None
            if patch.drop or patch.html:
                patches.append(patch)
        return patches

    def _rendered(self, node: Node) -> _Rendered:
        cached = self._cache.get(node.key)
        join = self._joins.get(node.key, NOT_JOINED)
        if (
            cached is not None
            and cached.state is node.state
            and cached.seq == node.seq
            and cached.kind == node.kind
            and cached.join == join
        ):
            self.hits += 1
            return cached
        self.misses += 1
        rendered = self._cache[node.key] = self._wrap(node, join)
        return rendered

    def _wrap(self, node: Node, join: Joined) -> _Rendered:
        member = self._render.get(node.kind)
        pieces: list[str]
        blocks: list[Blocks] = []
        key = escape(node.key, quote=True)
        kind = escape(node.kind, quote=True)
        css = "node"
        try:
            if member is None:
                pieces = [_fallback(node)]
            else:
                token = joined(join)
                try:
                    pieces, blocks = render_blocks(lambda: call_member(member, node, "render_html"))
                finally:
                    unjoined(token)
        except RenderError as exc:
            # One node that cannot be shown costs its own place, not the page.
            css, pieces, blocks = "node render-error", [_error_card(node, exc)], []
        # The key is for scripts and links (id, data-key), never shown; a node with
        # nothing to show (a step, an empty container) keeps its place, hidden, so
        # the live page can still patch it in order.
        shown = blocks or any(piece and not piece.isspace() for piece in pieces)
        hidden = "" if shown else " hidden"
        # A node that opens with a turn's bubble carries the turn's role, so the
        # stylesheet joins consecutive turns with sibling selectors (a :has() rule
        # costs the browser seconds on a long page).
        found = _TURN.match(pieces[0])
        turn = found.group(1) if found else ""
        if join.continued and not shown:
            # Shown in its paragraph's head: it keeps the head's turn, so the turn
            # goes on across it to the bubble after it.
            head = self._cache.get(self._paragraphs.heads.get(node.key, ""))
            turn = head.turn if head is not None else ""
        role = f' data-turn="{turn}"' if turn else ""
        pieces[0] = (
            f'<article class="{css}" id="{key}" data-key="{key}" data-kind="{kind}" '
            f'data-seq="{node.seq}"{role}{hidden}>{pieces[0]}'
        )
        pieces[-1] += "</article>\n"
        return _Rendered(node, join, tuple(pieces), tuple(blocks), turn)

    def render_nodes(self, nodes: Iterable[Node]) -> str:
        """The nodes' fragments in order; drops cached fragments of keys not among them."""
        return "".join(self._fragments(tuple(nodes)))

    def _fragments(self, nodes: tuple[Node, ...]) -> list[str]:
        self.join(nodes)
        fragments = [self.fragment(node) for node in nodes]
        if len(self._cache) > len(fragments):
            keep = {node.key for node in nodes}
            self._cache = {key: entry for key, entry in self._cache.items() if key in keep}
        return fragments

    def render(self, nodes: Iterable[Node]) -> str:
        """A complete, self-contained HTML page of the view."""
        nodes = tuple(nodes)
        title = escape(self.title, quote=True)
        # "</" would end the <style> element; in CSS "<\/" reads the same.
        kinds = "".join(f"{css}\n" for css in self.stylesheets).replace("</", "<\\/")
        return (
            "<!DOCTYPE html>\n"
            '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{title}</title>\n<style>\n{_STYLE}{kinds}</style>\n</head>\n<body>\n"
            f'<main>\n<h1>{title}</h1>\n<div class="conversation">\n'
            f"{self._body(nodes)}</div>\n</main>\n</body>\n</html>\n"
        )

    def _body(self, nodes: tuple[Node, ...]) -> str:
        """The nodes' fragments, those before the latest compaction folded in one
        ``<details class="compacted">``: the history stays readable, out of the way."""
        fragments = self._fragments(nodes)
        cut = max((n for n, node in enumerate(nodes) if node.kind == "compaction"), default=0)
        if not cut:
            return "".join(fragments)
        earlier = "".join(fragments[:cut])
        later = "".join(fragments[cut:])
        rows = "row" if cut == 1 else "rows"
        return (
            f'<details class="compacted"><summary>{cut:,} {rows} before the compaction '
            f"below</summary>\n{earlier}</details>\n{later}"
        )


def render_html(
    nodes: Iterable[Node], definitions: Iterable[Any], *, title: str = "Conversation"
) -> str:
    """The view as a complete, self-contained HTML page (inline stylesheet, no script).

    Each node is an ``<article>`` with ``id``/``data-key`` = its key, ``data-kind``
    and ``data-seq``; its body is the definition's ``render_html(node)`` (which must
    escape its content) or, for a kind without one, the state as escaped JSON.
    Everything the page itself writes, ``title`` included, is escaped. A node its
    definition fails to render shows the error in its place (an error card) instead
    of failing the page. For a live
    view rendered again and again, keep an ``HtmlRenderer`` instead.
    """
    return HtmlRenderer(definitions, title=title).render(nodes)
