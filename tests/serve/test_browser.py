"""End to end in real headless Chromium: `convo serve` in its own process, events
appended by yet another process, the page watched through Playwright.

Needs the Debian ``chromium`` package and the ``serve-test`` extra::

    apt-get install -y chromium && pip install -e '.[serve,serve-test]'

(never ``playwright install``: the system Chromium is used). Without them the tests
skip, naming those commands; under ``CI=true`` (``tests._shared.require``) or with
``CONVO_REQUIRE_BROWSER=1`` they fail instead.

The docs' screenshots, docs/screenshot-static.png (``convo replay --format html``)
and docs/screenshot-live.png (``convo serve``), are taken here from the bundled
example on every run and compared with the checked-in ones, so they never go stale
unnoticed; a run leaves the tree as it found it. ``CONVO_UPDATE_SCREENSHOTS=1``
writes them instead.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from replay import SQLiteStore
from tests._shared import require

pytestmark = pytest.mark.slow  # Chromium

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "replay" / "examples" / "agent_session.jsonl"
CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
INSTALL = "apt-get update && apt-get install -y chromium && pip install -e '.[serve,serve-test]'"
GUARD_MS = 20_000  # a hang guard, never a timing assertion


def _missing() -> str | None:
    for module in ("playwright", "starlette", "sse_starlette", "uvicorn"):
        try:
            __import__(module)
        except ImportError:
            return f"Python package {module!r} is missing"
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} is missing"
    return None


_why = _missing()
if _why is not None and os.environ.get("CONVO_REQUIRE_BROWSER"):
    pytest.fail(f"BROWSER TEST NOT RUN: {_why}; install with: {INSTALL}", pytrace=False)
require("the browser test's tools", f"{_why}; install with: {INSTALL}", found=_why is None)

from playwright.sync_api import Browser, Dialog, Page, sync_playwright  # noqa: E402


def example_events() -> list[dict[str, Any]]:
    return [json.loads(line) for line in EXAMPLE.read_text().splitlines() if line.strip()]


class Server:
    """``python -m replay.serve._command`` in a child process; ``url`` from its first line.
    Serves the store ``store``, or with ``log=True`` the recording ``store``."""

    def __init__(
        self, store: Path, port: int = 0, *, log: bool = False, extra: tuple[str, ...] = ()
    ) -> None:
        source = [str(store), *extra] if log else ["--store", str(store), *extra]
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "replay.serve._command",
                *source,
                "--port",
                str(port),
                "--poll-interval",
                "0.02",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line.startswith("convo serve: http://"), line
        self.url = line.split(": ", 1)[1].strip().rstrip("/")
        self.port = int(self.url.rsplit(":", 1)[1])

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def append_elsewhere(store: Path, conversation: str, events: list[Any], chunks: int) -> None:
    """Append ``events`` in ``chunks`` transactions from another process, as an agent would."""
    script = (
        "import json, sys\n"
        "from replay import SQLiteStore\n"
        "events = json.load(sys.stdin)\n"
        "n = int(sys.argv[3])\n"
        "with SQLiteStore(sys.argv[1]) as store:\n"
        "    for i in range(n):\n"
        "        part = events[i * len(events) // n:(i + 1) * len(events) // n]\n"
        "        store.append(sys.argv[2], part)\n"
    )
    subprocess.run(
        [sys.executable, "-c", script, str(store), conversation, str(chunks)],
        input=json.dumps(events),
        text=True,
        check=True,
        cwd=ROOT,
    )


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield launched
        launched.close()


def record_dialog(dialogs: list[str]) -> Callable[[Dialog], None]:
    """A dialog handler: any alert() a payload managed to run is recorded and dismissed."""

    def handle(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    return handle


def keys(page: Page) -> list[str]:
    result: list[str] = page.eval_on_selector_all(
        "section.conversation > article", "els => els.map(e => e.dataset.key)"
    )
    return result


def articles(page: Page) -> list[str]:
    result: list[str] = page.eval_on_selector_all(
        "section.conversation > article", "els => els.map(e => e.outerHTML)"
    )
    return result


def wait_live(page: Page) -> None:
    page.wait_for_selector('section.conversation[data-live="open"]', timeout=GUARD_MS)


def wait_position(page: Page, position: int) -> None:
    page.wait_for_function(
        "p => Number(document.querySelector('section.conversation').dataset.position) >= p",
        arg=position,
        timeout=GUARD_MS,
    )


def test_streams_keeps_positions_resumes_and_reloads(browser: Browser, tmp_path: Path) -> None:
    events = example_events()
    store = tmp_path / "events.sqlite"
    with SQLiteStore(store) as writer:
        writer.append("agent-session", events[:2])
    server = Server(store)
    try:
        page = browser.new_page(viewport={"width": 960, "height": 900})
        dialogs: list[str] = []
        page.on("dialog", record_dialog(dialogs))
        page.goto(f"{server.url}/conversations/agent-session")
        wait_live(page)
        assert keys(page) == ["message:msg-1"]
        # Mark the first node: a full re-render would lose the mark.
        page.eval_on_selector('article[data-key="message:msg-1"]', "el => { el.__mark = 1 }")

        half = len(events) * 2 // 3
        append_elsewhere(store, "agent-session", events[2:half], chunks=25)
        wait_position(page, half)
        streamed_keys = keys(page)
        assert page.eval_on_selector('article[data-key="message:msg-1"]', "el => el.__mark") == 1
        # Reasoning is folded: in the page, not shown until opened.
        reasoning = page.text_content('article[data-key="reasoning:rsn-1"] .text') or ""
        assert reasoning.startswith("The failure began after a merge")

        # The server goes away; events keep coming; the browser reconnects by itself
        # to a new server on the same port and resumes from Last-Event-ID.
        server.stop()
        page.wait_for_selector('section.conversation[data-live="reconnecting"]', timeout=GUARD_MS)
        append_elsewhere(store, "agent-session", events[half:], chunks=5)
        server = Server(store, port=server.port)
        wait_position(page, len(events))
        final = keys(page)
        assert final[: len(streamed_keys)] == streamed_keys  # nodes kept their places
        assert len(final) == len(set(final))  # nothing duplicated
        assert page.eval_on_selector('article[data-key="message:msg-1"]', "el => el.__mark") == 1
        seqs = page.eval_on_selector_all(
            "section.conversation > article", "els => els.map(e => Number(e.dataset.seq))"
        )
        assert seqs == list(range(len(final)))

        # What the browser built equals what the server renders from scratch.
        live_html = articles(page)
        page.reload()
        wait_live(page)
        assert keys(page) == final
        assert articles(page) == live_html
        assert dialogs == []

        screenshot(page, ROOT / "docs" / "screenshot-live.png")
        page.close()
    finally:
        server.stop()


def test_a_streamed_text_patched_block_by_block_is_the_static_page(
    browser: Browser, tmp_path: Path
) -> None:
    """A long Markdown message streamed in 40-character deltas: the page patches its
    element in place (a mark on it survives), and ends with the very article, and
    text, that the static page of the same events shows."""
    from definitions import builtin
    from replay import render_html, replay

    paragraph = "The engine *folds* events into `nodes` and stays linear as text grows. "
    parts = [
        paragraph * 4,
        "- one **item**\n- two <script>alert(1)</script>\n- [x](javascript:alert(2))",
        "```python\nx = compute(1)  # <b>\n```",
        "# A heading\n" + paragraph * 3,
        "abc\u202edef " + paragraph * 2,
    ]
    text = "\n\n".join(parts * 5)
    events: list[dict[str, Any]] = [{"type": "message.start", "id": "m", "role": "assistant"}]
    events += [
        {"type": "message.delta", "id": "m", "text": text[at : at + 40]}
        for at in range(0, len(text), 40)
    ]
    store = tmp_path / "events.sqlite"
    with SQLiteStore(store) as writer:
        writer.append("long", events[:20])
    server = Server(store)
    try:
        page = browser.new_page()
        dialogs: list[str] = []
        page.on("dialog", record_dialog(dialogs))
        page.goto(f"{server.url}/conversations/long")
        wait_live(page)
        article = 'article[data-key="message:m"]'
        step = len(events) // 8 + 1
        for start in range(20, len(events), step):
            # One transaction at a time, each waited for: the page keeps up, so each
            # frame reaches it as a patch of the version it has (the stream's first
            # message is whole).
            append_elsewhere(store, "long", events[start : start + step], chunks=1)
            wait_position(page, min(start + step, len(events)))
            if start == 20:
                page.eval_on_selector(article, "el => { el.__mark = 1 }")
        assert page.eval_on_selector(article, "el => el.__mark") == 1  # patched in place
        live_html = page.eval_on_selector(article, "el => el.outerHTML")
        live_text = page.eval_on_selector(article, "el => el.textContent")
        assert dialogs == []
        page.close()
    finally:
        server.stop()

    nodes = replay(events, builtin.DEFINITIONS)
    page_file = tmp_path / "long.html"
    page_file.write_text(render_html(nodes, builtin.DEFINITIONS, title="long"))
    static = browser.new_page()
    static.goto(page_file.as_uri())
    assert static.eval_on_selector(article, "el => el.textContent") == live_text
    assert static.eval_on_selector(article, "el => el.outerHTML") == live_html
    assert "<script" not in live_html  # hostile bits stayed text
    assert 'href="javascript' not in live_html.lower()
    static.close()


def test_hostile_content_stays_text_in_the_dom(browser: Browser, tmp_path: Path) -> None:
    from tests.serve._helpers import PAYLOADS, hostile_events

    events = hostile_events()
    store = tmp_path / "events.sqlite"
    half = len(events) // 2
    with SQLiteStore(store) as writer:
        writer.append("evil", events[:half])  # half rendered by the server,
    server = Server(store)
    try:
        page = browser.new_page()
        dialogs: list[str] = []
        page.on("dialog", record_dialog(dialogs))
        page.goto(f"{server.url}/conversations/evil")
        wait_live(page)
        append_elsewhere(store, "evil", events[half:], chunks=3)  # half streamed in
        wait_position(page, len(events))
        live = page.evaluate(
            """() => {
                const section = document.querySelector('section.conversation');
                const bad = [];
                const safe = ['ARTICLE', 'HEADER', 'DIV', 'SPAN', 'PRE', 'PROGRESS', 'P',
                    'DETAILS', 'SUMMARY', 'CODE', 'STRONG', 'EM', 'UL', 'OL', 'LI', 'BR'];
                for (const el of section.querySelectorAll('*')) {
                    if (!safe.includes(el.tagName))
                        bad.push(el.tagName);
                    for (const attr of el.attributes)
                        if (attr.name.startsWith('on') || /^\\s*javascript:/i.test(attr.value))
                            bad.push(el.tagName + ' ' + attr.name);
                }
                return bad;
            }"""
        )
        assert live == []
        # textContent: innerText leaves out nodes off screen (content-visibility).
        text = page.text_content("section.conversation") or ""
        for bad in PAYLOADS:
            assert bad in text
        content = page.text_content("section.conversation") or ""
        assert "\u202e" not in content
        assert "abc[U+202E]def[U+2066]ghi" in content
        assert dialogs == []
        page.close()
    finally:
        server.stop()


UPDATE_SCREENSHOTS = os.environ.get("CONVO_UPDATE_SCREENSHOTS", "") not in ("", "0")

# Share of pixels that may differ (by more than 48 in a channel) before a screenshot
# counts as changed: fonts and anti-aliasing move a few edges between machines; a
# changed layout, colour or text moves far more.
_DIFFERENT_PIXELS = 0.03

_COMPARE = """async ([a, b]) => {
    const load = (src) => new Promise((done, fail) => {
        const image = new Image(); image.onload = () => done(image); image.onerror = fail;
        image.src = src;
    });
    const [x, y] = await Promise.all([load(a), load(b)]);
    if (x.width !== y.width || x.height !== y.height)
        return {size: [x.width, x.height, y.width, y.height], different: 1};
    const pixels = (image) => {
        const canvas = document.createElement('canvas');
        canvas.width = image.width; canvas.height = image.height;
        const context = canvas.getContext('2d');
        context.drawImage(image, 0, 0);
        return context.getImageData(0, 0, image.width, image.height).data;
    };
    const [p, q] = [pixels(x), pixels(y)];
    let different = 0;
    for (let i = 0; i < p.length; i += 4) {
        if (Math.abs(p[i] - q[i]) > 48 || Math.abs(p[i + 1] - q[i + 1]) > 48
            || Math.abs(p[i + 2] - q[i + 2]) > 48) different++;
    }
    return {size: [x.width, x.height], different: different / (p.length / 4)};
}"""


def screenshot(page: Page, destination: Path) -> None:
    """A full-page screenshot compared with the checked-in ``destination`` (under
    docs/), or written there with ``CONVO_UPDATE_SCREENSHOTS=1``."""
    taken = page.screenshot(full_page=True)
    assert len(taken) > 10_000
    if UPDATE_SCREENSHOTS or not destination.exists():
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(taken)
        return
    uri = "data:image/png;base64,"
    browser = page.context.browser
    assert browser is not None
    checker = browser.new_page()
    try:
        found = checker.evaluate(
            _COMPARE,
            [
                uri + base64.b64encode(destination.read_bytes()).decode(),
                uri + base64.b64encode(taken).decode(),
            ],
        )
    finally:
        checker.close()
    assert found["different"] <= _DIFFERENT_PIXELS, (
        f"{destination.name} changed ({found}): look at the page, then rewrite the "
        "screenshot with CONVO_UPDATE_SCREENSHOTS=1"
    )


def test_static_page_screenshot(browser: Browser, tmp_path: Path) -> None:
    """`convo replay --format html` of the bundled example, as the README shows it."""
    from definitions import builtin
    from replay import render_html, replay

    nodes = replay(example_events(), builtin.DEFINITIONS)
    page_file = tmp_path / "agent_session.html"
    page_file.write_text(render_html(nodes, builtin.DEFINITIONS, title="agent_session.jsonl"))
    page = browser.new_page(viewport={"width": 1000, "height": 800})
    page.goto(page_file.as_uri())
    # Readable: Markdown rendered (inline code), no key shown, tool cards folded.
    assert page.locator(".md code").count() > 0
    text = page.inner_text("main")
    for node in nodes:
        assert node.key not in text
    screenshot(page, ROOT / "docs" / "screenshot-static.png")
    page.close()


# One recording per protocol and per recording format; (folder, file name).
RECORDINGS = [
    ("recorded", "anthropic_sdk_tool_use_response.sse"),
    ("recorded", "anthropic_thinking.chunks.jsonl"),
    ("recorded", "vercel-anthropic-anthropic-web-search-tool.1.chunks.txt"),
    ("recorded", "openai_chat_parallel_tools.sse"),
    ("recorded", "vercel-openai-chat-openai-text.chunks.txt"),
    ("recorded", "openai_responses_reasoning_function_calls.chunks.jsonl"),
    ("recorded", "vercel-openai-responses-openai-web-search-tool.1.chunks.txt"),
    ("recorded", "agui-dotnet-step07-thinking.jsonl"),
    ("recorded", "agui_parallel_tool_calls.json"),
    ("recorded", "aisdk_ui_chunks_react_agent_tool_calling.json"),
    ("recorded", "vercel-langchain-langgraph-hitl-request-1.jsonl"),
]


def _texts(value: Any, keys: tuple[str, ...]) -> Iterator[str]:
    """Every string under one of ``keys`` in the final objects."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in keys and isinstance(item, str):
                yield item
            else:
                yield from _texts(item, keys)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item, keys)


@pytest.mark.parametrize(("folder", "name"), RECORDINGS, ids=[n for _, n in RECORDINGS])
def test_every_protocol_and_format_reads_as_a_conversation(
    browser: Browser, tmp_path: Path, folder: str, name: str
) -> None:
    """`convo serve LOG` detects the protocol: the page shows the conversation's text,
    Markdown rendered, no internal key, nothing unclaimed."""
    import importlib
    import re

    from replay import load_events
    from replay.protocols._detect import detect_protocol
    from tests._shared import shared_path

    path = shared_path("fixtures", folder, name)
    events = load_events(path).events
    protocol = detect_protocol(events).protocol
    final = importlib.import_module(f"definitions.{protocol}").PROTOCOL.accumulate(events)
    words = [
        found.group(0)
        for text in _texts(final, ("text", "content", "thinking"))
        if (found := re.search(r"[A-Za-z][A-Za-z ,']{12,}[A-Za-z]", text))
    ]
    names = list(_texts(final, ("name",)))  # a recording of tool calls only: their names
    assert words or names, "the recording has text to look for"
    server = Server(path, log=True)
    try:
        page = browser.new_page(viewport={"width": 1000, "height": 800})
        dialogs: list[str] = []
        page.on("dialog", record_dialog(dialogs))
        page.goto(f"{server.url}/")
        page.click("ul.conversations a")
        wait_live(page)
        # Open every fold so the whole conversation is visible text.
        page.eval_on_selector_all("details", "els => els.forEach(e => { e.open = true })")
        text = page.inner_text("section.conversation")
        if words:
            assert words[0] in text
            assert page.locator(".md").count() > 0  # Markdown rendered
        else:
            assert names[0] in text
        assert page.locator("p.unclaimed").count() == 0
        for key in keys(page):
            assert key not in text  # ids and data-key only
        assert dialogs == []
        page.screenshot(path=str(tmp_path / f"{name}.png"), full_page=True)
        page.close()
    finally:
        server.stop()


# Per visible assistant bubble: whether it opens a turn (no visible assistant bubble
# just before it, the nodes that show nothing passed over) and whether its label shows.
_TURNS = """() => [...document.querySelectorAll('article.node:not([hidden])')]
  .filter(a => a.querySelector(':scope > .msg[data-role="assistant"]'))
  .map(a => {
    let before = a.previousElementSibling;
    while (before && before.hidden) before = before.previousElementSibling;
    const opens = !(before && before.querySelector(':scope > .msg[data-role="assistant"]'));
    return [opens, a.querySelector('.who').checkVisibility()];
  })"""


def test_an_answer_split_into_blocks_reads_as_one_turn(browser: Browser, tmp_path: Path) -> None:
    """A cited Anthropic answer is a dozen text blocks, some showing nothing: the
    page labels each turn once, and a list item a citation split off keeps its
    bullet."""
    from definitions import anthropic
    from replay import load_events, render_html
    from tests._shared import shared_path

    path = shared_path(
        "fixtures", "recorded", "vercel-anthropic-anthropic-web-search-tool.1.chunks.txt"
    )
    nodes = anthropic.PROTOCOL.replay(load_events(path).events)
    page_file = tmp_path / "cited.html"
    page_file.write_text(render_html(nodes, anthropic.DEFINITIONS))
    page = browser.new_page(viewport={"width": 1000, "height": 800})
    page.goto(page_file.as_uri())
    turns = page.evaluate(_TURNS)
    assert len(turns) > 3  # its cited sentences and lists each one text: still several
    assert [shown for _, shown in turns] == [opens for opens, _ in turns]
    assert sum(opens for opens, _ in turns) < len(turns) / 2
    for item in ("Microsoft shook up", "Oracle followed", "Google launched Mixboard"):
        assert page.locator("li", has_text=item).count() == 1
    assert page.locator("h2", has_text="Key highlights").count() == 0
    page.close()


def test_events_no_definition_claims_are_said_on_the_page_and_the_command_line(
    browser: Browser,
) -> None:
    from tests._shared import shared_path

    path = shared_path("fixtures", "recorded", "anthropic_thinking.chunks.jsonl")
    server = Server(path, log=True, extra=("-d", "definitions.builtin"))
    try:
        page = browser.new_page()
        page.goto(f"{server.url}/conversations/{path.stem}")
        note = page.inner_text("p.unclaimed")
        assert "21 of 21 events claimed by no definition" in note
        assert "try -d definitions.anthropic" in note
        page.close()
    finally:
        server.stop()
        assert server.process.stderr is not None
        err = server.process.stderr.read()
        assert "warning: 21 of 21 events claimed by no definition" in err
        assert "try -d definitions.anthropic" in err


def test_updates_keep_the_readers_place_and_announce_each_message_once(
    browser: Browser, tmp_path: Path
) -> None:
    """A node that changes is patched inside, not replaced: a tool card the reader
    opened stays open when its result comes, the focus stays on it, a selection in
    a message's text survives that message ending; the live region announces each
    message once, when it is complete, not at each delta."""
    first = "The answer begins here and the reader selects these words."
    events: list[dict[str, Any]] = [
        {"type": "message.start", "id": "m1", "role": "assistant", "text": first},
        {"type": "tool_call.start", "id": "t", "name": "grep"},
        {"type": "tool_call.arguments_delta", "id": "t", "text": '{"q": "bug"}'},
        {"type": "tool_call.arguments_end", "id": "t"},
    ]
    later: list[dict[str, Any]] = [
        {"type": "message.end", "id": "m1"},
        {"type": "tool_call.result", "id": "t", "output": "found 3 matches"},
    ]
    second: list[dict[str, Any]] = [{"type": "message.start", "id": "m2", "role": "assistant"}]
    second += [{"type": "message.delta", "id": "m2", "text": f"word{i} "} for i in range(40)]
    second.append({"type": "message.end", "id": "m2"})
    store = tmp_path / "events.sqlite"
    with SQLiteStore(store) as writer:
        writer.append("c", events)
    server = Server(store)
    try:
        page = browser.new_page()
        page.goto(f"{server.url}/conversations/c")
        wait_live(page)
        assert page.get_attribute("section.conversation", "aria-live") is None
        card = 'article[data-key="tool_call:t"] details'
        page.click(f"{card} > summary")  # the reader opens the card; focus is on it
        page.evaluate(
            """([card, text]) => {
                document.querySelector(card).__mark = 1;
                const words = document.querySelector('article[data-key="message:m1"] .md p');
                const node = words.firstChild;
                const range = document.createRange();
                const at = node.data.indexOf('selects');
                range.setStart(node, at);
                range.setEnd(node, at + 'selects these words'.length);
                getSelection().removeAllRanges();
                getSelection().addRange(range);
                window.__said = [];
                new MutationObserver(() => {
                    const said = document.querySelector('.announce').textContent;
                    if (said) window.__said.push(said);
                }).observe(document.querySelector('.announce'),
                           {childList: true, subtree: true, characterData: true});
            }""",
            [card, first],
        )
        page.focus(f"{card} > summary")
        append_elsewhere(store, "c", later, chunks=1)
        wait_position(page, len(events) + len(later))
        assert page.get_attribute(card, "data-status") == "done"
        assert "found 3 matches" in (page.text_content(card) or "")
        assert page.evaluate(f"document.querySelector('{card}').open") is True
        assert page.evaluate(f"document.querySelector('{card}').__mark") == 1
        focused = page.evaluate(
            f"document.activeElement === document.querySelector('{card} > summary')"
        )
        assert focused is True
        assert page.evaluate("getSelection().toString()") == "selects these words"
        assert page.evaluate("getSelection().anchorNode.isConnected") is True

        append_elsewhere(store, "c", second, chunks=6)
        wait_position(page, len(events) + len(later) + len(second))
        said = page.evaluate("window.__said")
        assert len(said) == 2, said  # m1 when it ended, m2 once complete
        assert first in said[0]
        assert said[1].startswith("assistant: word0 word1")
        assert said[1].endswith("word39")
        page.close()
    finally:
        server.stop()


def test_a_page_opened_before_its_first_event_and_the_index_go_live(
    browser: Browser, tmp_path: Path
) -> None:
    """A conversation's page opened before it has any event waits, and shows the
    events when they come; an open index lists conversations as they appear and grow."""
    store = tmp_path / "events.sqlite"
    with SQLiteStore(store) as writer:
        writer.append("old", [{"type": "reasoning.start", "id": "r"}])
    server = Server(store)
    try:
        index = browser.new_page()
        index.goto(f"{server.url}/")
        index.wait_for_selector('ul.conversations[data-live="open"]', timeout=GUARD_MS)
        waiting = browser.new_page()
        waiting.goto(f"{server.url}/conversations/new")
        wait_live(waiting)
        assert keys(waiting) == []
        start = {"type": "message.start", "id": "m", "role": "user", "text": "first words"}
        append_elsewhere(store, "new", [start], chunks=1)
        wait_position(waiting, 1)
        assert keys(waiting) == ["message:m"]
        assert "first words" in waiting.inner_text("section.conversation")
        index.wait_for_selector('ul.conversations a[href="/conversations/new"]', timeout=GUARD_MS)
        index.close()
        waiting.close()
    finally:
        server.stop()


def test_a_long_conversation_opens_with_its_latest_nodes_and_fills_in(
    browser: Browser, tmp_path: Path
) -> None:
    """The page of a conversation longer than the window carries its latest nodes;
    the script puts the earlier ones in ahead of them, in order, while events keep
    coming; then search-in-page finds an early node's text, and a link to an early
    node opens scrolled to it."""
    from replay.serve._app import WINDOW

    count = WINDOW + 250
    rows = [
        {"type": "status.update", "id": f"s{i}", "status": "done", "label": f"row number {i}"}
        for i in range(count)
    ]
    store = tmp_path / "events.sqlite"
    with SQLiteStore(store) as writer:
        writer.append("long", rows)
    server = Server(store)
    try:
        page = browser.new_page()
        page.goto(f"{server.url}/conversations/long")
        more = [
            {"type": "status.update", "id": f"s{i}", "status": "done", "label": f"row number {i}"}
            for i in range(count, count + 5)
        ]
        append_elsewhere(store, "long", more, chunks=5)
        wait_live(page)
        page.wait_for_function(
            "() => document.querySelector('section.conversation').dataset.earlier === undefined",
            timeout=GUARD_MS,
        )
        wait_position(page, count + 5)
        assert keys(page) == [f"status:s{i}" for i in range(count + 5)]
        assert page.locator("p.earlier").count() == 0
        assert page.evaluate("() => window.find('row number 7')") is True
        page.close()

        linked = browser.new_page(viewport={"width": 1000, "height": 600})
        linked.goto(f"{server.url}/conversations/long#status:s3")
        linked.wait_for_function(
            "() => document.querySelector('section.conversation').dataset.earlier === undefined",
            timeout=GUARD_MS,
        )
        linked.wait_for_function(
            """() => { const box = document.getElementById('status:s3').getBoundingClientRect();
                       return box.top >= -1 && box.bottom <= innerHeight + 1; }""",
            timeout=GUARD_MS,
        )
        linked.close()
    finally:
        server.stop()


def test_the_history_before_a_compaction_is_folded_live(browser: Browser, tmp_path: Path) -> None:
    """As the static page folds it: the nodes before the latest compaction sit in one
    closed ``<details class="compacted">`` with the static page's summary line; a
    click opens it; the page still updates live, a node inside the fold and one after
    it; a compaction arriving live folds what came before it in, and the page equals
    the server's own rendering after a reload."""

    from definitions import builtin, event_type
    from replay import render_html, replay

    def said(id: str, role: str, text: str) -> list[dict[str, Any]]:
        return [
            {"type": "message.start", "id": id, "role": role, "text": text},
            {"type": "message.end", "id": id},
        ]

    def mark(id: str) -> dict[str, Any]:
        return {"type": "compaction.mark", "id": id, "summary": f"SUMMARY {id}"}

    events = [
        *said("m1", "user", "first question"),
        {"type": "message.start", "id": "m2", "role": "assistant", "text": "an answer"},
        mark("k1"),
        *said("m3", "user", "after the compaction"),
    ]
    store = tmp_path / "events.sqlite"
    with SQLiteStore(store) as writer:
        writer.append("compacted", events)
    server = Server(store)
    folded = "section.conversation > details.compacted"
    try:
        page = browser.new_page()
        page.goto(f"{server.url}/conversations/compacted")
        wait_live(page)
        inside = f"{folded} > article"
        assert page.eval_on_selector_all(inside, "els => els.map(e => e.dataset.key)") == [
            "message:m1",
            "message:m2",
        ]
        assert keys(page) == ["compaction:k1", "message:m3"]
        assert page.text_content(f"{folded} > summary") == "2 rows before the compaction below"
        assert page.eval_on_selector(folded, "el => el.open") is False
        assert not page.is_visible('article[data-key="message:m1"]')
        page.click(f"{folded} > summary")
        assert page.eval_on_selector(folded, "el => el.open") is True
        assert page.is_visible('article[data-key="message:m1"]')

        # Live: the node inside the fold is patched there, a new one goes after.
        more = [
            {"type": "message.delta", "id": "m2", "text": " GROWN"},
            {"type": "message.end", "id": "m2"},
            *said("m4", "assistant", "the next answer"),
        ]
        append_elsewhere(store, "compacted", more, chunks=3)
        wait_position(page, len(events) + len(more))
        assert "GROWN" in (page.text_content(f'{inside}[data-key="message:m2"]') or "")
        assert keys(page) == ["compaction:k1", "message:m3", "message:m4"]
        # A compaction arriving live folds everything before it in, in order.
        append_elsewhere(store, "compacted", [mark("k2")], chunks=1)
        wait_position(page, len(events) + len(more) + 1)
        folded_keys = ["message:m1", "message:m2", "compaction:k1", "message:m3", "message:m4"]
        assert page.eval_on_selector_all(inside, "els => els.map(e => e.dataset.key)") == (
            folded_keys
        )
        assert keys(page) == ["compaction:k2"]
        assert page.text_content(f"{folded} > summary") == "5 rows before the compaction below"
        assert page.eval_on_selector(folded, "el => el.open") is True  # the reader's
        live = page.eval_on_selector(folded, "el => el.innerHTML")
        static = render_html(
            replay([*events, *more, mark("k2")], builtin.DEFINITIONS, event_type=event_type),
            builtin.DEFINITIONS,
        )
        assert '<details class="compacted"><summary>5 rows before the compaction below' in static

        # A fresh page folds the same, and its fold is closed.
        page.reload()
        wait_live(page)
        assert page.eval_on_selector(folded, "el => el.open") is False
        assert page.eval_on_selector(folded, "el => el.innerHTML") == live
        page.close()
    finally:
        server.stop()


def test_a_long_conversation_folds_the_earlier_nodes_it_fills_in(
    browser: Browser, tmp_path: Path
) -> None:
    """A compaction among the earlier nodes the script puts in (the page carries the
    latest ``WINDOW`` only): once they are in, the history before it is folded, in
    order, as on a short page."""
    from replay.serve._app import WINDOW

    def row(i: int) -> dict[str, Any]:
        return {"type": "status.update", "id": f"s{i}", "status": "done", "label": f"row {i}"}

    events = [*(row(i) for i in range(5)), {"type": "compaction.mark", "id": "k", "summary": "S"}]
    events += [row(i) for i in range(5, WINDOW + 10)]
    store = tmp_path / "events.sqlite"
    with SQLiteStore(store) as writer:
        writer.append("long", events)
    server = Server(store)
    try:
        page = browser.new_page()
        page.goto(f"{server.url}/conversations/long")
        wait_live(page)
        page.wait_for_function(
            "() => document.querySelector('section.conversation').dataset.earlier === undefined",
            timeout=GUARD_MS,
        )
        folded = "section.conversation > details.compacted"
        inside = page.eval_on_selector_all(f"{folded} > article", "els => els.map(e => e.id)")
        assert inside == [f"status:s{i}" for i in range(5)]
        assert page.text_content(f"{folded} > summary") == "5 rows before the compaction below"
        shown = keys(page)
        assert shown == ["compaction:k", *(f"status:s{i}" for i in range(5, WINDOW + 10))]
        page.close()
    finally:
        server.stop()
