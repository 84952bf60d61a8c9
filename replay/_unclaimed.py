"""Saying so when a conversation's events go to no definition.

An event no definition claims leaves no trace in the view: with the wrong
definition set a whole recording folds to nothing, silently. The CLI and the
server count those events (the engine's ``Statistics.events_unclaimed``) and say
how many, with the set detection would choose when it differs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._detect import detect_protocol

__all__ = ["unclaimed_note"]


def unclaimed_note(unclaimed: int, events: Sequence[Any], chosen: str) -> str | None:
    """``"N events claimed by no definition; try -d MODULE"`` (the protocol detected in
    ``events`` when its set is not ``chosen``), or ``None`` when every event was claimed."""
    if unclaimed <= 0:
        return None
    detection = detect_protocol(events)
    hint = f"try -d {detection.module}" if detection.module not in chosen else "try another -d"
    total = len(events)
    of = f" of {total}" if total else ""
    return f"{unclaimed:,}{of} events claimed by no definition ({chosen}); {hint}"
