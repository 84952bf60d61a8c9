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
from collections.abc import Iterable
from typing import Any

from definitions._render import clean
from engine import Node

from ._render import call_member, members, pretty_state

__all__ = ["render_text", "strip_controls"]

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


def _body(node: Node, render: dict[str, Any]) -> str:
    member = render.get(node.kind)
    if member is None:
        return pretty_state(node.state)
    return str(call_member(member, node, "render_text"))


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
    render = members(definitions, "render_text")
    parts = []
    for node in nodes:
        body = strip_controls(_body(node, render))
        if keys:
            parts.append((strip_controls(f"#{node.seq} {node.key}"), _indent(body)))
        elif body.strip():
            parts.append(("", body))
    if _use_color(color):
        styled = _render_rich(parts)
        if styled is not None:
            return styled
    if keys:
        return "".join(f"{header}\n{body}\n" for header, body in parts)
    return "\n".join(f"{body}\n" for _, body in parts)


def _indent(body: str) -> str:
    return "\n".join("  " + line if line else "" for line in body.split("\n"))


def _render_rich(parts: list[tuple[str, str]]) -> str | None:
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
    for n, (header, body) in enumerate(parts):
        # Text objects, never markup strings: "[bold]" in content stays literal.
        if header:
            console.print(Text(header, style="bold cyan"), soft_wrap=True)
        elif n:
            console.print()
        console.print(_styled(body, Text), soft_wrap=True)
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
