"""An incremental JSON parser whose state is a persistent value: partial previews.

Theory of operation
-------------------
Tool-call arguments arrive as JSON text in small deltas. Re-parsing the whole text
on every delta (what "partial JSON" helpers usually do) is quadratic: 1M characters
in 8-character deltas is 125,000 parses of up to 1 MB. ``PartialJson`` instead
consumes each delta once and returns a *new* parser; the old one is untouched, so
a node state holding a parser stays a frozen value (views keep old nodes).

The parser state is small and shared between versions:

- the stack of open containers is a cons list ``(frame, rest)``; a frame is a
  tuple ``(is_object, items, key)`` whose ``items`` is again a cons list (newest
  first) of finished values (``(key, value)`` pairs in objects). Finishing a value
  conses one cell onto the innermost frame and rebuilds that one frame, O(1);
- a closed container is materialized once, when it closes, into a ``dict`` or
  ``list`` that later versions share (read-only by contract);
- a string or number spanning deltas accumulates in a ``StreamedText``, so a long
  string value (file contents written by a tool) is O(len(delta)) per delta, and
  within a delta the string body is skipped with one regular-expression search.

Work per delta is O(len(delta)) plus O(1) per structural token; a token is
decoded once, when it ends.

Parsing is deferred until someone looks. ``feed`` only records the delta: a new
version holds the last parsed version (its *base*) and the text since it (under
``_LAZY_LIMIT`` characters; a longer pending text is parsed at once). The first read
of a version (``preview``, ``error``, ``complete``, ``value``, ``finish``, equality)
parses its pending text in one pass and keeps the result, so a view that reads the
latest version per frame parses each character once, and a fold that nobody reads
mid-stream pays one call per delta plus one parse of larger pieces. ``finish`` of a
document never read mid-stream tries ``json.loads`` first (C speed; same values and
the same rejections, NaN and Infinity included) and falls back to the incremental
parser for its error message. Reading old versions costs at most ``_LAZY_LIMIT``
characters each. ``preview`` (the value so far) is computed on demand
and cached per version: O(items in the open containers + the partial string),
which is what rendering that value costs anyway; it is never computed per delta.

A preview is *prefix-compatible* with every later preview and with the final
value: strings only grow at their end, lists only gain elements, objects only gain
keys. So a key appears once it is complete and its value has started; numbers,
``true``/``false``/``null`` appear only when complete (``12`` may become ``123``);
a partial string drops a trailing incomplete escape (and a lone high surrogate,
whose low half may follow). Duplicate keys break this as they do in JSON: the
last one wins in the final value.

Malformed input never raises: the parser stops in an error state with a message
and the character position; ``preview`` keeps what was valid before the error.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from ._cons import items
from ._text import StreamedText

__all__ = ["PartialJson"]

# Modes: what the parser expects next.
_VALUE: Final = 0  # a value (after ':' or ',' in an array, or at the top)
_VALUE_OR_CLOSE: Final = 1  # after '['
_KEY: Final = 2  # after ',' in an object
_KEY_OR_CLOSE: Final = 3  # after '{'
_COLON: Final = 4
_AFTER: Final = 5  # after a value inside a container: ',' or the closer
_END: Final = 6  # the top-level value is complete: only whitespace may follow
_STRING: Final = 7
_NUMBER: Final = 8
_LITERAL: Final = 9
_ERROR: Final = 10

_EXPECTED = {
    _VALUE: "a value",
    _VALUE_OR_CLOSE: "a value or ']'",
    _KEY: "a string key",
    _KEY_OR_CLOSE: "a string key or '}'",
    _COLON: "':'",
    _END: "the end of the document",
}

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_STRING_STOP = re.compile(r'["\\]')
_NUMBER_CHARS = re.compile(r"[0-9eE+\-.]*")
_NUMBER_RE = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+\-]?[0-9]+)?")
_CONTROL = re.compile(r"[\x00-\x1f]")
_HEX = frozenset("0123456789abcdefABCDEF")
_LITERALS = {"t": ("true", True), "f": ("false", False), "n": ("null", None)}
_MISSING: Final[Any] = object()
_EMPTY = StreamedText()
# Pending text a version may hold unparsed; longer pending text is parsed in feed.
_LAZY_LIMIT: Final = 512


_new = object.__new__


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _decode_string(body: str) -> str:
    """Decode a complete string body (between the quotes); raises ValueError."""
    if "\\" not in body and not _CONTROL.search(body):
        return body
    value = json.loads('"' + body + '"', parse_constant=_reject_constant)
    assert isinstance(value, str)
    return value


def _trim_partial_escape(body: str) -> str:
    """Drop an escape sequence cut by the end of a partial string body.

    Also drops a complete high-surrogate escape at the very end: its low half may
    follow, and ``"\\ud83d"`` alone decodes to a character the final string lacks.
    """
    while True:
        end = len(body)
        cut = end
        # a '\u' escape with up to 4 hex digits, or a lone trailing backslash
        k = end
        while k > 0 and end - k < 4 and body[k - 1] in _HEX:
            k -= 1
        if k > 0 and body[k - 1] == "u" and _odd_backslashes(body, k - 1):
            if end - k < 4 or 0xD800 <= int(body[k:end], 16) <= 0xDBFF:
                cut = k - 2
        elif _odd_backslashes(body, end):
            cut = end - 1
        if cut == end:
            return body
        body = body[:cut]


def _odd_backslashes(body: str, end: int) -> bool:
    """Whether ``body[:end]`` ends with an odd run of backslashes (an open escape)."""
    k = end
    while k > 0 and body[k - 1] == "\\":
        k -= 1
    return (end - k) % 2 == 1


def _materialize(frame: tuple[bool, Any, str | None]) -> Any:
    return dict(items(frame[1])) if frame[0] else items(frame[1])


class PartialJson:
    """A persistent incremental JSON parser: ``feed`` returns a new parser.

    ``PartialJson().feed('{"a": [1, "b').preview == {"a": [1, "b"]}``. Feeding is
    O(len(delta)) amortized; the parser it was called on is unchanged. Never raises
    on malformed input: ``error`` says what and where, and ``preview`` keeps the
    valid part. Equal parsers have read texts with the same length and result (failed
    ones: the same error and preview, whatever text followed the error).
    """

    __slots__ = (
        "_base",
        "_error",
        "_escape",
        "_is_key",
        "_length",
        "_mode",
        "_pending",
        "_preview",
        "_stack",
        "_token",
        "_top",
    )

    _stack: Any
    _mode: int
    _token: Any
    _is_key: bool
    _escape: bool
    _top: Any
    _error: str | None
    _length: int
    _preview: Any
    _base: PartialJson | None  # None once parsed; else the version to parse _pending on
    _pending: str

    def __init__(self) -> None:
        self._base = None
        self._pending = ""
        self._stack = None
        self._mode = _VALUE
        self._token = _EMPTY  # StreamedText of a string/number body; str of a literal
        self._is_key = False
        self._escape = False  # a string body's last delta ended with a backslash
        self._top = _MISSING
        self._error = None
        self._length = 0
        self._preview = _MISSING

    # -- reading -------------------------------------------------------------------

    @property
    def error(self) -> str | None:
        """Why the text is not JSON (with the character position), or ``None``."""
        if self._base is not None:
            self._resolve()
        return self._error

    @property
    def complete(self) -> bool:
        """Whether a whole top-level value has been read (whitespace may follow)."""
        if self._base is not None:
            self._resolve()
        return self._mode == _END

    @property
    def value(self) -> Any:
        """The parsed value once ``complete``; raises ``ValueError`` before that."""
        if self._base is not None:
            self._resolve()
        if self._mode != _END:
            raise ValueError(self._error or "the JSON document is not complete")
        return self._top

    @property
    def preview(self) -> Any:
        """The value read so far, prefix-compatible with the final one; ``None`` when
        nothing is known yet. Shares finished containers with the parser: read-only."""
        if self._base is not None:
            self._resolve()
        preview = self._preview
        if preview is _MISSING:
            preview = self._preview = self._build_preview()
        return preview

    def _build_preview(self) -> Any:
        if self._top is not _MISSING:  # complete (perhaps with an error after it)
            return self._top
        child = _MISSING
        if self._mode == _STRING and not self._is_key:
            try:
                child = _decode_string(_trim_partial_escape(str(self._token)))
            except ValueError:
                child = _MISSING  # the string is malformed; the final parse says so
        stack = self._stack
        while stack is not None:
            frame = stack[0]
            container = _materialize(frame)
            if child is not _MISSING:
                if frame[0]:
                    if frame[2] is not None:
                        container[frame[2]] = child
                else:
                    container.append(child)
            child = container
            stack = stack[1]
        return None if child is _MISSING else child

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PartialJson):
            return NotImplemented
        if self._base is not None:
            self._resolve()
        if other._base is not None:
            other._resolve()
        # A failed parser ignores the text after the error, and how much of that it
        # saw depends on how the text was split: only the error and preview count.
        return (
            self._mode == other._mode
            and self._error == other._error
            and (self._mode == _ERROR or self._length == other._length)
            and self.preview == other.preview
        )

    def __hash__(self) -> int:
        if self._base is not None:
            self._resolve()
        if self._mode == _ERROR:
            return hash((self._mode, self._error))
        return hash((self._length, self._mode, self._error))

    def __repr__(self) -> str:
        if self._base is not None:
            self._resolve()
        if self._error is not None:
            return f"PartialJson(error={self._error!r})"
        return f"PartialJson(preview={self.preview!r}, complete={self.complete})"

    # -- feeding -------------------------------------------------------------------

    def finish(self) -> PartialJson:
        """The parser at the end of the text: a pending top-level number completes;
        anything else unfinished becomes an error ("ends before ...")."""
        base = self._base
        if base is not None:
            if base._length == 0 and base._mode == _VALUE:  # the whole text is pending
                done = _loads(self._pending)
                if done is not None:
                    return done
            self._resolve()
        mode = self._mode
        if mode in (_END, _ERROR):
            return self
        if mode == _NUMBER and self._stack is None:
            new = self._advance(" ")
            new._length -= 1
            return new
        where = "a string" if mode == _STRING else _EXPECTED.get(mode, "a value or closer")
        if mode in (_AFTER, _NUMBER, _LITERAL) and self._stack is not None:
            where = "'}' or ','" if self._stack[0][0] else "']' or ','"
        if mode == _VALUE and self._stack is None:
            where = "a value (the text is empty)"
        return self._fail(f"the JSON text ends before {where} at position {self._length}")

    def _fail(self, message: str) -> PartialJson:
        new = self._copy()
        new._mode = _ERROR
        new._error = message
        return new

    def _copy(self) -> PartialJson:
        new = _new(PartialJson)
        new._base = None
        new._pending = ""
        new._take(self)
        return new

    def _take(self, other: PartialJson) -> None:
        """Take ``other``'s parse state (its preview is rebuilt when read)."""
        self._stack = other._stack
        self._mode = other._mode
        self._token = other._token
        self._is_key = other._is_key
        self._escape = other._escape
        self._top = other._top
        self._error = other._error
        self._length = other._length
        self._preview = _MISSING

    def feed(self, delta: str) -> PartialJson:
        """This parser after ``delta``; ``self`` when ``delta`` is empty or the parser
        is known to have failed. O(len(delta)) plus O(1) per token, paid when the new
        version is first read (see the module's theory of operation)."""
        if not delta:
            return self
        base = self._base
        if base is None:
            if self._mode == _ERROR:
                return self
            base = self
            pending = delta
        else:
            pending = self._pending + delta
        if len(pending) >= _LAZY_LIMIT:
            return base._advance(pending)
        new = _new(PartialJson)
        new._base = base
        new._pending = pending
        new._length = base._length + len(pending)
        new._preview = _MISSING
        return new

    def _resolve(self) -> None:
        """Parse the pending text and keep the result in this version (a cache: the
        version's value does not change)."""
        assert self._base is not None
        self._take(self._base._advance(self._pending))
        self._pending = ""
        self._base = None  # last: a concurrent reader resolves again until now

    def _advance(self, delta: str) -> PartialJson:
        """This parsed version after ``delta``, parsed now; ``delta`` is not empty."""
        if self._mode == _ERROR:
            return self
        stack = self._stack
        mode = self._mode
        token = self._token
        is_key = self._is_key
        escape = self._escape
        top = self._top
        error: str | None = None
        i = 0
        n = len(delta)
        start = 0  # where the current token's text begins in this delta
        value: Any = _MISSING  # a finished value to place, when set

        while True:
            if value is not _MISSING:
                # place a finished value into the innermost container (or the top)
                if stack is None:
                    top = value
                    mode = _END
                else:
                    frame = stack[0]
                    if frame[0]:
                        stack = ((True, ((frame[2], value), frame[1]), None), stack[1])
                    else:
                        stack = ((False, (value, frame[1]), None), stack[1])
                    mode = _AFTER
                value = _MISSING
            if i >= n:
                break

            if mode == _STRING:
                j = i
                if escape:  # the previous delta ended inside an escape
                    escape = False
                    j += 1
                body_end = -1
                while True:
                    match = _STRING_STOP.search(delta, j)
                    if match is None:
                        break
                    j = match.start()
                    if delta[j] == "\\":
                        if j + 1 >= n:
                            escape = True
                            break
                        j += 2
                        continue
                    body_end = j
                    break
                if body_end < 0:
                    token = token + delta[start:]
                    break
                body = str(token + delta[start:body_end]) if token else delta[start:body_end]
                token = _EMPTY
                i = body_end + 1
                try:
                    text = _decode_string(body)
                except ValueError as exc:
                    error = f"invalid string ending at position {self._length + body_end}: {exc}"
                    break
                if is_key:
                    frame = stack[0]
                    stack = ((True, frame[1], text), stack[1])
                    mode = _COLON
                else:
                    value = text
                continue

            if mode == _NUMBER:
                j = _NUMBER_CHARS.match(delta, i).end()  # type: ignore[union-attr]
                if j >= n:
                    token = token + delta[start:]
                    break
                raw = str(token + delta[start:j]) if token else delta[start:j]
                token = _EMPTY
                i = j
                number = _NUMBER_RE.fullmatch(raw)
                if number is None:
                    error = f"invalid number {raw!r} ending at position {self._length + j}"
                    break
                value = float(raw) if number.group(1) or number.group(2) else int(raw)
                continue

            if mode == _LITERAL:
                target = _LITERALS[token[0]][0]
                need = target[len(token) :]
                piece = delta[i : i + len(need)]
                if not need.startswith(piece):
                    # up to the first wrong character: the message must not depend
                    # on how the text was split into deltas
                    wrong = next(k for k, char in enumerate(piece) if char != need[k])
                    error = (
                        f"invalid literal {(token + piece[: wrong + 1])!r} at position "
                        f"{self._length + i + wrong}; expected {target!r}"
                    )
                    break
                token = token + piece
                i += len(piece)
                if len(token) == len(target):
                    value = _LITERALS[token[0]][1]
                    token = _EMPTY
                continue

            i = _WHITESPACE.match(delta, i).end()  # type: ignore[union-attr]
            if i >= n:
                break
            char = delta[i]
            if mode <= _VALUE_OR_CLOSE:
                if char == '"':
                    mode = _STRING
                    is_key = False
                    start = i + 1
                elif char == "{":
                    stack = ((True, None, None), stack)
                    mode = _KEY_OR_CLOSE
                elif char == "[":
                    stack = ((False, None, None), stack)
                    mode = _VALUE_OR_CLOSE
                elif char == "-" or "0" <= char <= "9":
                    mode = _NUMBER
                    start = i
                    token = _EMPTY
                    i -= 1  # the number scanner reads this character too
                elif char in _LITERALS:
                    mode = _LITERAL
                    token = char
                elif char == "]" and mode == _VALUE_OR_CLOSE:
                    value = _materialize(stack[0])
                    stack = stack[1]
                else:
                    error = _unexpected(char, self._length + i, mode)
                    break
                i += 1
            elif mode <= _KEY_OR_CLOSE:
                if char == '"':
                    mode = _STRING
                    is_key = True
                    start = i + 1
                elif char == "}" and mode == _KEY_OR_CLOSE:
                    value = {}
                    stack = stack[1]
                else:
                    error = _unexpected(char, self._length + i, mode)
                    break
                i += 1
            elif mode == _COLON:
                if char != ":":
                    error = _unexpected(char, self._length + i, mode)
                    break
                mode = _VALUE
                i += 1
            elif mode == _AFTER:
                is_object = stack[0][0]
                if char == ",":
                    mode = _KEY if is_object else _VALUE
                elif char == ("}" if is_object else "]"):
                    value = _materialize(stack[0])
                    stack = stack[1]
                else:
                    expected = "',' or '}'" if is_object else "',' or ']'"
                    error = (
                        f"unexpected {char!r} at position {self._length + i}; expected {expected}"
                    )
                    break
                i += 1
            else:  # _END
                error = _unexpected(char, self._length + i, mode)
                break

        new = _new(PartialJson)
        new._base = None
        new._pending = ""
        new._stack = stack
        new._mode = _ERROR if error is not None else mode
        new._token = token
        new._is_key = is_key
        new._escape = escape
        new._top = top
        new._error = error
        new._length = self._length + n
        new._preview = _MISSING
        return new


def _loads(text: str) -> PartialJson | None:
    """The finished parser of a whole document by ``json.loads``, or None when the
    stdlib rejects it (the incremental parser then says why)."""
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return None
    new = PartialJson()
    new._mode = _END
    new._top = value
    new._length = len(text)
    return new


def _unexpected(char: str, position: int, mode: int) -> str:
    return f"unexpected {char!r} at position {position}; expected {_EXPECTED[mode]}"
