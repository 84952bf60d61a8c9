"""Recording and playback for boto3's ``bedrock-runtime`` clients, through botocore.

botocore sends every request through its endpoint's HTTP session (``send(request)`` ->
``AWSResponse``, whose ``raw`` is the urllib3 response read by ``.content`` or, for
ConverseStream, by the ``EventStream`` boto3 hands the application). Recording wraps
that session and the ``raw`` of each response, so every chunk reaches botocore the
moment it arrives; playback replaces the session and answers from the recording with
AWS event-stream frames re-encoded from the recorded events, and turns request signing
off (a recording needs no credentials to play back).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from ._player import Player, RecordedCall
from ._recorder import CLOSED_EARLY, Call, Recorder

__all__ = ["BotocoreSession", "PlaybackSession", "RecordingSession"]


def _body(request: Any) -> bytes | None:
    body = request.body
    if isinstance(body, str):
        return body.encode()
    if isinstance(body, bytes | bytearray):
        return bytes(body)
    return None  # a file-like body: not a JSON request


class _RecordingRaw:
    """The urllib3 response, its bytes recorded as botocore reads them."""

    def __init__(self, raw: Any, call: Call) -> None:
        self._raw = raw
        self._call = call

    def stream(self, *args: Any, **kwargs: Any) -> Iterator[bytes]:
        call = self._call
        try:
            for chunk in self._raw.stream(*args, **kwargs):
                call.chunk(chunk)
                yield chunk
        except GeneratorExit:
            call.finish(CLOSED_EARLY)
            raise
        except BaseException as exc:
            call.finish(exc)
            raise
        call.finish()

    def read(self, *args: Any, **kwargs: Any) -> bytes:
        try:
            data: bytes = self._raw.read(*args, **kwargs)
        except BaseException as exc:
            self._call.finish(exc)
            raise
        self._call.chunk(data)
        if not data or not (args or kwargs.get("amt")):
            self._call.finish()
        return data

    def close(self) -> None:
        self._call.finish(CLOSED_EARLY)
        self._raw.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


class RecordingSession:
    """botocore's HTTP session, each call recorded."""

    def __init__(self, inner: Any, recorder: Recorder) -> None:
        self.inner = inner
        self.recorder = recorder

    def send(self, request: Any) -> Any:
        call = self.recorder.begin(
            "bedrock",
            request.method,
            request.url,
            request.headers.items(),
            _body(request),
            urlsplit(request.url).path,
        )
        try:
            response = self.inner.send(request)
        except BaseException as exc:
            call.finish(exc)
            raise
        call.response(response.status_code, response.headers.items())
        content = response._content
        if content is not None:  # botocore read a non-streamed body inside send
            call.chunk(content)
            call.finish()
        else:
            response.raw = _RecordingRaw(response.raw, call)
        return response

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _failure(error: str | None, url: str) -> Exception:
    errors: Any = importlib.import_module("botocore.exceptions")
    name = (error or "").partition(":")[0]
    failure: Exception
    if "ConnectTimeout" in name:
        failure = errors.ConnectTimeoutError(endpoint_url=url)
    elif "Timeout" in name:
        failure = errors.ReadTimeoutError(endpoint_url=url)
    elif "Connection" in name:
        failure = errors.EndpointConnectionError(endpoint_url=url)
    else:
        failure = errors.ResponseStreamingError(error=f"played back from the recording: {error}")
    return failure


class _PlaybackRaw:
    """A recorded body as botocore reads a urllib3 response."""

    def __init__(self, recorded: RecordedCall, speed: float | None, url: str) -> None:
        self._chunks = recorded.chunks(speed)
        self._recorded = recorded
        self._url = url

    def stream(self, *args: Any, **kwargs: Any) -> Iterator[bytes]:
        for chunk, delay in self._chunks:
            if delay:
                time.sleep(delay)
            yield chunk
        if self._recorded.raises:
            raise _failure(self._recorded.error, self._url)

    def read(self, *args: Any, **kwargs: Any) -> bytes:
        return b"".join(self.stream())

    def close(self) -> None:
        pass

    def release_conn(self) -> None:
        pass


class PlaybackSession:
    """Stands in for botocore's HTTP session: answers from a recording, no network."""

    def __init__(self, inner: Any, player: Player, error: type[Exception]) -> None:
        self.inner = inner
        self.player = player
        self.error = error

    def send(self, request: Any) -> Any:
        aws_response: Any = importlib.import_module("botocore.awsrequest").AWSResponse
        recorded = self.player.take(
            "bedrock",
            request.method,
            request.url,
            _body(request),
            self.error,  # type: ignore[arg-type]
        )
        if recorded.status is None:
            raise _failure(recorded.error, request.url)
        headers = {k: v for k, v in recorded.headers.items() if k != "content-length"}
        headers.setdefault("content-type", recorded.content_type)
        raw = _PlaybackRaw(recorded, self.player.speed, request.url)
        return aws_response(request.url, recorded.status, headers, raw)

    def close(self) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class BotocoreSession:
    """Stands in for botocore's HTTP session: plays back while recorded calls remain (if
    given a player), records the rest (if given a recorder)."""

    def __init__(
        self,
        inner: Any,
        recorder: Recorder | None,
        player: Player | None,
        error: type[Exception],
    ) -> None:
        self.inner = inner
        self.recording = None if recorder is None else RecordingSession(inner, recorder)
        self.playback = None if player is None else PlaybackSession(inner, player, error)
        self.player = player

    def send(self, request: Any) -> Any:
        if self.playback is not None and (self.recording is None or self.playback.player.remaining):
            return self.playback.send(request)
        assert self.recording is not None
        return self.recording.send(request)

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
