"""Transports for ``httpx`` and ``httpx2`` (sync and async) that record or play back.

Recording wraps the client's own transport: the request goes out unchanged, the
response comes back as the same object with its byte stream wrapped, so each chunk is
handed to the SDK the moment it arrives and, on the way, to the recorder (which writes
the events it completes). Playback replaces the transport: no network, the recorded
response re-framed as the bytes the SDK parses, one chunk per event.

Both libraries share one API, so the classes are built once per library
(``kit("httpx")``, ``kit("httpx2")``) from the same code.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import time
from collections.abc import AsyncIterator, Iterator
from types import ModuleType
from typing import Any

import attrs

from ._errors import PlaybackMismatchError
from ._player import Player, RecordedCall
from ._recorder import CLOSED_EARLY, Call, Recorder

__all__ = ["Kit", "instrument", "kit", "library_of"]


def _content(request: Any) -> bytes | None:
    try:
        content = request.content
    except Exception:  # a streamed request body not read yet: no JSON to record
        return None
    return bytes(content) if content else None


def _begin(recorder: Recorder, provider: str, request: Any) -> Call:
    return recorder.begin(
        provider,
        request.method,
        str(request.url),
        request.headers.multi_items(),
        _content(request),
        request.url.path,
    )


def _failure(http: ModuleType, error: str | None, request: Any) -> Exception:
    """The transport exception a recorded failure (``"ReadTimeout: ..."``) stands for."""
    name = (error or "ReadError").partition(":")[0].strip()
    cls = getattr(http, name, None)
    if not (isinstance(cls, type) and issubclass(cls, http.TransportError)):
        cls = http.ReadTimeout if "Timeout" in name else http.ReadError
    return cls(f"played back from the recording: {error}", request=request)  # type: ignore[no-any-return]


def _response_headers(recorded: RecordedCall) -> list[tuple[str, str]]:
    headers = [(k, v) for k, v in recorded.headers.items() if k != "content-length"]
    if "content-type" not in recorded.headers:
        headers.append(("content-type", recorded.content_type))
    return headers


@attrs.frozen
class Kit:
    """The recording and playback classes of one HTTP library."""

    http: ModuleType
    recording: type[Any]
    async_recording: type[Any]
    playback: type[Any]
    async_playback: type[Any]
    dispatch: type[Any]
    async_dispatch: type[Any]

    def make(
        self,
        inner: Any,
        provider: str,
        recorder: Recorder | None,
        player: Player | None,
        error: type[PlaybackMismatchError],
        asynchronous: bool,
    ) -> Any:
        """The transport standing in for ``inner``: recording, playing back, or playing
        back the recorded calls and recording those beyond them."""
        recording = None
        if recorder is not None:
            cls = self.async_recording if asynchronous else self.recording
            recording = cls(inner, recorder, provider)
        if player is None:
            return recording
        cls = self.async_playback if asynchronous else self.playback
        playback = cls(player, provider, error)
        if recording is None:
            return playback
        cls = self.async_dispatch if asynchronous else self.dispatch
        return cls(playback, recording, player)


class _Recording:
    """What a recording transport does either way (sync or async), around the call."""

    stream: type[Any]  # the library's recording byte stream, sync or async

    def __init__(self, inner: Any, recorder: Recorder, provider: str = "http") -> None:
        self.inner = inner
        self.recorder = recorder
        self.provider = provider

    def _recorded(self, call: Call, response: Any) -> Any:
        call.response(response.status_code, response.headers.multi_items())
        response.stream = self.stream(response.stream, call)
        return response


class _Playback:
    """What a playback transport does either way: the recorded answer as a response."""

    library: ModuleType  # httpx or httpx2
    stream: type[Any]  # the library's playback byte stream, sync or async

    def __init__(
        self,
        player: Player,
        provider: str = "http",
        error: type[PlaybackMismatchError] = PlaybackMismatchError,
    ) -> None:
        self.player = player
        self.provider = provider
        self.error = error

    def _answer(self, request: Any) -> Any:
        player, http = self.player, self.library
        recorded = player.take(
            self.provider, request.method, str(request.url), _content(request), self.error
        )
        if recorded.status is None:
            raise _failure(http, recorded.error, request)
        stream = self.stream(recorded, player.speed, request)
        return http.Response(recorded.status, headers=_response_headers(recorded), stream=stream)


class _Dispatch:
    """Plays back while recorded calls remain, then records."""

    def __init__(self, playback: Any, recording: Any, player: Player) -> None:
        self.playback = playback
        self.recording = recording
        self.player = player

    def _target(self) -> Any:
        return self.playback if self.player.remaining else self.recording


def _ending(exc: BaseException) -> BaseException | str:
    """What ends a recorded body that ``exc`` interrupted: the client closing it early
    (``GeneratorExit``), or the error."""
    return CLOSED_EARLY if isinstance(exc, GeneratorExit) else exc


@functools.cache
def kit(library: str) -> Kit:
    """The transports for ``library`` (``"httpx"`` or ``"httpx2"``). Its sync and async
    base classes differ, so each transport is two small classes over one shared base."""
    http = importlib.import_module(library)

    class RecordingStreamBase:
        def __init__(self, inner: Any, call: Call) -> None:
            self._inner = inner
            self._call = call

    class RecordingStream(RecordingStreamBase, http.SyncByteStream):  # type: ignore[name-defined,misc]
        def __iter__(self) -> Iterator[bytes]:
            call = self._call
            try:
                for chunk in self._inner:
                    call.chunk(chunk)
                    yield chunk
            except BaseException as exc:
                call.finish(_ending(exc))
                raise
            call.finish()

        def close(self) -> None:
            self._call.finish(CLOSED_EARLY)
            self._inner.close()

    class AsyncRecordingStream(RecordingStreamBase, http.AsyncByteStream):  # type: ignore[name-defined,misc]
        async def __aiter__(self) -> AsyncIterator[bytes]:
            call = self._call
            try:
                async for chunk in self._inner:
                    call.chunk(chunk)
                    yield chunk
            except BaseException as exc:
                call.finish(_ending(exc))
                raise
            call.finish()

        async def aclose(self) -> None:
            self._call.finish(CLOSED_EARLY)
            await self._inner.aclose()

    class RecordingTransport(_Recording, http.BaseTransport):  # type: ignore[name-defined,misc]
        """Records every call through ``inner`` (an ``http`` transport)."""

        stream = RecordingStream

        def handle_request(self, request: Any) -> Any:
            call = _begin(self.recorder, self.provider, request)
            try:
                response = self.inner.handle_request(request)
            except BaseException as exc:
                call.finish(exc)
                raise
            return self._recorded(call, response)

        def close(self) -> None:
            self.inner.close()

        def __enter__(self) -> Any:
            self.inner.__enter__()
            return self

        def __exit__(self, *exc_info: Any) -> None:
            self.inner.__exit__(*exc_info)

    class AsyncRecordingTransport(_Recording, http.AsyncBaseTransport):  # type: ignore[name-defined,misc]
        """Records every call through ``inner`` (an ``http`` async transport)."""

        stream = AsyncRecordingStream

        async def handle_async_request(self, request: Any) -> Any:
            call = _begin(self.recorder, self.provider, request)
            try:
                response = await self.inner.handle_async_request(request)
            except BaseException as exc:
                call.finish(exc)
                raise
            return self._recorded(call, response)

        async def aclose(self) -> None:
            await self.inner.aclose()

        async def __aenter__(self) -> Any:
            await self.inner.__aenter__()
            return self

        async def __aexit__(self, *exc_info: Any) -> None:
            await self.inner.__aexit__(*exc_info)

    class PlaybackStreamBase:
        def __init__(self, recorded: RecordedCall, speed: float | None, request: Any) -> None:
            self._recorded = recorded
            self._speed = speed
            self._request = request

        def _end(self) -> None:
            if self._recorded.raises:
                raise _failure(http, self._recorded.error, self._request)

    class PlaybackStream(PlaybackStreamBase, http.SyncByteStream):  # type: ignore[name-defined,misc]
        def __iter__(self) -> Iterator[bytes]:
            for chunk, delay in self._recorded.chunks(self._speed):
                if delay:
                    time.sleep(delay)
                yield chunk
            self._end()

    class AsyncPlaybackStream(PlaybackStreamBase, http.AsyncByteStream):  # type: ignore[name-defined,misc]
        async def __aiter__(self) -> AsyncIterator[bytes]:
            for chunk, delay in self._recorded.chunks(self._speed):
                if delay:
                    await asyncio.sleep(delay)
                yield chunk
            self._end()

    class PlaybackTransport(_Playback, http.BaseTransport):  # type: ignore[name-defined,misc]
        """Answers every call from a recording, in order, with no network."""

        library, stream = http, PlaybackStream

        def handle_request(self, request: Any) -> Any:
            return self._answer(request)

    class AsyncPlaybackTransport(_Playback, http.AsyncBaseTransport):  # type: ignore[name-defined,misc]
        """Answers every call from a recording, in order, with no network."""

        library, stream = http, AsyncPlaybackStream

        async def handle_async_request(self, request: Any) -> Any:
            return self._answer(request)

    class Dispatch(_Dispatch, http.BaseTransport):  # type: ignore[name-defined,misc]
        def handle_request(self, request: Any) -> Any:
            return self._target().handle_request(request)

        def close(self) -> None:
            self.recording.close()

    class AsyncDispatch(_Dispatch, http.AsyncBaseTransport):  # type: ignore[name-defined,misc]
        async def handle_async_request(self, request: Any) -> Any:
            return await self._target().handle_async_request(request)

        async def aclose(self) -> None:
            await self.recording.aclose()

    transports = (
        RecordingTransport,
        AsyncRecordingTransport,
        PlaybackTransport,
        AsyncPlaybackTransport,
        Dispatch,
        AsyncDispatch,
    )
    for cls in transports:
        cls.convo_instrumented = True
    return Kit(http, *transports)


def library_of(obj: Any) -> str | None:
    """``"httpx"`` or ``"httpx2"``: which library ``obj`` (a client or transport) is of."""
    for cls in type(obj).__mro__:
        root = cls.__module__.partition(".")[0]
        if root in ("httpx", "httpx2"):
            return root
    return None


def instrument(client: Any, wrap: Any) -> None:
    """Replace ``client``'s transport and every mounted one (proxies) by ``wrap(it)``,
    unless it is ours already: an SDK client's copy (``with_options``) shares the HTTP
    client of the one it copies, whose calls are recorded once."""

    def replace(transport: Any) -> Any:
        if transport is None or getattr(transport, "convo_instrumented", False):
            return transport
        return wrap(transport)

    client._transport = replace(client._transport)
    client._mounts = {pattern: replace(t) for pattern, t in client._mounts.items()}
