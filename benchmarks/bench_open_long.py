"""Opening a long conversation in the live page, in headless Chromium.

A 22,500-event conversation (turns of an agent's session, about 7,500 nodes; see
``long_conversation``) and a 10-event one are served by ``convo serve`` from one
store; each is opened in a fresh page of headless Chromium, and the time from
navigation start to the first frame in which a click at the last node's centre
reaches it (scrolled into view as a reader would) is read off the page's own clock;
Playwright's actionability check (visible, stable, receiving events) must pass too.
Printed: the median over
``--repeat`` openings of each, alternating, and the ratio, long to short (the target:
under a second, and within 2x the short one measured in the same run).

Needs the ``serve`` and ``serve-test`` extras and the Debian ``chromium`` package::

    python benchmarks/bench_open_long.py [--events 22500] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from replay import SQLiteStore

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"


def long_conversation(events: int) -> list[dict[str, Any]]:
    """An agent's long session, cut at ``events``: turn after turn of a user's
    question, the assistant's streamed Markdown answer in two parts (one turn of two
    nodes), a tool call with its arguments and result, and a status row; about 15
    events and 5 nodes a turn, so 22,500 events are some 7,500 nodes."""
    out: list[dict[str, Any]] = []
    turn = 0
    while len(out) < events:
        t = f"-{turn}"
        out += [
            {"type": "message.start", "id": "u" + t, "role": "user", "text": f"Step {turn}?"},
            {"type": "message.end", "id": "u" + t},
            {"type": "message.start", "id": "a" + t, "role": "assistant"},
            {"type": "message.delta", "id": "a" + t, "text": f"Looking at **step {turn}**: "},
            {"type": "message.delta", "id": "a" + t, "text": "the `fold` is linear.\n\n- one"},
            {"type": "message.delta", "id": "a" + t, "text": "\n- two\n"},
            {"type": "message.end", "id": "a" + t},
            {"type": "tool_call.start", "id": "t" + t, "name": "grep"},
            {"type": "tool_call.arguments_delta", "id": "t" + t, "text": '{"q": "fold"}'},
            {"type": "tool_call.arguments_end", "id": "t" + t},
            {"type": "tool_call.result", "id": "t" + t, "output": f"{turn} matches"},
            {"type": "message.start", "id": "b" + t, "role": "assistant"},
            {"type": "message.delta", "id": "b" + t, "text": "Done; ```py\nx = 1\n```"},
            {"type": "message.end", "id": "b" + t},
            {"type": "status.update", "id": "s" + t, "status": "done", "label": f"turn {turn}"},
        ]
        turn += 1
    return out[:events]


def serve(store: Path) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "replay.serve._command", "--store", str(store), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("convo serve: http://"), line
    return process, line.split(": ", 1)[1].strip().rstrip("/")


# Installed in every page before its own scripts: from the DOM's parse on, each
# animation frame looks for the last shown node and records the first moment a click
# at the centre of its visible part would reach it (scrolling it into view, as a
# reader would).
_PROBE = """
addEventListener("DOMContentLoaded", () => {
  const nodes = document.querySelectorAll("section.conversation > article:not([hidden])");
  const last = nodes[nodes.length - 1];
  function check() {
    const box = last.getBoundingClientRect();
    const top = Math.max(box.top, 0), bottom = Math.min(box.bottom, innerHeight);
    if (box.height > 0 && bottom > top) {
      const hit = document.elementFromPoint(box.left + box.width / 2, (top + bottom) / 2);
      if (last.contains(hit)) { window.__clickable = performance.now(); return; }
    } else {
      last.scrollIntoView({ block: "end" });
    }
    requestAnimationFrame(check);
  }
  requestAnimationFrame(check);
});
"""


def open_time(browser: Any, url: str) -> float:
    """Seconds from navigation start to the last node clickable, in a fresh page, as
    the page's own clock tells (Playwright's checks cost round trips of their own)."""
    page = browser.new_page(viewport={"width": 1000, "height": 800})
    try:
        page.add_init_script(_PROBE)
        page.goto(url, wait_until="commit", timeout=120_000)
        page.wait_for_function(
            "() => window.__clickable !== undefined", timeout=120_000, polling=100
        )
        # Clickable for Playwright too (visible, stable, receiving events): not timed.
        page.locator("section.conversation > article:not([hidden])").last.click(
            trial=True, timeout=120_000
        )
        page.wait_for_selector('section.conversation[data-live="open"]', timeout=120_000)
        clickable: float = page.evaluate("window.__clickable") / 1000
        return clickable
    finally:
        page.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=22_500)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as directory:
        store = Path(directory) / "events.sqlite"
        events = long_conversation(args.events)
        with SQLiteStore(store) as writer:
            writer.append("long", events)
            writer.append("short", events[:10])
        process, url = serve(store)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=CHROMIUM, args=["--headless", "--no-sandbox"]
                )
                # One opening of each first: the server loads and folds both.
                for name in ("long", "short"):
                    open_time(browser, f"{url}/conversations/{name}")
                times: dict[str, list[float]] = {"long": [], "short": []}
                for _ in range(args.repeat):
                    for name in ("long", "short"):
                        times[name].append(open_time(browser, f"{url}/conversations/{name}"))
                browser.close()
        finally:
            process.terminate()
            process.wait(timeout=30)
    long_, short = statistics.median(times["long"]), statistics.median(times["short"])
    print(f"events: {args.events:,} long, 10 short; {args.repeat} openings each, medians")
    print(f"long conversation, last node clickable:  {long_ * 1e3:7.0f} ms")
    print(f"short conversation, last node clickable: {short * 1e3:7.0f} ms")
    print(f"ratio long / short: {long_ / short:.2f}x (target: under 1 s and within 2x)")


if __name__ == "__main__":
    main()
