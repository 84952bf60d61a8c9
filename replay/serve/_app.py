"""The live web view: server-side rendered conversations kept current over SSE.

Theory of operation
-------------------
One ``_Conversation`` per open conversation owns an engine (frames from the server's
one ``FrameClock``, so conversations that change together notify together), an
``HtmlRenderer`` (fragments cached by state identity) and ``position``: how many of
the conversation's store events it has folded. Events are pushed one by one,
``position`` set before each push, so a notification always knows exactly which
prefix of the log it shows. The engine's coalescing is the only rate limit:
per-token deltas arrive at most once a frame, discrete facts (a tool result, an
approval) at once.

The engine's listener diffs the notified nodes against the last ones by identity
(the engine hands out the same frozen ``Node`` until that node changes, and a node
keeps its place: index = seq), in C, so a long conversation's unchanged nodes cost
next to nothing per notification; it stamps each changed key with the notification's
position (``changed_at``). That stamp
is the whole protocol: an SSE message with ``id: P`` carries every node whose
stamp is above the client's last id, keyed by ``node.key``, as ``append`` if the
client has never seen the key and ``replace`` otherwise (the client tells which).
In the latest notification's message, shared by the clients that saw the one before,
a node whose Markdown alone changed (a streaming text) comes as block patches against
the version those clients have (``HtmlRenderer.patch``): a frame costs what changed,
not the text's length. Every other message carries whole fragments, so a client that
opens or resumes always rebuilds its nodes whole first.
A client that resumes with ``Last-Event-ID: P`` therefore gets exactly what it
missed; replacing by key is idempotent, so nothing is ever duplicated, and since
nodes are never removed nothing is lost. An id above the server's position (the
store was replaced) gets a ``reset`` with the whole view.

Clients hold no queue: each has a cursor (its last id) and a wake-up flag. The
listener sets the flags and returns; it never waits for a socket. A client that
keeps up is sent the shared, pre-encoded message of the latest notification; one
that fell behind (a slow network, a paused tab) is sent one merged catch-up
computed from the stamps (encoded once for every client at that cursor), which is
the "drop to resync" of a bounded queue taken to its limit: memory per client is
constant and a stalled client costs nothing until it reads again. Stalled sockets
are cut by the send timeout, vanished ones by disconnect detection and the
keep-alive ping.

Live tail: ``replay.serve._engines.follow_store`` reads the store's change hints
(SQLite: a ``PRAGMA data_version`` poll every ``poll_interval``; PostgreSQL: a
notification per append from any process or server); the new events of every open
conversation are read in one query (in a worker thread) and folded.
In-process appends also wake the SQLite poller at once. So an update costs one
share of a poll's read, its fold, one render and one encoding for its conversation,
and for each follower the writing of those bytes (``benchmarks/bench_serve.py``
measures it against a relay that only writes bytes). Which conversations are
open, and when one is evicted, is ``replay.serve._engines.Engines``'s business.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections import deque
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Iterable,
    Mapping,
    Sequence,
)
from html import escape
from itertools import compress
from operator import is_not
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

import msgspec
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from definitions import ProtocolSet
from definitions.branch import BranchError, Branches, Version, is_branch_event
from engine import (
    ConversationEngine,
    Node,
    Registration,
    Scheduler,
    create_conversation_engine,
)

from .._errors import ConcurrencyError, RenderError, StoreBusyError, UnstorableEventError
from ..protocols._detect import detect_protocol, protocol_definitions
from ..protocols._unclaimed import unclaimed_note
from ..render._branches import switcher_html
from ..render._html import HtmlRenderer, kind_stylesheets
from ..stores._open import open_store
from ..stores._postgres import PostgresStore
from ..stores._sqlite import SQLiteStore
from ._clock import FrameClock
from ._engines import BATCH, Engines, Hook, follow_store
from ._options import ServeOptions
from ._security import (
    BadEventsError,
    BodyError,
    ReadTokenMiddleware,
    bearer_matches,
    conversation_problem,
    parse_events,
    read_body,
)
from ._wire import (
    AGUI_HEADERS,
    UI_STREAM_HEADERS,
    AgUiEncoder,
    UIMessageEncoder,
    view_at,
    wire_frames,
)

__all__ = [
    "CSP",
    "Live",
    "ServeOptions",
    "Source",
    "assets_html",
    "conversation_html",
    "create_app",
    "parse_events",
]

log = logging.getLogger("replay.serve")

STATIC = Path(__file__).parents[1] / "static"

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""The Content-Security-Policy of every response: our own static script and
stylesheets only, no inline script, style or handler, whatever a node contains."""

_SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]

Store = SQLiteStore | PostgresStore
Source = str | os.PathLike[str] | Store | Mapping[str, ConversationEngine]
"""What a live app serves: a store's name (a SQLite path or a ``postgresql://`` URL,
opened and closed by the app), an open store (used, never closed), or engines you
push into yourself, by conversation id (a recorded agent's, a test's)."""

_MAX_BODY = 8 * 1024 * 1024
_IDLE_GRACE = 30.0  # seconds a clientless hub is kept whatever the idle limit
_RECENT = 32  # notification positions a catch-up is merged from; older cursors start over
_encode = msgspec.json.Encoder().encode


class _Client:
    __slots__ = ("wake",)

    def __init__(self) -> None:
        self.wake = asyncio.Event()


# A node as sent, with the version the receiving clients have (None: send it whole).
_Changed = list[tuple[Node, tuple[object, int] | None]]


class _Conversation:
    """One open conversation's view as clients see it: its nodes, change stamps and
    clients, and the messages that bring a client up to date. Where the nodes come
    from is a subclass's business (``_Folded``: a store; ``_Attached``: an engine)."""

    def __init__(self, conversation: str, definitions: Iterable[Any] | None) -> None:
        self.id = conversation
        self.position = 0  # the stamp the next notification gets
        self.notified = 0  # position of the latest notification
        self.nodes: tuple[Node, ...] = ()
        self.changed_at: dict[str, int] = {}
        self.clients: set[_Client] = set()
        self.closed = False  # the server is stopping: streams end (Live.close_streams)
        self.lock = asyncio.Lock()  # one catch-up at a time
        self.last_used = time.monotonic()
        # previous position, position, the nodes changed with their versions before
        self._latest: tuple[int, int, _Changed] | None = None
        self._latest_frame: bytes | None = None
        # The positions clients can hold, for merged catch-ups; any other cursor is
        # made up or too old, and starts over (one shared whole view, see frame_since).
        self._recent: deque[int] = deque([0], maxlen=_RECENT)
        self._catch_ups: dict[int, bytes] = {}
        self._renderer = (
            None if definitions is None else HtmlRenderer(definitions, title=conversation)
        )

    async def catch_up(self, store: Store | None) -> None:
        """Bring the view up to its source's end (nothing to do by default)."""

    def fold(self, events: Sequence[Any], start: int) -> None:
        """Fold store events from ``start`` on (only a store's conversation has any)."""

    def close(self) -> None:
        """Let go of the source (nothing to do by default)."""

    def notes(self) -> list[str]:
        """What the page says above the view: events that could not be folded, and
        ``"N events claimed by no definition; try -d ..."`` when some were."""
        return []

    def current(self) -> tuple[Node, ...]:
        """The view as last notified, pending frames flushed first."""
        return self.nodes

    def _on_nodes(self, nodes: tuple[Node, ...], touched: Collection[str] = ()) -> None:
        """Stamp and announce what changed; ``touched``: keys whose fragment changed
        though their node did not (a branch's version marker)."""
        position = self.position
        previous = self.nodes
        changed_at = self.changed_at
        changed: _Changed = []
        # The nodes that are not the object they were (map and compress run in C),
        # then the new ones after them.
        for i in compress(range(len(previous)), map(is_not, nodes, previous)):
            node, last = nodes[i], previous[i]
            changed_at[node.key] = position
            changed.append((node, (last.state, last.seq)))
        for node in nodes[len(previous) :]:
            changed_at[node.key] = position
            changed.append((node, None))
        # A result joined to its call's card changes that card's node too.
        renderer = self._renderer
        rejoined = renderer.join(nodes, [n for n, _ in changed]) if renderer is not None else ()
        if touched:
            rejoined = {*rejoined, *touched}
        if rejoined:
            sent = {node.key for node, _ in changed}
            for node in nodes:
                if node.key in rejoined and node.key not in sent:
                    changed_at[node.key] = position
                    changed.append((node, None))
        self.nodes = nodes
        if not changed:
            return
        self._latest = (self.notified, position, changed)
        self._latest_frame = None
        self._catch_ups.clear()
        self.notified = position
        self._recent.append(position)
        for client in self.clients:
            client.wake.set()

    # -- rendering -----------------------------------------------------------------

    def fragment(self, node: Node) -> str:
        """The node's ``<article>`` (a definition that fails to render shows the error:
        ``HtmlRenderer`` makes that card, for this page and the static one alike)."""
        assert self._renderer is not None  # there are nodes only once there is a set
        return self._renderer.fragment(node)

    def frame_since(self, cursor: int, *, first: bool = False) -> tuple[bytes, int] | None:
        """The SSE message bringing a client at ``cursor`` up to date, and its id.

        ``None`` when the client has everything. Shared and encoded once (with block
        patches) for clients that saw the notification before the latest; merged
        from the stamps, with whole nodes, for the others and for a stream's
        ``first`` message (a client that opens or resumes rebuilds its nodes whole),
        encoded once per cursor. Cursors are clamped, so catch-ups stay few and small
        whatever clients send: one beyond ``notified`` (the store was replaced) gets
        a ``reset`` with every node; one between recent notifications is read as the
        one before it; one older than the last ``_RECENT`` notifications gets every
        node, as a client that opens (one encoding shared by all of them).
        """
        if cursor == self.notified:
            return None
        latest = self._latest
        if latest is not None and latest[0] == cursor and not first:
            if self._latest_frame is None:
                self._latest_frame = self._encode(latest[2], latest[1], reset=False)
            return self._latest_frame, latest[1]
        reset = cursor > self.notified
        if reset:
            cursor = -1
        elif cursor not in self._recent:
            # The latest recent position at or before it (a superset of what it
            # misses), or 0 for one older than them all: at most _RECENT + 2 keys.
            cursor = max((p for p in self._recent if p <= cursor), default=0)
        frame = self._catch_ups.get(cursor)
        if frame is None:
            changed_at = self.changed_at
            nodes: _Changed = [(node, None) for node in self.nodes if changed_at[node.key] > cursor]
            frame = self._encode(nodes, self.notified, reset=reset)
            self._catch_ups[cursor] = frame
        return frame, self.notified

    def _encode(self, nodes: _Changed, position: int, *, reset: bool) -> bytes:
        entries = [self._entry(node, since) for node, since in nodes]
        data = _encode({"position": position, "reset": reset, "nodes": entries})
        return b"id: %d\nevent: patch\ndata: %s\n\n" % (position, data)

    def _entry(self, node: Node, since: tuple[object, int] | None) -> dict[str, Any]:
        """The node as sent: ``blocks`` (patches against the version ``since``, which
        the client has) when only its Markdown blocks changed, else ``html`` whole."""
        if since is not None and self._renderer is not None:
            try:
                patches = self._renderer.patch(node, *since)
            except RenderError:
                patches = None
            if patches is not None:
                blocks = [{"at": p.at, "drop": p.drop, "html": p.html} for p in patches]
                return {"key": node.key, "seq": node.seq, "blocks": blocks}
        return {"key": node.key, "seq": node.seq, "html": self.fragment(node)}


class _Folded(_Conversation):
    """A conversation of a store: events folded by an engine of its own, ``position``
    being how many of its store events are folded. Its set is chosen from its first
    events, so a conversation with none yet waits for them (a page opened early goes
    live when they come)."""

    def __init__(
        self,
        conversation: str,
        choose: Callable[[Sequence[Any]], tuple[ProtocolSet, Registration]],
        clock: Scheduler,
    ) -> None:
        super().__init__(conversation, None)
        self._choose = choose
        self._clock = clock
        self.chosen: ProtocolSet | None = None
        self.engine: ConversationEngine | None = None
        self._feed: Callable[[Any], Any] | None = None
        self._first_events: Sequence[Any] = ()  # what detection looked at, for the note
        self.failures = 0  # events a definition rejected (logged, skipped)
        self.first_failure = ""
        self.registration: Registration | None = None
        self.branched = False  # a branch event was folded: the page shows a path
        self._branches: Branches | None = None  # the tree, once a path is asked for
        self._paths: dict[str | None, _Path] = {}  # by leaf (None: the active one)

    def _begin(self, first: Sequence[Any]) -> ConversationEngine:
        chosen, registration = self._choose(first)
        self.chosen = chosen
        self.registration = registration
        self._first_events = first
        self._feed = chosen.pre_pass()
        self._renderer = HtmlRenderer(registration.definitions, title=self.id)
        engine = self.engine = create_conversation_engine(registration, self._clock)
        engine.subscribe(self._on_nodes)
        return engine

    async def catch_up(self, store: Store | None) -> None:
        """Fold every event the store has beyond ``position``."""
        assert store is not None
        async with self.lock:
            while True:
                start = self.position
                rows = await asyncio.to_thread(store.read, self.id, start, start + BATCH)
                self.fold(rows, start)
                if len(rows) < BATCH:
                    return

    def fold(self, events: Sequence[Any], start: int) -> None:
        """Push ``events`` (store positions ``start``, ``start + 1``, ...) one at a time,
        ``position`` set before each push, so a notification always knows exactly
        which prefix of the log it shows."""
        if not events:
            return
        engine = self.engine or self._begin(events)
        push = engine.push
        feed = self._feed
        fed: list[Any] | None = [] if self._branches is not None else None
        for offset, event in enumerate(events):
            self.position = start + offset + 1
            try:
                # The protocol's pre-pass may refuse an odd event too (a bare error),
                # and gives None for an event its set skips (nothing to fold).
                envelope = event if feed is None else feed(event)
                if envelope is not None:
                    if is_branch_event(envelope):
                        self.branched = True
                    if fed is not None:
                        fed.append(envelope)
                    push(envelope)
            except Exception as exc:
                # A bad event must not stop the view (whatever a definition or a
                # pre-pass raised for it): the engine left no trace of it; the page
                # says how many were skipped, and the first.
                self.failures += 1
                where = f"event #{self.position - 1}: {type(exc).__name__}: {exc}"
                self.first_failure = self.first_failure or where
                log.warning("conversation %r, %s (skipped)", self.id, where)
        if fed is not None:
            self._grow(fed)

    def _grow(self, envelopes: list[Any]) -> None:
        """Add envelopes to the tree and bring every followed path up to them."""
        assert self._branches is not None
        try:
            self._branches.tree.extend(envelopes)
        except BranchError as exc:  # a branch event that cannot be placed: stop there
            log.warning("conversation %r: %s (its branches are no longer followed)", self.id, exc)
            self._branches = None
            return
        for path in self._paths.values():
            path.show(self.position)

    async def path(self, store: Store | None, leaf: str | None) -> _Path:
        """The view of the path to ``leaf`` (``None``: the active branch), followed
        as the log grows. ``LookupError`` naming ``leaf`` when there is no such
        branch. The tree is built on first use from a fresh read of the store, so a
        conversation nobody asks a path of keeps no copy of its events."""
        assert store is not None
        async with self.lock:
            if self._branches is None:
                await self._build(store)
            assert self._branches is not None
            if leaf is not None and leaf not in self._branches.tree.tips:
                raise LookupError(f"no branch {leaf!r} in conversation {self.id!r}")
            path = self._paths.get(leaf)
            if path is None:
                path = self._paths[leaf] = _Path(self, self._branches, leaf)
                path.show(self.position)
            return path

    async def _build(self, store: Store) -> None:
        if self.chosen is None or self.registration is None:
            raise LookupError(f"conversation {self.id!r} has no events yet")
        feed = self.chosen.pre_pass()
        envelopes: list[Any] = []
        end = self.position
        while len(envelopes) < end:  # the events folded so far, nothing beyond them
            start = len(envelopes)
            rows = await asyncio.to_thread(store.read, self.id, start, min(end, start + BATCH))
            if not rows:
                break
            for event in rows:
                try:
                    envelopes.append(event if feed is None else feed(event))
                except Exception:  # the fold has named it already (notes)
                    envelopes.append(None)
        self._branches = Branches((), self.registration)
        self._grow([e for e in envelopes if e is not None])
        if self._branches is None:
            raise LookupError(f"the branches of conversation {self.id!r} cannot be placed")

    def close_paths(self) -> None:
        """End the streams of every followed path (the server is stopping)."""
        for path in self._paths.values():
            path.closed = True

    def notes(self) -> list[str]:
        notes = []
        if self.failures:
            s = "" if self.failures == 1 else "s"
            notes.append(
                f"{self.failures} event{s} could not be shown; the first, {self.first_failure}"
            )
        if self.engine is not None and self.chosen is not None:
            unclaimed = self.engine.statistics().events_unclaimed
            name = self.chosen.label
            with contextlib.suppress(Exception):  # it detects too: odd events are no note
                note = unclaimed_note(unclaimed, self.position, self._first_events, name)
                if note is not None:
                    notes.append(note)
        return notes

    def current(self) -> tuple[Node, ...]:
        if self.engine is not None:
            self.engine.flush()  # delivered here, on the loop: _on_nodes has run
        return self.nodes


class _Path(_Conversation):
    """One branch's path of a ``_Folded`` conversation (``leaf``; ``None``: the active
    branch, whichever it is as the log grows), with its own clients and stamps. Its
    ``position`` is the conversation's, so a client's cursor means the same store
    prefix on either. Each node with sibling versions carries a switcher
    (``switcher_html``) whose links name the leaf of each version."""

    def __init__(self, folded: _Folded, branches: Branches, leaf: str | None) -> None:
        assert folded.registration is not None
        super().__init__(folded.id, folded.registration.definitions)
        self.leaf = leaf
        self._folded = folded
        self._branches = branches
        # The conversation's own set: its clients keep it loaded (never evicted
        # while a path is watched); a wake-up meant for the other view is a no-op.
        self.clients = folded.clients
        self.markers: dict[str, Version] = {}
        self.failure = ""

    def show(self, position: int) -> None:
        """Fold the path as the tree now has it (only what the last show lacks)."""
        try:
            nodes = self._branches.show(self.leaf)
        except Exception as exc:  # a bad event on this path: the page says so
            self.failure = f"{type(exc).__name__}: {exc}"
            log.warning("conversation %r, leaf %r: %s", self.id, self.leaf, self.failure)
            return
        markers = self._branches.markers(self.leaf)
        old = self.markers
        touched = {key for key in markers.keys() | old.keys() if markers.get(key) != old.get(key)}
        self.markers = markers
        self.position = position
        self._on_nodes(nodes, touched)

    async def catch_up(self, store: Store | None) -> None:
        await self._folded.catch_up(store)  # its fold shows every followed path

    def notes(self) -> list[str]:
        notes = self._folded.notes()
        if self.failure:
            notes.append(f"this branch stops at an event that could not be shown: {self.failure}")
        return notes

    def fragment(self, node: Node) -> str:
        html = super().fragment(node)
        version = self.markers.get(node.key)
        if version is None:
            return html
        # Inside the article, first: the script keys and morphs whole articles.
        end = html.index(">") + 1
        return f"{html[:end]}\n{switcher_html(version, self._href)}{html[end:]}"

    def _href(self, leaf: str) -> str:
        return f"?leaf={quote(leaf, safe='')}"


class _Attached(_Conversation):
    """A conversation whose engine someone else pushes into, from any thread.

    A notification is handed to the loop (``call_soon_threadsafe``), which reads the
    engine's view there: deliveries may overtake each other, the view read is always
    the latest. ``position`` counts deliveries."""

    def __init__(
        self, conversation: str, engine: ConversationEngine, definitions: Iterable[Any]
    ) -> None:
        super().__init__(conversation, definitions)
        self.engine = engine
        self._loop = asyncio.get_running_loop()
        self._unsubscribe = engine.subscribe(self._notified)
        self._deliver()

    def _notified(self, nodes: tuple[Node, ...]) -> None:
        # On whatever thread delivered; a stopped loop has nobody left to tell.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._deliver)

    def _deliver(self) -> None:
        nodes = self.engine.nodes()
        if nodes is not self.nodes:
            self.position += 1
            self._on_nodes(nodes)

    def current(self) -> tuple[Node, ...]:
        self._deliver()
        return self.nodes

    def close(self) -> None:
        self._unsubscribe()


class Live:
    """The open conversations of one source and the task that keeps them current.

    ``open(id)`` loads a conversation on first use; ``kick()`` makes the SQLite
    poller look at the store now. At most ``max_loaded`` conversations stay loaded
    beyond those being watched (``replay.serve._engines.Engines``); ``on_load`` and
    ``on_evict`` hooks (sync or async) are told of each load and eviction.
    """

    def __init__(
        self,
        source: Source,
        options: ServeOptions | None = None,
        *,
        on_load: Sequence[Hook] = (),
        on_evict: Sequence[Hook] = (),
    ) -> None:
        options = options or ServeOptions()
        self.options = options
        definitions = options.definitions
        # None: each conversation's protocol is detected from its first events, as
        # `convo replay` does; a ProtocolSet or definitions: every conversation's.
        if definitions is None or isinstance(definitions, ProtocolSet):
            self.fixed = definitions
        else:
            self.fixed = ProtocolSet(name="the given definitions", definitions=definitions)
        # Validated and routed once per set for every conversation's engine (bad
        # definitions fail here, before the server serves anything).
        self._registrations: dict[str, tuple[ProtocolSet, Registration]] = {}
        self._styles: dict[str, None] = dict.fromkeys(options.stylesheets)  # ordered, once
        if self.fixed is not None:
            self._registration(self.fixed)
        self.clock = FrameClock(options.frame_interval)
        self.engines: Mapping[str, ConversationEngine] | None = None
        self.store: Store | None = None
        self.writer: Store | None = None
        self._owned: list[Store] = []
        self.closed = False  # the server is stopping (close_streams)
        if isinstance(source, Mapping):
            self.engines = source
        elif isinstance(source, SQLiteStore | PostgresStore):
            self.store = self.writer = source
        else:
            self.store = open_store(source)
            self.writer = open_store(source)  # appends never wait behind a long read
            self._owned = [self.store, self.writer]
        self.conversations: Engines[_Conversation] = Engines(
            self._load,
            max_loaded=options.max_loaded,
            idle_grace=_IDLE_GRACE,
            on_load=on_load,
            on_evict=on_evict,
        )
        self._kick: asyncio.Event | None = None
        self._follower: asyncio.Task[None] | None = None
        # The index's followers: a version bumped at each store hint, one listing
        # read and encoded per version however many pages show it.
        self.index_version = 0
        self.index_clients: set[_Client] = set()
        self._index_frame: tuple[int, bytes] | None = None

    def start(self) -> None:
        """Start following the store on the running loop; idempotent."""
        if self.store is None:
            return
        if self._follower is None or self._follower.done():
            self._kick = asyncio.Event()
            self._follower = asyncio.get_running_loop().create_task(
                follow_store(
                    self.store,
                    self.conversations,
                    poll_interval=self.options.poll_interval,
                    kick=self._kick,
                    on_change=self._store_changed,
                )
            )

    async def stop(self) -> None:
        """Stop following, let go of the engines and close the stores the app opened."""
        if self._follower is not None:
            self._follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._follower
            self._follower = None
        for hub in self.conversations.values():
            hub.close()
        for store in self._owned:
            store.close()

    def close_streams(self) -> None:
        """End every open stream with a complete response (the server is stopping)."""
        self.closed = True
        for client in self.index_clients:
            client.wake.set()
        for hub in self.conversations.values():
            hub.closed = True
            if isinstance(hub, _Folded):
                hub.close_paths()
            for client in hub.clients:
                client.wake.set()

    def _store_changed(self, change: object) -> None:
        self.index_version += 1
        for client in self.index_clients:
            client.wake.set()

    async def index_frame(self, root: str) -> tuple[int, bytes]:
        """The SSE message of the index as of now, and its version (shared per version)."""
        version = self.index_version
        if self._index_frame is None or self._index_frame[0] != version:
            html = _listing(root, await self.listing())
            data = _encode({"html": html})
            self._index_frame = (version, b"event: index\ndata: %s\n\n" % data)
        return self._index_frame

    def kick(self) -> None:
        """Make the poller check the store now instead of at its next tick."""
        if self._kick is not None:
            self._kick.set()

    async def listing(self) -> dict[str, int]:
        """Every conversation with its length: events in the store, or pushed into
        the engine."""
        if self.engines is not None:
            return {cid: e.statistics().events_pushed for cid, e in self.engines.items()}
        assert self.store is not None
        return await asyncio.to_thread(self.store.conversations)

    async def open(self, conversation: str) -> _Conversation | None:
        """The live conversation, brought up to its source's end; ``None`` if there
        can be no such conversation (not an engine given, or not a valid id)."""
        self.start()
        hub = await self.conversations.open(conversation)
        if hub is None:
            return None
        hub.last_used = time.monotonic()
        await hub.catch_up(self.store)
        return hub

    async def view(self, conversation: str, leaf: str | None) -> _Conversation | None:
        """The live view a page shows: ``open(conversation)``, or the path to
        ``leaf`` (``None``: the active branch, for a conversation with branch
        events). ``LookupError`` naming ``leaf`` when there is no such branch."""
        hub = await self.open(conversation)
        if hub is None or (leaf is None and not getattr(hub, "branched", False)):
            return hub
        if not isinstance(hub, _Folded):
            raise LookupError(f"no branch {leaf!r}: conversation {conversation!r} has none")
        return await hub.path(self.store, leaf)

    async def _load(self, conversation: str) -> _Conversation | None:
        if self.engines is not None:
            engine = self.engines.get(conversation)
            if engine is None:
                return None
            chosen = self.fixed or protocol_definitions("builtin")
            return _Attached(conversation, engine, self._registration(chosen)[1].definitions)
        # An id nothing could be appended to (ingest's rule) is shown only if the
        # store has it (written by other means); any other may wait for its events.
        if conversation_problem(conversation) is not None:
            assert self.store is not None
            if not await asyncio.to_thread(self.store.length, conversation):
                return None
        return _Folded(conversation, self._choose, self.clock)

    def _choose(self, first: Sequence[Any]) -> tuple[ProtocolSet, Registration]:
        chosen = self.fixed
        if chosen is None:
            try:
                chosen = protocol_definitions(detect_protocol(first).protocol)
            except Exception as exc:  # odd events must not take the page down
                log.warning("protocol detection failed, showing the built-in kinds: %s", exc)
                chosen = protocol_definitions("builtin")
        return self._registration(chosen)

    async def append(
        self, conversation: str, events: Sequence[Any], expected_position: int | None
    ) -> int:
        """Append to the store (in a worker thread) and wake the poller; the new length."""
        if self.writer is None:
            raise _Problem(403, "ingest is off: this server shows engines, not a store")
        length = await asyncio.to_thread(
            self.writer.append,
            conversation,
            events,
            expected_position=expected_position,
            time=time.time(),
        )
        self.kick()
        return length

    def stylesheet(self) -> str:
        """The CSS the definitions (a ``stylesheet`` attribute) and the options bring."""
        return "\n".join(self._styles)

    def _registration(self, chosen: ProtocolSet) -> tuple[ProtocolSet, Registration]:
        # A set's registration is made once, with it: routed once for every engine.
        found = self._registrations.get(chosen.name)
        if found is None:
            found = self._registrations[chosen.name] = (chosen, chosen.registration)
            self._styles.update(dict.fromkeys(kind_stylesheets(chosen.definitions)))
        return found


# -- errors ---------------------------------------------------------------------------


class _Problem(Exception):
    """A request refused: its status, the JSON ``error`` and any extra fields."""

    def __init__(
        self, status: int, message: str, *, headers: Mapping[str, str] | None = None, **extra: Any
    ) -> None:
        super().__init__(message)
        self.status = status
        self.headers = dict(headers or {})
        self.extra = extra


class _PageError(Exception):
    """A page that cannot be shown: an HTML page with the status and why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def _problem(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, _Problem)
    return JSONResponse(
        {"error": str(exc), **exc.extra}, status_code=exc.status, headers=exc.headers
    )


async def _page_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, _PageError)
    body = f'<h1>{exc.status}</h1>\n<p class="note">{escape(str(exc), quote=True)}</p>\n'
    html = _page(request, str(exc.status), body)
    return HTMLResponse(html, status_code=exc.status)


def _as_problem(
    status: int, *, prefix: str = "", headers: Mapping[str, str] | None = None
) -> Callable[[Request, Exception], Awaitable[Response]]:
    """A handler answering an exception as a problem with ``status``."""

    async def handle(request: Request, exc: Exception) -> Response:
        extra: dict[str, Any] = {}
        if isinstance(exc, ConcurrencyError):
            extra = {"expected": exc.expected, "actual": exc.actual}
        code = exc.status if isinstance(exc, BodyError) else status
        return await _problem(request, _Problem(code, f"{prefix}{exc}", headers=headers, **extra))

    return handle


_HANDLERS: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
    _Problem: _problem,
    _PageError: _page_error,
    BodyError: _as_problem(400),  # with the status its reading gave (408, 413)
    BadEventsError: _as_problem(400, prefix="bad events: "),
    UnstorableEventError: _as_problem(400, prefix="bad events: "),
    ConcurrencyError: _as_problem(409),
    StoreBusyError: _as_problem(503, headers={"retry-after": "1"}),
}


# -- the page, for this app's routes and for your own templates -----------------------


def _root(request: Request) -> str:
    root: str = request.scope.get("root_path", "")
    return root


def _href(root: str, conversation: str, suffix: str = "") -> str:
    return f"{root}/conversations/{quote(conversation, safe='')}{suffix}"


def assets_html(app: Starlette, *, at: str = "") -> str:
    """The ``<link>`` and ``<script>`` tags of the live view for a page's ``<head>``:
    the stylesheet, the kinds' stylesheets and the script that keeps
    ``conversation_html`` sections live. ``at`` is where ``app`` is mounted
    (``"/chat"``; ``""`` at the root)."""
    root = escape(at, quote=True)
    kinds = ""
    if app.state.live.stylesheet():
        kinds = f'<link rel="stylesheet" href="{root}/kinds.css">\n'
    return (
        f'<link rel="stylesheet" href="{root}/static/convo.css">\n{kinds}'
        f'<script src="{root}/static/convo.js" defer></script>\n'
    )


WINDOW = 150
"""Nodes a conversation's page carries at first: the latest ones. The script fills
in the earlier ones after the page is up, a chunk at a time (parsing every node of a
long conversation before the page answers took seconds), so search-in-page and links
to a node work once it has; without the script, ``?all=1`` shows them all."""


async def conversation_html(
    app: Starlette,
    conversation: str,
    *,
    at: str = "",
    window: int | None = WINDOW,
    leaf: str | None = None,
) -> str:
    """A conversation as server-rendered HTML that ``assets_html``'s script keeps live:
    a ``<section>`` of its nodes, streaming from ``app`` mounted at ``at``. Of a long
    conversation only the last ``window`` nodes are in the HTML, and the script adds
    the earlier ones (``None``: all of them in the HTML). A conversation of a store
    with no events yet is an empty section that fills when they come. A conversation
    with branches shows the path to ``leaf`` (default: the active branch), a switcher
    on each node with sibling versions.
    ``LookupError`` for a conversation ``app`` cannot show, or a leaf it does not have."""
    live: Live = app.state.live
    hub = await live.view(conversation, leaf)
    if hub is None:
        raise LookupError(f"no conversation {conversation!r} here")
    nodes = hub.current()
    earlier = 0 if window is None else max(0, len(nodes) - window)
    fragments = "".join(hub.fragment(node) for node in nodes[earlier:])
    chosen = "" if leaf is None else f"?leaf={quote(leaf, safe='')}"
    stream = escape(_href(at, conversation, "/stream" + chosen), quote=True)
    notes = "".join(f'<p class="note unclaimed">{escape(note)}</p>\n' for note in hub.notes())
    more = ""
    if earlier:
        everything = escape(
            _href(at, conversation, f"{chosen}&all=1" if chosen else "?all=1"), quote=True
        )
        notes += f'<p class="note earlier"><a href="{everything}">{earlier} earlier nodes</a></p>\n'
        more = f' data-earlier="{earlier}"'
    # Nothing between the tags when there are no nodes: the stylesheet says
    # "waiting" on an :empty section (without the script too).
    return (
        f"{notes}"
        f'<section class="conversation" data-stream="{stream}" data-fold="{FOLD}" '
        f'data-position="{hub.notified}"{more} data-live="off">'
        f"{fragments}</section>\n"
    )


FOLD: Final = "compaction"
"""The kind whose latest node the live page folds the history before, as the static
page does (``data-fold``: the script itself knows no kind)."""


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _page(request: Request, title: str, body: str) -> str:
    root = _root(request)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title, quote=True)} · convo</title>\n"
        f"{assets_html(request.app, at=root)}</head>\n<body>\n"
        f'<nav class="bar"><a href="{escape(root, quote=True)}/">convo</a></nav>\n'
        f"<main>\n{body}</main>\n</body>\n</html>\n"
    )


# -- the routes -------------------------------------------------------------------------


def _live(request: Request) -> Live:
    live: Live = request.app.state.live
    return live


def _listing(root: str, conversations: Mapping[str, int]) -> str:
    """The index's list, which the script keeps current from ``{root}/index/stream``
    (the stylesheet says when it is empty)."""
    rows = "".join(
        f'<li><a href="{escape(_href(root, cid), quote=True)}">'
        f'{escape(cid, quote=True)}</a> <span class="count">{length} events</span></li>\n'
        for cid, length in conversations.items()
    )
    stream = escape(f"{root}/index/stream", quote=True)
    return f'<ul class="conversations" data-stream="{stream}">{rows}</ul>\n'


async def _index(request: Request) -> Response:
    listing = _listing(_root(request), await _live(request).listing())
    return HTMLResponse(_page(request, "Conversations", f"<h1>Conversations</h1>\n{listing}"))


async def _index_stream(request: Request) -> Response:
    live = _live(request)
    options = live.options
    return EventSourceResponse(
        _index_frames(live, _root(request)),
        ping=options.ping_interval,
        send_timeout=options.send_timeout,
        sep="\n",
    )


async def _index_frames(live: Live, root: str) -> AsyncIterator[bytes]:
    """The index's SSE body: the listing now, then again after each store change."""
    client = _Client()
    live.index_clients.add(client)
    try:
        yield b"retry: 1000\n\n"
        while not live.closed:
            client.wake.clear()
            _, frame = await live.index_frame(root)
            yield frame
            await client.wake.wait()
    finally:
        live.index_clients.discard(client)


async def _conversation_page(request: Request) -> Response:
    conversation: str = request.path_params["conversation"]
    root = _root(request)
    try:
        every = request.query_params.get("all") == "1"
        window = None if every else WINDOW
        leaf = request.query_params.get("leaf")
        section = await conversation_html(
            request.app, conversation, at=root, window=window, leaf=leaf
        )
    except LookupError as exc:
        raise _PageError(404, _capital(str(exc)) + ".") from None
    title = escape(conversation, quote=True)
    body = (
        f"<h1>{title}</h1>\n{section}"
        '<noscript><p class="note">JavaScript is off: reload for new events.</p></noscript>\n'
    )
    return HTMLResponse(_page(request, conversation, body))


def _cursor(request: Request) -> int:
    """The log position a stream resumes after: ``Last-Event-ID``, else ``?after=``."""
    resume = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
    try:
        cursor = int(resume)
        if cursor < 0:
            raise ValueError
    except ValueError:
        problem = f"Last-Event-ID/after must be a position >= 0, not {resume!r}"
        raise _Problem(400, problem) from None
    return cursor


async def _stream(request: Request) -> Response:
    conversation: str = request.path_params["conversation"]
    cursor = _cursor(request)
    try:
        hub = await _live(request).view(conversation, request.query_params.get("leaf"))
    except LookupError as exc:
        raise _Problem(404, str(exc)) from None
    if hub is None:
        raise _Problem(404, f"no conversation {conversation!r}")
    options = _live(request).options
    return EventSourceResponse(
        _frames(hub, cursor),
        ping=options.ping_interval,
        send_timeout=options.send_timeout,
        sep="\n",
    )


def _wire_route(encoder: type[UIMessageEncoder | AgUiEncoder], headers: dict[str, str]) -> Any:
    """A route streaming a conversation in another front-end's format (``_wire``)."""

    async def endpoint(request: Request) -> Response:
        conversation: str = request.path_params["conversation"]
        cursor, live = _cursor(request), _live(request)
        hub = await live.open(conversation)
        if hub is None:
            raise _Problem(404, f"no conversation {conversation!r}")
        resumed = await view_at(hub, live.store, cursor) if encoder is AgUiEncoder else None
        options = live.options
        return EventSourceResponse(
            wire_frames(hub, encoder(conversation), resumed),
            headers=headers,
            ping=options.ping_interval,
            send_timeout=options.send_timeout,
            sep="\n",
        )

    return endpoint


async def _ingest(request: Request) -> Response:
    live = _live(request)
    token = live.options.token
    if token is None:
        raise _Problem(403, "ingest is off: start the server with a token (--token)")
    if not bearer_matches(request.headers.get("authorization", ""), token):
        raise _Problem(
            401,
            "missing or wrong token: send Authorization: Bearer TOKEN",
            headers={"www-authenticate": "Bearer"},
        )
    raw = request.headers.get("x-expected-position") or request.query_params.get(
        "expected_position"
    )
    expected: int | None = None
    if raw is not None:
        try:
            expected = int(raw)
            if expected < 0:
                raise ValueError
        except ValueError:
            raise _Problem(400, f"expected position must be an integer >= 0, not {raw!r}") from None
    conversation: str = request.path_params["conversation"]
    if (problem := conversation_problem(conversation)) is not None:
        raise _Problem(400, problem)
    body = await read_body(request, limit=_MAX_BODY, timeout=live.options.body_timeout)
    events = parse_events(body, live.options.vocabulary)
    length = await live.append(conversation, events, expected)
    return JSONResponse(
        {"conversation": conversation, "appended": len(events), "position": length},
        status_code=201,
    )


async def _kinds_css(request: Request) -> Response:
    return Response(
        _live(request).stylesheet(),
        media_type="text/css",
        headers={"cache-control": "no-cache"},
    )


@contextlib.asynccontextmanager
async def _lifespan(app: Starlette) -> AsyncIterator[None]:
    live: Live = app.state.live
    live.start()
    loop = asyncio.get_running_loop()
    tasks = [loop.create_task(job(live)) for job in live.options.background]
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await live.stop()


class _SecurityHeaders:
    # A pure ASGI wrapper: BaseHTTPMiddleware would buffer nothing but costs a task
    # per request, which matters for long-lived streams.
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)


_ROUTES = [
    Route("/", _index),
    Route("/kinds.css", _kinds_css),
    Route("/index/stream", _index_stream),
    # The suffixed routes first: a conversation id may contain "/".
    Route("/conversations/{conversation:path}/stream", _stream),
    Route("/conversations/{conversation:path}/events", _ingest, methods=["POST"]),
    Route(
        "/conversations/{conversation:path}/ui-message-stream",
        _wire_route(UIMessageEncoder, UI_STREAM_HEADERS),
    ),
    Route("/conversations/{conversation:path}/ag-ui", _wire_route(AgUiEncoder, AGUI_HEADERS)),
    Route("/conversations/{conversation:path}", _conversation_page),
    Mount("/static", StaticFiles(directory=STATIC), name="static"),
]


def create_app(
    source: Source,
    options: ServeOptions | None = None,
    *,
    on_load: Sequence[Hook] = (),
    on_evict: Sequence[Hook] = (),
) -> Starlette:
    """The live view of ``source`` as an ASGI app, to serve alone or mount in yours.

    ``source`` is a store's name (a SQLite path or a ``postgresql://`` URL: many
    servers may serve one database), an open ``SQLiteStore`` or
    ``PostgresStore``, or a mapping of conversation ids to engines you push into
    (from any thread). ``options`` (``ServeOptions``) says how to fold, guard and pace.

    Routes: ``GET /`` lists conversations; ``GET /conversations/{id}`` is the
    server-rendered page (works without JavaScript; for an id with no events yet it
    waits for them); ``GET /conversations/{id}/stream`` the SSE stream of keyed node
    fragments (resumes from ``Last-Event-ID`` or ``?after=``); ``POST
    /conversations/{id}/events`` appends JSON or JSON Lines events to a store, only
    with ``options.token`` given as ``Authorization: Bearer``, with optimistic
    concurrency through ``X-Expected-Position`` or ``?expected_position=``.
    ``app.state.live`` is the ``Live`` registry. Mounted in another app, the host
    runs this app's lifespan from its own: ``app.router.lifespan_context(app)``.

    Safety (``replay.serve._security``): only requests whose ``Host`` is in
    ``options.hosts`` are answered; with a read token every page and stream needs it;
    ingested events must be JSON objects that ``options.vocabulary`` accepts, in a
    body that arrives within ``options.body_timeout`` seconds, for an id with no ``/``.
    """
    options = options or ServeOptions()
    live = Live(source, options, on_load=on_load, on_evict=on_evict)
    middleware = [
        Middleware(_SecurityHeaders),
        Middleware(TrustedHostMiddleware, allowed_hosts=list(options.hosts), www_redirect=False),
    ]
    if options.read_token is not None:
        middleware.append(Middleware(ReadTokenMiddleware, token=options.read_token))
    app = Starlette(
        routes=_ROUTES,
        middleware=middleware,
        exception_handlers=_HANDLERS,
        lifespan=_lifespan,
    )
    app.state.live = live
    return app


async def _frames(hub: _Conversation, cursor: int) -> AsyncIterator[bytes]:
    """The SSE body for one client: catch-up first, then one message per wake-up."""
    client = _Client()
    hub.clients.add(client)
    try:
        yield b"retry: 1000\n\n"
        first = True
        while not hub.closed:
            client.wake.clear()
            message = hub.frame_since(cursor, first=first)
            if message is None:
                await client.wake.wait()
                continue
            frame, cursor = message
            first = False
            yield frame
    finally:
        hub.clients.discard(client)
        hub.last_used = time.monotonic()
