"""What the renderers share: a payload shown as JSON, and the HTML building blocks.

Every definition's ``render_html`` is made of the pieces here, so one conversation
reads the same whatever protocol recorded it: ``bubble`` (a turn's text, by role),
``markdown`` and ``plain`` (message text), ``code`` (monospace, highlighted),
``tool_card`` (a collapsible call: name, arguments, result, status, error),
``folded`` (reasoning and long payloads, collapsed), ``line`` (a one-line row:
approvals, status, run and message metadata) and ``sources`` (citations and search
results as links).

Content is untrusted. Every piece is escaped here, never by the callers; bidi
controls (U+202A-E, U+2066-9) become visible ``[U+202E]`` marks so they cannot
reverse the text around them; links are made only to http, https and mailto URLs,
with ``rel="noopener noreferrer nofollow"``. Markdown is CommonMark with raw HTML
off and images off (an image would fetch a URL). markdown-it-py and Pygments are an
optional extra (``convo-engine[render]``): without them text is shown escaped, its
line breaks kept, and code unhighlighted.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Callable, Collection, Iterable
from contextvars import ContextVar
from html import escape
from typing import Any, Final

import attrs

from ._text import StreamedText

__all__ = [
    "BLOCK_MARK",
    "FOLD_CHARS",
    "FOLD_LINES",
    "NOT_JOINED",
    "Blocks",
    "Joined",
    "Outcome",
    "bubble",
    "call_card",
    "call_key",
    "carried",
    "cite_link",
    "cited_markdown",
    "clean",
    "code",
    "collapsed",
    "continued",
    "folded",
    "folding",
    "inline_markdown",
    "join_paragraphs",
    "join_tools",
    "joined",
    "line",
    "list_item_text",
    "long_text",
    "markdown",
    "outcome",
    "outcome_text",
    "paragraph",
    "payload",
    "plain",
    "render_blocks",
    "safe_url",
    "sources",
    "text_follows",
    "tool_card",
    "tool_text",
    "trailing_marker",
    "unfolding",
    "unjoined",
]

# A string this long with no whitespace is a token, not text a reader reads: base64
# (encrypted search results, signatures, images), ids, hashes. Shown by its start
# and length. Text with spaces, however long, is shown whole.
_OPAQUE: Final = re.compile(r"\S{120,}")
_KEEP: Final = 16


# A list item's marker on a line of its own: where a citation splits an item's text
# off, the text block before it ends with one, and the item's text is the next block.
_MARKER_ONLY = re.compile(r"\s*(?:[-*+]|\d{1,9}[.)])\s*")


def trailing_marker(text: str) -> str:
    """The list marker ``text`` ends with on a line of its own (``"- "``), or ""."""
    last = text.rpartition("\n")[2]
    return f"{last.strip()} " if _MARKER_ONLY.fullmatch(last) else ""


def text_follows(previous: str) -> tuple[str, bool]:
    """How a text block reads after the text block ``previous`` of its message: the
    list marker it takes (``previous`` ends with a marker alone on its line: a
    citation split the list item off) and whether it goes on ``previous``'s line
    (``previous`` ended mid-line: a citation split the sentence)."""
    marker = trailing_marker(previous)
    return marker, not marker and bool(previous) and not previous.endswith("\n")


def list_item_text(text: str, marker: str) -> str:
    """A text block's text as it reads: its own trailing marker line left out (the
    next block carries it: an empty bullet, or a heading underline, otherwise) and
    the ``marker`` it carries from the block before it put back in front."""
    if trailing_marker(text):
        text = text.rpartition("\n")[0]
    return f"{marker}{text.lstrip()}" if marker and text.strip() else text


# How deep a payload is shown: past it, a placeholder (a tool result nested 900 deep
# would exhaust Python's recursion here and in ``json.dumps``).
_DEEPEST: Final = 64


def _shorten(value: Any, depth: int = 0) -> Any:
    if depth >= _DEEPEST and isinstance(value, dict | list | tuple):
        return f"… (nested deeper than {_DEEPEST} levels)"
    if type(value) is str:
        if len(value) >= 120 and _OPAQUE.fullmatch(value):
            return f"{value[:_KEEP]}… ({len(value):,} chars)"
        return value
    if isinstance(value, dict):
        return {key: _shorten(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_shorten(item, depth + 1) for item in value]
    return value


def payload(value: object, *, indent: int | None = None) -> str:
    """``value`` as JSON for a reader: keys sorted, non-ASCII kept, anything JSON
    cannot hold shown as its ``str``, and every opaque token (a string of 120 or more
    characters without whitespace) shortened to its first characters and length;
    what is nested deeper than 64 levels is shown as a placeholder."""
    return json.dumps(
        _shorten(value), ensure_ascii=False, sort_keys=True, indent=indent, default=str
    )


# -- text -----------------------------------------------------------------------------

# Embeddings, overrides and isolates: each can reverse the text after it. Marks
# (U+200E/F) only hint a direction and stay.
_BIDI: Final = {c: f"[U+{c:04X}]" for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}
_BIDI_CHARS: Final = frozenset(map(chr, _BIDI))


def clean(text: str) -> str:
    """``text`` with every bidi embedding, override and isolate shown as ``[U+XXXX]``."""
    if _BIDI_CHARS.isdisjoint(text):  # the common case: one C-speed pass
        return text
    return text.translate(_BIDI)


def _esc(text: object) -> str:
    return escape(clean(str(text)), quote=True)


def plain(text: object, cls: str = "text") -> str:
    """``text`` escaped in a block that keeps its line breaks."""
    return f'<div class="plain {cls}" dir="auto">{_esc(text)}</div>'


HTML_FOLD_CHARS: Final = 20_000
"""A text longer than this is collapsed in HTML (``collapsed``)."""


def collapsed(text: object, html: str) -> str:
    """``html`` (the rendering of ``text``) as it is, or, when ``text`` is a whole
    string longer than ``HTML_FOLD_CHARS``, collapsed under its first line. For
    content a reader skims (a pasted file in a user's turn); a text still streaming
    (a ``StreamedText``) is never collapsed: a reader is reading it, and a live page
    patches its last blocks, which a summary changing with its length would stop."""
    if type(text) is not str or len(text) <= HTML_FOLD_CHARS:
        return html
    head = text[:200].strip().split("\n", 1)[0][:80]
    return folded(f"{head} … ({len(text):,} characters)", html, cls="long")


_SAFE_SCHEMES: Final = ("http://", "https://", "mailto:")


def safe_url(url: object) -> str | None:
    """``url`` when it is http, https or mailto (whatever its case or leading space)."""
    if not isinstance(url, str):
        return None
    stripped = url.strip()
    # Browsers drop tabs and newlines inside a scheme ("java\tscript:"): none allowed.
    if any(c in stripped for c in "\t\n\r") or not stripped.lower().startswith(_SAFE_SCHEMES):
        return None
    return stripped


def _link(url: object, text: object) -> str:
    href = safe_url(url)
    label = _esc(text)
    if href is None:
        return f'<span class="link">{label}</span>'
    return f'<a href="{_esc(href)}" rel="noopener noreferrer nofollow">{label}</a>'


@functools.cache
def _markdown_it() -> Any:
    """The one parser (a ``MarkdownIt``), made on first use; ``None`` without it."""
    try:
        from markdown_it import MarkdownIt  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return None
    options = {"html": False, "breaks": True, "xhtmlOut": False, "highlight": _highlight}
    md = MarkdownIt("commonmark", options)
    md.enable(["table", "strikethrough"])
    md.disable("image")
    md.validateLink = lambda url: safe_url(url) is not None  # type: ignore[method-assign]

    def link_open(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
        rendered: str = self.renderToken(tokens, idx, options, env)
        return rendered

    md.add_render_rule("link_open", link_open)
    return md


def inline_markdown(text: object) -> str:
    """One line of inline Markdown (code spans, emphasis, safe links), or ``text``
    escaped without markdown-it-py; as safe as ``markdown``."""
    md = _markdown_it()
    if md is None:
        return _esc(text)
    rendered: str = md.renderInline(clean(str(text)))
    return rendered


def markdown(text: object, cls: str = "text") -> str:
    """``text`` as CommonMark (raw HTML and images off, safe links only, line breaks
    kept, fenced code highlighted), or ``plain`` without markdown-it-py.

    Rendered block by block (a block ends at a blank line outside a code fence, before
    a line that is not indented), so a streamed text costs per version only its last
    block: the blocks before it are kept per ``StreamedText`` lineage (see
    ``_settled``). A reference-style link defined in another block stays text. Each
    block is preceded by ``BLOCK_MARK`` in a ``data-blocks`` container, so the live
    page can replace a text's last blocks alone (see ``render_blocks``).
    """
    md = _markdown_it()
    if md is None:
        return plain(text, cls)
    blocks = _blocks(text, functools.partial(_render_block, md))
    opening = f'<div class="md {cls}" dir="auto" data-blocks>'
    captured = _CAPTURE.get()
    if captured is None:
        return f"{opening}{blocks.html()}</div>"
    captured.append(blocks)
    return f"{opening}<\x00{len(captured) - 1}\x00></div>"


def cited_markdown(pieces: Iterable[tuple[object, str]], cls: str = "text") -> str:
    """A text split into pieces (a citation splits a sentence or a list item off) read
    as the one Markdown text it is: the pieces' texts joined and rendered at once,
    each piece's ``cites`` (built HTML, or "") inline after its text. No
    ``data-blocks``: a live page sends a split text whole, never by blocks."""
    shown = [(str(text), cites) for text, cites in pieces]
    if shown and trailing_marker(shown[-1][0]):  # a list item's marker with no text yet
        last, linked = shown[-1]
        shown[-1] = (last[: last.rfind("\n") + 1], linked)
    # Where each piece's citations go, while the Markdown renders: a private-use
    # character the text does not hold, around the citations' number.
    mark = next(
        (m for m in map(chr, range(0xE000, 0xF900)) if all(m not in t for t, _ in shown)), ""
    )
    source: list[str] = []
    cites: list[str] = []
    for text, cite in shown:
        if not (cite and mark):
            source.append(text)
            continue
        said = text.rstrip()  # before the line break that may end the piece
        source += [said, f" {mark}{len(cites)}{mark}", text[len(said) :]]
        cites.append(cite)
    joined = "".join(source)
    md = _markdown_it()
    if md is None:
        html = plain(joined, cls)
    else:
        rendered = _blocks(joined, functools.partial(_render_block, md)).html()
        html = f'<div class="md {cls}" dir="auto">{rendered}</div>'
    if not cites:
        return html
    placed: set[int] = set()

    def put(found: re.Match[str]) -> str:
        placed.add(int(found[1]))
        return cites[int(found[1])]

    html = re.sub(f"{mark}([0-9]+){mark}", put, html)
    # A mark the renderer split (highlighted code): its citations after the text.
    rest = "".join(cite for n, cite in enumerate(cites) if n not in placed)
    return html + rest


# A one-line block of prose that opens no Markdown syntax: it starts with a letter (no
# heading, quote, list, code or table marker can begin it), holds none of the
# characters inline syntax begins with (or GFM's tables and strikethrough), no control
# character, and ends in no whitespace but spaces. markdown-it renders it as one escaped
# paragraph, which is built here directly: a streamed answer re-renders its last
# paragraph at every frame, and the parser's fixed cost per call and its Python loop
# per character were most of a live server's work per update. Held to markdown-it's
# output by a property test (tests/definitions/test_render_plain_blocks.py).
_PROSE: Final = re.compile(r"[^\W\d_][^\x00-\x1f\x7f\\`*_\[\]!<>&~|]*(?<!\s)")


def _render_block(md: Any, block: str) -> str:
    prose = block.rstrip(" ")  # a paragraph's last spaces are not its text
    if _PROSE.fullmatch(prose):
        return f"<p>{md.utils.escapeHtml(prose)}</p>\n"
    rendered: str = md.render(block)
    return rendered


BLOCK_MARK: Final = "<!--b-->"
"""Before each Markdown block: a comment, so it changes neither layout nor text."""


@attrs.frozen(eq=False)
class Blocks:
    """The rendered blocks of one ``markdown`` text: ``settled[:count]`` (a lineage's
    append-only list, shared by its versions: same list, same first blocks) then
    ``fresh`` (rendered for this version)."""

    settled: list[str]
    count: int
    fresh: tuple[str, ...]

    def html(self) -> str:
        """The container's content: every block after its ``BLOCK_MARK``."""
        return BLOCK_MARK + BLOCK_MARK.join([*self.settled[: self.count], *self.fresh])


# The Blocks of the markdown() calls of one render_blocks(), in call order.
_CAPTURE: ContextVar[list[Blocks] | None] = ContextVar("_CAPTURE", default=None)
# Where render_blocks' shell has a container's content: "<", which escaped content
# never has, and NULs, which markup never has.
_SLOT: Final = re.compile("<\x00([0-9]+)\x00>")


def render_blocks(render: Callable[[], str]) -> tuple[list[str], list[Blocks]]:
    """``render()`` with each ``markdown`` container's content left out: the HTML
    around the containers (one piece more than containers) and their blocks, in
    document order, so ``pieces[0] + blocks[0].html() + pieces[1] + ...`` is what
    ``render()`` returns. What a live view compares and patches per frame."""
    captured: list[Blocks] = []
    token = _CAPTURE.set(captured)
    try:
        shell = render()
    finally:
        _CAPTURE.reset(token)
    parts = _SLOT.split(shell)
    return parts[0::2], [captured[int(index)] for index in parts[1::2]]


# Blank lines followed by a line that starts at its margin; and a code fence line.
_BOUNDARY: Final = re.compile(r"\n(?:[ \t]*\n)+(?=\S)")
_FENCE: Final = re.compile(r"^ {0,3}(?:`{3,}|~{3,})", re.M)


def _split(source: str, start: int) -> tuple[list[tuple[int, str]], int]:
    """The blocks of ``source`` from ``start`` (where a block begins, outside a fence):
    ``(where the next begins, block source)`` each, then where the last, open one
    begins."""
    blocks: list[tuple[int, str]] = []
    fence = False
    block_start = scan = start
    for found in _BOUNDARY.finditer(source, start):
        if len(_FENCE.findall(source, scan, found.start())) % 2:
            fence = not fence
        scan = found.start()
        if not fence:
            blocks.append((found.end(), source[block_start : found.start()]))
            block_start = found.end()
    return blocks, block_start


class _Settled:
    """The rendered blocks of one ``StreamedText`` lineage that no append can change."""

    __slots__ = ("blocks", "count", "end", "html")

    def __init__(self, blocks: list[str], count: int) -> None:
        self.blocks = blocks  # held: the lineage's shared list, so its id stays unique
        self.count = count  # how many of its full blocks are known to be shared
        self.end = 0  # where the settled blocks end (a block begins) in the text
        self.html: list[str] = []  # the settled blocks' HTML, in order


# Settled blocks per lineage (id of its shared block list), the most recent kept.
_SETTLED: dict[int, _Settled] = {}
_SETTLED_MAX: Final = 256
_SETTLED_LOCK: Final = threading.Lock()


def _settled(text: object) -> tuple[_Settled, int] | None:
    """The cache entry of ``text``'s lineage and how far its text cannot change: only
    a ``StreamedText`` with full blocks has one. A lineage's full blocks are shared
    by all its later versions (an append-only list), so what is settled within them
    holds for every later version; an older version starts a new entry."""
    # Its private prefix, (shared block list, count): read here only, never changed.
    prefix = text._prefix if isinstance(text, StreamedText) else None
    if prefix is None:
        return None
    blocks, count = prefix
    entry = _SETTLED.pop(id(blocks), None)
    if entry is None or entry.blocks is not blocks or entry.count > count:
        entry = _Settled(blocks, count)
    entry.count = count
    _SETTLED[id(blocks)] = entry  # most recent last
    if len(_SETTLED) > _SETTLED_MAX:
        del _SETTLED[next(iter(_SETTLED))]
    return entry, sum(map(len, blocks[:count]))


def _blocks(text: object, render: Callable[[str], str]) -> Blocks:
    # Split first, then clean each block: a bidi control is neither a newline nor
    # whitespace nor a backtick, so blocks split the same either way, and a frame
    # cleans only the blocks it renders.
    if not isinstance(text, StreamedText) or text._prefix is None:
        source = str(text)
        blocks, tail = _split(source, 0)
        rendered = [render(clean(block)) for _, block in blocks]
        return Blocks([], 0, (*rendered, render(clean(source[tail:]))))
    # Renderers may run on several threads: one settles a lineage at a time.
    with _SETTLED_LOCK:
        found = _settled(text)
        assert found is not None  # a StreamedText with full blocks
        entry, fixed = found
        # Only the text after the settled blocks is read: a frame never copies the
        # whole text (offsets below are relative to `start`).
        start, source = _unsettled(text, entry.end, fixed)
        blocks, tail = _split(source, entry.end - start)
        fresh: list[str] = []
        for end, block in blocks:
            html = render(clean(block))
            # Settled when the next block's first character is in the fixed text too.
            if start + end < fixed and not fresh:
                entry.html.append(html)
                entry.end = start + end
            else:
                fresh.append(html)
        settled = Blocks(entry.html, len(entry.html), ())
    fresh.append(render(clean(source[tail:])))
    return attrs.evolve(settled, fresh=tuple(fresh))


def _unsettled(text: StreamedText, end: int, fixed: int) -> tuple[int, str]:
    """``text`` from a full chunk at or before ``end``: (where it starts, the text)."""
    prefix = text._prefix
    assert prefix is not None
    chunks, count = prefix
    start, first = fixed, count
    while first > 0 and start > end:
        first -= 1
        start -= len(chunks[first])
    return start, "".join(chunks[first:count]) + text._head


# -- code -----------------------------------------------------------------------------


@functools.cache
def _pygments() -> tuple[Any, Any, Any] | None:
    try:
        from pygments import highlight  # type: ignore[import-untyped, unused-ignore]
        from pygments.formatters import (  # type: ignore[import-untyped, unused-ignore]
            HtmlFormatter,
        )
        from pygments.lexers import (  # type: ignore[import-untyped, unused-ignore]
            get_lexer_by_name,
        )
    except ImportError:
        return None
    return highlight, HtmlFormatter(nowrap=True, classprefix="hl-"), get_lexer_by_name


# Highlighting a huge output costs more than it helps a reader: shown plain.
_HIGHLIGHT_LIMIT: Final = 200_000


def _highlight(text: str, language: str, attrs: str = "") -> str:
    """Pygments' spans for ``text`` in ``language`` (escaped); "" when it has no lexer,
    which makes markdown-it escape the text itself."""
    found = _pygments()
    if found is None or not language or len(text) > _HIGHLIGHT_LIMIT:
        return ""
    highlight, formatter, lexer_for = found
    try:
        lexer = lexer_for(language.split()[0], stripnl=False, ensurenl=False)
    except Exception:  # pygments.util.ClassNotFound: an unknown language
        return ""
    spans: str = highlight(text, lexer, formatter)
    return spans


def code(text: object, language: str = "", cls: str = "code") -> str:
    """``text`` in a monospace block, highlighted when ``language`` has a lexer."""
    source = clean(str(text))
    body = _highlight(source, language) or escape(source, quote=True)
    return f'<pre class="{cls}"><code>{body}</code></pre>'


def _json_or_text(value: object) -> str:
    """A payload as highlighted JSON; a string as text (JSON in a string as JSON)."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return code(value, cls="code output")
        if not isinstance(parsed, dict | list):
            return code(value, cls="code output")
        value = parsed
    return code(payload(value, indent=2), "json", cls="code output")


# -- blocks ---------------------------------------------------------------------------

# Outputs longer than this are folded: the card shows their first lines.
_FOLD_LINES: Final = 12
_FOLD_CHARS: Final = 1200


def folded(summary: str, body: str, *, cls: str, open_: bool = False) -> str:
    """A ``<details>`` block: ``summary`` (escaped here) over ``body`` (built HTML)."""
    attribute = " open" if open_ else ""
    return f'<details class="{cls}"{attribute}><summary>{_esc(summary)}</summary>{body}</details>'


def bubble(role: str, body: str, *, status: str = "", note: str = "") -> str:
    """A turn's text: ``body`` (built HTML) in a bubble styled by ``role``, with its
    ``status`` as ``data-status`` and a ``note`` (``…`` while streaming, the abort)."""
    # As character references: a non-ASCII note would widen the whole (ASCII) text.
    shown = f'<span class="note">{_esc(note).encode("ascii", "xmlcharrefreplace").decode()}</span>'
    shown = shown if note else ""
    data = f' data-status="{_esc(status)}"' if status else ""
    return (
        f'<div class="msg" data-role="{_esc(role)}"{data}><div class="who">{_esc(role)}</div>'
        f"{body}{shown}</div>"
    )


def line(
    cls: str,
    *parts: tuple[str, object],
    status: str = "",
    extra: str = "",
    inline: Collection[str] = (),
) -> str:
    """A one-line row of labelled parts (``(name, text)``; empty ones left out), each
    in its own ``<span class=name>`` so the row never runs its fields together; the
    parts named in ``inline`` are inline Markdown (code spans, emphasis, safe links);
    ``extra`` is built HTML at its end."""
    shown = "".join(
        f'<span class="{name}">{inline_markdown(text) if name in inline else _esc(text)}</span>'
        for name, text in parts
        if text not in ("", None)
    )
    data = f' data-status="{_esc(status)}"' if status else ""
    return f'<div class="row {cls}"{data}>{shown}{extra}</div>'


def _preview(arguments: object) -> str:
    """The arguments on the card's summary line, as a person reads them: an object's
    values by name (``limit: 20, path: a.py``), one argument's value alone. Names in
    sorted order, as ``payload`` writes them: equal nodes render alike, whatever order
    their dicts were built in (an SDK's typed event and its wire JSON differ)."""
    if arguments in (None, "", {}):
        return ""
    value = arguments
    if isinstance(arguments, str) and arguments.lstrip().startswith("{"):
        try:  # the argument string as the model wrote it, once it is whole JSON
            value = json.loads(arguments)
        except ValueError:
            value = arguments
    if isinstance(value, dict) and value:
        if len(value) == 1:
            text = _scalar(next(iter(value.values())))
        else:
            text = ", ".join(f"{key}: {_scalar(value[key])}" for key in sorted(value))
    else:
        text = value if isinstance(value, str) else payload(value)
    text = " ".join(text.split())
    return text if len(text) <= 80 else text[:79] + "…"


def _scalar(value: object) -> str:
    return value if isinstance(value, str) else payload(value)


def _section(label: str, body: str) -> str:
    return f'<div class="part"><div class="label">{_esc(label)}</div>{body}</div>'


def _result(value: object) -> str:
    text = value if isinstance(value, str) else payload(value, indent=2)
    rendered = _json_or_text(value)
    if text.count("\n") < _FOLD_LINES and len(text) < _FOLD_CHARS:
        return _section("result", rendered)
    lines = text.count("\n") + 1
    return folded(f"result ({lines:,} lines, {len(text):,} chars)", rendered, cls="long")


def tool_card(
    name: str,
    status: str,
    *,
    arguments: object = None,
    result: object = None,
    error: object = None,
    extra: str = "",
    preview: object = None,
) -> str:
    """A tool call as a collapsible card: the summary line (name, a preview of the
    arguments, the status), then the arguments, the result (long ones folded) and
    the error. ``result``/``error`` of ``None`` are left out; ``extra`` is built HTML
    appended to the body; ``preview`` replaces the arguments in the summary line (a
    result without its call). Open when it failed."""
    body = ""
    if arguments not in (None, "", {}):
        body += _section("arguments", _json_or_text(arguments))
    if result is not None:
        body += _result(result)
    if error not in (None, ""):
        body += _section("error", plain(error, "error"))
    body += extra
    failed = status in ("failed", "error", "output-error", "denied", "incomplete")
    summary = (
        f'<span class="tool-name">{_esc(name)}</span>'
        f'<span class="args">{_esc(_preview(arguments if preview is None else preview))}</span>'
        f'<span class="badge" data-status="{_esc(status)}">{_esc(status)}</span>'
    )
    open_ = " open" if failed else ""
    return (
        f'<details class="tool" data-status="{_esc(status)}"{open_}>'
        f"<summary>{summary}</summary>{body}</details>"
    )


def cite_link(url: object, title: object, quote: str = "") -> str:
    """A citation: a small link named by ``title``, the quoted text as its tooltip."""
    href = safe_url(url)
    tip = f' title="{_esc(quote[:300])}"' if quote else ""
    if href is None:
        return f'<span class="cite"{tip}>{_esc(title)}</span>'
    return (
        f'<a class="cite" href="{_esc(href)}" rel="noopener noreferrer nofollow"{tip}>'
        f"{_esc(title)}</a>"
    )


def sources(items: Iterable[tuple[object, object, object]], *, cls: str = "sources") -> str:
    """Citations or search results, ``(url, title, detail)`` each, as a list of links."""
    rows = "".join(
        f"<li>{_link(url, title or url)}"
        + (f' <span class="detail">{_esc(detail)}</span>' if detail else "")
        + "</li>"
        for url, title, detail in items
    )
    return f'<ol class="{cls}">{rows}</ol>' if rows else ""


# -- a tool call and its result, one card ------------------------------------------------
#
# A call and its result often live in different nodes: a recorded answer's call and
# the next request's result, an Anthropic server tool's use block and its result
# block. Each node renders alone, from its own state, so the renderers join them
# first: a definition may say which calls its node shows (``tool_calls(node)``: call
# ids) and which results it holds (``tool_results(node)``: ``(call id, Outcome)``);
# ``join_tools`` pairs each result with the latest earlier call of its id, and while
# a node renders (``joined``) its call cards read their outcome (``outcome``) and its
# results already shown on their call's card are left out (``carried``).


@attrs.frozen
class Outcome:
    """A tool result as its call's card shows it: ``done`` or ``failed``, and what
    the tool gave back (``output``: text or a JSON value)."""

    status: str
    output: object
    name: str = ""
    """The tool's name, when the result gives it: a call without an id (Gemini's)
    pairs with a result of its name."""
    links: tuple[tuple[object, object, object], ...] = ()
    """Search results, ``(url, title, detail)`` each: shown as links, not as JSON."""


@attrs.frozen
class Joined:
    """What the join gives one node: the outcomes of its calls, by call id, and the
    ids of its results shown on their call's card. Equal for equal renderings."""

    outcomes: tuple[tuple[str, Outcome], ...] = ()
    carried: frozenset[str] = frozenset()
    paragraph: tuple[tuple[str, str], ...] = ()
    """The pieces of the paragraph the node heads, its own first (see
    ``join_paragraphs``); empty when no node continues its text."""
    continued: bool = False
    """The node's text is shown in the paragraph of a node before it."""


NOT_JOINED: Final = Joined()
_JOINED: ContextVar[Joined] = ContextVar("_JOINED", default=NOT_JOINED)


def join_tools(
    nodes: Iterable[Any],
    calls: Callable[[Any], Iterable[str]] | None,
    results: Callable[[Any], Iterable[tuple[str, Outcome]]] | None,
) -> dict[str, Joined]:
    """Per node key, what the join gives it (nodes it gives nothing left out):
    ``calls(node)`` and ``results(node)`` say what each node shows (see above); a
    result pairs with the latest call of its id in a node before it (or itself)."""
    if calls is None:
        return {}
    latest: dict[str, str] = {}  # call id -> key of the node showing the call
    outcomes: dict[str, dict[str, Outcome]] = {}
    carried: dict[str, set[str]] = {}
    for node in nodes:
        for call_id in calls(node):
            latest[call_id] = node.key
        if results is None:
            continue
        for call_id, outcome in results(node):
            key = call_id
            at = latest.get(key)
            if at is None and outcome.name:  # a call of that name given no id
                key = call_key(None, outcome.name)
                at = latest.pop(key, None)
            if at is None:
                continue
            outcomes.setdefault(at, {})[key] = outcome
            carried.setdefault(node.key, set()).add(call_id)
    return {
        key: Joined(tuple(outcomes.get(key, {}).items()), frozenset(carried.get(key, ())))
        for key in outcomes.keys() | carried.keys()
    }


def join_paragraphs(
    nodes: Iterable[Any],
    joins: Callable[[Any], bool],
    piece: Callable[[Any], tuple[str, str] | None],
) -> dict[str, Joined]:
    """Per node key, the text it heads or that it continues one (nodes in no run
    left out). A citation splits a sentence or a list into nodes, each rendered
    alone: a node that ``joins`` (its text goes on from the text before it: on its
    line, or as the next list item) joins the run of the node before it, when
    that one has a text ``piece`` (its text and its citations' HTML); the first node
    of a run of two or more shows their pieces as one Markdown text
    (``cited_markdown``), the others nothing."""
    out: dict[str, Joined] = {}
    run: list[Any] = []

    def close() -> None:
        # Pieces are read for runs only: a text alone costs nothing per frame.
        if len(run) > 1:
            pieces: list[tuple[str, str]] = []
            for node in run:
                found = piece(node)
                if found is None:
                    break
                pieces.append(found)
            if len(pieces) > 1:
                out[run[0].key] = Joined(paragraph=tuple(pieces))
                for node in run[1 : len(pieces)]:
                    out[node.key] = Joined(continued=True)
        run.clear()

    for node in nodes:
        if not (run and joins(node)):
            close()
        run.append(node)
    close()
    return out


def paragraph() -> tuple[tuple[str, str], ...]:
    """The pieces of the paragraph the node being rendered heads (its own first), or
    ``()`` when no node continues its text."""
    return _JOINED.get().paragraph


def continued() -> bool:
    """Whether the text of the node being rendered is shown in a paragraph before it."""
    return _JOINED.get().continued


def call_key(call_id: object, name: object) -> str:
    """What the join knows a call by: its id, or for a call without one (Gemini
    gives some none), its name (marked, so no id can equal it)."""
    return call_id if isinstance(call_id, str) and call_id else f"\x00{name}"


def joined(value: Joined) -> Any:
    """Make ``value`` what ``outcome`` and ``carried`` read (a token for ``unjoined``)."""
    return _JOINED.set(value)


def unjoined(token: Any) -> None:
    """Undo ``joined``."""
    _JOINED.reset(token)


def outcome(call_id: object) -> Outcome | None:
    """The outcome of call ``call_id`` that the node being rendered shows, if known."""
    for key, value in _JOINED.get().outcomes:
        if key == call_id:
            return value
    return None


def carried(call_id: object) -> bool:
    """Whether the node being rendered holds the result of ``call_id`` that its
    call's card shows (so the node leaves it out; the call may be in the node)."""
    return call_id in _JOINED.get().carried


def tool_text(name: object, call_id: object, status: str, arguments: object) -> str:
    """A tool call as text: ``tool NAME [ID] STATUS``, its arguments, and, when the
    join knows it, its outcome (the card's status then the outcome's)."""
    found = outcome(call_key(call_id, name))
    if found is not None:
        status = found.status
    ident = f" [{call_id}]" if call_id else ""
    lines = [f"tool {name}{ident} {status}"]
    if arguments not in (None, "", {}, "{}"):
        shown = arguments if isinstance(arguments, str) else payload(arguments)
        lines.append(f"  arguments: {long_text(shown)}")
    if found is not None:
        lines.append(outcome_text(found))
    return "\n".join(lines)


def outcome_text(found: Outcome) -> str:
    """An outcome's lines under its call: ``  output: ...`` (``error``), or its links."""
    if found.links:
        shown = [f"  {len(found.links)} results:"] if len(found.links) > 1 else []
        shown += [f"  - {title or url} <{url}>" for url, title, _ in found.links]
        if isinstance(found.output, str) and found.output:
            shown.append(f"  output: {long_text(found.output)}")
        return "\n".join(shown)
    label = "error" if found.status == "failed" else "output"
    value = found.output
    return f"  {label}: {long_text(value if isinstance(value, str) else payload(value))}"


def call_card(
    name: str, call_id: object, status: str, *, arguments: object = None, extra: str = ""
) -> str:
    """A tool call's card (``tool_card``), its outcome on it when the join knows it."""
    found = outcome(call_key(call_id, name))
    if found is None:
        return tool_card(name, status, arguments=arguments, extra=extra)
    if found.links:
        extra = sources(found.links) + extra
        said = found.output if isinstance(found.output, str) and found.output else None
        return tool_card(name, found.status, arguments=arguments, result=said, extra=extra)
    if found.status == "failed":
        return tool_card(name, "failed", arguments=arguments, error=found.output, extra=extra)
    return tool_card(name, found.status, arguments=arguments, result=found.output, extra=extra)


# -- long content, folded in the terminal -------------------------------------------------
#
# A terminal view folds each long piece of content (a message's text, a tool's output)
# to its first lines, saying how much it left out, so a 200 KB message does not bury
# the conversation; the structure around it (who speaks, which tool, the answer after
# a long tool output) stays whole. Renderers turn it on (``folding``); a definition's
# ``render_text`` passes each piece of content through ``long_text``.

FOLD_LINES: Final = 40
"""A piece of content longer than this many lines is folded."""
FOLD_CHARS: Final = 4_000
"""A piece of content longer than this many characters is folded."""
_FOLDING: ContextVar[bool] = ContextVar("_FOLDING", default=False)


def folding(on: bool) -> Any:
    """Make ``long_text`` fold (``on``) or not; a token for ``unfolding``."""
    return _FOLDING.set(on)


def unfolding(token: Any) -> None:
    """Undo ``folding``."""
    _FOLDING.reset(token)


def long_text(text: object) -> str:
    """``text`` as a terminal shows it: whole, or, while folding, its first
    ``FOLD_LINES`` lines (at most ``FOLD_CHARS`` characters of them), then a line
    saying how much is left out and that ``--full`` shows it."""
    body = str(text)
    if not _FOLDING.get() or (len(body) <= FOLD_CHARS and body.count("\n") < FOLD_LINES):
        return body
    cut = min(len(body), FOLD_CHARS)
    newline = -1
    for _ in range(FOLD_LINES):
        newline = body.find("\n", newline + 1)
        if newline < 0:
            break
    else:
        cut = min(cut, newline)
    rest = body[cut:]
    lines = rest.count("\n") + (not rest.startswith("\n"))
    return (
        f"{body[:cut]}\n… {len(rest):,} more characters ({lines:,} lines) folded: --full shows them"
    )
