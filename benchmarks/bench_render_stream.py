"""Rendering a streamed 1M-character message, frame by frame, as the live page does.

One ``message`` streams 1,000,000 characters of Markdown (paragraphs, lists, fenced
code) in 40-character deltas through an engine; every ``--frame`` deltas is a frame,
and each frame re-renders the changed node with the live page's ``HtmlRenderer``
(what ``convo serve`` does per notification). Printed: the render time per frame
over the first and the last tenth of the frames and their ratio (the target: the end
within 2x of the start, i.e. no quadratic work), then the reference measured in the
same run: rendering the final text's Markdown whole, which is what every frame at the
end would cost if rendering were not incremental. Also printed, because the live page
still sends each changed node whole: the fragment's size at the start and the end.

    python benchmarks/bench_render_stream.py [--chars 1000000] [--frame 25] [--repeat 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from definitions import builtin
from definitions._render import markdown
from engine import create_conversation_engine
from replay import HtmlRenderer


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


def run(chars: int, frame: int) -> tuple[list[float], int, int, str]:
    """Render times per frame (seconds), first and last fragment sizes, final text."""
    text = corpus(chars)
    engine = create_conversation_engine(builtin.DEFINITIONS)
    renderer = HtmlRenderer(builtin.DEFINITIONS)
    engine.push({"type": "message.start", "id": "m", "role": "assistant"})
    times: list[float] = []
    sizes: list[int] = []
    step = 40
    for n, start in enumerate(range(0, len(text), step), 1):
        engine.push({"type": "message.delta", "id": "m", "text": text[start : start + step]})
        if n % frame == 0:
            (node,) = engine.nodes()
            began = time.perf_counter()
            html = renderer.fragment(node)
            times.append(time.perf_counter() - began)
            sizes.append(len(html))
    return times, sizes[0], sizes[-1], text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=1_000_000)
    parser.add_argument("--frame", type=int, default=25, help="deltas per frame")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    starts, ends = [], []
    for _ in range(args.repeat):
        times, first_size, last_size, text = run(args.chars, args.frame)
        tenth = max(1, len(times) // 10)
        starts.append(statistics.median(times[:tenth]))
        ends.append(statistics.median(times[-tenth:]))
    start, end = min(starts), min(ends)
    began = time.perf_counter()
    markdown(text)
    whole = time.perf_counter() - began
    print(f"{args.chars:,} characters, {len(times):,} frames of {args.frame} deltas of 40 chars")
    print(f"render per frame, first tenth: {start * 1e6:8.0f} us")
    print(f"render per frame, last tenth:  {end * 1e6:8.0f} us  (ratio {end / start:.2f}x)")
    print(
        f"reference, the final Markdown rendered whole: {whole * 1e3:.1f} ms "
        f"({whole / end:.0f}x a last-tenth frame)"
    )
    print(f"fragment size: {first_size:,} -> {last_size:,} characters (sent whole per frame)")


if __name__ == "__main__":
    main()
