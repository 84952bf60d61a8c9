"""The floor of the serving stack, for ``bench_serve.py``: a minimal SSE relay.

It serves ``GET /conversations/{id}/stream`` on the stack ``convo serve`` uses
(Starlette, sse-starlette with the same ping and send timeout, uvicorn) from the same
SQLite ``SQLiteStore``, read through its public API only, and follows the store the
same way (``PRAGMA data_version`` on a connection of its own, every 50 ms), with the
same collector threshold (``COLLECTOR_THRESHOLD``). On a
change it reads every length at once (``conversations()``), then, in one worker
thread, the new events of each followed conversation that grew, and sends each
follower the new text HTML-escaped, with the store length as the message id. No
fold, no render, no patch, no resume: what any live view of this store over this
stack costs at the least.

    python benchmarks/_relay.py --store FILE [--port 0]

prints ``relay: http://127.0.0.1:PORT/`` once it listens, as ``convo serve`` does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import sqlite3
from collections.abc import AsyncIterator
from html import escape
from typing import Any

import uvicorn
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from replay import SQLiteStore
from replay.serve._command import COLLECTOR_THRESHOLD

POLL = 0.05


class Follower:
    """One stream: bytes waiting to be written and the flag that wakes its writer."""

    __slots__ = ("pending", "wake")

    def __init__(self) -> None:
        self.pending: list[bytes] = []
        self.wake = asyncio.Event()


class Relay:
    """Followers by conversation, and how far each conversation has been sent."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.store = SQLiteStore(path)
        self.followers: dict[str, set[Follower]] = {}
        self.sent: dict[str, int] = {}

    async def poll(self) -> None:
        """Forever: on every commit by another connection, send what is new."""
        version_db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        version = -1
        try:
            while True:
                now = version_db.execute("PRAGMA data_version").fetchone()[0]
                if now != version:
                    version = now
                    await self.send_new()
                await asyncio.sleep(POLL)
        finally:
            version_db.close()

    async def send_new(self) -> None:
        followed = [(cid, self.sent[cid]) for cid in self.followers if cid in self.sent]
        store = self.store

        def read() -> list[tuple[str, int, list[Any]]]:
            lengths = store.conversations()
            return [
                (cid, lengths[cid], store.read(cid, sent, lengths[cid]))
                for cid, sent in followed
                if lengths.get(cid, 0) > sent
            ]

        for cid, length, events in await asyncio.to_thread(read):
            self.sent[cid] = length
            text = escape("".join(event.get("text", "") for event in events), quote=True)
            message = b"id: %d\nevent: text\ndata: %s\n\n" % (length, text.encode())
            for follower in self.followers.get(cid, ()):
                follower.pending.append(message)
                follower.wake.set()

    async def stream(self, request: Request) -> Response:
        conversation: str = request.path_params["conversation"]
        if conversation not in self.sent:
            self.sent[conversation] = await asyncio.to_thread(self.store.length, conversation)
        follower = Follower()
        self.followers.setdefault(conversation, set()).add(follower)
        return EventSourceResponse(
            self.frames(conversation, follower), ping=15.0, send_timeout=30.0, sep="\n"
        )

    async def frames(self, conversation: str, follower: Follower) -> AsyncIterator[bytes]:
        try:
            yield b"retry: 1000\n\n"
            while True:
                await follower.wake.wait()
                follower.wake.clear()
                pending, follower.pending = follower.pending, []
                yield b"".join(pending)
        finally:
            self.followers[conversation].discard(follower)


def create_app(path: str) -> Starlette:
    relay = Relay(path)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        task = asyncio.get_running_loop().create_task(relay.poll())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            relay.store.close()

    return Starlette(
        routes=[Route("/conversations/{conversation:path}/stream", relay.stream)],
        lifespan=lifespan,
    )


async def serve(path: str, port: int) -> None:
    config = uvicorn.Config(
        create_app(path), host="127.0.0.1", port=port, log_level="warning", lifespan="on"
    )
    server = uvicorn.Server(config)

    async def announce() -> None:
        while not server.started:
            await asyncio.sleep(0.02)
        host, bound = server.servers[0].sockets[0].getsockname()[:2]
        print(f"relay: http://{host}:{bound}/", flush=True)

    task = asyncio.get_running_loop().create_task(announce())
    try:
        await server.serve()
    finally:
        task.cancel()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    # The collector as convo serve sets it: the floor differs from the server in its
    # work, not in its collector (with CPython's default, full passes over 1,000
    # streams' objects set the relay's own p99).
    gc.set_threshold(COLLECTOR_THRESHOLD, *gc.get_threshold()[1:])
    asyncio.run(serve(args.store, args.port))
