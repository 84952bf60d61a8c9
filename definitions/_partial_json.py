"""Parse JSON that may have been cut off mid-stream (streamed tool arguments).

``parse_partial_json(text)`` returns what a complete document would hold so far, with
the semantics of the reference accumulators (jiter's ``partial_mode=True``, which the
Anthropic and OpenAI SDKs use): an incomplete string, number or literal is dropped
together with its key, containers cut off at the end are closed, and anything after a
complete top-level value is ignored. Complete documents take the C fast path
(``json.loads``), so callers parse once when they need the value, not per delta.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

__all__ = ["PartialJSONError", "parse_partial_json"]

_WS = frozenset(" \t\n\r")
_NUMBER = re.compile(r"(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_NUMBER_CHARS = frozenset("0123456789.eE+-")
_LITERALS = (("true", True), ("false", False), ("null", None))
_scanstring: Any = json.decoder.scanstring  # type: ignore[attr-defined]


class PartialJSONError(ValueError):
    """The text is not a prefix of any JSON document (or holds no value at all)."""


class _Truncated(Exception):
    """The value being read runs into the end of the text."""


def parse_partial_json(text: str) -> Any:
    """The value of ``text``, a complete JSON document or a prefix of one.

    Raises ``PartialJSONError`` if ``text`` is empty, whitespace, a bare scalar cut
    off before it was complete (``"abc``, ``tru``), or not a prefix of valid JSON.
    """
    try:
        return json.loads(text)
    except ValueError:
        pass
    parser = _Parser(text)
    index = parser.skip(0)
    if index >= parser.end:
        raise PartialJSONError("no JSON value in the text (it is empty or whitespace)")
    try:
        value, _ = parser.value(index)
    except _Truncated:
        raise PartialJSONError(f"the text ends inside a top-level scalar: {text[:40]!r}") from None
    return value


class _Parser:
    __slots__ = ("end", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.end = len(text)

    def skip(self, index: int) -> int:
        text, end = self.text, self.end
        while index < end and text[index] in _WS:
            index += 1
        return index

    def error(self, index: int, expected: str) -> PartialJSONError:
        return PartialJSONError(
            f"expected {expected} at character {index}, found {self.text[index : index + 10]!r}"
        )

    def value(self, index: int) -> tuple[Any, int]:
        """The value starting at ``index`` (not whitespace) and the index after it.

        Containers cut off by the end are returned closed (their index is ``end``);
        a cut-off scalar raises ``_Truncated`` so the container holding it drops it.
        """
        char = self.text[index]
        if char == "{":
            return self.object(index + 1)
        if char == "[":
            return self.array(index + 1)
        if char == '"':
            return self.string(index + 1)
        if char == "-" or "0" <= char <= "9":
            return self.number(index)
        rest = self.text[index : index + 5]
        for word, literal in _LITERALS:
            if rest.startswith(word):
                return literal, index + len(word)
            if word.startswith(rest):  # rest reaches the end of the text
                raise _Truncated
        raise self.error(index, "a JSON value")

    def string(self, index: int) -> tuple[str, int]:
        try:
            value, after = _scanstring(self.text, index)
        except json.JSONDecodeError as exc:
            # An escape cut off at the end ("\\", "\\u00") reads as invalid, not as
            # unterminated; anything within the last 6 characters is the cut.
            if exc.msg.startswith("Unterminated string") or exc.pos >= self.end - 6:
                raise _Truncated from None
            raise PartialJSONError(f"{exc.msg} at character {exc.pos}") from None
        return value, after

    def number(self, index: int) -> tuple[int | float, int]:
        text = self.text
        match = _NUMBER.match(text, index)
        after = match.end() if match is not None else index
        if after < self.end and all(char in _NUMBER_CHARS for char in text[after:]):
            raise _Truncated  # "12." or "1e" or "-": the number goes on past the end
        if match is None:
            raise self.error(index, "a number")
        integer, fraction, exponent = match.groups()
        if fraction or exponent:
            return float(integer + (fraction or "") + (exponent or "")), after
        return int(integer), after

    def object(self, index: int) -> tuple[dict[str, Any], int]:
        result: dict[str, Any] = {}
        text, end = self.text, self.end

        def member(index: int) -> int:
            if text[index] != '"':
                raise self.error(index, "a property name")
            key, index = self.string(index + 1)
            index = self.skip(index)
            if index >= end:
                raise _Truncated  # a key without its value is dropped
            if text[index] != ":":
                raise self.error(index, "':'")
            index = self.skip(index + 1)
            if index >= end:
                raise _Truncated
            result[key], index = self.value(index)
            return index

        return result, self.items(index, "}", member)

    def array(self, index: int) -> tuple[list[Any], int]:
        result: list[Any] = []

        def element(index: int) -> int:
            value, index = self.value(index)
            result.append(value)
            return index

        return result, self.items(index, "]", element)

    def items(self, index: int, close: str, item: Callable[[int], int]) -> int:
        """Read the items of an object or array from just after its opening bracket:
        ``item(index)`` reads one (``_Truncated`` where the text ends inside it: it is
        dropped), giving the index after it. The index after the container: after its
        ``close``, or the end of a text that stops inside it (the container is closed
        there). An error for anything but a comma or ``close`` after an item."""
        end = self.end
        index = self.skip(index)
        if index < end and self.text[index] == close:
            return index + 1
        while index < end:
            try:
                index = item(index)
            except _Truncated:
                return end
            index = self.skip(index)
            if index >= end:
                return end
            char = self.text[index]
            if char == close:
                return index + 1
            if char != ",":
                raise self.error(index, f"',' or '{close}'")
            index = self.skip(index + 1)
        return end
