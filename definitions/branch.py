"""Branches: an edit, a regeneration and the choice of a version, as events.

Event vocabulary (``type`` is the tag)::

    {"type": "branch.edit",       "id": "b1", "of": "message:u2"}   # a new version of u2
    {"type": "branch.regenerate", "id": "b2", "of": "message:a2"}   # a new version of a2
    {"type": "branch.choose",     "id": "b1"}                       # show and continue b1

Theory of operation
-------------------
A log with branch events is a tree of its other events. Every event continues the
*current branch*: its parent is the branch's tip, and it becomes the tip. The log
starts on the branch ``main``. ``branch.edit`` and ``branch.regenerate`` (the same
rule; the name says what the user did) open branch ``id`` at the point just before
the event that started node ``of`` (a node key, ``kind:id``) on the current path,
and make it current: the events after it are the new version of that node and of
everything after it. ``branch.choose`` makes an existing branch current again:
later events continue it. Nothing is removed; branch events are structure, never
folded.

The one rule: **the view of a branch is the view of the linear log made of the
events on its path** (root to the branch's tip, in log order), and nothing else.
So a definition sees a branch as a plain log: ``reader.previous`` looks back along
the path. The *active* branch is the one current at the end of the log: the latest
version, unless a ``branch.choose`` said otherwise. A log with no branch event is
one path, the log itself.

A *version*: where an event of the path has siblings (other children of its
parent, in log order), it is version ``index`` of ``count``; the marker belongs to
the node that event starts (or the first node started after it on the path).

``Branches`` (below) holds the tree once and shows any branch through an
``engine.Cursor``: switching steps back to the point the two paths share and
forward along the other, so its cost is the two divergent parts, whatever the
length of the shared prefix. Imports only ``engine``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final, TypeAlias

import attrs
import msgspec

from engine import ConversationError, Cursor, DefinitionError, Node, Registration

__all__ = [
    "MAIN",
    "TAGS",
    "BranchError",
    "Branches",
    "Choose",
    "Edit",
    "Event",
    "Leaf",
    "Regenerate",
    "Tree",
    "Version",
    "is_branch_event",
    "join_paths",
    "path_events",
    "starts_of",
]

MAIN: Final = "main"
"""The branch a log starts on."""


class Edit(msgspec.Struct, frozen=True, tag_field="type", tag="branch.edit"):
    """Open branch ``id``: a new version of node ``of`` (a user message, edited)."""

    id: str
    of: str


class Regenerate(msgspec.Struct, frozen=True, tag_field="type", tag="branch.regenerate"):
    """Open branch ``id``: a new version of node ``of`` (an answer, regenerated)."""

    id: str
    of: str


class Choose(msgspec.Struct, frozen=True, tag_field="type", tag="branch.choose"):
    """Make branch ``id`` current: it is shown, and later events continue it."""

    id: str


Event: TypeAlias = Edit | Regenerate | Choose
"""Any branch event, for typed decoding: ``msgspec.json.Decoder(branch.Event)``."""

_OPENS: Final = frozenset({"branch.edit", "branch.regenerate"})
TAGS: Final[frozenset[str]] = frozenset({*_OPENS, "branch.choose"})
"""The ``type`` tags of the branch events."""
_STRUCTS: Final[dict[type, str]] = {
    Edit: "branch.edit",
    Regenerate: "branch.regenerate",
    Choose: "branch.choose",
}


class BranchError(ConversationError, ValueError):
    """A branch event that cannot be placed, or a branch that does not exist: says
    why, and the event's log ``position`` (``None`` for a branch asked for)."""

    def __init__(self, message: str, *, position: int | None) -> None:
        super().__init__(message)
        self.position = position


def _tag(event: Any) -> str | None:
    if type(event) is dict:
        tag = event.get("type")
        return tag if type(tag) is str and tag in TAGS else None
    return _STRUCTS.get(type(event))


def is_branch_event(event: Any) -> bool:
    """Whether ``event`` is a branch event (a Struct above or a dict with its tag)."""
    return _tag(event) is not None


def _field(event: Any, name: str, tag: str, position: int) -> str:
    value = event.get(name) if type(event) is dict else getattr(event, name, None)
    if type(value) is not str or not value:
        raise BranchError(
            f"{tag} event #{position} needs a non-empty str {name!r}, got {value!r}",
            position=position,
        )
    return value


def starts_of(definitions: Iterable[Any] | Registration) -> Callable[[Any], Iterator[str]]:
    """A function giving the keys of the nodes an event starts under ``definitions``
    (each one's ``match``): how ``of`` finds the event that started a node."""
    if isinstance(definitions, Registration):
        definitions = definitions.definitions
    pairs = [(d.kind, d.match) for d in definitions]

    def starts(event: Any) -> Iterator[str]:
        for kind, match in pairs:
            try:
                claim = match(event)
            except Exception:  # a bad event is the fold's to name, not the tree's
                continue
            if claim is not None and claim.role == "start":
                yield f"{kind}:{claim.id}"

    return starts


@attrs.frozen
class Leaf:
    """A branch whose tip nothing continues: ``id``, its path's ``depth`` (events)
    and ``tip``, the log position of its last event (-1: an empty path)."""

    id: str
    depth: int
    tip: int


@attrs.frozen
class Version:
    """A node with siblings: version ``index`` (1-based, in log order) of ``count``;
    ``leaves[i]`` is the branch to show for version ``i + 1`` (the latest leaf under it)."""

    index: int
    count: int
    leaves: tuple[str, ...]


class Tree:
    """The tree of a log's events (see the module docstring). Built in O(n) plus, per
    edit or regeneration, the walk back along the path to the node it names; grown
    by ``extend`` as the log grows (a live conversation)."""

    __slots__ = ("_children", "_depth", "_parents", "_starts", "active", "events", "tips")

    def __init__(self, events: Iterable[Any], starts: Callable[[Any], Iterable[str]]) -> None:
        self.events: Final[list[Any]] = []
        """The log's events, in order (the list, not a copy of any event)."""
        self._starts = starts
        # Per position: its parent's position; -1 the root, -2 a branch event.
        self._parents: list[int] = []
        self._depth: list[int] = []
        self.tips: Final[dict[str, int]] = {MAIN: -1}
        """Each branch's tip (the log position of its last event; -1: none yet)."""
        self.active = MAIN
        """The branch shown when none is asked for: the current one at the log's end."""
        self._children: dict[int, list[int]] | None = None
        self.extend(events)

    def extend(self, events: Iterable[Any]) -> None:
        """Add events at the end of the log. ``BranchError`` for a branch event that
        cannot be placed: the events before it are added, it and later ones are not."""
        for event in events:
            self._add(event)

    def _add(self, event: Any) -> None:
        # Every check comes before the one change: a refused event leaves no trace.
        position = len(self.events)
        tips = self.tips
        tag = _tag(event)
        if tag is None:
            parent = tips[self.active]
            self._place(event, parent, self._depth[parent] + 1 if parent >= 0 else 1)
            tips[self.active] = position
            return
        id = _field(event, "id", tag, position)
        if tag == "branch.choose":
            if id not in tips:
                raise BranchError(
                    f"branch.choose event #{position} names branch {id!r}, which no "
                    f"earlier event opened (known: {', '.join(tips)})",
                    position=position,
                )
        else:
            of = _field(event, "of", tag, position)
            if id in tips:
                raise BranchError(
                    f"{tag} event #{position} opens branch {id!r}, which already exists",
                    position=position,
                )
            at = tips[self.active]
            while at >= 0 and of not in self._starts(self.events[at]):
                at = self._parents[at]
            if at < 0:
                raise BranchError(
                    f"{tag} event #{position}: no event on branch {self.active!r} "
                    f"started node {of!r}",
                    position=position,
                )
            tips[id] = self._parents[at]
        self._place(event, -2, 0)
        self.active = id

    def _place(self, event: Any, parent: int, depth: int) -> None:
        if parent != -2 and self._children is not None:
            self._children.setdefault(parent, []).append(len(self.events))
        self.events.append(event)
        self._parents.append(parent)
        self._depth.append(depth)

    def tip(self, branch: str | None = None) -> int:
        """The tip of ``branch`` (default: the active one). Raises ``BranchError``
        naming the known branches when there is no such branch."""
        name = self.active if branch is None else branch
        try:
            return self.tips[name]
        except KeyError:
            known = ", ".join(self.tips)
            raise BranchError(f"no branch {name!r} (branches: {known})", position=None) from None

    def path(self, branch: str | None = None) -> list[int]:
        """The log positions on the path to ``branch``'s tip, in log order."""
        positions = []
        at = self.tip(branch)
        parents = self._parents
        while at >= 0:
            positions.append(at)
            at = parents[at]
        positions.reverse()
        return positions

    def parent(self, position: int) -> int:
        """The position of the event ``position`` continues (-1: the root; -2: it
        is a branch event, outside the tree)."""
        return self._parents[position]

    def depth(self, position: int) -> int:
        """How many events the path to ``position`` holds (0 for the root, -1)."""
        return self._depth[position] if position >= 0 else 0

    def children(self, position: int) -> list[int]:
        """The events that continue ``position`` (-1: the root), in log order."""
        if self._children is None:
            children: dict[int, list[int]] = {}
            for at, parent in enumerate(self._parents):
                if parent != -2:
                    children.setdefault(parent, []).append(at)
            self._children = children
        return self._children.get(position, [])

    def leaves(self) -> list[Leaf]:
        """The branches whose tip nothing continues, in the order they were opened;
        one per tip (an empty branch shares its opening point's, and is left out)."""
        seen: set[int] = set()
        found = []
        for branch, tip in self.tips.items():
            if tip in seen or (tip >= 0 and self.children(tip)) or (tip < 0 and self.children(-1)):
                continue
            seen.add(tip)
            found.append(Leaf(branch, self.depth(tip), tip))
        return found

    def latest_leaves(self) -> dict[int, str]:
        """For each event of the tree: the leaf with the greatest tip below it (the
        version a switch to that event shows)."""
        best: dict[int, str] = {}
        for leaf in sorted(self.leaves(), key=lambda leaf: leaf.tip, reverse=True):
            at = leaf.tip
            while at >= 0 and at not in best:
                best[at] = leaf.id
                at = self._parents[at]
        return best

    def branch_points(self) -> list[tuple[int, list[int]]]:
        """Every event with more than one child (-1: the root), and its children."""
        self.children(-1)
        assert self._children is not None
        return [(p, kids) for p, kids in sorted(self._children.items()) if len(kids) > 1]

    def versions(self, branch: str | None = None) -> dict[int, Version]:
        """The events of ``branch``'s path that have siblings, by position."""
        found: dict[int, Version] = {}
        latest: dict[int, str] | None = None
        for position in self.path(branch):
            siblings = self.children(self._parents[position])
            if len(siblings) > 1:
                if latest is None:
                    latest = self.latest_leaves()
                found[position] = Version(
                    siblings.index(position) + 1,
                    len(siblings),
                    tuple(latest.get(s, "") for s in siblings),
                )
        return found


def path_events(events: Sequence[Any], tree: Tree, branch: str | None = None) -> list[Any]:
    """The linear log of ``branch``'s path (default: the active one): what folds to
    its view, by the one rule."""
    return [events[at] for at in tree.path(branch)]


def _common(left: Sequence[Any], right: Sequence[Any]) -> int:
    n = 0
    for a, b in zip(left, right, strict=False):
        if a != b:
            break
        n += 1
    return n


def join_paths(
    paths: Sequence[tuple[str, Sequence[Any]]],
    starts: Callable[[Any], Iterable[str]],
    *,
    active: str | None = None,
) -> list[Any]:
    """One log whose branches are ``paths`` (``(name, events)``, oldest first; the
    first is ``main`` whatever its name): how an importer keeps the versions a
    product stored as a tree. Each later path shares the longest prefix it has with
    an earlier one and branches at the last node start within it (``branch.edit``
    when that node is a user message, else ``branch.regenerate``); a path that is a
    prefix of an earlier one adds nothing. ``active`` (default: the last path) is
    chosen at the end. By the one rule, the path of each branch is its events."""
    if not paths:
        return []
    first = list(paths[0][1])
    log = list(first)
    built: list[tuple[str, list[Any]]] = [(MAIN, first)]
    names = {paths[0][0]: MAIN}
    current = MAIN
    for name, events in paths[1:]:
        events = list(events)
        shared, base = max(
            ((_common(other, events), other_name) for other_name, other in built),
            key=lambda found: (found[0], found[1] == current),  # a tie: no choose
        )
        other = dict(built)[base]
        if shared == len(events):
            names[name] = base
            continue
        if current != base:
            log.append({"type": "branch.choose", "id": base})
        if shared == len(other):  # it goes on from where the other ends
            log.extend(events[shared:])
            current = base
            names[name] = base
            built = [(n, events if n == base else e) for n, e in built]
            continue
        at = shared
        while at >= 0 and not (keys := list(starts(other[at]))):
            at -= 1
        if at < 0:
            raise ValueError(f"path {name!r} shares no node start with an earlier path")
        first_event = events[at]
        user = (
            type(first_event) is dict
            and first_event.get("type") == "message.start"
            and first_event.get("role") == "user"
        )
        tag = "branch.edit" if user else "branch.regenerate"
        log.append({"type": tag, "id": name, "of": keys[0]})
        log.extend(events[at:])
        built.append((name, events))
        names[name] = current = name
    wanted = names.get(active, active) if active is not None else current
    if wanted != current:
        log.append({"type": "branch.choose", "id": wanted})
    return log


def _in_log(error: DefinitionError, position: int, branch: str | None) -> DefinitionError:
    """``error``, raised on a branch's path, naming the event's log position."""
    path = f"event #{error.position} of branch {branch or 'the active one'!r}'s path"
    message = str(error).replace(f" at event #{error.position}", f" at event #{position} ({path})")
    return DefinitionError(
        message, kind=error.kind, method=error.method, position=position, key=error.key
    )


class Branches:
    """Every branch of one log, shown one at a time.

    ``show(branch)`` returns the branch's view (``nodes()`` of a fresh engine given
    ``path_events``); ``markers(branch)`` the version markers by node key. Switching
    re-folds only from the point the old and the new path share.
    """

    __slots__ = ("_cursor", "_on", "_starts", "tree")

    def __init__(
        self,
        events: Iterable[Any],
        definitions: Iterable[Any] | Registration,
        *,
        event_type: Callable[[Any], Any] | None = None,
    ) -> None:
        registration = (
            definitions
            if isinstance(definitions, Registration)
            else Registration(definitions, event_type=event_type)
        )
        self._starts = starts_of(registration)
        self.tree: Final = Tree(events, self._starts)
        self._cursor = Cursor(registration)
        self._on = -1  # the tip the cursor stands on

    def show(self, branch: str | None = None) -> tuple[Node, ...]:
        """The view of ``branch`` (default: the active one)."""
        tree = self.tree
        target = tree.tip(branch)
        at, to = self._on, target
        forward: list[int] = []
        back = 0
        # Up from the deeper one, then from both, to the position the paths share.
        while tree.depth(at) > tree.depth(to):
            at, back = tree.parent(at), back + 1
        while tree.depth(to) > tree.depth(at):
            forward.append(to)
            to = tree.parent(to)
        while at != to:
            at, back = tree.parent(at), back + 1
            forward.append(to)
            to = tree.parent(to)
        cursor = self._cursor
        cursor.back(back)
        self._on = at
        events = tree.events
        forward.reverse()
        try:
            cursor.forward(events[p] for p in forward)
        except BaseException as exc:  # stand on the shared point again, whole
            failed = len(cursor)  # the failing event's index on the path
            cursor.back(failed - tree.depth(at))
            if isinstance(exc, DefinitionError) and exc.position == failed:
                raise _in_log(exc, forward[failed - tree.depth(at)], branch) from exc.__cause__
            raise
        self._on = target
        return cursor.nodes()

    def extend(self, events: Iterable[Any], branch: str | None = None) -> tuple[Node, ...]:
        """Add events at the end of the log (a live conversation) and return the view
        of ``branch`` (default: the active one, as it is after them). Following one
        branch as it grows folds only its new events."""
        self.tree.extend(events)
        return self.show(branch)

    def markers(self, branch: str | None = None) -> dict[str, Version]:
        """The version of each node of ``branch``'s view that has siblings, by key."""
        tree = self.tree
        path = tree.path(branch)
        versions = tree.versions(branch)
        found: dict[str, Version] = {}
        index = {position: i for i, position in enumerate(path)} if versions else {}
        for position, version in versions.items():
            for later in path[index[position] :]:
                keys = list(self._starts(tree.events[later]))
                if keys:
                    found.setdefault(keys[0], version)
                    break
        return found
