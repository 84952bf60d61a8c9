"""``record`` and ``playback``: which official SDK client this is, and where its transport
lives.

At the pinned versions: ``anthropic`` and ``openai`` clients hold an ``httpx2`` client
(``client._client``); ``google.genai.Client`` holds an ``httpx`` or ``httpx2`` client for
sync calls and another for async ones (``client._api_client``; ``client.aio`` shares it);
boto3's ``bedrock-runtime`` sends through botocore's HTTP session
(``client._endpoint.http_session``). Anything else is refused with
``UnsupportedClientError``: an uninstrumented client would silently reach the network.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from ._botocore import BotocoreSession
from ._errors import RecordingError, UnsupportedClientError
from ._http import instrument, kit, library_of
from ._player import Player, mismatch_class, read_calls
from ._recorder import Log, Recorder, open_sink

__all__ = ["SUPPORTED", "playback", "record", "recorder_of"]

SUPPORTED = (
    "anthropic.Anthropic, anthropic.AsyncAnthropic, openai.OpenAI, openai.AsyncOpenAI, "
    "google.genai.Client (and its .aio), boto3.client('bedrock-runtime')"
)
_ATTRIBUTE = "_convo_recording"


def _provider(client: Any) -> str:
    root = type(client).__module__.partition(".")[0]
    module = type(client).__module__
    if root in ("anthropic", "openai") and library_of(getattr(client, "_client", None)):
        return root
    if module.startswith("google.genai") and hasattr(client, "_api_client"):
        return "gemini"
    meta = getattr(client, "meta", None)
    service = getattr(getattr(meta, "service_model", None), "service_name", None)
    if service == "bedrock-runtime" and hasattr(client, "_endpoint"):
        return "bedrock"
    raise UnsupportedClientError(
        f"cannot record or play back a {module}.{type(client).__qualname__}: supported "
        f"are {SUPPORTED}; for an HTTP client you build yourself use "
        "replay.recording.recording_transport / playback_transport"
    )


def _sdk_error(provider: str) -> type[Exception] | None:
    """The SDK's base error, which the SDK re-raises without wrapping or retrying."""
    if provider == "anthropic":
        import anthropic

        return anthropic.AnthropicError
    if provider == "openai":
        import openai

        return openai.OpenAIError
    return None


def _http_clients(client: Any, provider: str) -> list[Any]:
    """The httpx/httpx2 clients through which ``client`` sends."""
    if provider in ("anthropic", "openai"):
        return [client._client]
    api = client._api_client
    clients = [api._httpx_client]
    if api._async_httpx_client is None:
        raise UnsupportedClientError(
            "this google.genai client sends its async calls through google-auth's "
            "transport, which cannot be recorded; pass "
            "http_options=HttpOptions(httpx_async_client=httpx.AsyncClient()) to use httpx"
        )
    clients.append(api._async_httpx_client)
    # With aiohttp installed google-genai prefers it for async calls unless given an
    # httpx client of its own: name ours, so async calls go through the instrumented one.
    api._http_options.httpx_async_client = api._async_httpx_client
    return clients


def _mark(client: Any, provider: str, value: Any) -> None:
    target = client._api_client if provider == "gemini" else client
    if getattr(target, _ATTRIBUTE, None) is not None:
        raise RecordingError(
            f"this {type(client).__qualname__} is already instrumented by "
            f"{type(getattr(target, _ATTRIBUTE)).__name__}: record or play back a fresh client"
        )
    setattr(target, _ATTRIBUTE, value)


def record(
    client: Any,
    log: Log,
    *,
    conversation: str | None = None,
    store: bool = False,
) -> Any:
    """Instrument an official SDK ``client`` so every call it makes is appended to ``log``.

    ``log`` is a path of our JSON Lines log, or a store (an open one, or its name with
    ``store=True``) with ``conversation``. Calls are numbered after those the log
    already holds. The SDK returns what it returns unrecorded; a record that cannot
    be written is counted in ``recorder_of(client).lost`` and warned about
    (``RecordingLostWarning``). Returns ``client`` itself. Raises
    ``UnsupportedClientError`` for a client it does not know, ``RecordingError`` when
    ``log`` cannot be opened.
    """
    _provider(client)  # refused before the log is opened
    recorder = Recorder(open_sink(log, conversation, store=store))
    try:
        return install(client, recorder=recorder)
    except BaseException:
        recorder.close()
        raise


def playback(
    client: Any,
    log: Log,
    *,
    speed: float | None = None,
    conversation: str | None = None,
    strict: bool = False,
) -> Any:
    """Make ``client`` answer every call from the recording ``log``, in order, with no
    network.

    ``log`` is our log, a store (with ``conversation``), or a VCR.py / pytest-recording
    cassette as it is (YAML or JSON). The SDK receives the recorded bytes, chunk by
    chunk as they arrived; ``speed`` paces them by the recorded arrival times (1.0 real
    time, 2.0 twice as fast; ``None`` as fast as the SDK reads). A request that differs
    from the recorded one, or a call beyond the recording, raises
    ``PlaybackMismatchError`` naming the first differing field (a ``null`` and an absent
    field match unless ``strict``); anthropic and openai raise it as it is (it is also
    their base error class), without retrying. Returns ``client`` itself.
    """
    _provider(client)  # refused before the recording is read
    name = os.fsdecode(log) if isinstance(log, str | os.PathLike) else str(log.path)
    player = Player(read_calls(log, conversation), speed=speed, path=name, strict=strict)
    return install(client, player=player)


def install(client: Any, *, recorder: Recorder | None = None, player: Player | None = None) -> Any:
    """Instrument ``client`` to record with ``recorder``, play back with ``player``, or
    both: the recorded calls are played back, and the calls beyond them recorded (the
    ``new_episodes`` mode of the pytest plugin). A recorder or player may be shared by
    several clients (their calls numbered in one sequence)."""
    provider = _provider(client)
    error = mismatch_class(_sdk_error(provider))
    _mark(client, provider, recorder or player)
    if provider == "bedrock":
        endpoint = client._endpoint
        endpoint.http_session = BotocoreSession(endpoint.http_session, recorder, player, error)
        if recorder is None:
            # A recording plays back without credentials: nothing is sent to be signed for.
            unsigned = importlib.import_module("botocore").UNSIGNED
            client.meta.events.register(
                "choose-signer.bedrock-runtime", lambda **_: unsigned, unique_id=_ATTRIBUTE
            )
        return client
    for http_client in _http_clients(client, provider):
        transports = kit(library_of(http_client) or "httpx")
        asynchronous = _is_async(http_client)

        def wrap(
            inner: Any, asynchronous: bool = asynchronous, transports: Any = transports
        ) -> Any:
            return transports.make(inner, provider, recorder, player, error, asynchronous)

        instrument(http_client, wrap)
    return client


def _is_async(http_client: Any) -> bool:
    return any(cls.__name__ == "AsyncClient" for cls in type(http_client).__mro__)


def recorder_of(client: Any) -> Recorder | Player | None:
    """The ``Recorder`` (``lost``, ``calls``, ``path``, ``close()``) that ``record`` put
    on ``client``, the ``Player`` of ``playback`` (``remaining``), or ``None``."""
    target = getattr(client, "_api_client", client)
    found: Recorder | Player | None = getattr(target, _ATTRIBUTE, None)
    return found


def recording_transport(
    inner: Any, log: Log, *, conversation: str | None = None, store: bool = False
) -> Any:
    """A transport for an ``httpx``/``httpx2`` client you build yourself: sends through
    ``inner`` (that library's transport, sync or async) and records every call into
    ``log`` as ``record`` does. Its ``recorder`` attribute has ``lost`` and ``close()``."""
    library = library_of(inner)
    if library is None:
        raise UnsupportedClientError(
            f"{type(inner).__qualname__} is not an httpx or httpx2 transport"
        )
    transports = kit(library)
    cls = transports.async_recording if _is_async_transport(inner) else transports.recording
    return cls(inner, Recorder(open_sink(log, conversation, store=store)))


def playback_transport(
    log: Log,
    *,
    library: str = "httpx",
    asynchronous: bool = False,
    speed: float | None = None,
    conversation: str | None = None,
    strict: bool = False,
) -> Any:
    """A transport of ``library`` (``"httpx"`` or ``"httpx2"``) answering every call from
    the recording ``log`` as ``playback`` does."""
    name = os.fsdecode(log) if isinstance(log, str | os.PathLike) else str(log.path)
    player = Player(read_calls(log, conversation), speed=speed, path=name, strict=strict)
    transports = kit(library)
    cls = transports.async_playback if asynchronous else transports.playback
    return cls(player)


def _is_async_transport(transport: Any) -> bool:
    return any(cls.__name__ == "AsyncBaseTransport" for cls in type(transport).__mro__)
