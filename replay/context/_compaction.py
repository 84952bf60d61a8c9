"""Our own compaction: the event an application appends, and when the economy says so.

``compaction_event(events, summary, through=POSITION)`` is the ``compaction.mark``
(``definitions.compaction``) that replaces the log's events up to ``POSITION``
with ``summary``; ``convo compact`` appends it. ``compaction_due(events,
compactor)`` asks an ``engine.Compactor`` whether the next request is too big.
The summary itself is the application's (a model call of its own, recorded like
any other): the log holds the boundary it produced, so a replay never calls the
model again.

May import: ``replay.protocols``, ``engine``, ``definitions``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from definitions.compaction import Mark
from definitions.conversation import conversation_messages
from engine import Compactor, Node, since_compaction

from ..protocols._detect import detect_protocol, protocol_definitions

__all__ = ["compaction_due", "compaction_event"]


def _nodes(events: Sequence[Any]) -> tuple[Node, ...]:
    """The nodes of a log of the built-in kinds; ``ValueError`` for a recording of a
    protocol set, whose compactions are the provider's own."""
    protocol = detect_protocol(events).protocol
    if protocol != "builtin":
        raise ValueError(
            f"a compaction mark applies to logs of the built-in kinds, not to a "
            f"{protocol} recording (its compactions are the provider's own)"
        )
    return protocol_definitions(protocol).replay(events)


def compaction_event(
    events: Sequence[Any],
    summary: str,
    *,
    through: int | None = None,
    id: str | None = None,
    trigger: str = "manual",
    duration_ms: int | None = None,
) -> dict[str, Any]:
    """The ``compaction.mark`` that replaces ``events[: through + 1]`` (all of them when
    ``None``) with ``summary``, to append after ``events``; it counts the messages
    it summarised. ``ValueError`` for a position outside the log."""
    if through is not None and not 0 <= through < len(events):
        raise ValueError(f"--through {through}: the log has events 0..{len(events) - 1}")
    replaced = _nodes(events if through is None else events[: through + 1])
    mark: dict[str, Any] = {
        "type": "compaction.mark",
        "id": id or f"compaction-{len(events)}",
        "summary": summary,
        "trigger": trigger,
        "messages": len(since_compaction(conversation_messages(replaced))),
    }
    if through is not None and replaced:
        mark["through"] = max(replaced, key=lambda n: n.seq).key
    if duration_ms is not None:
        mark["duration_ms"] = duration_ms
    msgspec.convert(mark, Mark)  # the vocabulary's own check (a bad trigger)
    return mark


def compaction_due(events: Sequence[Any], compactor: Compactor) -> bool:
    """Whether ``compactor`` says the request after ``events`` is due a compaction."""
    return compactor.due(conversation_messages(_nodes(events)))
