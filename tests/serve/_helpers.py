"""What the serve tests share: an in-process SSE client, an HTML safety checker and
events that carry hostile content through every built-in kind."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlsplit

from definitions._render import BLOCK_MARK
from tests._shared import require_serve

require_serve()

import httpx  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.types import Message  # noqa: E402

# Not a timing assertion: only a guard so a broken stream fails instead of hanging.
HANG_GUARD = 20.0

PAYLOADS = (
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(2)">',
    "[click me](javascript:alert(3))",
    '<a href="javascript:alert(4)">link</a>',
    "<b onmouseover=alert(5)>raw html</b> <iframe src=//x>",
    "\"'><svg onload=alert(6)>",
    # Markdown: links and autolinks to script and data URLs, an image, raw HTML.
    "[x](JaVaScRiPt:alert(7)) <javascript:alert(8)> [d](data:text/html,alert(9))",
    "![i](data:image/svg+xml,alert(10)) <div onclick=alert(11)>raw div</div>",
)
BIDI = "abc\u202edef\u2066ghi"
"""Bidi controls: shown as [U+202E] and [U+2066], never as the characters."""


def hostile_events() -> list[dict[str, Any]]:
    """Every payload through every built-in kind's text fields, ids and names."""
    events: list[dict[str, Any]] = []
    for n, bad in enumerate(PAYLOADS):
        events += [
            {"type": "message.start", "id": f"m{n}{bad}", "role": bad, "text": bad},
            {"type": "message.delta", "id": f"m{n}{bad}", "text": bad},
            {"type": "reasoning.start", "id": f"r{n}"},
            {"type": "reasoning.delta", "id": f"r{n}", "text": bad},
            {"type": "tool_call.start", "id": f"t{n}", "name": bad},
            {"type": "tool_call.arguments_delta", "id": f"t{n}", "text": json.dumps({"q": bad})},
            {"type": "tool_call.arguments_end", "id": f"t{n}"},
            {"type": "tool_call.result", "id": f"t{n}", "output": {"html": bad}},
            {"type": "approval.request", "id": f"a{n}", "action": bad, "tool_call_id": bad},
            {
                "type": "approval.decision",
                "id": f"a{n}",
                "decision": "denied",
                "by": bad,
                "reason": bad,
            },
            {"type": "status.update", "id": f"s{n}", "status": "running", "label": bad},
            {"type": "tool_call.start", "id": f"e{n}", "name": "x"},
            {"type": "tool_call.error", "id": f"e{n}", "message": bad},
            {"type": "interruption.mark", "id": f"i{n}", "cause": "user", "text": bad},
            {
                "type": "compaction.mark",
                "id": f"k{n}",
                "summary": bad,
                "through": bad,
                "preserved": [{"role": "user", "text": bad}],
            },
        ]
    events.append({"type": "message.start", "id": "bidi", "role": "assistant", "text": BIDI})
    return events


# The only markup our own templates and the built-in kinds write.
SAFE_TAGS = frozenset(
    {"html", "head", "meta", "title", "link", "script", "body", "nav", "a", "main", "h1"}
    | {"section", "article", "header", "div", "span", "pre", "noscript", "p", "ul", "li"}
    | {"progress"}
    # Markdown, tool cards and folded blocks.
    | {"details", "summary", "code", "strong", "em", "ol", "h2", "h3", "h4", "h5", "h6"}
    | {"blockquote", "br", "hr", "table", "thead", "tbody", "tr", "th", "td", "s"}
)


class _Markup(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag not in SAFE_TAGS:
            self.problems.append(f"live <{tag}> element")
        for name, value in attrs:
            if name.startswith("on"):
                self.problems.append(f"<{tag}> has handler {name}={value!r}")
            if value and value.strip().lower().startswith(("javascript:", "data:", "vbscript:")):
                self.problems.append(f"<{tag} {name}={value!r}>")
        if tag == "script" and values.get("src") != "/static/convo.js":
            self.problems.append(f"<script> other than ours: {attrs!r}")
        href = values.get("href") or ""
        if tag == "a" and not href.startswith("/"):
            # Content's own links: web and mail only, and never handing over the opener.
            if not href.startswith(("http://", "https://", "mailto:")):
                self.problems.append(f"link to another scheme: {attrs!r}")
            if "noopener" not in (values.get("rel") or ""):
                self.problems.append(f"link without rel=noopener: {attrs!r}")
        if tag == "link" and values.get("href") != "/static/convo.css":
            self.problems.append(f"<link> other than our stylesheet: {attrs!r}")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def markup_problems(html: str) -> tuple[list[str], str]:
    """Every live element, handler or script URL in ``html``, and its text."""
    parser = _Markup()
    parser.feed(html)
    parser.close()
    return parser.problems, "".join(parser.text)


class SseStream:
    """One SSE request driven through the ASGI app in this process.

    httpx's ASGI transport waits for the whole body, which an endless stream never
    finishes; this drives the app directly and hands out messages as they arrive.
    ``close()`` delivers ``http.disconnect`` like a browser tab going away.
    """

    def __init__(
        self,
        app: Starlette,
        path: str,
        headers: dict[str, str] | None = None,
        *,
        stalled: bool = False,
    ) -> None:
        target = urlsplit(path)
        self._scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": target.path,
            "raw_path": target.path.encode(),
            "query_string": target.query.encode(),
            "root_path": "",
            "headers": [
                (k.lower().encode(), v.encode())
                for k, v in {"host": "localhost", **(headers or {})}.items()
            ],
            "client": ("127.0.0.1", 50000),
            "server": ("testserver", 80),
        }
        self._app = app
        self._chunks: asyncio.Queue[bytes] = asyncio.Queue()
        self._gone = asyncio.Event()
        self._requested = False
        self._flowing = asyncio.Event()  # a stalled client's sends block until set
        if not stalled:
            self._flowing.set()
        self._buffer = b""
        self.status: int | None = None
        self.headers: dict[str, str] = {}
        self.raw = b""
        self.task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> SseStream:
        async def receive() -> Message:
            if not self._requested:
                self._requested = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await self._gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.status = message["status"]
                self.headers = {k.decode(): v.decode() for k, v in message["headers"]}
            elif message["type"] == "http.response.body":
                if message.get("body", b"").startswith(b"id:"):
                    await self._flowing.wait()  # a full socket buffer: send() blocks
                self._chunks.put_nowait(message.get("body", b""))

        self.task = asyncio.get_running_loop().create_task(self._app(self._scope, receive, send))
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        self._gone.set()
        assert self.task is not None
        await asyncio.wait_for(self.task, HANG_GUARD)

    def unstall(self) -> None:
        """The stalled client starts reading again."""
        self._flowing.set()

    async def ready(self) -> None:
        """Wait for the stream's opening ``retry:`` line: the client is registered."""
        while not self._buffer.startswith(b"retry:") or b"\n\n" not in self._buffer:
            chunk = await asyncio.wait_for(self._chunks.get(), HANG_GUARD)
            self.raw += chunk
            self._buffer += chunk
        self._buffer = self._buffer.split(b"\n\n", 1)[1]

    async def message(self) -> dict[str, str]:
        """The next SSE message with data (comments, pings and retry-only blocks skipped)."""
        while True:
            while b"\n\n" not in self._buffer:
                chunk = await asyncio.wait_for(self._chunks.get(), HANG_GUARD)
                self.raw += chunk
                self._buffer += chunk
            block, self._buffer = self._buffer.split(b"\n\n", 1)
            fields: dict[str, str] = {}
            for line in block.decode().split("\n"):
                if not line or line.startswith(":"):
                    continue
                name, _, value = line.partition(":")
                fields[name] = value.removeprefix(" ")
            if "data" in fields:
                return fields

    async def patch(self) -> dict[str, Any]:
        """The next ``patch`` message, decoded, with its SSE id checked against it."""
        fields = await self.message()
        assert fields["event"] == "patch"
        data: dict[str, Any] = json.loads(fields["data"])
        assert int(fields["id"]) == data["position"]
        return data

    async def until(self, position: int) -> list[dict[str, Any]]:
        """Patches up to and including the one at ``position``."""
        patches = [await self.patch()]
        while patches[-1]["position"] < position:
            patches.append(await self.patch())
        assert patches[-1]["position"] == position
        return patches


@asynccontextmanager
async def running(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    """The app with its lifespan running, and an httpx client talking to it in process."""
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            yield client


def apply(view: dict[str, tuple[int, str]], patch: dict[str, Any]) -> int:
    """What the browser script does, as a model: replace by key, else add; a node
    sent as ``blocks`` is patched in place (``apply_blocks``). How many were."""
    if patch["reset"]:
        view.clear()
    patched = 0
    for node in patch["nodes"]:
        if "blocks" in node:
            seq, html = view[node["key"]]  # sent only to a client that has the node
            view[node["key"]] = (seq, apply_blocks(html, node["blocks"]))
            patched += 1
        else:
            view[node["key"]] = (node["seq"], node["html"])
    return patched


_CONTAINER = re.compile(r"<div [^>]*\bdata-blocks>")
_DIV = re.compile(r"<div\b|</div>")


def apply_blocks(html: str, blocks: list[dict[str, Any]]) -> str:
    """convo.js's block patch on a fragment's HTML, as a model: in the ``at``-th
    ``data-blocks`` container, the last ``drop`` blocks (each from a ``BLOCK_MARK``
    on) replaced by ``html``. Reads the HTML as the browser does, not the renderer's
    records, so it fails if what is sent does not fit what the page has."""
    for block in blocks:
        start = [found.end() for found in _CONTAINER.finditer(html)][block["at"]]
        depth, end = 1, start
        for tag in _DIV.finditer(html, start):
            depth += 1 if tag.group() == "<div" else -1
            if depth == 0:
                end = tag.start()
                break
        assert depth == 0, "a container that never closes"
        marks = html[start:end].split(BLOCK_MARK)  # "" before the first mark
        assert marks[0] == "", marks[:1]
        assert block["drop"] < len(marks), (block["drop"], len(marks) - 1)
        kept = BLOCK_MARK.join(marks[: len(marks) - block["drop"]])
        html = html[:start] + kept + block["html"] + html[end:]
    return html
