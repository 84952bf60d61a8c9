"""What the renderers share: per-kind dispatch, the JSON form of a state, errors.

Each kind renders through optional members of its own definition
(``render_text``, ``render_html``, ``render_json``), looked up once per renderer
by kind, so adding a kind never edits a renderer. A kind without a member (or a
node whose kind no definition claims) gets the generic fallback: its state as
JSON, where ``StreamedText`` is its string.

Also the JSON renderer, since it is nothing but the default form plus dispatch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from definitions import StreamedText
from definitions._render import Joined, Outcome, join_paragraphs, join_tools
from engine import Node

from .._errors import RenderError

__all__ = ["Paragraphs", "ToolJoin", "render_json"]


def _enc_hook(value: Any) -> Any:
    if isinstance(value, StreamedText):
        return str(value)
    raise TypeError(f"objects of type {type(value).__name__} have no JSON form")


# order="deterministic" sorts dict keys and sets: equal states encode to equal bytes.
_encoder = msgspec.json.Encoder(enc_hook=_enc_hook, order="deterministic")
encode = _encoder.encode


def state_json(state: Any) -> bytes:
    """The canonical JSON of a state; raises ``TypeError`` when it has none."""
    return encode(state)


def pretty_state(state: Any) -> str:
    """A state as indented JSON for humans, or its ``repr`` when it has no JSON form."""
    try:
        return msgspec.json.format(encode(state), indent=2).decode()
    except TypeError:
        return repr(state)


def members(definitions: Iterable[Any], name: str) -> dict[str, Callable[[Node], Any]]:
    """``{kind: definition.<name>}`` for the definitions that have that member."""
    found: dict[str, Callable[[Node], Any]] = {}
    for definition in definitions:
        member = getattr(definition, name, None)
        kind = getattr(definition, "kind", None)
        if callable(member) and isinstance(kind, str):
            found[kind] = member
    return found


def call_member(member: Callable[[Node], Any], node: Node, method: str) -> Any:
    """Call a definition's render member, naming the kind and node when it fails."""
    try:
        return member(node)
    except Exception as exc:
        raise RenderError(
            f"definition {node.kind!r} raised in {method}() for node {node.key}: "
            f"{type(exc).__name__}: {exc}",
            kind=node.kind,
            key=node.key,
            method=method,
        ) from exc


class ToolJoin:
    """The join of tool calls and their results over a view (``definitions._render``'s
    ``join_tools``), from the definitions' ``tool_calls`` and ``tool_results``
    members. ``of(nodes)`` is each node key's ``Joined``; a node's calls and results
    are read once per state object (a streaming text asks nothing new per frame), and
    the join is made again only when some node's calls or results changed."""

    def __init__(self, definitions: Iterable[Any]) -> None:
        definitions = tuple(definitions)
        self._calls = members(definitions, "tool_calls")
        self._results = members(definitions, "tool_results")
        # key -> (state object, its calls, its results), for the nodes last joined
        self._links: dict[str, tuple[object, tuple[str, ...], tuple[tuple[str, Outcome], ...]]]
        self._links = {}
        self._joined: dict[str, Joined] = {}

    def of(self, nodes: Iterable[Node], changed: Iterable[Node] | None = None) -> dict[str, Joined]:
        """Per node key, what the join gives it (a key absent: nothing). ``changed``:
        the nodes new or changed since the last call (a live view's notification
        knows them), so only those are read; ``None``: every node is."""
        if not self._calls:
            return self._joined
        nodes = tuple(nodes)
        known = self._links
        dirty = len(known) != len(nodes)
        for node in nodes if changed is None else changed:
            entry = known.get(node.key)
            if entry is not None and entry[0] is node.state:
                continue
            calls = self._calls.get(node.kind)
            results = self._results.get(node.kind)
            link = (
                tuple(call_member(calls, node, "tool_calls")) if calls else (),
                tuple(call_member(results, node, "tool_results")) if results else (),
            )
            dirty = dirty or entry is None or entry[1:] != link
            known[node.key] = (node.state, *link)
        if dirty:
            if len(known) != len(nodes):  # nodes gone (another view): forget them
                keep = {node.key for node in nodes}
                self._links = known = {k: v for k, v in known.items() if k in keep}
            self._joined = join_tools(nodes, lambda n: known[n.key][1], lambda n: known[n.key][2])
        return self._joined


class Paragraphs:
    """The paragraphs of a view's texts split into nodes (``definitions._render``'s
    ``join_paragraphs``), from the definitions' ``joins`` and ``text_piece``
    members, kept up to date by ``of``: ``joined`` is, per node key, its paragraph or
    that it continues one; ``heads`` the head of each node that continues one.

    Each node is asked once per state object. A live view's change costs the runs it
    touches, not the view: nothing in a view where no node joins another; else the
    runs around each changed node read again (found by the node's place, re-indexed
    only when the view's nodes change), a node in none costing a look each side."""

    def __init__(self, definitions: Iterable[Any]) -> None:
        definitions = tuple(definitions)
        self._joins = members(definitions, "joins")
        self._pieces = members(definitions, "text_piece")
        self._seen: dict[str, object] = {}  # key -> the state object last asked
        self._on: set[str] = set()  # the keys of the nodes that join the one before
        self._piece: dict[str, tuple[object, tuple[str, str] | None]] = {}
        self._at: dict[str, int] = {}  # key -> its place in the view last indexed
        self.joined: dict[str, Joined] = {}
        self.heads: dict[str, str] = {}

    def of(self, nodes: Iterable[Node], changed: Iterable[Node] | None = None) -> set[str]:
        """Read ``nodes`` (the whole view; ``changed``: the nodes new or changed since
        the last call, when known, so only those are asked); the keys whose entry in
        ``joined`` changed."""
        if not (self._joins and self._pieces):
            return set()
        nodes = tuple(nodes)
        seen, on = self._seen, self._on
        dirty: list[str] = []
        for node in nodes if changed is None else changed:
            key = node.key
            if seen.get(key) is node.state:
                continue
            seen[key] = node.state
            member = self._joins.get(node.kind)
            if member is not None and call_member(member, node, "joins"):
                on.add(key)
            else:
                on.discard(key)
            dirty.append(key)
        if changed is None or len(seen) != len(nodes):  # read whole (or nodes gone)
            if len(seen) != len(nodes):
                keep = {node.key for node in nodes}
                self._seen = {k: v for k, v in seen.items() if k in keep}
                self._on = on & keep
                self._piece = {k: v for k, v in self._piece.items() if k in keep}
            gone = {key for key in self.joined if key not in self._seen}
            for key in gone:
                del self.joined[key]
                self.heads.pop(key, None)
            return gone | self._redo(nodes, 0, len(nodes))
        touched: set[str] = set()
        if not (on or self.joined):  # no run, before or now: nothing to read
            return touched
        for key in dirty:
            at = self._place(nodes, key)
            if at < 0:  # told of a node not in the view
                continue
            for start in (at - 1, at) if at else (at,):
                # The run holding the node at ``start``: from its head to its end.
                head, end = start, start + 1
                while head > 0 and nodes[head].key in on:
                    head -= 1
                while end < len(nodes) and nodes[end].key in on:
                    end += 1
                touched |= self._redo(nodes, head, end)
        return touched

    def _place(self, nodes: tuple[Node, ...], key: str) -> int:
        """Where the node ``key`` is in ``nodes`` (-1: not there)."""
        at = self._at.get(key)
        if at is None or at >= len(nodes) or nodes[at].key != key:
            self._at = {node.key: n for n, node in enumerate(nodes)}
            at = self._at.get(key, -1)
        return at

    def _redo(self, nodes: tuple[Node, ...], start: int, end: int) -> set[str]:
        """Read the runs of ``nodes[start:end]`` again (``start``: a run's head); the
        keys whose entry changed."""
        part = nodes[start:end]
        on = self._on
        fresh = join_paragraphs(part, lambda node: node.key in on, self._text_piece)
        touched: set[str] = set()
        head = ""
        for node in part:
            key = node.key
            new = fresh.get(key)
            if new is not None and not new.continued:
                head = key
            if new is not None and new.continued:
                self.heads[key] = head
            else:
                self.heads.pop(key, None)
            if self.joined.get(key) == new:
                continue
            touched.add(key)
            if new is None:
                del self.joined[key]
            else:
                self.joined[key] = new
        return touched

    def _text_piece(self, node: Node) -> tuple[str, str] | None:
        cached = self._piece.get(node.key)
        if cached is not None and cached[0] is node.state:
            return cached[1]
        member = self._pieces.get(node.kind)
        found = call_member(member, node, "text_piece") if member is not None else None
        self._piece[node.key] = (node.state, found)
        return found


def render_json(nodes: Iterable[Node], definitions: Iterable[Any], *, indent: int = 0) -> bytes:
    """The view as a JSON array of ``{"key", "kind", "id", "seq", "state"}`` objects.

    ``state`` is the definition's ``render_json(node)`` when it has one, else the
    state itself through msgspec (``StreamedText`` as its string, dict keys and sets
    sorted, so equal views give equal bytes). ``indent > 0`` pretty-prints (for
    snapshots and diffs). Raises ``RenderError`` when a state has no JSON form and
    its definition no ``render_json``.
    """
    render = members(definitions, "render_json")
    items: list[dict[str, Any]] = []
    for node in nodes:
        member = render.get(node.kind)
        state = node.state if member is None else call_member(member, node, "render_json")
        items.append(
            {"key": node.key, "kind": node.kind, "id": node.id, "seq": node.seq, "state": state}
        )
    try:
        data = encode(items)
    except TypeError as exc:
        bad = _first_unencodable(items)
        kind, key = (bad["kind"], bad["key"]) if bad else ("?", "?")
        raise RenderError(
            f"node {key} has no JSON form ({exc}); give definition {kind!r} a "
            "render_json(node) member returning JSON-ready data",
            kind=kind,
            key=key,
            method="render_json",
        ) from exc
    return msgspec.json.format(data, indent=indent) if indent > 0 else data


def _first_unencodable(items: list[dict[str, Any]]) -> dict[str, Any] | None:
    for item in items:
        try:
            encode(item)
        except TypeError:
            return item
    return None
