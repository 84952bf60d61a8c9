"""The static page's version switcher in real headless Chromium: the active version
shown, another reached by the keyboard alone, the URL naming it, a reload keeping it.

Needs what tests/serve/test_browser.py needs (it skips, naming the install, without).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from definitions import builtin
from replay._branches import BranchedLog
from replay.protocols._detect import protocol_definitions
from replay.render._branches import BranchPage, render_branches_html
from tests.serve.test_browser import CHROMIUM, FLAGS, GUARD_MS

from .test_branches import CHAT

pytestmark = pytest.mark.slow  # Chromium

from playwright.sync_api import Browser, Page, sync_playwright  # noqa: E402


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield launched
        launched.close()


def shown(page: Page) -> list[str]:
    """The leaves whose section is on screen."""
    found: list[str] = page.eval_on_selector_all(
        "section.branch",
        "els => els.filter(e => getComputedStyle(e).display !== 'none').map(e => e.dataset.leaf)",
    )
    return found


def test_switch_by_keyboard_and_reload_keeps_the_leaf(browser: Browser, tmp_path: Path) -> None:
    branched = BranchedLog(CHAT, protocol_definitions("builtin"))
    pages = [BranchPage(v.leaf, v.nodes, v.markers) for v in branched.views()]
    html = render_branches_html(pages, builtin.DEFINITIONS, active=branched.tree.active)
    path = tmp_path / "chat.html"
    path.write_text(html, encoding="utf-8")
    page = browser.new_page()
    page.set_default_timeout(GUARD_MS)
    page.goto(path.as_uri())
    assert shown(page) == ["e1"]
    assert "What is 3+3?" in page.inner_text("section.branch.active")
    # Tab to the first link of the page (the question's "previous version") and follow it.
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.getAttribute('aria-label')")
    assert focused == "previous version"
    page.keyboard.press("Enter")
    page.wait_for_function("location.hash === '#leaf-r1'")
    assert shown(page) == ["r1"]
    assert "What is 2+2?" in page.inner_text("#leaf-r1")
    page.reload()
    assert shown(page) == ["r1"]
    page.go_back()
    page.wait_for_function("location.hash === ''")
    assert shown(page) == ["e1"]
    page.close()
