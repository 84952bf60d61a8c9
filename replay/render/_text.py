"""The terminal renderer: plain text, styled with rich on a terminal when it is installed.

Conversation content is untrusted, and a terminal obeys escape sequences: a log
could set the window title, rewrite earlier lines, or on some terminals answer
back into the input. So everything printed (bodies, and the ids in headers, which
also come from events) passes through ``strip_controls`` first, and the rich path
hands content to rich as ``Text`` objects, never as markup.
"""

from __future__ import annotations

import io
import re
import shutil
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from definitions._render import (
    NOT_JOINED,
    Joined,
    clean,
    folding,
    joined,
    unfolding,
    unjoined,
)
from engine import Node

from ._common import ToolJoin, call_member, members, pretty_state

__all__ = ["render_text", "strip_controls", "text_pieces"]

# Whole escape sequences first, so their parameters do not linger as visible text:
# CSI (colours, cursor moves), OSC (window title, hyperlinks; ended by BEL or ST),
# DCS/SOS/PM/APC strings, then any other two-byte escape.
_SEQUENCES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"
    r"|\x1b[ -/]*[0-~]?"
)
# Then every C0 control but tab and newline, DEL, and the C1 range (0x9b is an
# 8-bit CSI on some terminals).
_CONTROLS = dict.fromkeys(
    [c for c in range(0x20) if c not in (0x09, 0x0A)] + [0x7F, *range(0x80, 0xA0)]
)


def strip_controls(text: str) -> str:
    """``text`` without terminal escape sequences or control characters (newline and
    tab are kept), so untrusted content cannot drive the terminal it is printed to;
    bidi controls are shown as ``[U+202E]``, so they cannot reverse the text around."""
    if text.isprintable():  # the common case: nothing to strip, no regex pass
        return text
    return clean(_SEQUENCES.sub("", text).translate(_CONTROLS))


def _body(node: Node, render: dict[str, Any], join: Joined, full: bool) -> str:
    member = render.get(node.kind)
    if member is None:
        return pretty_state(node.state)
    if join is NOT_JOINED and full:
        return str(call_member(member, node, "render_text"))
    token, fold = joined(join), folding(not full)
    try:
        return str(call_member(member, node, "render_text"))
    finally:
        unfolding(fold)
        unjoined(token)


def _use_color(color: bool | None) -> bool:
    if color is not None:
        return color
    isatty = getattr(sys.stdout, "isatty", None)
    return bool(isatty and isatty())


def render_text(
    nodes: Iterable[Node],
    definitions: Iterable[Any],
    *,
    color: bool | None = None,
    keys: bool = False,
    notes: Mapping[str, str] | None = None,
    full: bool = True,
) -> str:
    """The view as text to read: each node's body, a blank line between nodes.

    The body is the definition's ``render_text(node)`` when it has one, else the
    state as indented JSON; a node whose body is empty (a step, an empty container)
    is left out. ``keys=True`` heads each node with ``#seq kind:id`` and indents its
    body instead (for debugging, and to line up with ``--format nodes``). Control
    characters, escape sequences and bidi controls are stripped or shown from every
    piece. ``color=None`` styles with rich when stdout is a terminal and rich is
    installed; ``True`` styles whenever rich is installed; without rich, or with
    ``False``, the text is plain.
    """
    return "".join(text_pieces(nodes, definitions, color=color, keys=keys, notes=notes, full=full))


def text_pieces(
    nodes: Iterable[Node],
    definitions: Iterable[Any],
    *,
    color: bool | None = None,
    keys: bool = False,
    notes: Mapping[str, str] | None = None,
    full: bool = True,
) -> Iterator[str]:
    """``render_text``'s text in pieces, in order: a view of any size is written from
    them without a second copy of it (a long message is never indented into a copy)."""
    nodes = tuple(nodes)
    definitions = tuple(definitions)
    join = ToolJoin(definitions).of(nodes)
    render = members(definitions, "render_text")
    parts = _parts(nodes, render, members(definitions, "continues"), join, keys, full, notes or {})
    if _use_color(color):
        shown = [(header, _indent(body) if keys else body, on) for header, body, on in parts]
        styled = _render_rich(shown)
        if styled is not None:
            yield styled
            return
        parts = iter(shown)
    any_shown = False
    for n, (header, body, on_line) in enumerate(parts):
        if keys:
            yield header
            yield "\n"
            yield from _indented(body)
            yield "\n"
        else:
            # A body that goes on the line of the one before it (a cited sentence's
            # next piece) follows it directly; any other after a blank line.
            if n:
                yield "" if on_line else "\n\n"
            yield body
            any_shown = True
    if any_shown:
        yield "\n"


def _parts(
    nodes: Iterable[Node],
    render: dict[str, Any],
    continues: dict[str, Any],
    join: dict[str, Joined],
    keys: bool,
    full: bool,
    notes: Mapping[str, str],
) -> Iterator[tuple[str, str, bool]]:
    # (header, body, on the line before) per node shown: with keys every node under
    # its key, else the nodes with something to say (a step or an empty container
    # says nothing). A note (a branch's version marker) ends its node's body.
    for node in nodes:
        body = strip_controls(_body(node, render, join.get(node.key, NOT_JOINED), full))
        note = notes.get(node.key)
        if note is not None:
            body = f"{body.rstrip(chr(10))}\n({strip_controls(note)})"
        if keys:
            yield strip_controls(f"#{node.seq} {node.key}"), body, False
        elif body:
            member = continues.get(node.kind)
            on_line = member is not None and bool(call_member(member, node, "continues"))
            if on_line:
                # Its leading space or line breaks are the text's own: between a
                # cited sentence and the next one, or before the next heading.
                yield "", body.rstrip("\n"), True
            elif body.strip():
                # Exactly one blank line between nodes: a text block's own leading and
                # trailing newlines (Markdown's paragraph breaks) would add more.
                yield "", body.strip("\n"), False


def _indented(body: str) -> Iterator[str]:
    # Each line after two spaces, empty lines left empty; slices, not a split list.
    start = 0
    while True:
        end = body.find("\n", start)
        line = body[start:] if end < 0 else body[start:end]  # body itself when one line
        if line:
            yield "  "
            yield line
        if end < 0:
            return
        yield "\n"
        start = end + 1


def _indent(body: str) -> str:
    return "".join(_indented(body))


def _render_rich(parts: list[tuple[str, str, bool]]) -> str | None:
    """The styled form through rich, or ``None`` when rich is not installed."""
    try:
        # Lazily: rich is optional, and costs ~50 ms to import.
        from rich.console import Console  # type: ignore[import-not-found, unused-ignore]
        from rich.text import Text  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return None
    out = io.StringIO()
    console = Console(
        file=out,
        force_terminal=True,
        color_system="standard",
        width=shutil.get_terminal_size().columns,
        markup=False,
        emoji=False,
        highlight=False,
    )
    for n, (header, body, _) in enumerate(parts):
        # Text objects, never markup strings: "[bold]" in content stays literal.
        if header:
            console.print(Text(header, style="bold cyan"), soft_wrap=True)
        elif n and not parts[n][2]:
            console.print()
        # A body the next goes on the line of ends without its line break.
        on_line = n + 1 < len(parts) and parts[n + 1][2]
        console.print(_styled(body, Text), soft_wrap=True, end="" if on_line else "\n")
    return out.getvalue()


# A body's first word, when it names who speaks: styled so turns stand apart.
_SPEAKERS = {"user:": "bold blue", "assistant:": "bold green", "reasoning:": "dim italic"}


def _styled(body: str, text: Any) -> Any:
    styled = text(body)
    first = body.split(" ", 1)[0]
    style = _SPEAKERS.get(first)
    if style is not None:
        styled.stylize(style, 0, len(first))
        if first == "reasoning:":
            styled.stylize("dim", len(first))
    elif first == "tool":
        styled.stylize("bold magenta", 0, len(body.split("\n", 1)[0]))
    return styled
