"""The static page of a conversation with branches: every leaf's view, one shown.

Each leaf's view is a ``<section class="branch" id="leaf-ID">``; the active one is
shown, and the URL's fragment (``#leaf-ID``) shows another, by CSS ``:target``
alone: the page keeps its no-script policy. Above each node that has siblings a
switcher (``&lsaquo; 2/3 &rsaquo;``) links to the neighbouring versions' leaves: plain links, so
Tab reaches them and Enter follows them, the back button returns, and a reload
keeps the leaf the URL names. Ids stay unique: the articles of every section but
the active one get their leaf's prefix.

Everything written here is escaped (leaf ids and keys come from the log).
May import what ``replay.render`` may.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from html import escape
from typing import Any

import attrs

from definitions.branch import Version
from engine import Node

from ._html import _CSP, _STYLE, HtmlRenderer

__all__ = ["BranchPage", "render_branches_html", "switcher_html"]

_BRANCH_STYLE = """
.branch{display:none}
.branch:target,main:not(:has(.branch:target)) .branch.active{display:block}
nav.versions{display:flex;gap:.4rem;align-items:center;justify-content:flex-end;
  font-size:.8rem;color:var(--muted);margin:0 0 .2rem}
nav.versions a,nav.versions span[aria-disabled]{padding:0 .35rem;text-decoration:none;
  border-radius:4px}
nav.versions a:focus-visible{outline:2px solid var(--link)}
nav.versions span[aria-disabled]{opacity:.35}
"""

_ARTICLE = '<article class="node" id="'


@attrs.frozen
class BranchPage:
    """One leaf's view for the page: its ``leaf`` id, ``nodes`` and version
    ``markers`` by node key."""

    leaf: str
    nodes: tuple[Node, ...]
    markers: Mapping[str, Version]


def _anchor(leaf: str) -> str:
    return escape(f"leaf-{leaf}", quote=True)


def _fragment_link(leaf: str) -> str:
    return f"#leaf-{leaf}"


def switcher_html(version: Version, href: Callable[[str], str] = _fragment_link) -> str:
    """The ``&lsaquo; 2/3 &rsaquo;`` switcher of a node with sibling versions: links
    (``href(leaf)``, escaped here) to the neighbouring versions' leaves, so Tab
    reaches them; a missing neighbour is a disabled glyph. ``data-leaf`` names each
    link's leaf for the live page's script."""
    index, count, leaves = version.index, version.count, version.leaves

    def step(to: int, glyph: str, label: str) -> str:
        if 1 <= to <= count and leaves[to - 1]:
            leaf = leaves[to - 1]
            return (
                f'<a href="{escape(href(leaf), quote=True)}" '
                f'data-leaf="{escape(leaf, quote=True)}" aria-label="{label}">{glyph}</a>'
            )
        return f'<span aria-disabled="true">{glyph}</span>'

    return (
        f'<nav class="versions" aria-label="version {index} of {count}">'
        f"{step(index - 1, '&lsaquo;', 'previous version')}<span>{index}/{count}</span>"
        f"{step(index + 1, '&rsaquo;', 'next version')}</nav>\n"
    )


def render_branches_html(
    pages: Sequence[BranchPage],
    definitions: Iterable[Any],
    *,
    active: str,
    title: str = "Conversation",
) -> str:
    """A self-contained page showing the ``active`` leaf's view, with every other
    leaf's a link away (see the module docstring). ``pages`` are the leaves' views."""
    renderer = HtmlRenderer(definitions, title=title)
    sections = []
    for page in pages:
        pieces = []
        prefix = "" if page.leaf == active else f"{page.leaf}/"
        for node in page.nodes:
            version = page.markers.get(node.key)
            if version is not None:
                pieces.append(switcher_html(version))
            fragment = renderer.fragment(node)
            if prefix:
                fragment = fragment.replace(_ARTICLE, _ARTICLE + escape(prefix, quote=True), 1)
            pieces.append(fragment)
        state = " active" if page.leaf == active else ""
        sections.append(
            f'<section class="branch{state}" id="{_anchor(page.leaf)}" '
            f'data-leaf="{escape(page.leaf, quote=True)}">\n<div class="conversation">\n'
            f"{''.join(pieces)}</div>\n</section>\n"
        )
    shown = escape(title, quote=True)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{shown}</title>\n<style>\n{_STYLE}{_BRANCH_STYLE}</style>\n</head>\n<body>\n"
        f"<main>\n<h1>{shown}</h1>\n{''.join(sections)}</main>\n</body>\n</html>\n"
    )
