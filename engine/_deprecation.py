"""Old names kept for one release: a module's ``__getattr__`` that gives each one with a
``DeprecationWarning`` naming the new one.

The library's one helper for renames (``engine``, ``definitions`` and ``replay`` use
it; it is not for users). Pure: imports nothing.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["renamed"]


def renamed(
    module: str, namespace: Mapping[str, Any], names: Mapping[str, str]
) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``module`` (whose globals are ``namespace``) that gives
    each old name of ``names`` (old -> new) as the new one's value, warning that the
    old name goes in the next release. A new name of this module is given bare, or
    dotted from one of its names (``"PROTOCOL.accumulate"``: an attribute of this
    module's ``PROTOCOL``); one of another module dotted from the module's name
    (``"definitions.ProtocolSet"``), its value imported into ``namespace`` under its
    last part. Any other name is an ``AttributeError``, as without the hook."""

    def __getattr__(name: str) -> Any:
        new = names.get(name)
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        first, _, path = new.partition(".")
        here = first in namespace
        warnings.warn(
            f"{module}.{name} is deprecated and goes in the next release: "
            f"use {f'{module}.{new}' if here else new}",
            DeprecationWarning,
            stacklevel=2,
        )
        if not here:
            return namespace[new.rpartition(".")[2]]
        value = namespace[first]
        for attribute in path.split(".") if path else ():
            value = getattr(value, attribute)
        return value

    return __getattr__
