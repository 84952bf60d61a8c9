"""Saying so when a conversation's events go to no definition.

An event no definition claims leaves no trace in the view: with the wrong
definition set a whole recording folds to nothing, silently. The CLI and the
server count those events (the engine's ``Statistics.events_unclaimed``) and say
how many, with the set detection would choose when it differs (see
``unclaimed_note`` for when it is worth saying).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._detect import detect_protocol

__all__ = ["unclaimed_note"]


def unclaimed_note(unclaimed: int, total: int, events: Sequence[Any], chosen: str) -> str | None:
    """``"N of TOTAL events claimed by no definition (SET); try -d MODULE"``, or ``None``.

    ``events`` are the first events, to detect the protocol from. The set detection
    would choose leaves some events unclaimed by design (AI SDK step markers, AG-UI
    reasoning brackets): with it, only a view where no event at all was claimed is
    worth a note, as it is when no known protocol was detected. With another set,
    any unclaimed event is, and the hint names the detected one.
    """
    if unclaimed <= 0:
        return None
    detection = detect_protocol(events)
    if detection.module in chosen or not detection.recognised:
        # The right set, or no known protocol to point to: only nothing claimed counts.
        if unclaimed < total:
            return None
        hint = "try another -d"
    else:
        hint = f"try -d {detection.module}"
    return f"{unclaimed:,} of {total:,} events claimed by no definition ({chosen}); {hint}"
