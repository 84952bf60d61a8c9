"""Compaction in the model context: where the next request starts.

A compaction (``Compaction``, a part of the conversation's messages) replaced the
history before it with a summary. The request after it holds, in order: the
leading system messages (a system prompt is not history: no harness summarises
it away), the messages the compaction carried over (``Compaction.carried``),
the message holding the compaction from that part on, then everything that
followed. ``restart`` finds that point (the latest compaction; one function, so
every projection agrees), ``since_compaction`` applies it, and
``without_compactions`` is the counterfactual: the conversation as if no
compaction had happened (the summaries and what they carried left out).

Pure, like the rest of ``engine.context``: it imports only the messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ._message import Compaction, Message, Role

__all__ = [
    "Restart",
    "compaction_of",
    "is_summary",
    "restart",
    "since_compaction",
    "without_compactions",
]


class Restart(NamedTuple):
    """Where the request after a compaction starts: keep ``messages[:lead]``, then
    ``messages[start:]``, with the message at ``at`` (the compaction's) cut to begin
    at its compaction part ``part``."""

    lead: int
    start: int
    at: int
    part: int


def compaction_of(message: Message) -> Compaction | None:
    """The message's last ``Compaction`` part, or ``None``."""
    if isinstance(message.content, str):
        return None
    for part in reversed(message.content):
        if isinstance(part, Compaction):
            return part
    return None


def is_summary(message: Message) -> bool:
    """Whether ``message`` is a compaction's summary alone: no model output beside
    it, so it answers no model call (an Anthropic answer that begins with a
    compaction block is a model turn; a harness's summary is not)."""
    parts = message.parts
    return bool(parts) and all(isinstance(p, Compaction) for p in parts)


def restart(messages: Sequence[Message]) -> Restart | None:
    """Where the latest compaction of ``messages`` restarts them, or ``None`` when
    there is none. O(messages after it)."""
    for at in range(len(messages) - 1, -1, -1):
        message = messages[at]
        if isinstance(message.content, str):
            continue
        parts = message.content
        for part in range(len(parts) - 1, -1, -1):
            found = parts[part]
            if isinstance(found, Compaction):
                start = max(0, at - found.carried)
                lead = 0
                while lead < start and messages[lead].role is Role.system:
                    lead += 1
                return Restart(lead, start, at, part)
    return None


def since_compaction(messages: Sequence[Message]) -> list[Message]:
    """The messages the next request holds: all of ``messages`` when nothing was
    compacted, else the restart after the latest compaction (``restart``)."""
    point = restart(messages)
    if point is None:
        return list(messages)
    out = [*messages[: point.lead], *messages[point.start :]]
    index = point.at - point.start + point.lead
    cut = messages[point.at]
    if point.part:
        out[index] = Message(role=cut.role, content=cut.parts[point.part :])
    return out


def without_compactions(messages: Sequence[Message]) -> list[Message]:
    """``messages`` as if nothing had been compacted: every ``Compaction`` part, the
    messages it carried over and those that echo history left out, a message left
    empty with them."""
    dropped: set[int] = set()
    for at, message in enumerate(messages):
        found = compaction_of(message)
        if found is not None:
            dropped.update(range(max(0, at - found.carried), at))
            dropped.update(range(at + 1, at + 1 + found.echo))
    out: list[Message] = []
    for at, message in enumerate(messages):
        if at in dropped:
            continue
        if compaction_of(message) is None:
            out.append(message)
            continue
        parts = tuple(p for p in message.parts if not isinstance(p, Compaction))
        if parts:
            out.append(Message(role=message.role, content=parts))
    return out
