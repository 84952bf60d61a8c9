"""A recording followed live in real headless Chromium: model calls recorded into a
store as their events arrive (one append per event, as ``replay.record`` appends them
to a store), ``convo serve --store`` in its own process, the page watched through
Playwright. Needs what ``tests/serve/test_browser.py`` needs (it says how to install
it); without it the test skips, and fails under ``CI=true``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine import Message, Role, ToolResult
from replay import SQLiteStore

from ._build import Agent, Answer

pytest.importorskip("tests.serve.test_browser", reason="the browser test's tools are missing")
from playwright.sync_api import Page, sync_playwright

from tests.serve.test_browser import (
    CHROMIUM,
    FLAGS,
    GUARD_MS,
    ROOT,
    Server,
    keys,
    wait_live,
)

pytestmark = pytest.mark.slow  # Chromium


def _record(store: Path, events: list[dict[str, object]]) -> None:
    """Append ``events`` one at a time from another process, as a recorder would."""
    script = (
        "import json, sys\n"
        "from replay import SQLiteStore\n"
        "with SQLiteStore(sys.argv[1]) as store:\n"
        "    for event in json.load(sys.stdin):\n"
        "        store.append('agent', [event])\n"
    )
    subprocess.run(
        [sys.executable, "-c", script, str(store)],
        input=json.dumps(events),
        text=True,
        check=True,
        cwd=ROOT,
    )


def shows(page: Page, text: str) -> None:
    page.wait_for_function(
        "t => document.querySelector('section.conversation').textContent.includes(t)",
        arg=text,
        timeout=GUARD_MS,
    )


def test_a_page_follows_a_conversation_while_it_is_recorded(tmp_path: Path) -> None:
    agent = Agent("anthropic.messages", system="You are terse.")
    agent.say(Message(role=Role.user, content="What is the weather in Paris?"))
    agent.call(
        Answer(
            "Let me look it up for you.", (("call_1", "get_weather", {"city": "Paris"}),), pieces=6
        )
    )
    agent.say(
        Message(role=Role.user, content=(ToolResult("call_1", "Sunny, 24 C", name="get_weather"),))
    )
    agent.call(Answer("It is sunny in Paris today, 24 degrees.", pieces=8))
    events = agent.events
    first_call = next(i for i, e in enumerate(events) if e["type"] == "recording/end") + 1
    store = tmp_path / "events.sqlite"
    with SQLiteStore(store) as writer:
        writer.append("agent", events[:3])  # the first request, the head, one event
    server = Server(store)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            page = browser.new_page()
            page.goto(f"{server.url}/conversations/agent")
            wait_live(page)
            assert keys(page)[0] == "recorded_request:call-0"
            assert "What is the weather in Paris?" in (
                page.text_content("section.conversation") or ""
            )

            # Positions are not waited for: the server skips (and logs) the events the
            # pre-pass gives no envelope for, and only a changed view moves the page's.
            _record(store, events[3:first_call])
            shows(page, "Let me look it up for you.")
            _record(store, events[first_call:])
            shows(page, "It is sunny in Paris today, 24 degrees.")
            shown = page.text_content("section.conversation") or ""
            assert "It is sunny in Paris today, 24 degrees." in shown
            assert shown.count("What is the weather in Paris?") == 1  # each input once
            assert "Sunny, 24 C" in shown
            final = keys(page)
            assert final[0] == "recorded_request:call-0"
            assert "recorded_request:call-1" in final
            assert len(final) == len(set(final))
            browser.close()
    finally:
        server.stop()
