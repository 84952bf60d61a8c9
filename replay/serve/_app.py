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
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Sequence
from html import escape
from itertools import compress
from operator import is_not
from pathlib import Path
from typing import Any
from urllib.parse import quote

import msgspec
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from definitions import ProtocolSet, builtin
from engine import (
    ConversationError,
    Node,
    Registration,
    Scheduler,
    create_conversation_engine,
)

from .._errors import ConcurrencyError, RenderError, StoreBusyError, UnstorableEventError
from ..protocols._detect import SCAN, detect_protocol, protocol_definitions
from ..protocols._unclaimed import unclaimed_note
from ..render._html import HtmlRenderer
from ..stores._open import open_store
from ..stores._postgres import PostgresStore
from ..stores._sqlite import SQLiteStore
from ._clock import FrameClock
from ._engines import BATCH, Engines, Hook, follow_store
from ._security import (
    BodyError,
    ReadTokenMiddleware,
    allowed_hosts,
    bearer_matches,
    check_token,
    conversation_problem,
    parse_events,
    read_body,
)

__all__ = ["CSP", "Live", "create_app", "parse_events"]

log = logging.getLogger("replay.serve")

STATIC = Path(__file__).parents[1] / "static"

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""The Content-Security-Policy of every response: our own static script and
stylesheet only, no inline script, style or handler, whatever a node contains."""

_SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]

_MAX_BODY = 8 * 1024 * 1024
_IDLE_GRACE = 30.0  # seconds a clientless hub is kept whatever the idle limit
_encode = msgspec.json.Encoder().encode
_decode_any: msgspec.json.Decoder[Any] = msgspec.json.Decoder()


class _Client:
    __slots__ = ("wake",)

    def __init__(self) -> None:
        self.wake = asyncio.Event()


class _Conversation:
    """One open conversation: its engine, renderer, change stamps and clients."""

    def __init__(
        self,
        conversation: str,
        registration: Registration,
        clock: Scheduler,
        chosen: ProtocolSet | None = None,
        first_events: Sequence[Any] = (),
    ):
        self.id = conversation
        # The set's pre-pass as a function of one event (None: events go in as they are).
        self.chosen = chosen
        self._feed = None if chosen is None else chosen.pre_pass()
        self.position = 0  # events folded: the next store position to read
        self.notified = 0  # position of the latest notification
        self.failures = 0  # events a definition rejected (logged, skipped)
        self.nodes: tuple[Node, ...] = ()
        self.changed_at: dict[str, int] = {}
        self.clients: set[_Client] = set()
        self.closed = False  # the server is stopping: streams end (Live.close_streams)
        self.lock = asyncio.Lock()  # one catch-up at a time
        self.last_used = time.monotonic()
        # previous position, position, the nodes changed with their versions before
        self._latest: tuple[int, int, list[tuple[Node, tuple[object, int] | None]]] | None = None
        self._latest_frame: bytes | None = None
        # Catch-ups since the latest notification by cursor: lagging clients at one
        # cursor (a burst outran them all) share one encoding too.
        self._catch_ups: dict[int, bytes] = {}
        self._renderer = HtmlRenderer(registration.definitions, title=conversation)
        self._first_events = first_events  # what detection looked at, for the note
        self.engine = create_conversation_engine(registration, clock)
        self.engine.subscribe(self._on_nodes)

    # -- folding -------------------------------------------------------------------

    async def catch_up(self, store: SQLiteStore | PostgresStore) -> None:
        """Fold every event the store has beyond ``position``."""
        async with self.lock:
            while True:
                start = self.position
                rows = await asyncio.to_thread(store.read, self.id, start, start + BATCH)
                self.fold(rows, start)
                if len(rows) < BATCH:
                    return

    def fold(self, events: Sequence[Any], start: int) -> None:
        """Push ``events`` (store positions ``start``, ``start + 1``, ...) one at a time."""
        push = self.engine.push
        feed = self._feed
        for offset, event in enumerate(events):
            self.position = start + offset + 1
            try:
                # The protocol's pre-pass may refuse an odd event too (a bare error),
                # and gives None for an event its set skips (nothing to fold).
                envelope = event if feed is None else feed(event)
                if envelope is not None:
                    push(envelope)
            except (ConversationError, ValueError, TypeError, KeyError) as exc:
                # A bad event must not stop the view: the engine left no trace of it.
                self.failures += 1
                log.warning(
                    "conversation %r, event #%d skipped: %s", self.id, self.position - 1, exc
                )

    def _on_nodes(self, nodes: tuple[Node, ...]) -> None:
        position = self.position
        previous = self.nodes
        changed_at = self.changed_at
        changed: list[tuple[Node, tuple[object, int] | None]] = []
        # The nodes that are not the object they were (map and compress run in C),
        # then the new ones after them.
        for i in compress(range(len(previous)), map(is_not, nodes, previous)):
            node, last = nodes[i], previous[i]
            changed_at[node.key] = position
            changed.append((node, (last.state, last.seq)))
        for node in nodes[len(previous) :]:
            changed_at[node.key] = position
            changed.append((node, None))
        self.nodes = nodes
        if not changed:
            return
        self._latest = (self.notified, position, changed)
        self._latest_frame = None
        self._catch_ups.clear()
        self.notified = position
        for client in self.clients:
            client.wake.set()

    # -- rendering -----------------------------------------------------------------

    def fragment(self, node: Node) -> str:
        """The node's ``<article>``; a definition that fails to render shows the error."""
        try:
            return self._renderer.fragment(node)
        except RenderError as exc:
            key = escape(node.key, quote=True)
            return (
                f'<article class="node render-error" id="{key}" data-key="{key}" '
                f'data-kind="{escape(node.kind, quote=True)}" data-seq="{node.seq}">\n'
                f"<header>#{node.seq} {key}</header>\n"
                f'<div class="body"><pre class="error">{escape(str(exc), quote=True)}</pre></div>'
                "\n</article>\n"
            )

    def frame_since(self, cursor: int, *, first: bool = False) -> tuple[bytes, int] | None:
        """The SSE message bringing a client at ``cursor`` up to date, and its id.

        ``None`` when the client has everything. Shared and encoded once (with block
        patches) for clients that saw the notification before the latest; merged
        from the stamps, with whole nodes, for the others and for a stream's
        ``first`` message (a client that opens or resumes rebuilds its nodes whole),
        encoded once per cursor; a ``reset`` with every node for a cursor beyond
        ``notified``.
        """
        if cursor == self.notified:
            return None
        latest = self._latest
        if latest is not None and latest[0] == cursor and not first:
            if self._latest_frame is None:
                self._latest_frame = self._encode(latest[2], latest[1], reset=False)
            return self._latest_frame, latest[1]
        frame = self._catch_ups.get(cursor)
        if frame is None:
            if cursor > self.notified:
                nodes = [(node, None) for node in self.nodes]
            else:
                changed_at = self.changed_at
                nodes = [(node, None) for node in self.nodes if changed_at[node.key] > cursor]
            frame = self._encode(nodes, self.notified, reset=cursor > self.notified)
            self._catch_ups[cursor] = frame
        return frame, self.notified

    def _encode(
        self, nodes: Sequence[tuple[Node, tuple[object, int] | None]], position: int, *, reset: bool
    ) -> bytes:
        entries = [self._entry(node, since) for node, since in nodes]
        data = _encode({"position": position, "reset": reset, "nodes": entries})
        return b"id: %d\nevent: patch\ndata: %s\n\n" % (position, data)

    def _entry(self, node: Node, since: tuple[object, int] | None) -> dict[str, Any]:
        """The node as sent: ``blocks`` (patches against the version ``since``, which
        the client has) when only its Markdown blocks changed, else ``html`` whole."""
        if since is not None:
            try:
                patches = self._renderer.patch(node, *since)
            except RenderError:
                patches = None
            if patches is not None:
                blocks = [{"at": p.at, "drop": p.drop, "html": p.html} for p in patches]
                return {"key": node.key, "seq": node.seq, "blocks": blocks}
        return {"key": node.key, "seq": node.seq, "html": self.fragment(node)}

    def unclaimed_note(self) -> str | None:
        """``"N events claimed by no definition; try -d ..."`` when some were, else None."""
        unclaimed = self.engine.statistics().events_unclaimed
        if unclaimed <= 0:
            return None
        name = "the given definitions" if self.chosen is None else self.chosen.label
        return unclaimed_note(unclaimed, self.position, self._first_events, name)

    def page_body(self) -> str:
        """The fragments of the view as last notified (pending frames flushed first)."""
        self.engine.flush()
        return "".join(self.fragment(node) for node in self.nodes)


class Live:
    """The open conversations of one store and the task that keeps them current.

    ``open(id)`` folds a conversation on first use; ``kick()`` makes the SQLite
    poller look at the store now. At most ``max_loaded`` conversations stay loaded
    beyond those being watched (and any used in the last 30 s), least recently
    used first out; ``on_load``/``on_evict`` hooks see each load and eviction.
    ``store`` is a SQLite path or a ``postgresql://`` URL.
    """

    def __init__(
        self,
        store: str | os.PathLike[str],
        definitions: Iterable[Any] | ProtocolSet | None = None,
        *,
        poll_interval: float = 0.05,
        frame_interval: float = 0.016,
        max_loaded: int = 64,
        on_load: Sequence[Hook] = (),
        on_evict: Sequence[Hook] = (),
    ) -> None:
        # None: each conversation's protocol is detected from its first events, as
        # `convo replay` does; a ProtocolSet or definitions: every conversation's.
        if definitions is None or isinstance(definitions, ProtocolSet):
            self.fixed = definitions
        else:
            self.fixed = ProtocolSet(name="the given definitions", definitions=definitions)
        # Validated and routed once per set for every conversation's engine (bad
        # definitions fail here, before the server serves anything).
        self._registrations: dict[str, tuple[ProtocolSet, Registration]] = {}
        if self.fixed is not None:
            self._registration(self.fixed)
        self.poll_interval = poll_interval
        self.clock = FrameClock(frame_interval)
        self.store = open_store(store)
        self.path = self.store.path
        self.writer = open_store(store)  # appends never wait behind a long read
        self.conversations: Engines[_Conversation] = Engines(
            self._load,
            max_loaded=max_loaded,
            idle_grace=_IDLE_GRACE,
            on_load=on_load,
            on_evict=on_evict,
        )
        self._kick: asyncio.Event | None = None
        self._follower: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start following the store on the running loop; idempotent."""
        if self._follower is None or self._follower.done():
            self._kick = asyncio.Event()
            self._follower = asyncio.get_running_loop().create_task(
                follow_store(
                    self.store,
                    self.conversations,
                    poll_interval=self.poll_interval,
                    kick=self._kick,
                )
            )

    async def stop(self) -> None:
        """Stop following and close the store connections."""
        if self._follower is not None:
            self._follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._follower
            self._follower = None
        self.store.close()
        self.writer.close()

    def close_streams(self) -> None:
        """End every open stream with a complete response (the server is stopping)."""
        for hub in self.conversations.values():
            hub.closed = True
            for client in hub.clients:
                client.wake.set()

    def kick(self) -> None:
        """Make the poller check the store now instead of at its next tick."""
        if self._kick is not None:
            self._kick.set()

    async def open(self, conversation: str) -> _Conversation | None:
        """The live conversation, folded up to the store's end; ``None`` if unknown."""
        self.start()
        hub = await self.conversations.open(conversation)
        if hub is None:
            return None
        hub.last_used = time.monotonic()
        await hub.catch_up(self.store)
        return hub

    async def _load(self, conversation: str) -> _Conversation | None:
        # The first events, to detect its protocol from (none: no such conversation).
        first = await asyncio.to_thread(self.store.read, conversation, 0, SCAN)
        if not first:
            return None
        chosen = self.fixed
        if chosen is None:
            chosen = protocol_definitions(detect_protocol(first).protocol)
        chosen, registration = self._registration(chosen)
        return _Conversation(conversation, registration, self.clock, chosen, first)

    async def append(
        self, conversation: str, events: Sequence[Any], expected_position: int | None
    ) -> int:
        """Append to the store (in a worker thread) and wake the poller; the new length."""
        length = await asyncio.to_thread(
            self.writer.append,
            conversation,
            events,
            expected_position=expected_position,
            time=time.time(),
        )
        self.kick()
        return length

    def _registration(self, chosen: ProtocolSet) -> tuple[ProtocolSet, Registration]:
        # A set's registration is made once, with it: routed once for every engine.
        found = self._registrations.get(chosen.name)
        if found is None:
            found = self._registrations[chosen.name] = (chosen, chosen.registration)
        return found


# -- request handling ---------------------------------------------------------------


def _href(request: Request, conversation: str, suffix: str = "") -> str:
    root = request.scope.get("root_path", "")
    return f"{root}/conversations/{quote(conversation, safe='')}{suffix}"


def _page(request: Request, title: str, body: str) -> str:
    root = escape(request.scope.get("root_path", ""), quote=True)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title, quote=True)} · convo</title>\n"
        f'<link rel="stylesheet" href="{root}/static/convo.css">\n'
        f'<script src="{root}/static/convo.js" defer></script>\n'
        f'</head>\n<body>\n<nav class="bar"><a href="{root}/">convo</a></nav>\n'
        f"<main>\n{body}</main>\n</body>\n</html>\n"
    )


def _error(request: Request, status: int, message: str) -> HTMLResponse:
    body = f'<h1>{status}</h1>\n<p class="note">{escape(message, quote=True)}</p>\n'
    return HTMLResponse(_page(request, str(status), body), status_code=status)


def _problem(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status)


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


def create_app(
    store: str | os.PathLike[str],
    *,
    definitions: Iterable[Any] | ProtocolSet | None = None,
    token: str | None = None,
    read_token: str | None = None,
    hosts: Sequence[str] = allowed_hosts("127.0.0.1"),
    vocabulary: Any = builtin.Event,
    body_timeout: float = 10.0,
    poll_interval: float = 0.05,
    frame_interval: float = 0.016,
    ping_interval: float = 15.0,
    send_timeout: float = 30.0,
    background: Sequence[Callable[[Live], Coroutine[Any, Any, None]]] = (),
    max_loaded: int = 64,
) -> Starlette:
    """The ASGI app serving the conversations of ``store`` (a SQLite file's path or a
    ``postgresql://`` URL: many servers may serve one database).

    Routes: ``GET /`` lists conversations; ``GET /conversations/{id}`` is the
    server-rendered page (works without JavaScript); ``GET /conversations/{id}/stream``
    the SSE stream of keyed node fragments (resumes from ``Last-Event-ID`` or
    ``?after=``); ``POST /conversations/{id}/events`` appends JSON or JSON Lines
    events, only when ``token`` is set and given as ``Authorization: Bearer``, with
    optimistic concurrency through ``X-Expected-Position`` or ``?expected_position=``.
    ``definitions`` is every conversation's set (definitions or a ``ProtocolSet``);
    ``None`` detects each conversation's protocol from its first events, as ``convo
    replay`` does. ``background`` coroutines (e.g. the demo writer) run for the app's
    lifetime.
    ``app.state.live`` is the ``Live`` registry.

    Safety (``replay.serve._security``): only requests whose ``Host`` is in ``hosts``
    are answered (loopback names by default; ``["*"]`` for any); with ``read_token``
    every page and stream needs it too (the same value as ``token`` is fine); tokens
    shorter than 16 characters are a ``ValueError``. Ingested events must be JSON
    objects that ``vocabulary`` accepts (``None``: any object), in a body that
    arrives within ``body_timeout`` seconds, for an id with no ``/``.
    """
    check_token(token, "the ingest token")
    check_token(read_token, "the read token")
    live = Live(
        store,
        definitions,
        poll_interval=poll_interval,
        frame_interval=frame_interval,
        max_loaded=max_loaded,
    )

    async def index(request: Request) -> Response:
        conversations = await asyncio.to_thread(live.store.conversations)
        if conversations:
            rows = "".join(
                f'<li><a href="{escape(_href(request, cid), quote=True)}">'
                f'{escape(cid, quote=True)}</a> <span class="count">{length} events</span></li>\n'
                for cid, length in conversations.items()
            )
            listing = f'<ul class="conversations">\n{rows}</ul>\n'
        else:
            listing = '<p class="note">No conversations in this store yet.</p>\n'
        return HTMLResponse(_page(request, "Conversations", f"<h1>Conversations</h1>\n{listing}"))

    async def page(request: Request) -> Response:
        conversation: str = request.path_params["conversation"]
        hub = await live.open(conversation)
        if hub is None:
            return _error(request, 404, f"No conversation {conversation!r} in this store.")
        fragments = hub.page_body()
        stream = escape(_href(request, conversation, "/stream"), quote=True)
        title = escape(conversation, quote=True)
        note = hub.unclaimed_note()
        unclaimed = "" if note is None else f'<p class="note unclaimed">{escape(note)}</p>\n'
        body = (
            f"<h1>{title}</h1>\n{unclaimed}"
            f'<section class="conversation" data-stream="{stream}" '
            f'data-position="{hub.notified}" data-live="off" aria-live="polite">\n'
            f"{fragments}</section>\n"
            '<noscript><p class="note">JavaScript is off: reload for new events.</p></noscript>\n'
        )
        return HTMLResponse(_page(request, conversation, body))

    async def stream(request: Request) -> Response:
        conversation: str = request.path_params["conversation"]
        resume = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
        try:
            cursor = int(resume)
            if cursor < 0:
                raise ValueError
        except ValueError:
            return _problem(400, f"Last-Event-ID/after must be a position >= 0, not {resume!r}")
        hub = await live.open(conversation)
        if hub is None:
            return _problem(404, f"no conversation {conversation!r}")
        return EventSourceResponse(
            _frames(hub, cursor), ping=ping_interval, send_timeout=send_timeout, sep="\n"
        )

    async def ingest(request: Request) -> Response:
        if token is None:
            return _problem(403, "ingest is off: start the server with a token (--token)")
        if not bearer_matches(request.headers.get("authorization", ""), token):
            response = _problem(401, "missing or wrong token: send Authorization: Bearer TOKEN")
            response.headers["www-authenticate"] = "Bearer"
            return response
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
                return _problem(400, f"expected position must be an integer >= 0, not {raw!r}")
        conversation: str = request.path_params["conversation"]
        if (problem := conversation_problem(conversation)) is not None:
            return _problem(400, problem)
        try:
            body = await read_body(request, limit=_MAX_BODY, timeout=body_timeout)
            events = parse_events(body, vocabulary)
        except BodyError as exc:
            return _problem(exc.status, str(exc))
        except ValueError as exc:
            return _problem(400, f"bad events: {exc}")
        try:
            length = await live.append(conversation, events, expected)
        except UnstorableEventError as exc:
            return _problem(400, f"bad events: {exc}")
        except ConcurrencyError as exc:
            return _problem(409, str(exc), expected=exc.expected, actual=exc.actual)
        except StoreBusyError as exc:
            response = _problem(503, str(exc))
            response.headers["retry-after"] = "1"
            return response
        return JSONResponse(
            {"conversation": conversation, "appended": len(events), "position": length},
            status_code=201,
        )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        live.start()
        tasks = [asyncio.get_running_loop().create_task(job(live)) for job in background]
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await live.stop()

    app = Starlette(
        routes=[
            Route("/", index),
            # The suffixed routes first: a conversation id may contain "/".
            Route("/conversations/{conversation:path}/stream", stream),
            Route("/conversations/{conversation:path}/events", ingest, methods=["POST"]),
            Route("/conversations/{conversation:path}", page),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        lifespan=lifespan,
    )
    app.state.live = live
    if read_token is not None:
        app.add_middleware(ReadTokenMiddleware, token=read_token)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(hosts), www_redirect=False)
    app.add_middleware(_SecurityHeaders)
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
