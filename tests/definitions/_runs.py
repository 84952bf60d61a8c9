"""What the ``update_many`` tests of every definition share."""

from __future__ import annotations

import contextlib
from typing import Any

import msgspec
import pytest

from engine import DefinitionError, create_conversation_engine


def check_run(definition: Any, state: Any, run: list[Any], *, may_raise: bool = False) -> Any:
    """``definition.update_many`` against ``update`` on each event of ``run`` in turn.

    It must raise whenever ``update`` would and otherwise return an equal state, the
    state itself exactly when no update changed it. Raising where ``update`` would not
    is allowed only with ``may_raise`` (the engine then folds the run one at a time).
    Returns the state both agree on, or None when the run fails.
    """
    try:
        expected = state
        for event in run:
            expected = definition.update(expected, event)
    except Exception:
        with pytest.raises(Exception):  # noqa: B017, PT011
            definition.update_many(state, run)
        return None
    if may_raise:
        try:
            got = definition.update_many(state, run)
        except Exception:
            return None
    else:
        got = definition.update_many(state, run)
    assert got == expected
    assert (got is state) == (expected is state)
    return got


class Counting:
    """``definition`` as the engine sees it, recording the length of every run its
    ``update_many`` folded (counted after the call: a run it raised on is folded
    again one event at a time, and is not one)."""

    def __init__(self, definition: Any) -> None:
        self.runs: list[int] = []
        self._definition = definition
        self.kind = definition.kind
        self.event_types = definition.event_types
        self.publication = definition.publication
        self.match = definition.match
        self.start = definition.start
        self.update = definition.update

    def update_many(self, state: Any, events: list[Any]) -> Any:
        new = self._definition.update_many(state, events)
        self.runs.append(len(events))
        return new


def check_fold_with_runs(protocol: Any, stream: list[Any]) -> None:
    """The whole set with runs (the batch pre-pass, then ``push_many``) and without (one
    push per event through the live pre-pass: no runs at all) folds ``stream`` to the
    same nodes, up to its first bad event (whose ``DefinitionError`` leaves the events
    before it folded). ``tests/conformance/test_fold_run.py`` holds every set to this
    on valid streams; a set's own tests add streams with bad deltas."""
    batch = create_conversation_engine(protocol.registration)
    with contextlib.suppress(DefinitionError):
        batch.push_many(protocol.feed(stream))
    one = create_conversation_engine(protocol.registration)
    pre_pass = protocol.pre_pass()
    for event in stream:
        try:
            envelope = pre_pass(event)
            if envelope is not None:
                one.push(envelope)
        except DefinitionError:
            break
    assert batch.nodes() == one.nodes()


def check_route_is_the_router(module: Any, events: list[Any]) -> None:
    """``module.Preparer().prepare(events)`` gives the envelopes (and raises the error) of
    the live pre-pass (a ``Preparer`` called on each event, counted): its fast path for a
    repeated delta changes nothing (``ag_ui``, ``ai_sdk``)."""
    router = module.PROTOCOL.pre_pass()
    expected: list[Any] = []
    failure: type[BaseException] | None = None
    message = ""
    for event in events:
        try:
            expected.append(msgspec.structs.astuple(router(event)))
        except Exception as exc:  # route() must raise the same
            failure = type(exc)
            message = str(exc)
            break
    got: list[Any] = []

    def take() -> None:
        got.extend(msgspec.structs.astuple(routed) for routed in module.Preparer().prepare(events))

    if failure is None:
        take()
    else:
        with pytest.raises(failure) as info:
            take()
        assert str(info.value) == message
    assert got == expected


def check_routes_are_rows(module: Any, events: list[Any]) -> None:
    """Every route the router takes on ``events`` is a row of ``module.ROUTES``,
    reaching exactly its kinds, each with its claim and no other definition with one.

    The engine offers an envelope to the definitions whose ``event_types`` hold its
    route, and those are read off the table: a route made outside it (a combination
    the table lacks) would reach only the guard, and fold to nothing.
    """
    router = module.Preparer()
    guard, *definitions = module.DEFINITIONS
    for event in events:
        try:
            routed = router(event)
        except Exception:  # an event the router refuses (check_route_is_the_router)
            break
        assert routed.route in module.ROUTES
        assert routed.route not in guard.event_types
        reached = {d.kind for d in definitions if routed.route in d.event_types}
        assert reached == routed.route.kinds
        for definition in definitions:
            assert (definition.match(routed) is not None) == (definition.kind in reached)
