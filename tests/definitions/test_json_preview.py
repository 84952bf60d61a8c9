"""The incremental partial-JSON parser behind tool-call argument previews."""

from __future__ import annotations

import itertools
import json
import math
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from definitions._json import PartialJson

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=25,
)

_SPACES = ["", "", "", " ", "\n", "\t", "  \r\n "]


def serialize(value: Any, rnd: random.Random, ensure_ascii: bool) -> str:
    """JSON text of ``value`` with random whitespace between every pair of tokens."""

    def ws() -> str:
        return rnd.choice(_SPACES)

    if isinstance(value, dict):
        items = [
            ws()
            + json.dumps(key, ensure_ascii=ensure_ascii)
            + ws()
            + ":"
            + ws()
            + serialize(item, rnd, ensure_ascii)
            + ws()
            for key, item in value.items()
        ]
        return "{" + (",".join(items) if items else ws()) + "}"
    if isinstance(value, list):
        items = [ws() + serialize(item, rnd, ensure_ascii) + ws() for item in value]
        return "[" + (",".join(items) if items else ws()) + "]"
    return json.dumps(value, ensure_ascii=ensure_ascii)


def same(a: Any, b: Any) -> bool:
    """Structural equality that tells 1, 1.0 and True apart."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return math.copysign(1, a) == math.copysign(1, b) and a == b
    return bool(a == b)


def compatible(partial: Any, final: Any) -> bool:
    """Whether ``partial`` can grow into ``final``: strings by suffix, lists by new
    elements, objects by new keys; scalars only when equal."""
    if isinstance(partial, str):
        return isinstance(final, str) and final.startswith(partial)
    if isinstance(partial, list):
        return (
            isinstance(final, list)
            and len(partial) <= len(final)
            and all(compatible(p, f) for p, f in zip(partial, final, strict=False))
        )
    if isinstance(partial, dict):
        return isinstance(final, dict) and all(
            key in final and compatible(item, final[key]) for key, item in partial.items()
        )
    return same(partial, final)


def feed_all(text: str, cuts: list[int]) -> list[PartialJson]:
    parser = PartialJson()
    parsers = [parser]
    previous = 0
    for cut in [*sorted(cuts), len(text)]:
        parser = parser.feed(text[previous:cut])
        parsers.append(parser)
        previous = cut
    return parsers


def _reject(name: str) -> Any:
    raise ValueError(name)


def strict_loads(text: str) -> Any:
    return json.loads(text, parse_constant=_reject)


documents = st.tuples(json_values, st.randoms(use_true_random=False), st.booleans()).map(
    lambda t: (t[0], serialize(t[0], t[1], t[2]))
)


class TestPreview:
    """Previews of every prefix never raise, only grow, and end at the real value."""

    @pytest.mark.slow
    @settings(max_examples=150)
    @given(documents, st.data())
    def test_prefixes_grow_into_the_final_value(self, doc: tuple[Any, str], data: Any) -> None:
        value, text = doc
        cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=12))
        parsers = feed_all(text, cuts)
        final = parsers[-1].finish()
        assert final.error is None
        assert same(final.value, value)
        assert same(final.value, strict_loads(text))
        previews = [p.preview for p in parsers]
        for earlier, later in itertools.pairwise(previews):
            assert earlier is None or compatible(earlier, later if later is not None else value)
        for preview in previews:
            assert preview is None or compatible(preview, value)

    @pytest.mark.slow
    @settings(max_examples=100)
    @given(documents)
    def test_one_character_at_a_time(self, doc: tuple[Any, str]) -> None:
        value, text = doc
        parser = PartialJson()
        for char in text:
            parser = parser.feed(char)
            assert parser.preview is None or compatible(parser.preview, value)
        assert same(parser.finish().value, value)

    def test_older_versions_are_unchanged(self) -> None:
        first = PartialJson().feed('{"a": [1, "x')
        second = first.feed('yz", 2]')
        third = first.feed('q"]}')
        assert first.preview == {"a": [1, "x"]}
        assert second.preview == {"a": [1, "xyz", 2]}
        assert third.finish().value == {"a": [1, "xq"]}

    @pytest.mark.parametrize(
        ("prefix", "preview"),
        [
            ("", None),
            ("  ", None),
            ('{"ke', {}),
            ('{"key"', {}),
            ('{"key":', {}),
            ('{"key": 12', {}),
            ('{"key": tr', {}),
            ('{"key": "', {"key": ""}),
            ('{"key": "a\\', {"key": "a"}),
            ('{"key": "a\\u00e', {"key": "a"}),
            ('{"key": "a\\u00e9', {"key": "aé"}),
            ('{"key": "a\\ud83d', {"key": "a"}),
            ('{"key": "a\\ud83d\\', {"key": "a"}),
            ('{"key": "a\\ud83d\\ude00', {"key": "a\U0001f600"}),
            ('{"key": "a\\\\', {"key": "a\\"}),
            ('[1, [2, {"x": [', [1, [2, {"x": []}]]),
            ("12", None),
        ],
    )
    def test_partial_tokens(self, prefix: str, preview: Any) -> None:
        assert PartialJson().feed(prefix).preview == preview

    def test_escape_split_across_deltas(self) -> None:
        parser = PartialJson().feed('["a\\').feed('"b').feed('"]')
        assert parser.value == ['a"b']


class TestErrors:
    """Malformed text is an error state with a position, never an exception."""

    @pytest.mark.parametrize(
        ("text", "fragment"),
        [
            ("", "ends before a value"),
            ("[1, 2", "ends before ']' or ','"),
            ('{"a": 1', "ends before '}' or ','"),
            ('{"a" 1}', "expected ':'"),
            ("[1,]", "expected a value"),
            ("[01]", "invalid number '01'"),
            ("[tru]", "invalid literal"),
            ('["a\x01"]', "invalid string"),
            ('["\\x"]', "invalid string"),
            ("{} x", "expected the end of the document"),
            ("NaN", "unexpected 'N' at position 0"),
        ],
    )
    def test_messages(self, text: str, fragment: str) -> None:
        parser = PartialJson().feed(text).finish()
        assert parser.error is not None
        assert fragment in parser.error
        with pytest.raises(ValueError, match=r"JSON|position"):
            _ = parser.value

    def test_preview_keeps_the_valid_part(self) -> None:
        parser = PartialJson().feed('{"a": [1, 2], "b": ]')
        assert parser.error is not None
        assert parser.preview == {"a": [1, 2]}
        assert parser.feed("more") is parser

    def test_text_after_a_complete_value_keeps_the_value_in_preview(self) -> None:
        parser = PartialJson().feed('{"a": 1} }')
        assert parser.error is not None
        assert parser.preview == {"a": 1}

    @pytest.mark.slow
    @settings(max_examples=150)
    @given(documents, st.data())
    def test_agrees_with_the_stdlib_on_mutated_text(self, doc: tuple[Any, str], data: Any) -> None:
        _, text = doc
        position = data.draw(st.integers(0, len(text)))
        insert = data.draw(st.sampled_from(["", "x", ",", "]", "}", '"', "\\", "-", "0", ":"]))
        drop = data.draw(st.integers(0, 2))
        mutated = text[:position] + insert + text[position + drop :]
        cuts = data.draw(st.lists(st.integers(0, len(mutated)), max_size=6))
        parser = feed_all(mutated, cuts)[-1].finish()
        try:
            expected = strict_loads(mutated)
        except ValueError:
            assert parser.error is not None, mutated
            _ = parser.preview  # never raises
        else:
            assert parser.error is None, (mutated, parser.error)
            assert same(parser.value, expected)


class TestLinear:
    """Feeding is proportional to the delta, not to the text so far."""

    def test_long_string_value_does_not_copy(self) -> None:
        parser = PartialJson().feed('{"content": "')
        versions = []
        for _ in range(2000):
            parser = parser.feed("abcdefgh")
            versions.append(parser)
        # each version keeps its own prefix: nothing older was extended in place
        assert versions[9].preview == {"content": "abcdefgh" * 10}
        assert parser.feed('"}').finish().value == {"content": "abcdefgh" * 2000}

    def test_equal_texts_give_equal_parsers(self) -> None:
        text = '{"a": [1, "two", {"b": null}], "c": "d'
        whole = PartialJson().feed(text)
        pieces = feed_all(text, list(range(0, len(text), 3)))[-1]
        assert whole == pieces
        assert hash(whole) == hash(pieces)
        assert whole != PartialJson().feed(text + "e")


def eager(text: str, cuts: list[int]) -> list[PartialJson]:
    """``feed_all`` with every version read as soon as it is made (nothing deferred)."""
    out = [PartialJson()]
    previous = 0
    for cut in [*sorted(cuts), len(text)]:
        parser = out[-1].feed(text[previous:cut])
        _ = parser.preview
        out.append(parser)
        previous = cut
    return out


class TestDeferred:
    """Parsing waits for a read; when and in what order versions are read never
    changes what they hold."""

    @settings(max_examples=100)
    @given(documents, st.data())
    def test_read_order_does_not_matter(self, doc: tuple[Any, str], data: Any) -> None:
        _, text = doc
        cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=12))
        lazy = feed_all(text, cuts)
        order = data.draw(st.permutations(range(len(lazy))))
        for index in order:  # read in a random order, some versions never before
            _ = lazy[index].preview
        for read_late, read_early in zip(lazy, eager(text, cuts), strict=True):
            assert read_late == read_early
            assert same(read_late.preview, read_early.preview)
        assert same(lazy[-1].finish().value, eager(text, cuts)[-1].finish().value)

    @settings(max_examples=100)
    @given(documents, st.data())
    def test_finish_unread_and_read_agree_on_mutated_text(
        self, doc: tuple[Any, str], data: Any
    ) -> None:
        """``finish`` of a never-read text (json.loads first) and of one read mid-way
        (incremental) give equal parsers, the same value or the same error."""
        _, text = doc
        position = data.draw(st.integers(0, len(text)))
        insert = data.draw(st.sampled_from(["", "x", ",", "]", '"', "\\", "NaN", "1e400"]))
        mutated = text[:position] + insert + text[position:]
        cut = data.draw(st.integers(0, len(mutated)))
        unread = PartialJson().feed(mutated[:cut]).feed(mutated[cut:]).finish()
        read = PartialJson().feed(mutated[:cut])
        _ = read.preview
        read = read.feed(mutated[cut:]).finish()
        assert unread == read
        assert unread.error == read.error
        if read.error is None:
            assert same(unread.value, read.value)

    def test_failed_parsers_compare_by_error_and_preview(self) -> None:
        """How much text after an error a version saw depends on the split: ignored."""
        whole = PartialJson().feed('{"a": 1 x} more')
        split = PartialJson().feed('{"a": 1 x')
        _ = split.error  # read: later feeds return it unchanged
        split = split.feed("} more")
        assert whole.error == split.error
        assert whole == split
        assert hash(whole) == hash(split)

    def test_long_pending_text_is_parsed_in_feed(self) -> None:
        parser = PartialJson().feed('["' + "x" * 600)
        assert parser._base is None  # over the limit: parsed now, not deferred
        short = PartialJson().feed("[1, ")
        assert short._base is not None
        assert short.preview == [1]
        assert short._base is None  # the read kept its result

    def test_deep_nesting_finishes_without_recursion(self) -> None:
        text = "[" * 5000 + "]" * 5000
        parser = PartialJson().feed(text[:300]).feed(text[300:]).finish()
        assert PartialJson().feed("[" * 200 + "]" * 200).finish().error is None
        assert parser.error is None
        value = parser.value
        for _ in range(4999):
            value = value[0]
        assert value == []
