"""End to end: the official clients (the pinned ``anthropic`` and ``openai`` of the test
extra), pointed at a loopback server replaying the recorded SSE bodies; what each
yields is pushed into the set's live engine as it comes; the view equals the dict
replay of the recording, for every recording of the protocol the SDK accepts, with
the sync and the async client.

The server (stdlib ``http.server`` in a thread, 127.0.0.1, a free port) answers any
POST under ``/<recording id>/`` with that recording's body: the file itself when it is
an SSE body, else its events framed as the provider's server frames them.
"""

from __future__ import annotations

import asyncio
import http.server
import itertools
import json
import threading
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from definitions import ProtocolSet, anthropic, openai_chat, openai_responses

from ._sdk import events_of, recordings, require, view

SETS: dict[str, ProtocolSet] = {
    "anthropic": anthropic.PROTOCOL,
    "openai_chat": openai_chat.PROTOCOL,
    "openai_responses": openai_responses.PROTOCOL,
}


class Replayer(http.server.ThreadingHTTPServer):
    """A loopback server answering ``POST /<id>/...`` with the SSE body kept for ``id``."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.bodies: dict[str, bytes] = {}
        self._ids = itertools.count()

    def base(self, body: bytes) -> str:
        """The base URL under which the server replays ``body``."""
        token = str(next(self._ids))
        self.bodies[token] = body
        return f"http://127.0.0.1:{self.server_address[1]}/{token}"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: Replayer

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        body = self.server.bodies.get(self.path.split("/")[1])
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: pytest shows failures, not every request


@pytest.fixture(scope="module")
def server() -> Iterator[Replayer]:
    replayer = Replayer()
    thread = threading.Thread(target=replayer.serve_forever, daemon=True)
    thread.start()
    try:
        yield replayer
    finally:
        replayer.shutdown()
        replayer.server_close()
        thread.join()


def sse_body(name: str, path: Path, events: list[dict[str, Any]]) -> bytes:
    """The recording as the provider's server sent it: the file when it is an SSE
    body, else its events framed as that server frames them."""
    data = path.read_bytes()
    if data.startswith((b"event:", b"data:")):
        return data
    frames = []
    for event in events:
        payload = json.dumps(event, ensure_ascii=False)
        if name == "openai_chat":
            frames.append(f"data: {payload}\n\n")
        else:
            frames.append(f"event: {event.get('type')}\ndata: {payload}\n\n")
    if name == "openai_chat":
        frames.append("data: [DONE]\n\n")
    return "".join(frames).encode()


def http_client(sdk: Any, asynchronous: bool) -> Any:
    """The SDK's own HTTP client class, ignoring proxy settings: the server is on
    loopback."""
    if asynchronous:
        return sdk.DefaultAsyncHttpxClient(trust_env=False)
    return sdk.DefaultHttpxClient(trust_env=False)


def sdk_refusal(sdk: ModuleType, exc: BaseException) -> bool:
    """Whether ``exc`` is the SDK refusing the stream: its API error, or raised inside
    the SDK's own code (its accumulator, its decoder). Anything else fails the test."""
    if isinstance(exc, sdk.APIError):
        return True
    folder = str(Path(sdk.__file__).parent)
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and frames[-1].filename.startswith(folder)


Streamer = Callable[[str, bool], Any]
ARGS = {"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def anthropic_client(base: str, asynchronous: bool) -> Any:
    sdk = require("anthropic")
    cls = sdk.AsyncAnthropic if asynchronous else sdk.Anthropic
    return cls(
        api_key="test",
        base_url=base,
        max_retries=0,
        http_client=http_client(sdk, asynchronous),
    )


def openai_client(base: str, asynchronous: bool) -> Any:
    sdk = require("openai")
    cls = sdk.AsyncOpenAI if asynchronous else sdk.OpenAI
    return cls(
        api_key="test",
        base_url=f"{base}/v1",
        max_retries=0,
        http_client=http_client(sdk, asynchronous),
    )


KEPT: list[int] = [0]  # ChunkEvents the chat stream helper yielded in this test


def chunks_kept(event: Any) -> None:
    """Count the chat stream helper's ``ChunkEvent``s: it drops chunks it deems
    invalid (an Azure preamble without choices), which its raw stream yields."""
    if event.type == "chunk":
        KEPT[0] += 1


def push_sync(name: str, way: str, base: str, protocol: ProtocolSet) -> tuple[Any, ...]:
    engine = protocol.engine()
    if name == "anthropic":
        client = anthropic_client(base, False)
        if way == "helper":
            with client.messages.stream(**ARGS) as stream:
                for event in stream:
                    engine.push(event)
        else:
            for event in client.messages.create(**ARGS, stream=True):
                engine.push(event)
    elif name == "openai_chat":
        client = openai_client(base, False)
        if way == "helper":
            with client.chat.completions.stream(**CHAT) as stream:
                for event in stream:
                    engine.push(event)
                    chunks_kept(event)
        else:
            for chunk in client.chat.completions.create(**CHAT, stream=True):
                engine.push(chunk)
    else:
        client = openai_client(base, False)
        if way == "helper":
            with client.responses.stream(model="m", input="hi") as stream:
                for event in stream:
                    engine.push(event)
        else:
            for event in client.responses.create(model="m", input="hi", stream=True):
                engine.push(event)
    return engine.nodes()


async def push_async(name: str, way: str, base: str, protocol: ProtocolSet) -> tuple[Any, ...]:
    engine = protocol.engine()
    if name == "anthropic":
        client = anthropic_client(base, True)
        if way == "helper":
            async with client.messages.stream(**ARGS) as stream:
                async for event in stream:
                    engine.push(event)
        else:
            async for event in await client.messages.create(**ARGS, stream=True):
                engine.push(event)
    elif name == "openai_chat":
        client = openai_client(base, True)
        if way == "helper":
            async with client.chat.completions.stream(**CHAT) as stream:
                async for event in stream:
                    engine.push(event)
                    chunks_kept(event)
        else:
            async for chunk in await client.chat.completions.create(**CHAT, stream=True):
                engine.push(chunk)
    else:
        client = openai_client(base, True)
        if way == "helper":
            async with client.responses.stream(model="m", input="hi") as stream:
                async for event in stream:
                    engine.push(event)
        else:
            async for event in await client.responses.create(model="m", input="hi", stream=True):
                engine.push(event)
    return engine.nodes()


SDKS = {"anthropic": "anthropic", "openai_chat": "openai", "openai_responses": "openai"}
WAYS = dict.fromkeys(SETS, ("helper", "raw"))  # the SDK's stream helper, its raw stream
CASES = [
    pytest.param(name, way, param.values[0], id=f"{name}-{way}-{param.id}", marks=param.marks)
    for name in SETS
    for way in WAYS[name]
    for param in recordings(name)
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "way", "path"), CASES)
def test_the_official_client_streams_into_the_live_engine(
    server: Replayer, name: str, way: str, path: Path
) -> None:
    protocol = SETS[name]
    events = events_of(path)
    try:
        expected = view(protocol, protocol.replay(events))
    except ValueError as exc:
        pytest.skip(f"the set refuses this recording as dicts: {exc}")
    base = server.base(sse_body(name, path, events))
    pushed = {}
    for asynchronous in (False, True):
        KEPT[0] = 0
        try:
            if asynchronous:
                nodes = asyncio.run(push_async(name, way, base, protocol))
            else:
                nodes = push_sync(name, way, base, protocol)
        except Exception as exc:
            if not sdk_refusal(require(SDKS[name]), exc):
                raise  # ours, or the test's: fail
            pytest.skip(f"the {name} SDK refuses this recording: {type(exc).__name__}: {exc}")
        if name == "openai_chat" and way == "helper" and KEPT[0] < len(events):
            pytest.skip(f"the chat stream helper drops {len(events) - KEPT[0]} of the chunks")
        pushed[asynchronous] = view(protocol, nodes)
    assert pushed[False] == expected
    assert pushed[True] == expected
