"""What the Router-based protocol sets (``ag_ui``, ``ai_sdk``) share.

Their ``Router`` decides each event's claim before the fold and wraps the event in
an envelope carrying it and its ``target`` kind; the definitions only check that
the envelope is theirs. The envelope's class is the engine's event type
(``event_type=type``), and its ``pub`` class attribute says how soon a change shows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from engine import Claim

from ._protocol import not_routed as _not_routed
from ._routing import ByType

__all__ = ["claims_for", "publications"]


def claims_for(*targets: str, not_routed: str) -> Callable[[Any], Claim | None]:
    """The ``match`` of a definition taking the envelopes routed to ``targets``.

    A raw event (no ``target``) raises ``TypeError(not_routed)``, a message that
    names the fix (push through the Router). A closure, called as directly as a
    method would be: no extra call per event.
    """

    def match(routed: Any) -> Claim | None:
        try:
            target = routed.target
        except AttributeError:
            raise _not_routed(not_routed, routed) from None
        return routed.claim if target in targets else None

    return match


def publications(classes: Iterable[type]) -> ByType:
    """The ``publication`` of a definition taking envelopes of ``classes``: each class's
    ``pub``, the immediate ones left out (what the engine assumes for a missing type)."""
    pubs = {cls: cls.pub for cls in classes if cls.pub != "immediate"}  # type: ignore[attr-defined]
    return ByType(pubs, type)
