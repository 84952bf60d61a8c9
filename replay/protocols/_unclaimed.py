"""Saying so when a conversation's events go to no definition.

An event no definition claims leaves no trace in the view: with the wrong
definition set a whole recording folds to nothing, silently. The CLI and the
server count those events (the engine's ``Statistics.events_unclaimed``) and say
how many, with the set detection would choose when it differs (see
``unclaimed_note`` for when it is worth saying). A recording whose calls are all
to APIs no set reads (an embeddings call, Bedrock InvokeModel) is refused instead,
naming what it holds (``unsupported_note``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from definitions._requests_read import api_of

from ._detect import detect_protocol

__all__ = ["unclaimed_note", "unsupported_note"]


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


# A host's provider, for the names of calls no set reads.
_HOSTS = (
    ("bedrock", "bedrock"),
    ("anthropic", "anthropic"),
    ("openai", "openai"),
    ("googleapis", "gemini"),
)


def unsupported_note(events: Sequence[Any]) -> str | None:
    """``"2 calls to bedrock invoke-with-response-stream: not supported"`` when every
    model call the recording ``events`` hold (``recording/request``) is to an API no
    protocol set reads; ``None`` when one is supported or none is recorded."""
    calls = [e for e in events if isinstance(e, dict) and e.get("type") == "recording/request"]
    if not calls or any(api_of(e) is not None for e in calls):
        return None
    kinds = Counter(_operation(e) for e in calls)
    said = ", ".join(f"{n} call{'s' if n > 1 else ''} to {what}" for what, n in kinds.items())
    return f"{said}: not supported"


def _operation(event: dict[str, Any]) -> str:
    """A request's provider and operation: its host's provider and its path's last
    segment (``bedrock invoke-with-response-stream``, ``openai embeddings``)."""
    url = event.get("url")
    if not isinstance(url, str):
        return str(event.get("api") or "an unknown API")
    parts = urlsplit(url)
    host = parts.hostname or ""
    provider = next((name for key, name in _HOSTS if key in host), host or "an unknown host")
    operation = parts.path.rstrip("/").rsplit("/", 1)[-1] or "/"
    return f"{provider} {operation}"
