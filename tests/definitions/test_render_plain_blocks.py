"""A one-line block of prose is rendered without markdown-it, exactly as markdown-it
renders it (``definitions._render._render_block``): the shortcut a live view takes for
the paragraph a streamed answer is writing."""

from __future__ import annotations

import importlib.util

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from definitions import _render
from tests._shared import require

require(
    "markdown-it-py",
    "pip install -e '.[test]' (the render extra brings it)",
    found=importlib.util.find_spec("markdown_it") is not None,
)

# Letters of several scripts, digits, spaces of several kinds, every ASCII punctuation
# mark (each opens some Markdown syntax somewhere), line breaks and control characters.
ALPHABET = st.sampled_from(
    [
        *"abcXYZéßжλ中あ",
        *"0123456789",
        " ",
        "\t",
        "\u00a0",
        "\u2028",
        "\n",
        "\r",
        "\x00",
        "\x0b",
        *"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
    ]
)
# What opens Markdown syntax, to be met anywhere in a line, first included.
SYNTAX = st.sampled_from(
    [
        *("1. ", "1) ", "# ", "- ", "+ ", "* ", "> ", "    ", "---", "===", "```", "~~~"),
        *("[a](http://x.y)", "[a]", "<http://x.y>", "<b>", "![i](http://x.y)", "`c`"),
        *("*e*", "_e_", "**s**", "~~s~~", "&amp;", "&#35;", "\\*", "  \n", "\x00", "\t"),
        *("| a | b |\n|---|---|", "http://x.y", "www.x.y", "a@b.c"),
    ]
)
texts = st.lists(SYNTAX | st.text(ALPHABET, max_size=4), max_size=8).map("".join)
# Mostly prose: a letter first, few marks, so the shortcut is taken often.
prose = st.builds(
    lambda first, words: first + " ".join(words),
    st.sampled_from([*"aXéж中"]),
    st.lists(st.text(st.sampled_from([*"abcé,.'\"?:;()0123-+=#%"]), max_size=6), max_size=5),
)


@pytest.mark.slow
@settings(max_examples=400)
@given(texts | prose | st.builds(str.__add__, prose, texts))
@example("Hello, world. It's 3 o'clock")
@example("a  ")
@example("a ~~b~~")
@example("a &amp; b")
@example("a\u00a0")
@example("word *emph*")
def test_a_block_renders_as_markdown_it_renders_it(block: str) -> None:
    md = _render._markdown_it()
    assert _render._render_block(md, block) == md.render(block)


def test_prose_takes_the_shortcut() -> None:
    """What the test above proves is not vacuous: ordinary sentences, with a streamed
    delta's trailing space, take the shortcut."""
    for line in ("Hello, world. It's 3 o'clock ", 'He said "no" (twice): 2+2=4?', "Ça va ."):
        assert _render._PROSE.fullmatch(line.rstrip(" "))
