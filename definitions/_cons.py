"""Cons lists: ``(item, rest)`` cells ending in ``None``, newest first.

Frozen states grow them in O(1): a new cell shares everything before it, so an
older state's list never changes.
"""

from __future__ import annotations

from typing import Any, TypeAlias

Cons: TypeAlias = tuple[Any, Any] | None


def items(cons: Cons) -> list[Any]:
    """The items of a cons list, oldest first."""
    out = []
    while cons is not None:
        out.append(cons[0])
        cons = cons[1]
    out.reverse()
    return out
