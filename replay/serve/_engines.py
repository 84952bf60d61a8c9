"""The server's loaded conversations: engines on demand, least recently used out.

Theory of operation
-------------------
A server process keeps one engine (a hub) per conversation someone looks at, not
per conversation in the store, which may hold millions shared by many servers.
``Engines.open`` loads a hub on first use and, past ``max_loaded``, evicts the least
recently used hubs that nobody is watching: a hub with a client, or used in the
last ``idle_grace`` seconds (a stream is about to attach), is never evicted, so the
limit is exceeded rather than a live page frozen.

Loading holds the registry's lock (so two requests never build one conversation
twice); the ``on_load`` and ``on_evict`` hooks run after it is released, as the
Router of the model library this follows does for checkpoints: a hook may call
back into the registry (open another conversation, unload one) without deadlock,
and one load that both evicts and builds runs ``on_evict`` first.

``follow_store`` is the live tail: it reads a store's change hints
(``replay.stores._open.changes``), for SQLite a poll, for PostgreSQL a notification
per append from any server or process, and reads the new events of every loaded hub
the hint concerns in one query, which the hubs fold in turn. A hint is never
trusted for content: a hub always reads from its own position to the store's end,
so a lost or repeated hint loses or duplicates nothing.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Iterator, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar

from ..stores._open import changes
from ..stores._postgres import PostgresStore, StoreChange
from ..stores._sqlite import SQLiteStore

__all__ = ["Engines", "Hook", "follow_store"]

log = logging.getLogger("replay.serve")

Hook = Callable[[str], Awaitable[None] | None]
"""An ``on_load``/``on_evict`` hook: called with the conversation id; may be async."""


class _Hub(Protocol):
    last_used: float

    @property
    def clients(self) -> Collection[object]: ...


H = TypeVar("H", bound=_Hub)


class Engines(Mapping[str, H], Generic[H]):
    """The loaded hubs by conversation id, least recently used first."""

    def __init__(
        self,
        load: Callable[[str], Awaitable[H | None]],
        *,
        max_loaded: int = 64,
        idle_grace: float = 30.0,
        on_load: Sequence[Hook] = (),
        on_evict: Sequence[Hook] = (),
    ) -> None:
        """``load(id)`` builds a hub, or returns ``None`` for an unknown conversation."""
        self.max_loaded = max_loaded
        self.idle_grace = idle_grace
        self.on_load = list(on_load)
        self.on_evict = list(on_evict)
        self._load = load
        self._hubs: dict[str, H] = {}  # insertion order is use order
        self._lock = asyncio.Lock()

    def locked(self) -> bool:
        """Whether a load holds the registry's lock (never true inside a hook)."""
        return self._lock.locked()

    async def open(self, conversation: str) -> H | None:
        """The loaded hub of ``conversation``, loading it (and evicting) if needed;
        ``None`` if ``load`` found no such conversation."""
        hub = self._hubs.get(conversation)
        if hub is None:
            async with self._lock:
                hub = self._hubs.get(conversation)  # another request may have loaded it
                if hub is None:
                    hub = await self._load(conversation)
                    if hub is None:
                        return None
                    self._hubs[conversation] = hub
                    evicted = self._evict(keep=conversation)
                    loaded = True
                else:
                    evicted, loaded = [], False
            for name in evicted:
                await _run(self.on_evict, "on_evict", name)
            if loaded:
                await _run(self.on_load, "on_load", conversation)
        if conversation in self._hubs:  # (a hook may have unloaded it)
            self._hubs[conversation] = self._hubs.pop(conversation)  # most recently used
        return hub

    async def unload(self, conversation: str) -> bool:
        """Drop ``conversation``'s hub (``on_evict`` runs); whether it was loaded."""
        async with self._lock:
            hub = self._hubs.pop(conversation, None)
        if hub is None:
            return False
        await _run(self.on_evict, "on_evict", conversation)
        return True

    def _evict(self, keep: str) -> list[str]:
        # Called under the lock; oldest first. A hub with clients or just used stays.
        excess = len(self._hubs) - self.max_loaded
        if excess <= 0:
            return []
        settled = time.monotonic() - self.idle_grace
        evicted: list[str] = []
        for name, hub in list(self._hubs.items()):
            if len(evicted) == excess:
                break
            if name != keep and not hub.clients and hub.last_used < settled:
                del self._hubs[name]
                evicted.append(name)
        return evicted

    def __getitem__(self, conversation: str) -> H:
        return self._hubs[conversation]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._hubs))

    def __len__(self) -> int:
        return len(self._hubs)


async def _run(hooks: Sequence[Hook], which: str, conversation: str) -> None:
    for hook in hooks:
        try:
            result = hook(conversation)
            if inspect.isawaitable(result):
                await result
        except Exception:  # a broken hook must not break serving
            log.exception("%s hook %r failed for conversation %r", which, hook, conversation)


BATCH = 2000
"""Events read per conversation per query: bounds one fold step between awaits."""


class _Follower(Protocol):
    position: int
    lock: asyncio.Lock

    async def catch_up(self, store: Any) -> None: ...

    def fold(self, events: Sequence[Any], start: int) -> None: ...


async def follow_store(
    store: SQLiteStore | PostgresStore,
    hubs: Mapping[str, _Follower],
    *,
    poll_interval: float = 0.05,
    kick: asyncio.Event | None = None,
    retry: float = 1.0,
    on_change: Callable[[StoreChange], object] | None = None,
) -> None:
    """Keep the loaded ``hubs`` caught up with ``store``, forever (cancel to stop).

    A hint for one conversation catches up that hub if it is loaded and behind; a
    look-at-everything hint reads the new events of every loaded hub in one query
    (``read_many``), so a poll costs one worker-thread hop and one statement however
    many conversations changed. ``on_change`` is told of every hint, loaded
    conversation or not (the index follows the store by it). A broken feed (the
    database went away) is logged and reopened after ``retry`` s.
    """
    while True:
        try:
            async for change in changes(store, poll_interval=poll_interval, kick=kick):
                if on_change is not None:
                    on_change(change)
                await _apply(store, hubs, change)
        except Exception:
            log.exception("following the event store failed; retrying")
        await asyncio.sleep(retry)


async def _apply(
    store: SQLiteStore | PostgresStore, hubs: Mapping[str, _Follower], change: StoreChange
) -> None:
    if change.conversation is not None:
        hub = hubs.get(change.conversation)
        if hub is None or (change.length is not None and change.length <= hub.position):
            return
        scope = [(change.conversation, hub)]
    else:
        scope = list(hubs.items())
    # A hub whose lock is held is catching up by itself (a load, a page): reading for
    # it here would fold its events twice. It reads to the end once the lock is free.
    starts = {cid: hub.position for cid, hub in scope if not hub.lock.locked()}
    found = await asyncio.to_thread(store.read_many, starts, BATCH) if starts else {}
    rest = []
    for cid, hub in scope:
        events = found.get(cid)
        if events is not None and hub.position == starts[cid] and not hub.lock.locked():
            hub.fold(events, starts[cid])
            if len(events) < BATCH:
                continue
        if events is not None or cid not in starts:
            rest.append(hub)
    for hub in rest:
        await hub.catch_up(store)
