"""Streamed text that stays linear when folded into frozen state.

``state.text + delta`` copies the whole text on every delta: 1M characters in
8-character deltas is 125,000 copies of up to 1 MB. ``StreamedText`` is an
immutable value whose versions share one append-only backing store. A version
sees a prefix of the store, so appending to the newest version is O(len(delta))
and older versions (held by views across notifications) never change.

Small deltas are gathered into blocks of ``_BLOCK`` parts so that the per-string
overhead of CPython (about 50 bytes) does not multiply the memory of short deltas.
"""

from __future__ import annotations

from typing import Any

__all__ = ["StreamedText"]

_BLOCK = 64


class StreamedText:
    """An immutable string built by appending deltas in amortized O(len(delta)).

    ``text + delta`` (or ``text.append(delta)``) returns a new ``StreamedText``;
    ``str(text)`` gives the string (cached). Compares and hashes like its string.
    """

    __slots__ = ("_blocks", "_length", "_nblocks", "_nparts", "_parts", "_text")

    _blocks: list[str]
    _nblocks: int
    _parts: list[str]
    _nparts: int
    _length: int
    _text: str | None

    def __init__(self, text: str = "") -> None:
        if not isinstance(text, str):
            raise TypeError(f"StreamedText takes a str, not {type(text).__name__}")
        self._blocks = [text] if text else []
        self._nblocks = len(self._blocks)
        self._parts = []
        self._nparts = 0
        self._length = len(text)
        self._text = text

    def append(self, delta: str) -> StreamedText:
        """This text followed by ``delta``; ``self`` when ``delta`` is empty."""
        if type(delta) is not str:
            raise TypeError(f"can only append str, not {type(delta).__name__}")
        if not delta:
            return self
        parts = self._parts
        nparts = self._nparts
        if len(parts) != nparts:  # an older version is being extended: branch off
            parts = parts[:nparts]
        parts.append(delta)
        nparts += 1
        blocks = self._blocks
        nblocks = self._nblocks
        if nparts == _BLOCK:
            if len(blocks) != nblocks:
                blocks = blocks[:nblocks]
            blocks.append("".join(parts))
            nblocks += 1
            parts = []
            nparts = 0
        new = object.__new__(StreamedText)
        new._blocks = blocks
        new._nblocks = nblocks
        new._parts = parts
        new._nparts = nparts
        new._length = self._length + len(delta)
        new._text = None
        return new

    __add__ = append

    def __str__(self) -> str:
        text = self._text
        if text is None:
            text = self._text = "".join(self._blocks[: self._nblocks]) + "".join(
                self._parts[: self._nparts]
            )
        return text

    def __len__(self) -> int:
        return self._length

    def __bool__(self) -> bool:
        return self._length > 0

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StreamedText):
            return self._length == other._length and str(self) == str(other)
        if isinstance(other, str):
            return self._length == len(other) and str(self) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(str(self))

    def __repr__(self) -> str:
        return f"StreamedText({str(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (StreamedText, (str(self),))
