"""End to end in real headless Chromium: `convo serve` in its own process, events
appended by yet another process, the page watched through Playwright.

Needs the Debian ``chromium`` package and the ``serve-test`` extra::

    apt-get install -y chromium && pip install -e '.[serve,serve-test]'

(never ``playwright install``: the system Chromium is used). Without them the tests
skip, naming those commands; under ``CI=true`` (``tests._shared.require``) or with
``CONVO_REQUIRE_BROWSER=1`` they fail instead.
``CONVO_SCREENSHOT=1`` also saves the screenshot to docs/screenshot.png (or to the
path given instead of ``1``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from replay import EventStore
from tests._shared import require

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
    """``python -m replay._serve_cli`` in a child process; ``url`` from its first line."""

    def __init__(self, store: Path, port: int = 0) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "replay._serve_cli",
                "--store",
                str(store),
                "--port",
                str(port),
                "--poll-interval",
                "0.02",
            ],
            stdout=subprocess.PIPE,
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
        "from replay import EventStore\n"
        "events = json.load(sys.stdin)\n"
        "n = int(sys.argv[3])\n"
        "with EventStore(sys.argv[1]) as store:\n"
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
    with EventStore(store) as writer:
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
        reasoning = page.inner_text('article[data-key="reasoning:rsn-1"] .text')
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

        shot = tmp_path / "conversation.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        target = os.environ.get("CONVO_SCREENSHOT")
        if target:
            destination = ROOT / "docs" / "screenshot.png" if target == "1" else Path(target)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(shot, destination)
        page.close()
    finally:
        server.stop()


def test_hostile_content_stays_text_in_the_dom(browser: Browser, tmp_path: Path) -> None:
    from tests.serve._helpers import PAYLOADS, hostile_events

    events = hostile_events()
    store = tmp_path / "events.sqlite"
    half = len(events) // 2
    with EventStore(store) as writer:
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
                const safe = ['ARTICLE', 'HEADER', 'DIV', 'SPAN', 'PRE', 'PROGRESS'];
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
        text = page.inner_text("section.conversation")
        for bad in PAYLOADS:
            assert bad in text
        assert dialogs == []
        page.close()
    finally:
        server.stop()
