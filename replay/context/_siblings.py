"""Branches and the prompt cache: what a version's request shares with its siblings'.

Where a log branches (``definitions.branch``: an edit, a regeneration), each version
sends its own request for the model call that starts it: the request before the
first model call at or after the branch point, on the path to the version's latest
leaf. A provider's prefix cache serves what that request shares with an earlier
one, so this module reports, per branch point and per version after the first, the
longest common prefix of its serialized request (``CallRequest.serialized``) with
version 1's. A regeneration branches just before the answer, so its request is its
sibling's whole: everything cached; an edit shares what precedes the edited turn.

May import what ``replay.context`` may.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from definitions import ProtocolSet
from definitions.branch import Tree, starts_of
from definitions.gateways import Gateway
from engine import Economy

from ._economy import common_prefix, conversation, requests

__all__ = ["SiblingPrefix", "sibling_prefixes"]


@attrs.frozen(kw_only=True)
class SiblingPrefix:
    """Version ``version`` of ``count`` at log position ``at`` (the branch point's
    first event of that version): its request's size in bytes and the bytes it
    shares, from the start, with version 1's."""

    at: int
    version: int
    count: int
    shared: int
    size: int

    def as_dict(self) -> dict[str, Any]:
        """The figures as JSON-ready values."""
        return {
            "at": self.at,
            "version": self.version,
            "of": self.count,
            "shared_bytes": self.shared,
            "bytes": self.size,
            "shared": round(self.shared / self.size, 4) if self.size else 1.0,
        }


def _request(
    events: Sequence[Any], path: list[int], at: int, chosen: ProtocolSet, gateway: Gateway
) -> bytes:
    """The serialized request before the first model call at or after path index
    ``at`` (after the whole path when none follows)."""
    before = conversation(chosen.replay([events[p] for p in path[:at]]))
    talk = conversation(chosen.replay([events[p] for p in path]))
    calls = list(requests(talk, gateway, Economy.none()))
    call = next((n for n, m in enumerate(talk.calls) if m >= len(before.messages)), -1)
    return calls[call].serialized()


def sibling_prefixes(
    events: Sequence[Any], chosen: ProtocolSet, gateway: Gateway
) -> list[SiblingPrefix]:
    """Per branch point of ``events``' tree, in log order, each later version's
    request prefix shared with version 1's (see the module docstring)."""
    tree = Tree(events, starts_of(chosen.definitions))
    latest = tree.latest_leaves()
    found: list[SiblingPrefix] = []
    for _, kids in tree.branch_points():
        sent = []
        for kid in kids:
            path = tree.path(latest[kid])
            sent.append((kid, _request(events, path, path.index(kid), chosen, gateway)))
        first = sent[0][1]
        for version, (kid, data) in enumerate(sent[1:], start=2):
            found.append(
                SiblingPrefix(
                    at=kid,
                    version=version,
                    count=len(kids),
                    shared=common_prefix(first, data),
                    size=len(data),
                )
            )
    return found
