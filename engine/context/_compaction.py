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

``Compactor`` is the economy's side of compacting: it decides *when* (the
request would exceed a size); the application writes the summary (a model call
of its own, recorded like any other) and appends the compaction to the log, so a
replay never calls the model again.

Pure, like the rest of ``engine.context``: it imports only the messages and the
economy's sizes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import msgspec

from ._economy import message_size
from ._message import Compaction, Message, Role

__all__ = [
    "Compactor",
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


class Compactor(msgspec.Struct, frozen=True, kw_only=True):
    """When to compact: once the next request's conversation (from the latest
    compaction on) reaches ``threshold`` chars (the economy's sizes: text,
    arguments, results).

    A policy hook: any object with the same ``due`` serves. It decides *when*; the
    application writes the summary and appends the compaction to the log.
    """

    threshold: int = 100_000

    def __post_init__(self) -> None:
        if type(self.threshold) is not int or self.threshold <= 0:
            raise ValueError(f"Compactor.threshold must be an int > 0, not {self.threshold!r}")

    def due(self, messages: Sequence[Message]) -> bool:
        """Whether the request after ``messages`` should be compacted first."""
        return sum(message_size(m) for m in since_compaction(messages)) >= self.threshold
