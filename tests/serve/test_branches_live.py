"""The live page's version switcher (``convo serve``) in real headless Chromium:
switch versions without a reload, follow a live append on the chosen branch, a
reload and the back button keep the leaf the URL names; an unknown leaf is a 404
naming it.

Needs what tests/serve/test_browser.py needs (it skips, naming the install, without).
"""

from __future__ import annotations

from pathlib import Path
from urllib.request import urlopen

import pytest
from playwright.sync_api import Browser, Page

from replay import SQLiteStore
from tests.replay.test_branches import CHAT
from tests.serve.test_browser import GUARD_MS, Server, append_elsewhere, browser, wait_live

pytestmark = pytest.mark.slow  # Chromium
__all__ = ["browser"]  # the module's Chromium fixture, shared


def text(page: Page) -> str:
    return page.inner_text("section.conversation")


def shows(page: Page, words: str) -> None:
    page.wait_for_function(
        "w => document.querySelector('section.conversation').innerText.includes(w)", arg=words
    )


def versions(page: Page) -> list[str]:
    found: list[str] = page.eval_on_selector_all(
        "section.conversation > article nav.versions > span:not([aria-disabled])",
        "els => els.map(e => e.textContent)",
    )
    return found


def test_switch_follow_live_and_reload_keep_the_leaf(browser: Browser, tmp_path: Path) -> None:
    store = tmp_path / "chat.db"
    with SQLiteStore(store) as opened:
        opened.append("chat", CHAT)
    server = Server(store)
    try:
        page = browser.new_page()
        page.set_default_timeout(GUARD_MS)
        page.goto(f"{server.url}/conversations/chat")
        wait_live(page)
        # The active branch (the edit, e1): its question carries "2/2".
        assert "What is 3+3?" in text(page)
        assert "2+2" not in text(page)
        assert versions(page) == ["2/2"]
        page.evaluate("window.marker = 1")  # gone if the page reloads
        # Keyboard: Tab past the bar's link to the question's "previous version", Enter.
        page.keyboard.press("Tab")
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.getAttribute('aria-label')") == (
            "previous version"
        )
        page.keyboard.press("Enter")
        page.wait_for_function("() => new URL(location.href).searchParams.get('leaf') === 'r1'")
        shows(page, "What is 2+2?")
        assert page.evaluate("window.marker") == 1  # no reload
        assert "3+3" not in text(page)
        assert "4" in text(page)
        assert versions(page) == ["1/2", "2/2"]  # the question 1 of 2, the answer 2 of 2
        # The focus stays on the switcher the reader used.
        assert page.evaluate("document.activeElement.closest('nav.versions') !== null")
        wait_live(page)
        # A live append continues r1 (chosen again in the log): the page follows it.
        follow = [
            {"type": "branch.choose", "id": "r1"},
            {"type": "message.start", "id": "u9", "role": "user", "text": "And 5+5?"},
            {"type": "message.end", "id": "u9"},
        ]
        append_elsewhere(store, "chat", follow, 1)
        shows(page, "And 5+5?")
        assert "3+3" not in text(page)
        # A reload keeps the leaf the URL names.
        page.reload()
        wait_live(page)
        assert "What is 2+2?" in text(page)
        assert "And 5+5?" in text(page)
        assert "3+3" not in text(page)
        # Back to the version before: the other path, still without a reload.
        page.evaluate("window.marker = 2")
        page.click("nav.versions a[aria-label='next version']")
        page.wait_for_function("() => new URL(location.href).searchParams.get('leaf') === 'e1'")
        shows(page, "What is 3+3?")
        assert "And 5+5?" not in text(page)
        page.go_back()
        shows(page, "And 5+5?")
        assert page.evaluate("window.marker") == 2
        page.close()
        # An unknown leaf: a 404 naming it, on the page and the stream.
        for suffix in ("?leaf=nope", "/stream?leaf=nope"):
            with pytest.raises(Exception, match="404") as caught:
                urlopen(f"{server.url}/conversations/chat{suffix}", timeout=GUARD_MS / 1000)
            assert "nope" in caught.value.read().decode()  # type: ignore[attr-defined]
    finally:
        server.stop()
