"""What the ``update_many`` tests of every definition share."""

from __future__ import annotations

import contextlib
from typing import Any

import msgspec
import pytest
from hypothesis import strategies as st

from engine import DefinitionError, create_conversation_engine

TEXTS = st.one_of(
    st.sampled_from(["", "a", "é", '{"x": [1, "', '2"]}', "\\", "🙂", "\n"]),
    st.text(max_size=6),
)
"""Delta texts: empty, unicode, JSON cut mid-token, an escape, a newline."""
ODD_TEXTS = st.sampled_from([None, 5, ["a"]])
"""Delta texts of another type, which an append must refuse as ``update`` does."""
INDEXES = st.one_of(st.integers(0, 2), st.sampled_from([-1, True, 0.0, "0", None]))
"""Indexes of a choice, part or call: small ones, and ones that only look like one."""


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


def check_router(module: Any, events: list[Any]) -> None:
    """Both checks of a set that routes by a table (``ag_ui``, ``ai_sdk``) on ``events``:
    its batch pre-pass is its live one (``check_route_is_the_router``), and every route
    it takes is a row of the table (``check_routes_are_rows``)."""
    check_route_is_the_router(module, events)
    check_routes_are_rows(module, events)


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


def started(module: Any, head: list[Any], start: Any, definition: Any) -> tuple[Any, Any]:
    """The first state of the node ``start`` opens (after ``head``, through a fresh
    ``module.Preparer``), and a function that routes an update event for that node,
    each through a fresh router that has seen only ``head`` and ``start`` (an end does
    not stop the next event from reaching the node, so runs go on after it); the event
    must claim the node, as an update."""
    router = module.Preparer()
    for event in head:
        router(event)
    routed = router(start)
    claim = definition.match(routed)
    assert claim.role == "start"
    state = definition.start(routed, None)

    def envelope(event: Any) -> Any:
        router = module.Preparer()
        for before in (*head, start):
            router(before)
        routed = router(event)
        update = definition.match(routed)
        assert update is not None, (definition.kind, event)
        assert (update.id, update.role) == (claim.id, "update"), (definition.kind, event)
        return routed

    return state, envelope


def check_a_run(
    data: Any, module: Any, head: list[Any], definition: Any, kind: tuple[Any, ...], ended: bool
) -> None:
    """``check_run`` on a node of ``definition`` opened by one of ``kind``'s starts
    (``kind`` is its starts, a strategy of its updates and the event that ends it),
    routed as in ``started``, then ended first when ``ended`` (what a later delta does
    to an ended node is ``update``'s to say), over a random run of its updates."""
    starts, updates, end = kind
    state, envelope = started(module, head, data.draw(st.sampled_from(starts)), definition)
    if ended:
        state = definition.update(state, envelope(end))
    events = data.draw(st.lists(updates, min_size=2, max_size=8))
    check_run(definition, state, [envelope(event) for event in events])


def check_one_run(module: Any, which: int, stream: list[Any], read: Any) -> None:
    """The engine does hand a node's deltas over as one run (else the run tests prove
    nothing about the fold): ``stream``, pushed at once through ``module``'s batch
    pre-pass, ends in 50 deltas ``"ab"`` of one node of definition ``module.DEFINITIONS
    [which]``: its ``update_many`` folds the last 49 in one call (the first goes through
    ``update``), and ``read`` of the node's state is the 50 deltas' text."""
    definitions: list[Any] = list(module.DEFINITIONS)
    definitions[which] = counting = Counting(definitions[which])
    engine = create_conversation_engine(definitions, event_type=module.event_type)
    engine.push_many(module.Preparer().prepare(stream))
    assert counting.runs == [49]
    node = next(node for node in engine.nodes() if node.kind == counting.kind)
    assert str(read(node.state)) == "ab" * 50


def by_route(module: Any) -> list[Any]:
    """The definitions of ``module`` (a set routing by a table of ``ROUTES``) whose
    publication is a mapping by route, as pytest params named by their kinds."""
    return [
        pytest.param(d, id=d.kind) for d in module.DEFINITIONS if not isinstance(d.publication, str)
    ]


def check_publication_by_route(module: Any, definition: Any) -> None:
    """A routed engine reads ``definition``'s publication mapping once per route, an
    unrouted one calls it per envelope: both say what the route's row of the table
    does (deltas wait for a frame)."""
    publication = definition.publication
    for route in definition.event_types:
        envelope = module.Envelope({}, route)
        assert publication.get(route, "immediate") == publication(envelope) == route.publication
