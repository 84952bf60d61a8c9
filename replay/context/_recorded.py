"""Reproduction as a figure: each recorded request against the request the projection
makes after the call before it (what ``convo check`` says of a recording).

A recording holds every request an agent sent. After call k, the projection of the
log (``definitions.conversation.conversation_messages`` of the events so far: the
conversation as request k had it, then k's answer as the model gave it) continued
with what request k carried beside it (``_requests.carried``: its model, tools,
settings) is the request the agent should send next. Recorded request k+1
*reproduces* it when it is that request plus its new input (the user's next turn,
tool results): the same model, the same other keys, and the projected messages
(system prompt included) as its leading messages. ``reproduce`` compares every
request after the first and says, of each that differs, its first difference and
whose it is:

- the agent's **edit**: what differs is something the agent itself sent differently
  in its two requests (a changed system prompt or setting, a dropped or rewritten
  turn, compaction), or the answer sent back with parts left out (thinking), its
  calls' ids changed, or in a form of its own (the same text and calls, its blocks
  written another way);
- a projection **defect**: the agent's two requests agree but the projection does
  not (a setting not carried, a message lost), or the projected answer is not what
  the agent sent back (a block read wrong, an answer missing).

Messages are compared as generic messages (``definitions._requests_read``), each
``Native`` block's JSON in one form (keys sorted, nulls left out): no difference a
provider sees. A request carrying only what is new (``previous_response_id``) is not
compared. Informational, never an exit status.

May import: ``replay.protocols``, ``engine``, ``definitions``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final, Literal

import attrs
import msgspec

from definitions import recorded
from definitions._requests_read import (
    PROVIDERS,
    api_of,
    continues_previous,
    request_messages,
)
from definitions._settings import CONVERSATION_KEYS
from definitions.conversation import conversation_messages
from definitions.gateways import gateway
from engine import Context, Message, Native, Node, Reasoning, Role, Text, ToolCall, ToolResult

from ._requests import ContextOptions, carried, is_recorded_request

__all__ = ["Figure", "Reproduction", "describe_requests", "reproduce"]

Verdict = Literal["reproduced", "edit", "defect", "continued"]


@attrs.frozen(kw_only=True)
class Reproduction:
    """Recorded request ``call`` (event ``position``) against the request projected
    after the call before it: ``verdict`` and, unless reproduced, the first
    ``difference`` in words."""

    call: int
    position: int
    verdict: Verdict
    difference: str = ""

    def describe(self) -> str:
        """One line: which request, whose difference, what."""
        whose = {"edit": "the agent's edit", "defect": "projection defect"}.get(
            self.verdict, self.verdict
        )
        return f"call {self.call} (event #{self.position}): {whose}: {self.difference}"


@attrs.frozen(kw_only=True)
class Figure:
    """How many requests a recording holds (``requests``) and each one compared."""

    requests: int
    compared: tuple[Reproduction, ...]

    def count(self, verdict: Verdict) -> int:
        """How many compared requests have ``verdict``."""
        return sum(r.verdict == verdict for r in self.compared)

    def describe(self) -> str:
        """What ``convo check`` prints: ``N of M requests reproduced``, then each
        request that was not, its first difference and whose it is."""
        continued = self.count("continued")
        total = len(self.compared) - continued
        lines = [
            f"requests: {self.count('reproduced')} of {total} requests reproduced (each "
            "recorded request after the first is the one projected after the call before "
            "it, plus its new input)"
        ]
        if self.count("edit"):
            lines.append(f"  {self.count('edit')} differ by the agent's own edit of its request")
        if self.count("defect"):
            lines.append(f"  {self.count('defect')} differ by a defect of the projection")
        if continued:
            lines.append(
                f"  {continued} carry only what is new (previous_response_id): not compared"
            )
        lines += [f"  {r.describe()}" for r in self.compared if r.verdict in ("edit", "defect")]
        return "\n".join(lines)


def reproduce(events: Iterable[Any]) -> Figure:
    """Every recorded request after the first against the request projected after the
    call before it (see the module docstring). The log is folded once, live, by the
    recorded set."""
    engine = recorded.PROTOCOL.engine()
    previous: dict[str, Any] | None = None
    count = 0
    compared: list[Reproduction] = []
    for position, event in enumerate(events):
        if is_recorded_request(event):
            count += 1
            if previous is not None:
                compared.append(_compare(previous, event, position, engine.nodes()))
            previous = event
        engine.push(event)
    return Figure(requests=count, compared=tuple(compared))


def _compare(
    before: dict[str, Any], event: dict[str, Any], position: int, nodes: Sequence[Node]
) -> Reproduction:
    """Request ``event`` against the projection of ``nodes`` carrying ``before``'s
    model and settings."""
    api = str(api_of(event))
    call = event.get("call")

    def verdict(kind: Verdict, difference: str = "") -> Reproduction:
        number = call if isinstance(call, int) else -1
        return Reproduction(call=number, position=position, verdict=kind, difference=difference)

    body: dict[str, Any] = event["body"]
    if continues_previous(api, body):
        return verdict("continued")
    if api_of(before) != api:
        return verdict("edit", f"it moved from {api_of(before)} to {api}")
    provider = PROVIDERS[api]
    target = gateway(provider)
    head = carried([before], provider, ContextOptions())
    context = Context(target)
    for message in conversation_messages(nodes):
        context.emplace_message(message)
    # Not _requests.build: tools the agent did not declare are not declared for it
    # (what a recording holds is compared, not what a provider would also want).
    projected = target.request(context, model=head.model, **head.options)
    settings = _settings_difference(provider, before, event, projected)
    if settings is not None:
        return verdict(*settings)
    messages = _messages_difference(
        request_messages(api, before["body"]),
        request_messages(api, projected),
        request_messages(api, body),
    )
    if messages is not None:
        return verdict(*messages)
    return verdict("reproduced")


def _settings_difference(
    provider: str, before: dict[str, Any], event: dict[str, Any], projected: dict[str, Any]
) -> tuple[Verdict, str] | None:
    """The first key beside the conversation where the request differs from the
    projection (the model first): the agent's edit when its two requests differ
    there, a defect when they agree."""
    old, new = before["body"], event["body"]
    model = "modelId" if provider == "bedrock" else "model"
    named = recorded.request_model
    sides = [(model, projected.get(model) or "", named(before), named(event))]
    skipped = CONVERSATION_KEYS[provider]
    keys = sorted({*projected, *new} - skipped)
    sides += [(k, projected.get(k), old.get(k), new.get(k)) for k in keys]
    for key, made, was, sent in sides:
        if _plain(made) == _plain(sent):
            continue
        if _plain(was) != _plain(sent):
            return "edit", f"it changed {key}: {_short(was)} before, {_short(sent)} now"
        return (
            "defect",
            f"{key} not carried: the projection has {_short(made)}, the request {_short(sent)}",
        )
    return None


def _messages_difference(
    before: Sequence[Message], projected: Sequence[Message], sent: Sequence[Message]
) -> tuple[Verdict, str] | None:
    """Where ``sent`` leaves ``projected`` (its first ``len(before)`` messages are the
    previous request's, then the answer), and whose difference it is."""
    same, now, was = _canonical(projected), _canonical(sent), _canonical(before)
    index = next((i for i, (a, b) in enumerate(zip(same, now, strict=False)) if a != b), None)
    if index is None:
        if len(now) < len(same):
            return "edit", f"it dropped its last {len(same) - len(now)} message(s)"
        if len(same) < len(was):
            lost = _summary(was[len(same)])
            return "defect", f"the projection lacks message {len(same)}: {lost}"
        new = now[len(same) :]
        ended = bool(same) and same[-1].role.value == "assistant"
        if new and new[0].role.value == "assistant" and not ended:
            return "defect", f"the projection lacks the answer it sent back: {_summary(new[0])}"
        return None
    said = f"the projection has {_summary(same[index])}, the request sent {_summary(now[index])}"
    if index < len(was):  # the history the previous request sent
        if was[index] == now[index]:
            return "defect", f"message {index} was lost: {said}"
        if index == 0 and same[0].role.value == "system":
            return "edit", f"it changed its system prompt: {said}"
        skipped = next((k for k in range(1, len(was) - index) if was[index + k] == now[index]), 0)
        if skipped:
            dropped = f"{index}" if skipped == 1 else f"{index}-{index + skipped - 1}"
            return "edit", f"it dropped message {dropped} ({_summary(same[index])})"
        return "edit", f"it rewrote message {index}: {said}"
    if index == len(was) and now[index].role.value == "assistant":  # the answer sent back
        edit = _answer_edit(same[index], now[index])
        if edit is not None:
            return "edit", edit
        return "defect", f"the answer sent back is not the projected one: {said}"
    if index == len(was):
        return "edit", f"it did not send the answer back: {said}"
    return "defect", f"message {index} is not the request's: {said}"


def _answer_edit(answer: Message, echo: Message) -> str | None:
    """How ``echo`` (the answer as the agent sent it back) is an edit of ``answer``
    (the answer as the model gave it): parts left out, or calls' ids changed."""
    given, back = list(answer.parts), list(echo.parts)
    if _subsequence(back, given):
        left = sorted({_kind(p) for p in given if not any(p == b for b in back)})
        return f"it sent the answer back without its {', '.join(left)}"
    if [_unnamed(p) for p in given] == [_unnamed(p) for p in back]:
        return "it sent the answer back with its calls' ids changed"
    if _said(answer) == _said(echo):
        return "it sent the answer back in its own form (the same text and calls)"
    return None


def _said(message: Message) -> tuple[str, tuple[tuple[str, str, Any], ...]]:
    """What a model turn says, whatever the form of its blocks: its text (outer
    whitespace aside) and its calls (id, name, arguments as data)."""
    text = []
    calls = []
    for part in message.parts:
        call = part.call if isinstance(part, Native) else part
        if isinstance(call, ToolCall):
            try:
                arguments = msgspec.json.decode(call.arguments or "{}")
            except msgspec.DecodeError:
                arguments = call.arguments
            calls.append((call.id, call.name, _sorted.encode(arguments)))
        elif isinstance(part, Text | Native):
            text.append(part.text)
    return "".join(text).strip(), tuple(calls)


def _subsequence(short: Sequence[Any], long: Sequence[Any]) -> bool:
    rest = iter(long)
    return all(any(item == other for other in rest) for item in short)


def _unnamed(part: Any) -> Any:
    return msgspec.structs.replace(part, id="") if isinstance(part, ToolCall) else part


def _kind(part: Any) -> str:
    if isinstance(part, Reasoning):
        return "thinking"
    if isinstance(part, Native):
        return f"{part.provider} blocks"
    return type(part).__name__.lower()


def _plain(value: Any) -> Any:
    """``value`` with null fields left out (an absent key and a null say the same)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _short(value: Any, limit: int = 60) -> str:
    text = "nothing" if value is None else msgspec.json.encode(value).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _summary(message: Message) -> str:
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


_sorted: Final = msgspec.json.Encoder(order="sorted")


def _canonical(messages: Sequence[Message]) -> list[Message]:
    """``messages`` in one form, with no difference a provider sees: each ``Native``
    block's JSON with its keys sorted and null fields left out (an SDK writes a block
    back in its own key order, with the optional fields it knows as null), and the
    caller's consecutive turns as one (Anthropic joins them; Gemini and Bedrock want
    them joined; a Chat request's run of tool messages is one turn)."""
    out: list[Message] = []
    for message in messages:
        parts = tuple(
            msgspec.structs.replace(
                p, data=_sorted.encode(_plain(msgspec.json.decode(p.data))).decode()
            )
            if isinstance(p, Native)
            else p
            for p in message.parts
        )
        if out and message.role is Role.user and out[-1].role is Role.user:
            out[-1] = Message(role=Role.user, content=(*out[-1].parts, *parts))
        elif any(isinstance(p, Native) for p in message.parts):
            out.append(Message(role=message.role, content=parts))
        else:
            out.append(message)
    return out


def describe_requests(events: Sequence[Any]) -> str | None:
    """What ``convo check`` prints of a recording's requests (``Figure.describe``),
    or ``None`` for a log with fewer than two."""
    figure = reproduce(events)
    return figure.describe() if figure.compared else None
