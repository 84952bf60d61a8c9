"""The validator every gateway shares: the ways a provider refuses a conversation.

Each gateway reads its own request payload into ``Turn`` records (one per run
of items on one side: the model's, or the caller's) and ``check`` applies the
pairing rules to them, so the rules are written once:

- ``call-without-result``: a call whose result is not in the next turn;
- ``unanswered-call-at-end``: a call in the last turn (nothing answers it);
- ``result-without-call``: a result naming no earlier call;
- ``result-not-after-call``: a result not in the turn right after its call, or
  behind other content of that turn (providers want results first);
- ``duplicate-result``: a second result for one call;
- ``reasoning-separated``: reasoning not followed, in its model turn, by the
  output it belongs to (or reasoning on the caller's side);
- ``roles-not-alternating``: two items of one role in a row where the provider
  requires alternation (Gemini);
- ``empty-content``: an item with nothing in it;
- ``tools-undeclared``: tool calls or results in a request that declares no tools
  (Bedrock refuses it);
- ``malformed``: an item the gateway cannot read at all.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Sequence
from typing import Any, Literal

import attrs

__all__ = ["Entry", "Problem", "Turn", "add", "alternation", "check", "not_a_list"]

Side = Literal["model", "caller"]


@attrs.frozen
class Problem:
    """One way a request would be refused: ``code`` (see ``definitions.gateways``),
    ``index`` the position of the item in the request's item list, ``detail`` why."""

    code: str
    index: int
    detail: str


@attrs.frozen
class Entry:
    """One element of a turn: a call or result (``id``), reasoning, or other content."""

    what: Literal["call", "result", "reasoning", "content"]
    index: int
    id: str = ""


@attrs.frozen
class Turn:
    """A run of items on one side, with their entries in order."""

    side: Side
    index: int
    entries: tuple[Entry, ...]


def add(
    turns: list[Turn], side: Side, index: int, entries: Sequence[Entry], *, merge: bool = True
) -> None:
    """Append one item's entries: to the last turn when it is on the same side (and
    ``merge``: the provider joins such items into one turn), else as a new turn."""
    if merge and turns and turns[-1].side == side:
        turns[-1] = Turn(side, turns[-1].index, (*turns[-1].entries, *entries))
    else:
        turns.append(Turn(side, index, tuple(entries)))


def not_a_list(value: Any, key: str) -> list[Problem]:
    """``malformed`` when the request's item list is missing or not a list."""
    if isinstance(value, list):
        return []
    return [Problem("malformed", -1, f"the request's {key!r} is not a list")]


def with_roles(
    request: dict[str, Any], key: str, roles: Collection[str]
) -> tuple[list[Problem], list[tuple[int, dict[str, Any], Any]]]:
    """The request's item list at ``key``, read for its roles: the problems found so
    far (``not_a_list``, or ``malformed`` for each item without one of ``roles``) and
    every other item, with its index and its role."""
    items = request.get(key)
    if not isinstance(items, list):
        return not_a_list(items, key), []
    problems: list[Problem] = []
    found: list[tuple[int, dict[str, Any], Any]] = []
    for index, item in enumerate(items):
        role = item.get("role") if isinstance(item, dict) else None
        if role in roles:
            found.append((index, item, role))  # a dict: None is no role
        else:
            problems.append(Problem("malformed", index, f"role {role!r}"))
    return problems, found


def check(turns: list[Turn]) -> list[Problem]:
    """Every pairing and reasoning problem of ``turns``, in request order."""
    problems: list[Problem] = []
    called: dict[str, int] = {}  # call id -> turn number
    answered: set[str] = set()
    for number, turn in enumerate(turns):
        expected: set[str] = set()
        if number and turns[number - 1].side == "model":
            expected = {e.id for e in turns[number - 1].entries if e.what == "call"}
        content_seen = False
        for position, entry in enumerate(turn.entries):
            if entry.what == "call":
                called[entry.id] = number
            elif entry.what == "result":
                if entry.id in answered:
                    problems.append(
                        Problem("duplicate-result", entry.index, f"second result for {entry.id!r}")
                    )
                elif entry.id not in called:
                    problems.append(
                        Problem(
                            "result-without-call",
                            entry.index,
                            f"result for {entry.id!r}, which no earlier turn called",
                        )
                    )
                elif entry.id not in expected or content_seen:
                    problems.append(
                        Problem(
                            "result-not-after-call",
                            entry.index,
                            f"result for {entry.id!r} is not right after its call",
                        )
                    )
                answered.add(entry.id)
            elif entry.what == "reasoning":
                following = turn.entries[position + 1 :]
                if turn.side != "model" or not any(e.what != "reasoning" for e in following):
                    problems.append(
                        Problem(
                            "reasoning-separated",
                            entry.index,
                            "reasoning is not followed by the model output it belongs to",
                        )
                    )
            else:
                content_seen = True
        if turn.side == "model":
            calls = [e for e in turn.entries if e.what == "call"]
            last = number + 1 == len(turns)
            answers: set[str] = set()
            if not last and turns[number + 1].side == "caller":
                answers = {e.id for e in turns[number + 1].entries if e.what == "result"}
            for call in calls:
                if last:
                    problems.append(
                        Problem(
                            "unanswered-call-at-end",
                            call.index,
                            f"call {call.id!r} ends the request without a result",
                        )
                    )
                elif call.id not in answers:
                    problems.append(
                        Problem(
                            "call-without-result",
                            call.index,
                            f"call {call.id!r} has no result in the next turn",
                        )
                    )
    problems.sort(key=lambda p: p.index)
    return problems


def alternation(sides: list[tuple[int, str]]) -> list[Problem]:
    """``roles-not-alternating`` for each item whose role equals the one before it."""
    return [
        Problem("roles-not-alternating", index, f"two {role!r} items in a row")
        for (_, before), (index, role) in itertools.pairwise(sides)
        if before == role
    ]
