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
costs one fragment per notification, not one per node.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from html import escape
from importlib import resources
from typing import Any

from engine import Node

from ._render import call_member, members, pretty_state

__all__ = ["HtmlRenderer", "render_html"]

# The one stylesheet of every view: the static page inlines it, the live page links
# it (replay/static/convo.css), so both look the same.
_STYLE = resources.files("replay").joinpath("static/convo.css").read_text(encoding="utf-8")

# No script may run, whatever a body contains; styles only from the inline sheet.
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'"


def _fallback(node: Node) -> str:
    return f'<pre class="state">{escape(pretty_state(node.state), quote=True)}</pre>'


class HtmlRenderer:
    """Renders views to HTML, re-rendering only the nodes whose state changed.

    Use one per live view (e.g. as a subscriber's renderer): ``fragment(node)`` is
    the node's ``<article>``; ``render_nodes(nodes)`` their concatenation;
    ``render(nodes)`` the complete page. The cache holds one fragment per key of
    the last view rendered (keys absent from it are dropped), keyed by the state
    object's identity, so it never grows beyond the view. ``hits`` and ``misses``
    count fragment lookups.
    """

    def __init__(self, definitions: Iterable[Any], *, title: str = "Conversation") -> None:
        self.title = title
        self._render: dict[str, Callable[[Node], Any]] = members(definitions, "render_html")
        # key -> (state, seq, kind, html); holding the state keeps its identity unique.
        self._cache: dict[str, tuple[Any, int, str, str]] = {}
        self.hits = 0
        self.misses = 0

    def fragment(self, node: Node) -> str:
        """The node wrapped in ``<article id=key data-key data-kind data-seq>``."""
        cached = self._cache.get(node.key)
        if (
            cached is not None
            and cached[0] is node.state
            and cached[1] == node.seq
            and cached[2] == node.kind
        ):
            self.hits += 1
            return cached[3]
        self.misses += 1
        html = self._wrap(node)
        self._cache[node.key] = (node.state, node.seq, node.kind, html)
        return html

    def _wrap(self, node: Node) -> str:
        member = self._render.get(node.kind)
        body = _fallback(node) if member is None else call_member(member, node, "render_html")
        key = escape(node.key, quote=True)
        kind = escape(node.kind, quote=True)
        # The key is for scripts and links (id, data-key), never shown; a node with
        # nothing to show (a step, an empty container) keeps its place, hidden, so
        # the live page can still patch it in order.
        hidden = " hidden" if not body or body.isspace() else ""
        return (
            f'<article class="node" id="{key}" data-key="{key}" data-kind="{kind}" '
            f'data-seq="{node.seq}"{hidden}>{body}</article>\n'
        )

    def render_nodes(self, nodes: Iterable[Node]) -> str:
        """The nodes' fragments in order; drops cached fragments of keys not among them."""
        nodes = tuple(nodes)
        fragments = [self.fragment(node) for node in nodes]
        if len(self._cache) > len(fragments):
            keep = {node.key for node in nodes}
            self._cache = {key: entry for key, entry in self._cache.items() if key in keep}
        return "".join(fragments)

    def render(self, nodes: Iterable[Node]) -> str:
        """A complete, self-contained HTML page of the view."""
        nodes = tuple(nodes)
        title = escape(self.title, quote=True)
        return (
            "<!DOCTYPE html>\n"
            '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{title}</title>\n<style>\n{_STYLE}</style>\n</head>\n<body>\n"
            f'<main>\n<h1>{title}</h1>\n<div class="conversation">\n'
            f"{self.render_nodes(nodes)}</div>\n</main>\n</body>\n</html>\n"
        )


def render_html(
    nodes: Iterable[Node], definitions: Iterable[Any], *, title: str = "Conversation"
) -> str:
    """The view as a complete, self-contained HTML page (inline stylesheet, no script).

    Each node is an ``<article>`` with ``id``/``data-key`` = its key, ``data-kind``
    and ``data-seq``; its body is the definition's ``render_html(node)`` (which must
    escape its content) or, for a kind without one, the state as escaped JSON.
    Everything the page itself writes, ``title`` included, is escaped. For a live
    view rendered again and again, keep an ``HtmlRenderer`` instead.
    """
    return HtmlRenderer(definitions, title=title).render(nodes)
