"""What the Router-based protocol sets (``ag_ui``, ``ai_sdk``) share: routing by data.

Their ``Router`` decides each event's claims before the fold and wraps the event in
the set's one envelope class, ``Routed``: the claim of each definition it concerns
in that definition's own field (``None`` in the others), and its ``route``, a
``Route`` from the set's one declared table, saying which definitions it reaches,
how soon a change shows (``publication``) and whatever else the set decides per
event (``writes``). The engine routes on the route (``event_type=route_of``, keyed
by the record itself), and each definition's ``event_types`` and ``publication``
are read off the table (``reaching``, ``publications``): nothing about routing is
said anywhere else. A combination (a part's chunk that also starts its message) is
the route ``plus`` the other definition: a route of the table like any other.

A definition's ``match`` is ``operator.attrgetter`` of its claim field (a C call, no
Python frame: every delta of a stream goes through one), which is also right in an
engine without ``event_type``, where every match sees every envelope. Anything but
an envelope (a raw dict, an SDK's typed object) is routed by its class to the set's
guard (``ProtocolSet.envelope``), which names the fix.

The envelope class is a msgspec Struct, not a class with ``__init__``: one is made
per event, and a Struct is made in about a third of the time. ``eq=False`` (compared
and hashed by identity) and ``gc=False`` (never tracked by the garbage collector: it
refers to nothing that refers back).
"""

from __future__ import annotations

import operator
from collections.abc import Hashable, Iterable
from typing import Any, Final, cast

import attrs

from engine import Publication

from ._routing import ByType

__all__ = ["Route", "describe", "on_routes", "publications", "reaching", "route_of"]

_NOW: Final[Publication] = "immediate"


@attrs.frozen(eq=False, repr=False)
class Route:
    """One row of a set's routing table: where an envelope goes and how it shows.

    ``kinds`` are the definitions it reaches (the engine offers the envelope to those
    only); ``publication`` is theirs for it (``"immediate"`` or ``"animation-frame"``);
    ``writes`` is the set's own flag (AI SDK: the reference yields a snapshot for the
    chunk). Made once, in the table, and compared and hashed by identity: the engine
    looks a route up per event, at the cost of a pointer hash.
    """

    name: str
    kinds: frozenset[str]
    publication: Publication = _NOW
    writes: bool = False

    def plus(self, kind: str) -> Route:
        """This route reaching ``kind`` too (made once per pair, then the same record)."""
        key = (self, kind)
        joined = _JOINED.get(key)
        if joined is None:
            joined = _JOINED[key] = Route(
                f"{self.name}+{kind}", self.kinds | {kind}, self.publication, self.writes
            )
        return joined

    def __repr__(self) -> str:
        return f"Route({self.name!r})"


_JOINED: dict[tuple[Route, str], Route] = {}


def route_of(event: Any) -> Hashable:
    """The engine's routing key (``event_type=``): an envelope's ``route``, else the
    object's class (a raw dict, an SDK's typed object), which only the set's
    guard (``ProtocolSet.envelope``) admits."""
    try:
        return event.route  # type: ignore[no-any-return]
    except AttributeError:
        return cast(Hashable, type(event))  # mypy sees no class as Hashable


def reaching(kind: str, routes: Iterable[Route]) -> frozenset[Route]:
    """The ``event_types`` of definition ``kind``: the routes of the table reaching it."""
    return frozenset(route for route in routes if kind in route.kinds)


def publications(routes: Iterable[Route]) -> ByType:
    """The ``publication`` of a definition taking ``routes``: each route's, the
    immediate ones left out (what the engine assumes for a missing type)."""
    return ByType({r: r.publication for r in routes if r.publication != _NOW}, route_of)


def on_routes(
    kind: str, claim: str, routes: Iterable[Route]
) -> tuple[str, frozenset[Route], ByType, operator.attrgetter[Any]]:
    """A routed definition's class header, read off the set's table: its ``kind``,
    ``event_types`` (the routes reaching it), ``publication`` (theirs) and ``match``
    (a C ``attrgetter`` of its claim field ``claim``), as
    ``kind, event_types, publication, match = on_routes(...)`` in the class body."""
    event_types = reaching(kind, routes)
    return kind, event_types, publications(event_types), operator.attrgetter(claim)


def describe(envelope: Any, claims: Iterable[str]) -> str:
    """An envelope's ``repr``: its event, its route and the claims it carries (of the
    claim fields ``claims``, those set)."""
    named = "".join(
        f", {name}={claim!r}" for name in claims if (claim := getattr(envelope, name)) is not None
    )
    return f"{type(envelope).__name__}({envelope.event!r}, {envelope.route!r}{named})"
