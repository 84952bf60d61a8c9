"""Conformance checks for definitions: the contract the engine relies on, as a test helper.

The engine trusts a definition to be pure: ``match`` and ``start``/``update`` must
depend only on their arguments, must not change a state they were given (views hold
old nodes across notifications), and a declared ``event_types`` must cover every
event ``match`` can claim (the engine skips ``match`` for the others).
``check_definition`` exercises one definition over sample events and raises
``ConformanceError`` naming the first broken rule, the event position and the fix.

Use it in your own tests::

    from engine.testing import check_definition

    def test_my_kind_conforms():
        check_definition(MyKind(), recorded_events, event_type=my_event_type)
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

from ._engine import create_conversation_engine
from ._errors import ConversationError
from ._registration import LEVELS
from ._types import Claim, Node

__all__ = ["ConformanceError", "check_definition"]


class ConformanceError(ConversationError, AssertionError):
    """A definition broke the engine's contract; the message says which rule and where."""


def check_definition(
    definition: Any,
    events: Iterable[object],
    *,
    event_type: Callable[[Any], Hashable] | None = None,
    others: Sequence[Any] = (),
) -> tuple[Node, ...]:
    """Fold ``events`` through ``definition`` (beside ``others``) checking the contract.

    Checks, per event: ``match`` gives equal answers when asked twice; a claim's role
    is ``"start"`` or ``"update"``; with ``event_type`` and a declared
    ``event_types``, ``match`` claims nothing outside them; ``update`` leaves the
    state it was given unchanged (compared by pickle); ``publication`` gives
    one of the three values. Then the whole log is folded twice more, in one batch
    and one event at a time, and must give equal nodes (with ``event_type``, the
    batch hands runs to ``update_many``, so this checks it too). Returns the nodes.

    Raises ``ConformanceError``; a definition that raises is reported as the
    engine's ``DefinitionError``. Pickling states makes this O(events x state).
    """
    events = list(events)
    kind = definition.kind
    definitions = [definition, *others]
    try:
        _check_calls(definition, events, event_type)
    except ConformanceError:
        raise
    except Exception:
        # A definition raised: let the engine report it (kind, method, position).
        create_conversation_engine(definitions, event_type=event_type).push_many(events)
        raise
    whole = create_conversation_engine(definitions, event_type=event_type)
    whole.push_many(events)
    single = create_conversation_engine(definitions, event_type=event_type)
    for event in events:
        single.push(event)
    if not _same(whole.nodes(), single.nodes()):
        raise ConformanceError(
            f"definition {kind!r}: folding the same events twice gave different nodes; "
            "a definition must not read clocks, counters, randomness or global state"
        )
    return whole.nodes()


def _check_calls(
    definition: Any, events: list[object], event_type: Callable[[Any], Hashable] | None
) -> None:
    """The per-event checks, calling the definition directly."""
    kind = definition.kind
    declared = getattr(definition, "event_types", None)
    declared = None if declared is None else frozenset(declared)
    fallback = getattr(definition, "fallback", False) is True
    publication = getattr(definition, "publication", None)
    states: dict[str, Any] = {}

    for position, event in enumerate(events):
        where = f"definition {kind!r} at event #{position}"
        claim = definition.match(event)
        again = definition.match(event)
        if claim != again:
            raise ConformanceError(
                f"{where}: match() answered {claim!r} then {again!r} for the same event; "
                "match must depend only on the event"
            )
        if claim is None:
            continue
        if not isinstance(claim, Claim) or claim.role not in ("start", "update"):
            raise ConformanceError(
                f"{where}: match() returned {claim!r}; return Claim(id, 'start' | 'update')"
            )
        # A fallback also takes the types no other definition admits: not checked here.
        if declared is not None and event_type is not None and not fallback:
            this_type = event_type(event)
            if this_type not in declared:
                raise ConformanceError(
                    f"{where}: match() claimed an event of type {this_type!r}, which is not "
                    f"in event_types {sorted(map(repr, declared))}; the engine would never "
                    "show it that event — add the type to event_types"
                )
        if claim.role == "start":
            states[claim.id] = definition.start(event, _NoReader())
        elif claim.id in states:
            state = states[claim.id]
            before = _snapshot(state)
            states[claim.id] = definition.update(state, event)
            if _snapshot(state) != before:
                raise ConformanceError(
                    f"{where}, key {kind}:{claim.id}: update() changed the state it was "
                    "given; return a new state instead (views still hold the old one)"
                )
        else:
            continue
        if callable(publication) and not isinstance(publication, str):
            value = publication(event)
            if value not in LEVELS:
                raise ConformanceError(
                    f"{where}: publication() returned {value!r}; return "
                    "'animation-frame', 'immediate' or 'none'"
                )


class _NoReader:
    """The reader of the per-call checks: a lone definition sees no earlier nodes."""

    def previous(self, kind: str, /) -> Node | None:
        return None


def _snapshot(state: Any) -> object:
    """A comparable copy of ``state``: its pickle (exact, even for classes without
    ``__eq__``), else a deep copy's repr."""
    try:
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        return repr(copy.deepcopy(state))


def _same(left: Any, right: Any) -> bool:
    try:
        return bool(left == right)
    except Exception:
        return repr(left) == repr(right)
