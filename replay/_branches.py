"""Branches on the command line: which path of a log to fold, list, render or prove.

The tree and the one rule are ``definitions.branch``'s; this module applies them to
a whole log and a ``ProtocolSet``: the events of a leaf's path (what ``context``
and ``check`` read), every leaf's view with its version markers (what ``replay``
renders), and the listing ``convo replay --branches`` prints. A log with no branch
event is its own single path: callers stream it as before and come here only once
a branch event is met (``guard``).

May import anything in ``replay`` (it sits at the top, beside the CLI).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import attrs

from definitions import ProtocolSet
from definitions.branch import Branches, Version, is_branch_event, path_events
from engine import Node

from .render._text import strip_controls, text_pieces

__all__ = ["Branched", "BranchedLog", "View", "guard", "has_branches", "note"]


class Branched(Exception):
    """A branch event was met while a log was streamed: fold it whole instead."""


def guard(events: Iterable[Any]) -> Iterator[Any]:
    """``events`` as they come, raising ``Branched`` at the first branch event."""
    for event in events:
        if is_branch_event(event):
            raise Branched
        yield event


def has_branches(events: Iterable[Any]) -> bool:
    """Whether any of ``events`` is a branch event."""
    return any(map(is_branch_event, events))


@attrs.frozen
class View:
    """One leaf's view: ``nodes`` and the version ``markers`` of its nodes by key."""

    leaf: str
    nodes: tuple[Node, ...]
    markers: dict[str, Version]


def note(version: Version) -> str:
    """The terminal's marker of a node with siblings."""
    return f"version {version.index} of {version.count}"


class BranchedLog:
    """A whole log's tree, folded through ``chosen``. Raises ``BranchError`` naming
    the branch event that cannot be placed."""

    def __init__(self, events: Sequence[Any], chosen: ProtocolSet) -> None:
        self.events = events
        self.chosen = chosen
        self.branches = Branches(events, chosen.definitions, event_type=chosen.event_type)
        self.tree = self.branches.tree

    def leaf(self, leaf: str | None) -> str:
        """``leaf``, checked (default: the active one); ``BranchError`` naming the
        branches there are."""
        self.tree.tip(leaf)
        return self.tree.active if leaf is None else leaf

    def path(self, leaf: str | None = None) -> list[Any]:
        """The linear log of ``leaf``'s path: what folds to its view."""
        return path_events(self.events, self.tree, self.leaf(leaf))

    def view(self, leaf: str | None = None) -> View:
        """``leaf``'s view (default: the active one) with its version markers."""
        name = self.leaf(leaf)
        if self.chosen.prepare is None:
            nodes = self.branches.show(name)
        else:  # a pre-pass reads a stream from its start: fold the path afresh
            nodes = self.chosen.replay(self.path(name))
        return View(name, nodes, self.branches.markers(name))

    def views(self) -> list[View]:
        """Every leaf's view, the leaves in the order they were opened."""
        return [self.view(leaf.id) for leaf in self.tree.leaves()]

    def listing(self) -> str:
        """One line a leaf: id, path depth (events), the last line of its view's text
        (shortened), the active one starred."""
        lines = []
        for leaf in self.tree.leaves():
            view = self.view(leaf.id)
            text = "".join(text_pieces(view.nodes, self.chosen.definitions, color=False))
            last = next((line for line in reversed(text.splitlines()) if line.strip()), "")
            last = strip_controls(last.strip())
            if len(last) > 60:
                last = last[:59] + "…"
            star = "*" if leaf.id == self.tree.active else " "
            lines.append(f"{star} {leaf.id}\t{leaf.depth}\t{last}")
        return "\n".join(lines) + "\n"
