"""What ``convo check`` says of a recording: each recorded request against the
projection before it.

A recording holds every request an agent sent. The projection of the log up to a
request (``definitions.conversation.conversation_messages`` of the events before
it) is the conversation a context built from the log would send: the previous
request, then the answer as the model gave it. The request itself sends that, then
the new turn; where it sends something else, the agent edited its history (dropped
thinking, compacted, gave a call an id). ``compare_requests`` finds the first such
difference per call, as generic messages (``definitions._requests_read``), so it
reads the same for every API. Informational: an agent may edit its history.

May import: ``replay.protocols``, ``engine``, ``definitions``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs
import msgspec

from definitions import recorded
from definitions._requests_read import request_messages
from definitions.conversation import conversation_messages
from engine import Message, Native, Reasoning, Text, ToolCall, ToolResult

__all__ = ["RequestDifference", "compare_requests", "describe_requests"]


@attrs.frozen(kw_only=True)
class RequestDifference:
    """Call ``call``'s request (event ``position``) differs from the projection
    before it at message ``index``: ``projected`` is what the projection has there,
    ``sent`` what the request sent (``None``: it has no message there)."""

    call: int
    position: int
    index: int
    projected: Message | None
    sent: Message | None

    def describe(self) -> str:
        """One line: where, and both sides in short."""
        return (
            f"call {self.call} (event #{self.position}) differs from the projection before "
            f"it at message {self.index}: the projection has {_summary(self.projected)}, "
            f"the request sent {_summary(self.sent)}"
        )


def _summary(message: Message | None) -> str:
    if message is None:
        return "nothing"
    if isinstance(message.content, str):
        said = message.content
    else:
        pieces = []
        for part in message.parts:
            if isinstance(part, Text):
                pieces.append(part.text)
            elif isinstance(part, Reasoning):
                pieces.append("[reasoning]")
            elif isinstance(part, ToolCall):
                pieces.append(f"[call {part.name} {part.id!r}]")
            elif isinstance(part, ToolResult):
                pieces.append(f"[result {part.call_id!r}]")
            elif isinstance(part, Native):
                pieces.append(f"[{part.provider} block]")
            else:
                pieces.append(f"[{type(part).__name__.lower()}]")
        said = " ".join(pieces)
    said = " ".join(said.split())
    return f"{message.role.value} {said[:60] + '…' if len(said) > 60 else said!r}"


def compare_requests(events: Iterable[Any]) -> tuple[int, list[RequestDifference]]:
    """How many requests the recording holds, and the first difference of each one
    that does not continue the projection before it (see the module docstring).

    The log is folded once, live, by the recorded set; a request that continues the
    conversation with the provider's own state (``previous_response_id``) sends
    only what is new and is not compared.
    """
    engine = recorded.PROTOCOL.engine()
    differences: list[RequestDifference] = []
    count = 0
    for position, event in enumerate(events):
        if isinstance(event, dict) and event.get("type") == "recording/request":
            count += 1
            api = event.get("api")
            body = event.get("body")
            if isinstance(api, str) and not (
                isinstance(body, dict) and body.get("previous_response_id")
            ):
                projected = conversation_messages(engine.nodes())
                try:
                    sent = request_messages(api, body)
                except ValueError:
                    sent = None
                if sent is not None:
                    found = _first_difference(projected, sent)
                    if found is not None:
                        call = event.get("call")
                        differences.append(
                            RequestDifference(
                                call=call if isinstance(call, int) else -1,
                                position=position,
                                index=found,
                                projected=projected[found],
                                sent=sent[found] if found < len(sent) else None,
                            )
                        )
        engine.push(event)
    return count, differences


def _first_difference(projected: Sequence[Message], sent: Sequence[Message]) -> int | None:
    for index, message in enumerate(projected):
        if index >= len(sent) or _canonical(sent[index]) != _canonical(message):
            return index
    return None


_sorted = msgspec.json.Encoder(order="sorted")


def _canonical(message: Message) -> Message:
    """``message`` with each ``Native`` block's JSON in one form: keys sorted, null
    fields left out (an SDK writes a block back in its own key order, with the
    optional fields it knows as null): no difference a provider sees."""
    if isinstance(message.content, str) or not any(isinstance(p, Native) for p in message.parts):
        return message
    parts = [
        msgspec.structs.replace(
            part, data=_sorted.encode(_without_nulls(msgspec.json.decode(part.data))).decode()
        )
        if isinstance(part, Native)
        else part
        for part in message.parts
    ]
    return Message(role=message.role, content=tuple(parts))


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    return value


def describe_requests(events: Sequence[Any]) -> str | None:
    """What ``convo check`` prints of a recording's requests, or ``None`` for a log
    that holds none."""
    count, differences = compare_requests(events)
    if not count:
        return None
    if not differences:
        return f"requests: each of the {count} recorded requests continues the projection before it"
    lines = [
        f"requests (informational: an agent may edit its history): {len(differences)} of "
        f"the {count} recorded requests do not continue the projection before them; the first:",
        f"  {differences[0].describe()}",
    ]
    return "\n".join(lines)
