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
        end = self.end
        text = self.text
        index = self.skip(index)
        if index < end and text[index] == "}":
            return result, index + 1
        while True:
            if index >= end:
                return result, end
            if text[index] != '"':
                raise self.error(index, "a property name")
            try:
                key, index = self.string(index + 1)
            except _Truncated:
                return result, end
            index = self.skip(index)
            if index >= end:
                return result, end
            if text[index] != ":":
                raise self.error(index, "':'")
            index = self.skip(index + 1)
            if index >= end:
                return result, end
            try:
                value, index = self.value(index)
            except _Truncated:
                return result, end
            result[key] = value
            closed, index = self.after_item(index, "}")
            if closed:
                return result, index

    def array(self, index: int) -> tuple[list[Any], int]:
        result: list[Any] = []
        end = self.end
        text = self.text
        index = self.skip(index)
        if index < end and text[index] == "]":
            return result, index + 1
        while True:
            if index >= end:
                return result, end
            try:
                value, index = self.value(index)
            except _Truncated:
                return result, end
            result.append(value)
            closed, index = self.after_item(index, "]")
            if closed:
                return result, index

    def after_item(self, index: int, close: str) -> tuple[bool, int]:
        """What follows an item of an object or array (``close`` ends it): whether the
        container is done (closed, or the text ends first) and the index after it, or
        of the next item after the comma; an error for anything else."""
        index = self.skip(index)
        if index >= self.end:
            return True, self.end
        char = self.text[index]
        if char == close:
            return True, index + 1
        if char != ",":
            raise self.error(index, f"',' or '{close}'")
        return False, self.skip(index + 1)
