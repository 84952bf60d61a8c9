"""Many ``convo serve`` processes on one PostgreSQL database serve the same conversations.

Real processes on real sockets: two servers, a writer that is neither, appends
through either server's ingest endpoint; every open stream sees every event, and
a client that moves from one server to the other with ``Last-Event-ID`` ends with
exactly the view a fresh replay renders, no node lost, none added twice.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import pytest

for _module in ("starlette", "sse_starlette", "httpx"):
    pytest.importorskip(_module, reason="pip install -e '.[serve,serve-test]'")

import httpx  # noqa: E402

from replay import StoreError, open_store  # noqa: E402
from tests._postgres import Server  # noqa: E402
from tests.serve._helpers import HANG_GUARD, apply  # noqa: E402
from tests.serve.test_app import example_events, final_view  # noqa: E402

pytestmark = pytest.mark.slow  # several server processes

TOKEN = "a-long-enough-test-token"


@contextmanager
def serve(dsn: str) -> Iterator[str]:
    """A ``convo serve --store DSN`` process; its base URL. Stopped by its PID."""
    process = subprocess.Popen(
        [sys.executable, "-m", "replay", "serve", "--store", dsn, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "CONVO_SERVE_TOKEN": TOKEN},
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # "convo serve: http://127.0.0.1:PORT/"
        assert line.startswith("convo serve: http://"), process.stderr.read()  # type: ignore[union-attr]
        yield line.split()[-1].rstrip("/")
    finally:
        process.terminate()
        process.wait(timeout=HANG_GUARD)


class Stream:
    """One SSE stream over HTTP: decoded patches, each checked against its id."""

    def __init__(self, lines: AsyncIterator[str]) -> None:
        self._lines = lines

    async def patch(self) -> dict[str, Any]:
        fields: dict[str, str] = {}
        async for line in self._lines:
            if line == "":
                if "data" in fields:
                    data: dict[str, Any] = json.loads(fields["data"])
                    assert int(fields["id"]) == data["position"]
                    return data
                fields = {}
                continue
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
        raise AssertionError("the stream ended")

    async def until(self, position: int) -> list[dict[str, Any]]:
        patches = [await asyncio.wait_for(self.patch(), HANG_GUARD)]
        while patches[-1]["position"] < position:
            patches.append(await asyncio.wait_for(self.patch(), HANG_GUARD))
        return patches


@asynccontextmanager
async def stream(
    client: httpx.AsyncClient, base: str, last_id: int | None = None
) -> AsyncIterator[Stream]:
    headers = {} if last_id is None else {"last-event-id": str(last_id)}
    async with client.stream("GET", f"{base}/conversations/c/stream", headers=headers) as r:
        assert r.status_code == 200
        yield Stream(r.aiter_lines())


def test_two_servers_one_conversation(postgres_server: Server) -> None:
    dsn = postgres_server.new_database()
    events = example_events()
    quarter = len(events) // 4
    with open_store(dsn) as store:
        store.append("c", events[:quarter])

    async def scenario(a: str, b: str) -> None:
        timeout = httpx.Timeout(HANG_GUARD)
        async with httpx.AsyncClient(timeout=timeout) as client:
            view: dict[str, tuple[int, str]] = {}
            async with stream(client, a) as on_a, stream(client, b) as on_b:
                for patch in await on_a.until(quarter):
                    apply(view, patch)
                # Another process appends: both servers fold it.
                with open_store(dsn) as writer:
                    await asyncio.to_thread(
                        writer.append, "c", events[quarter : 2 * quarter], expected_position=quarter
                    )
                for patch in await on_a.until(2 * quarter):
                    apply(view, patch)
                seen_on_b: dict[str, tuple[int, str]] = {}
                for patch in await on_b.until(2 * quarter):
                    apply(seen_on_b, patch)
                assert seen_on_b == view == final_view(events[: 2 * quarter])
            # The client moves to the other server, resuming where it was.
            cursor = 2 * quarter
            async with stream(client, b, last_id=cursor) as on_b:
                # Appended through server A's ingest endpoint, seen through B.
                response = await client.post(
                    f"{a}/conversations/c/events?expected_position={cursor}",
                    content="\n".join(json.dumps(e) for e in events[cursor:]),
                    headers={"authorization": f"Bearer {TOKEN}"},
                )
                assert response.status_code == 201, response.text
                for patch in await on_b.until(len(events)):
                    assert not patch["reset"]
                    assert patch["position"] > cursor  # ids only move forward
                    # Nothing unchanged since the cursor comes again.
                    for node in patch["nodes"]:
                        assert view.get(node["key"]) != (node["seq"], node["html"])
                    cursor = patch["position"]
                    apply(view, patch)
                assert view == final_view(events)

    with serve(dsn) as a, serve(dsn) as b:
        asyncio.run(scenario(a, b))


def test_serving_a_database_without_the_tables_needs_create(
    postgres_server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    from replay.cli import main

    dsn = postgres_server.new_database()
    assert main(["serve", "--store", dsn, "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "not a convo event store" in err
    assert "--create makes a new one" in err
    with pytest.raises(StoreError, match="not a convo event store"):
        open_store(dsn, mode="ro")  # nothing was created
