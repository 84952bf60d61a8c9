"""Test harness for the engine: small definitions, a naive model fold, a recorder.

Events here are plain dicts ``{"to": kind or "*", "op": "start"|"update"|"noise",
"id": str, "v": int, "pub": publication}``. ``Tally`` definitions claim events sent
to their kind or to ``"*"`` (so one event can drive several nodes); ``v == 13``
makes ``start``/``update`` raise (for atomicity), ``v == 0`` makes ``update``
return the identical state (no change).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from engine import Claim, ConversationEngine, ManualScheduler, Node, create_conversation_engine

Event = dict[str, Any]


class Unlucky(Exception):
    """Raised by Tally for v == 13."""


@attrs.frozen
class TallyState:
    total: int
    # What reader.previous() returned at start: (kind, id, seq) per looked-up kind.
    previous: tuple[tuple[str, str, int] | None, ...]


@attrs.define
class Tally:
    """A definition: starts/updates nodes of its kind; reads previous() of ``looks_at``."""

    kind: str
    looks_at: tuple[str, ...] = ()

    def match(self, event: Event) -> Claim | None:
        if event["to"] not in (self.kind, "*") or event["op"] == "noise":
            return None
        return Claim(event["id"], event["op"])

    def start(self, event: Event, reader: Any) -> TallyState:
        if event["v"] == 13:
            raise Unlucky(f"start {event['id']}")
        seen = []
        for kind in self.looks_at:
            node = reader.previous(kind)
            seen.append(None if node is None else (node.kind, node.id, node.seq))
        return TallyState(event["v"], tuple(seen))

    def update(self, state: TallyState, event: Event) -> TallyState:
        if event["v"] == 13:
            raise Unlucky(f"update {event['id']}")
        if event["v"] == 0:
            return state
        return attrs.evolve(state, total=state.total + event["v"])

    def publication(self, event: Event) -> str:
        return str(event.get("pub", "immediate"))


def tallies() -> list[Tally]:
    """Three definitions that read each other backward."""
    return [
        Tally("a", looks_at=("a", "b")),
        Tally("b", looks_at=("a",)),
        Tally("c", looks_at=("c", "a", "b")),
    ]


@attrs.define
class RoutedTally(Tally):
    """A Tally that declares the event types it can claim (its kind and ``"*"``), for an
    engine routing by ``to``: an event sent to one kind takes the fold's inline
    one-slot path, one sent to ``"*"`` the general path."""

    @property
    def event_types(self) -> frozenset[str]:
        return frozenset({self.kind, "*"})


@attrs.define
class RunTally(RoutedTally):
    """A RoutedTally with ``update_many``: a run's values are summed at once (a 13
    anywhere in it raises, as ``update`` would for that event). ``runs`` records the
    length of every run it was handed."""

    runs: list[int] = attrs.field(factory=list, eq=False, repr=False)
    # Hand out one Claim object per (id, role), as the built-in vocabularies do: the
    # engine then recognises a run by the claim object itself.
    cache_claims: bool = False
    claims: dict[tuple[str, str], Claim] = attrs.field(factory=dict, eq=False, repr=False)

    def match(self, event: Event) -> Claim | None:
        claim = super().match(event)
        if claim is None or not self.cache_claims:
            return claim
        return self.claims.setdefault((claim.id, claim.role), claim)

    def update_many(self, state: TallyState, events: list[Event]) -> TallyState:
        assert len(events) >= 2, "the engine hands over runs of two or more"
        self.runs.append(len(events))
        values = [event["v"] for event in events]
        if 13 in values:
            raise Unlucky(f"a run of {events[0]['id']} holds 13")
        if not any(values):
            return state
        return attrs.evolve(state, total=state.total + sum(values))


def run_tallies() -> list[Tally]:
    """``tallies()`` as RunTally, for ``event_type=route_to``; the first caches claims."""
    return [RunTally(t.kind, t.looks_at, cache_claims=t.kind == "a") for t in tallies()]


def route_to(event: Event) -> str:
    return str(event["to"])


def routed_tallies() -> list[Tally]:
    """``tallies()`` as RoutedTally, for ``event_type=route_to``."""
    return [RoutedTally(t.kind, t.looks_at) for t in tallies()]


def ev(to: str, op: str, id: str, v: int = 1, pub: str = "immediate") -> Event:
    return {"to": to, "op": op, "id": id, "v": v, "pub": pub}


@attrs.define
class ModelNode:
    kind: str
    id: str
    seq: int
    state: Any


def model_fold(definitions: Sequence[Any], events: Iterable[Event]) -> list[tuple[Any, ...]]:
    """The rules of DESIGN.md written as plainly as possible: the reference fold.

    Returns ``(key, kind, id, seq, state)`` tuples in seq order.
    """
    nodes: list[ModelNode] = []
    for event in events:
        before = [attrs.evolve(n) for n in nodes]
        try:
            for definition in definitions:
                claim = definition.match(event)
                if claim is None:
                    continue
                found = [n for n in nodes if n.kind == definition.kind and n.id == claim.id]
                if claim.role == "update":
                    if found:
                        found[0].state = definition.update(found[0].state, event)
                    continue
                seq = found[0].seq if found else len(nodes)

                class _Reader:
                    def previous(
                        self, kind: str, seq: int = seq, nodes: list[ModelNode] = nodes
                    ) -> Node | None:
                        older = [n for n in nodes if n.kind == kind and n.seq < seq]
                        if not older:
                            return None
                        n = max(older, key=lambda n: n.seq)
                        return Node(f"{n.kind}:{n.id}", n.kind, n.id, n.seq, n.state)

                state = definition.start(event, _Reader())
                if found:
                    found[0].state = state
                else:
                    nodes.append(ModelNode(definition.kind, claim.id, seq, state))
        except Exception:
            nodes = before
    return [(f"{n.kind}:{n.id}", n.kind, n.id, n.seq, n.state) for n in nodes]


def as_tuples(nodes: Iterable[Node]) -> list[tuple[Any, ...]]:
    return [(n.key, n.kind, n.id, n.seq, n.state) for n in nodes]


@attrs.define
class Harness:
    """An engine wired to a manual scheduler and a recording listener."""

    engine: ConversationEngine
    scheduler: ManualScheduler
    seen: list[tuple[Node, ...]]

    @classmethod
    def make(cls, definitions: Sequence[Any] | None = None, **kwargs: Any) -> Harness:
        scheduler = ManualScheduler()
        engine = create_conversation_engine(
            definitions if definitions is not None else tallies(), scheduler=scheduler, **kwargs
        )
        seen: list[tuple[Node, ...]] = []
        engine.subscribe(seen.append)
        return cls(engine, scheduler, seen)

    def push(self, *events: Event) -> None:
        for event in events:
            self.engine.push(event)

    @property
    def notifications(self) -> int:
        return len(self.seen)
