"""Streaming a 1M-character message to the live page, frame by frame.

One ``message`` streams 1,000,000 characters of Markdown (paragraphs, lists, fenced
code) in 40-character deltas into a live conversation of ``convo serve`` (its
``_Folded``: engine, renderer, change stamps); every ``--frame`` deltas is a
frame, and each frame is timed over the whole server path of a client that keeps up:
the notification, rendering the changed node, its block patch and the encoded SSE
message (``frame_since``). Printed: the time per frame over the first and the last
tenth of the frames and their ratio (the target: the end within 2x of the start, i.e.
no quadratic work), the bytes sent per frame, and the references measured in the same
run: sending the node whole at the end (what every frame cost before block patches)
and rendering the final text's Markdown whole (no incremental rendering at all).
With ``--browser`` (Playwright and /usr/bin/chromium), the same messages are also
applied by the page's own script in headless Chromium, timed per frame likewise.

    python benchmarks/bench_render_stream.py [--chars 1000000] [--frame 25] [--repeat 3]
        [--browser]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from pathlib import Path

from definitions import builtin, event_type
from definitions._render import markdown
from engine import Registration
from replay import HtmlRenderer, ProtocolSet
from replay.serve._app import _encode, _Folded
from replay.serve._clock import FrameClock


def corpus(chars: int, seed: int = 7) -> str:
    """Markdown as a model writes it: paragraphs, a list, now and then a code block."""
    rng = random.Random(seed)
    words = [
        "the",
        "engine",
        "folds",
        "events",
        "into",
        "nodes",
        "and",
        "the",
        "view",
        "stays",
        "linear",
        "as",
        "text",
        "grows",
    ]
    parts: list[str] = []
    size = 0
    while size < chars:
        kind = rng.random()
        if kind < 0.15:
            body = "\n".join(f"x_{i} = compute({i}, 'value')  # step {i}" for i in range(8))
            part = f"```python\n{body}\n```"
        elif kind < 0.3:
            part = "\n".join(
                f"- **{rng.choice(words)}** {' '.join(rng.choices(words, k=8))}" for _ in range(5)
            )
        else:
            part = " ".join(rng.choices(words, k=70)) + "."
        parts.append(part)
        size += len(part) + 2
    return "\n\n".join(parts)[:chars]


def run(chars: int, frame: int) -> tuple[list[float], list[bytes], float, str]:
    """Times per frame (seconds), the messages sent, the whole-node reference
    (seconds, at the end) and the final text."""
    text = corpus(chars)

    async def stream() -> tuple[list[float], list[bytes], float]:
        registration = Registration(builtin.DEFINITIONS, event_type=event_type)
        chosen = ProtocolSet(name="builtin", definitions=builtin.DEFINITIONS)
        hub = _Folded("c", lambda _: (chosen, registration), FrameClock(3600.0))
        hub.fold([{"type": "message.start", "id": "m", "role": "assistant"}], 0)
        engine = hub.engine
        assert engine is not None
        engine.flush()
        message = hub.frame_since(0, first=True)
        assert message is not None
        messages, cursor = [message[0]], message[1]
        times: list[float] = []
        step = 40
        for n, start in enumerate(range(0, len(text), step), 1):
            event = {"type": "message.delta", "id": "m", "text": text[start : start + step]}
            hub.fold([event], n)
            if n % frame == 0:
                began = time.perf_counter()
                engine.flush()  # the frame: the engine notifies, the hub stamps
                sent = hub.frame_since(cursor)
                times.append(time.perf_counter() - began)
                assert sent is not None
                messages.append(sent[0])
                cursor = sent[1]
        # A frame sending the node whole (its Markdown still rendered incrementally).
        (node,) = hub.nodes
        wholes = []
        for _ in range(5):
            began = time.perf_counter()
            html = HtmlRenderer(builtin.DEFINITIONS).fragment(node)
            _encode({"nodes": [{"key": node.key, "seq": node.seq, "html": html}]})
            wholes.append(time.perf_counter() - began)
        whole = statistics.median(wholes)
        return times, messages, whole

    times, messages, whole = asyncio.run(stream())
    return times, messages, whole, text


def browser_times(messages: list[bytes], text: str) -> tuple[float, float]:
    """The messages applied by convo.js in headless Chromium, with layout: seconds per
    frame over the first and the last tenth."""
    from playwright.sync_api import sync_playwright

    static = Path(__file__).parents[1] / "replay" / "static"
    script = (static / "convo.js").read_text()
    # The page's own script, fed the recorded messages through a stand-in EventSource.
    harness = """() => {
      window.__listeners = [];
      window.EventSource = class { constructor() { this.readyState = 1; }
        addEventListener(type, f) { if (type === "patch") window.__listeners.push(f); } };
    }"""
    datas = [m.split(b"data: ", 1)[1].rstrip(b"\n").decode() for m in messages]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium")
        page = browser.new_page()
        # A page at an http URL (the script resolves the stream's URL against it).
        body = (
            '<main><section class="conversation" data-stream="/s" data-position="0">'
            "</section></main>"
        )
        page.route(
            "http://convo.test/", lambda route: route.fulfill(body=body, content_type="text/html")
        )
        page.goto("http://convo.test/")
        page.add_style_tag(content=(static / "convo.css").read_text())
        page.evaluate(harness)
        page.add_script_tag(content=script)
        # Timed per tenth of the frames (a frame is below the timer's resolution).
        tenth = max(1, (len(datas) - 1) // 10)
        times: list[float] = page.evaluate(
            """([datas, tenth]) => {
                const apply = (data) => { for (const f of window.__listeners) f({data}); };
                const batch = (some) => {
                    const began = performance.now();
                    for (const data of some) { apply(data); document.body.offsetHeight; }
                    return (performance.now() - began) / some.length / 1000;
                };
                apply(datas[0]);
                const first = batch(datas.slice(1, 1 + tenth));
                batch(datas.slice(1 + tenth, datas.length - tenth));
                return [first, batch(datas.slice(datas.length - tenth))];
            }""",
            [datas, tenth],
        )
        shown = page.evaluate("document.querySelector('section').textContent.length")
        browser.close()
    assert shown > len(text) * 0.9, (shown, len(text))  # the page has the text
    return times[0], times[1]


def tenths(times: list[float]) -> tuple[float, float]:
    tenth = max(1, len(times) // 10)
    return statistics.median(times[:tenth]), statistics.median(times[-tenth:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=1_000_000)
    parser.add_argument("--frame", type=int, default=25, help="deltas per frame")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--browser", action="store_true", help="also apply in Chromium")
    args = parser.parse_args()
    starts, ends, wholes = [], [], []
    for _ in range(args.repeat):
        times, messages, whole, text = run(args.chars, args.frame)
        start, end = tenths(times)
        starts.append(start)
        ends.append(end)
        wholes.append(whole)
    start, end = min(starts), min(ends)
    began = time.perf_counter()
    markdown(text)
    rendered = time.perf_counter() - began
    sizes = [len(message) for message in messages[1:]]
    print(f"{args.chars:,} characters, {len(times):,} frames of {args.frame} deltas of 40 chars")
    print(f"server per frame, first tenth: {start * 1e6:8.0f} us")
    print(f"server per frame, last tenth:  {end * 1e6:8.0f} us  (ratio {end / start:.2f}x)")
    print(
        f"sent per frame: {statistics.median(sizes[: len(sizes) // 10]):,.0f} -> "
        f"{statistics.median(sizes[-len(sizes) // 10 :]):,.0f} bytes (median of first/last tenth)"
    )
    print(
        f"reference, a frame sending the node whole at the end: {min(wholes) * 1e3:.1f} ms "
        f"({min(wholes) / end:.1f}x a last-tenth frame)"
    )
    print(
        f"reference, the final Markdown rendered whole: {rendered * 1e3:.1f} ms "
        f"({rendered / end:.0f}x a last-tenth frame)"
    )
    if args.browser:
        start, end = browser_times(messages, text)
        print(f"browser apply per frame, first tenth: {start * 1e3:6.2f} ms")
        print(
            f"browser apply per frame, last tenth:  {end * 1e3:6.2f} ms  (ratio {end / start:.2f}x)"
        )


if __name__ == "__main__":
    main()
