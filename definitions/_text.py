"""Streamed text that stays linear when folded into frozen state.

``state.text + delta`` copies the whole text on every delta: 1M characters in
8-character deltas is 125,000 copies of up to 1 MB. ``StreamedText`` is an
immutable value made of full blocks shared by all its versions (an append-only
list; a version sees a prefix of it) and a short head string of its own. An append
copies at most the head (under ``_BLOCK`` characters), so appending is O(1) in the
length of the text, and older versions, held by views across notifications, never
change. Blocks are at least ``_BLOCK`` characters, so CPython's ~50 bytes per string
add about 5% to the memory of the text, however small the deltas.

Measured here: ~200 ns per append against ~30 ns for a plain ``str +`` of a short
text (and against seconds for a plain ``+`` of a 1 MB text).
"""

from __future__ import annotations

from typing import Any

__all__ = ["StreamedText"]

_BLOCK = 1024
_new = object.__new__
# Shared by every text with no full block yet: one object fewer per node for the
# garbage collector to trace; replaced by a list when the first block fills.
_NO_BLOCKS: list[str] = []


class StreamedText:
    """An immutable string built by appending deltas in O(len(delta) + 1024).

    ``text + delta`` (or ``text.append(delta)``) returns a new ``StreamedText``;
    ``str(text)`` gives the string (cached). Compares and hashes like its string.
    """

    __slots__ = ("_blocks", "_head", "_nblocks", "_text")

    _blocks: list[str]
    _nblocks: int
    _head: str
    _text: str

    def __init__(self, text: str = "") -> None:
        if type(text) is not str:
            raise TypeError(f"StreamedText takes a str, not {type(text).__name__}")
        self._blocks = _NO_BLOCKS
        self._nblocks = 0
        self._head = text

    def append(self, delta: str) -> StreamedText:
        """This text followed by ``delta``; ``TypeError`` unless ``delta`` is a str."""
        head = self._head + delta  # str + non-str raises TypeError, which is the check
        new = _new(StreamedText)
        if len(head) < _BLOCK:
            new._blocks = self._blocks
            new._nblocks = self._nblocks
            new._head = head
            return new
        blocks = self._blocks
        nblocks = self._nblocks
        if blocks is _NO_BLOCKS or len(blocks) != nblocks:  # first block, or an older
            blocks = blocks[:nblocks]  # version is being extended: a list of its own
        blocks.append(head)
        new._blocks = blocks
        new._nblocks = nblocks + 1
        new._head = ""
        return new

    __add__ = append

    def __str__(self) -> str:
        if not self._nblocks:
            return self._head
        try:
            return self._text
        except AttributeError:
            text = self._text = "".join(self._blocks[: self._nblocks]) + self._head
            return text

    def __len__(self) -> int:
        if not self._nblocks:
            return len(self._head)
        return len(str(self))

    def __bool__(self) -> bool:
        return bool(self._nblocks or self._head)

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
