"""Streamed text that stays linear when folded into frozen state.

``state.text + delta`` copies the whole text on every delta: 1M characters in
8-character deltas is 125,000 copies of up to 1 MB. ``StreamedText`` is an
immutable value made of full blocks shared by all its versions (an append-only
list; a version sees a prefix of it) and a short head string of its own. An append
copies at most the head (under ``_BLOCK`` characters), so appending is O(1) in the
length of the text, and older versions, held by views across notifications, never
change. Blocks are at least ``_BLOCK`` characters, so CPython's ~50 bytes per string
add about 5% to the memory of the text, however small the deltas.

Measured here: ~150 ns per ``append`` (~170 ns through ``+``) against ~30 ns for a
plain ``str +`` of a short text (and against seconds for a plain ``+`` of a 1 MB text).
"""

from __future__ import annotations

from typing import Any

__all__ = ["StreamedText"]

_BLOCK = 1024
_new = object.__new__


class StreamedText:
    """An immutable string built by appending deltas in O(len(delta) + 1024).

    ``text + delta`` (or ``text.append(delta)``, a little faster: no operator
    dispatch) returns a new ``StreamedText``; ``str(text)`` gives the string
    (cached). Compares and hashes like its string.
    """

    # _prefix is None or (blocks, n): this version's text is blocks[:n] + _head. The
    # pair changes only when a block fills, so between blocks every version shares
    # one tuple and an append sets two slots.
    __slots__ = ("_head", "_prefix", "_text")

    _head: str
    _prefix: tuple[list[str], int] | None
    _text: str

    def __init__(self, text: str = "") -> None:
        if type(text) is not str:
            raise TypeError(f"StreamedText takes a str, not {type(text).__name__}")
        self._prefix = None
        self._head = text

    def append(self, delta: str) -> StreamedText:
        """This text followed by ``delta``; ``TypeError`` unless ``delta`` is a str."""
        head = self._head + delta  # str + non-str raises TypeError, which is the check
        if len(head) < _BLOCK:
            new = _new(StreamedText)
            new._prefix = self._prefix
            new._head = head
            return new
        return self._spill(head)

    __add__ = append

    def _spill(self, head: str) -> StreamedText:
        """A version whose head became a full block."""
        prefix = self._prefix
        if prefix is None:
            blocks, count = [head], 1
        else:
            blocks, count = prefix
            if len(blocks) != count:  # an older version is being extended: its own list
                blocks = blocks[:count]
            blocks.append(head)
            count += 1
        new = _new(StreamedText)
        new._prefix = (blocks, count)
        new._head = ""
        return new

    def __str__(self) -> str:
        prefix = self._prefix
        if prefix is None:
            return self._head
        try:
            return self._text
        except AttributeError:
            blocks, count = prefix
            text = self._text = "".join(blocks[:count]) + self._head
            return text

    def __len__(self) -> int:
        if self._prefix is None:
            return len(self._head)
        return len(str(self))

    def __bool__(self) -> bool:
        return bool(self._prefix or self._head)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StreamedText | str):
            return str(self) == str(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(str(self))

    def __repr__(self) -> str:
        return f"StreamedText({str(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (StreamedText, (str(self),))
