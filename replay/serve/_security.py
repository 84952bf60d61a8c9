"""What keeps ``convo serve`` safe on a shared machine: hosts, tokens, request bodies.

Every rule here is one a hostile neighbour or web page would test:

- DNS rebinding: a page on ``attacker.example`` whose name is made to resolve to
  127.0.0.1 reaches a loopback server with ``Host: attacker.example``. Only loopback
  names and the names the server was told of are answered, by Starlette's own
  ``TrustedHostMiddleware`` (``allowed_hosts``).
- Tokens: an empty or short token would be a lock anyone opens; ``check_token``
  refuses one under ``MIN_TOKEN`` characters before the server starts. Compared in
  constant time (``hmac.compare_digest``).
- Reads: with a read token every page and stream needs it (``ReadTokenMiddleware``):
  ``Authorization: Bearer``, or ``?token=`` once, which sets an HttpOnly, SameSite
  cookie so the page's own stream and links work in a browser that cannot send
  headers. The cookie is named per port and holds a value derived from the token
  (HMAC-SHA256), not the token: browsers send a host's cookies to all its ports.
  The static script and stylesheet are public (they hold no conversation).
- Bodies: read within ``limit`` bytes and ``timeout`` seconds (``read_body``), so a
  client slower than its ``Content-Length`` cannot hold a connection for ever; parsed
  with nesting past the recursion limit refused, every event checked against the
  server's vocabulary exactly as ``convo replay`` decodes it (``parse_events``), and
  the conversation id checked (``conversation_problem``): nothing the replay would
  refuse is stored.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import unicodedata
from collections.abc import Sequence
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs

import msgspec
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..logs._jsonl import event_types

__all__ = [
    "LOOPBACK_HOSTS",
    "MIN_TOKEN",
    "BadEventsError",
    "BodyError",
    "ReadTokenMiddleware",
    "allowed_hosts",
    "bearer_matches",
    "check_token",
    "conversation_problem",
    "cookie_name",
    "parse_events",
    "read_body",
]

MIN_TOKEN = 16
"""The shortest token accepted: 16 characters (``secrets.token_urlsafe()`` gives 43)."""

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
"""The ``Host`` names a loopback server answers to whatever it was told."""

MAX_ID = 256  # characters in a conversation id
_COOKIE = "convo_read"
_decode: msgspec.json.Decoder[Any] = msgspec.json.Decoder()


def check_token(token: str | None, what: str) -> None:
    """``ValueError`` naming ``what`` (e.g. ``"the ingest token"``) when ``token`` is
    set but empty or shorter than ``MIN_TOKEN``; ``None`` means no token."""
    if token is None or len(token) >= MIN_TOKEN:
        return
    size = "empty" if not token else f"only {len(token)} characters"
    raise ValueError(
        f"{what} is {size}: use at least {MIN_TOKEN} random characters, e.g. "
        "python -c 'import secrets; print(secrets.token_urlsafe())'"
    )


def allowed_hosts(bind: str, extra: Sequence[str] = ()) -> list[str]:
    """The ``Host`` names to answer: loopback ones, the bound address unless it is a
    wildcard (0.0.0.0, ::), and ``extra`` (names the server is reached by)."""
    hosts = [*LOOPBACK_HOSTS, *extra]
    try:
        address = ipaddress.ip_address(bind)
    except ValueError:
        hosts.append(bind)  # a name
    else:
        if not address.is_unspecified:
            hosts.append(f"[{address}]" if address.version == 6 else str(address))
    return list(dict.fromkeys(host.lower() for host in hosts))


def bearer_matches(header: str, token: str) -> bool:
    """Whether an ``Authorization`` header value is ``Bearer <token>`` (constant time)."""
    scheme, _, given = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        given.strip().encode(), token.encode()
    )


class ReadTokenMiddleware:
    """Every request but the static files and ingest (which has its own token) needs
    the read token: a bearer header, the cookie, or ``?token=`` (which sets the cookie).
    A pure ASGI wrapper, like the server's others, for long-lived streams."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        check_token(token, "the read token")
        self.app = app
        self.token = token
        # The cookie holds a value derived from the token, never the token: a cookie
        # that reaches another server (browsers scope cookies by host, not port) or
        # a log is no bearer token, and opens nothing but this server's pages.
        self.cookie = hmac.new(token.encode(), b"convo read cookie", hashlib.sha256).hexdigest()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _public(scope):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        name = cookie_name(headers.get("host", ""), scope)
        given = _cookie(headers.get("cookie", ""), name)
        if bearer_matches(headers.get("authorization", ""), self.token) or (
            given is not None and hmac.compare_digest(given.encode(), self.cookie.encode())
        ):
            await self.app(scope, receive, send)
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if not self._matches(query.get("token", [None])[-1]):
            response = JSONResponse(
                {
                    "error": "this server needs its read token: send 'Authorization: Bearer "
                    "TOKEN', or open the page once with ?token=TOKEN"
                },
                status_code=401,
                headers={"www-authenticate": "Bearer"},
            )
            await response(scope, receive, send)
            return
        cookie = (
            f"{name}={self.cookie}; HttpOnly; SameSite=Strict; "
            f"Path={scope.get('root_path', '') or '/'}"
        ).encode("latin-1")

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"set-cookie", cookie)]
            await send(message)

        await self.app(scope, receive, send_with_cookie)

    def _matches(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())


def _public(scope: Scope) -> bool:
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root) :]
    return path.startswith("/static/") or (
        scope["method"] == "POST"
        and path.startswith("/conversations/")
        and path.endswith("/events")
    )


def cookie_name(host: str, scope: Scope) -> str:
    """The read cookie's name, one per port (``convo_read_8000``): browsers send a
    host's cookies to every port of it, so two servers on one host keep apart."""
    _, colon, port = host.rpartition(":")
    if not (colon and port.isdigit()):
        server = scope.get("server")
        port = str(server[1]) if server and server[1] else "80"
    return f"{_COOKIE}_{port}"


def _cookie(header: str, name: str) -> str | None:
    try:
        morsel = SimpleCookie(header).get(name)
    except Exception:  # a malformed Cookie header is no token
        return None
    return None if morsel is None else morsel.value


class BadEventsError(ValueError):
    """An ingest body whose events the server will not store: which line or item, and why."""


class BodyError(Exception):
    """A request body that was not read: ``status`` (408, 413) and why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def read_body(request: Request, *, limit: int, timeout: float) -> bytes:
    """The body, read within ``limit`` bytes and ``timeout`` seconds, else ``BodyError``."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyError(413, f"body over {limit} bytes; send fewer events per request")
    body = bytearray()
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                body += chunk
                if len(body) > limit:
                    raise BodyError(413, f"body over {limit} bytes; send fewer events per request")
    except TimeoutError:
        raise BodyError(
            408, f"the body did not arrive within {timeout:g} s; send it at once"
        ) from None
    return bytes(body)


def conversation_problem(conversation: str) -> str | None:
    """Why ``conversation`` cannot be an id to ingest into, or ``None``: ids are
    1 to ``MAX_ID`` characters with no ``/`` (its page could not be routed) and no
    control characters."""
    if not conversation:
        return "a conversation id cannot be empty"
    if len(conversation) > MAX_ID:
        return f"a conversation id has at most {MAX_ID} characters, not {len(conversation)}"
    if "/" in conversation:
        return f"a conversation id cannot contain '/': {conversation!r}"
    if any(unicodedata.category(c) == "Cc" for c in conversation):
        return f"a conversation id cannot contain control characters: {conversation!r}"
    return None


def parse_events(body: bytes, vocabulary: Any = None) -> list[dict[str, Any]]:
    """The events of an ingest body: one JSON object, a JSON array of objects, or JSON
    Lines (one object per line, blank lines ignored).

    Raises ``BadEventsError`` (a ``ValueError``) naming the line (or array item)
    that is not a JSON object, has a ``type`` that is not a string, is nested past
    the recursion limit, or that ``vocabulary`` (an event vocabulary, as ``convo
    replay`` decodes with) refuses: the same rule as the replay's. The events are
    returned as plain objects, as they are stored.
    """
    try:
        whole = _decode.decode(body)
    except RecursionError:
        raise BadEventsError(_DEEP) from None
    except msgspec.DecodeError:
        items = _lines(body)
        where = [f"line {number}" for number, _ in items]
        events = [event for _, event in items]
    else:
        events = whole if isinstance(whole, list) else [whole]
        if isinstance(whole, list):
            where = [f"item {index}" for index in range(len(events))]
        else:
            where = ["the body"]
    if not events:
        raise BadEventsError("no events in the body")
    typed = None if vocabulary is None else event_types(vocabulary)
    for place, event in zip(where, events, strict=True):
        if not isinstance(event, dict):
            raise BadEventsError(f"{place}: an event is a JSON object")
        # Every reader routes by "type" (detection, the sets' pre-passes): a type that
        # is not a string is no event any of them takes.
        kind = event.get("type", "")
        if not isinstance(kind, str):
            raise BadEventsError(f"{place}: 'type' is a string, not {type(kind).__name__}")
        if typed is not None:
            try:
                typed.convert(event)
            except msgspec.ValidationError as exc:
                raise BadEventsError(f"{place}: {exc}") from None
    return events


_DEEP = "nested deeper than the decoder follows (arrays and objects within each other)"


def _lines(body: bytes) -> list[tuple[int, Any]]:
    items: list[tuple[int, Any]] = []
    for number, line in enumerate(body.splitlines(), 1):
        if not line.strip():
            continue
        try:
            items.append((number, _decode.decode(line)))
        except RecursionError:
            raise BadEventsError(f"line {number}: {_DEEP}") from None
        except msgspec.DecodeError as exc:
            raise BadEventsError(f"line {number}: {exc}") from None
    return items
