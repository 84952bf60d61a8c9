"""What the renderers share: a payload shown as JSON, opaque tokens shortened."""

from __future__ import annotations

import json
import re
from typing import Any, Final

__all__ = ["payload"]

# A string this long with no whitespace is a token, not text a reader reads: base64
# (encrypted search results, signatures, images), ids, hashes. Shown by its start
# and length. Text with spaces, however long, is shown whole.
_OPAQUE: Final = re.compile(r"\S{120,}")
_KEEP: Final = 16


def _shorten(value: Any) -> Any:
    if type(value) is str:
        if len(value) >= 120 and _OPAQUE.fullmatch(value):
            return f"{value[:_KEEP]}… ({len(value):,} chars)"
        return value
    if isinstance(value, dict):
        return {key: _shorten(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_shorten(item) for item in value]
    return value


def payload(value: object, *, indent: int | None = None) -> str:
    """``value`` as JSON for a reader: keys sorted, non-ASCII kept, anything JSON
    cannot hold shown as its ``str``, and every opaque token (a string of 120 or more
    characters without whitespace) shortened to its first characters and length."""
    return json.dumps(
        _shorten(value), ensure_ascii=False, sort_keys=True, indent=indent, default=str
    )
