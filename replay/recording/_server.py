"""The playback server: a recording served on a loopback port as the providers' own HTTP
APIs (Anthropic Messages, OpenAI Chat Completions and Responses, Gemini, Bedrock
Converse), for an agent in any language. It points its base URL at the server
(``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``, ``GOOGLE_GEMINI_BASE_URL``,
``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``, or ``curl``) and each request is answered from the
recording by the ``Player`` that ``replay.playback`` uses: the same matching, the same
mismatch errors, the same bytes (a stream chunk by chunk as it arrived).

Theory of operation
-------------------
A ``ThreadingHTTPServer`` speaking HTTP/1.1 (the SDKs keep their connection). Each
request's body is read whole and handed to ``Player.take`` with the path and method.
A recorded answer goes back with its status and headers; its body with a
``content-length`` when it is one chunk, else chunk by chunk (``Transfer-Encoding:
chunked``), paced by the recorded times with ``speed``. A call recorded as cut ends the
connection where it was cut, as the transport saw it; one that failed before any
answer closes the connection unanswered. A request the recording does not hold gets
``400`` with the mismatch message in a body every SDK reads as its error (``error.message``;
``message`` for Bedrock) and ``x-should-retry: false``, and is printed on stderr.

Only loopback addresses are served: the server answers anyone who reaches it.

May import what ``replay.recording`` may; the standard library's ``http.server``.
"""

from __future__ import annotations

import contextlib
import http.server
import ipaddress
import json
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Iterator
from typing import IO, Any, TypeVar

from ._errors import PlaybackMismatchError, RecordingError
from ._player import Player, RecordedCall

__all__ = ["PlaybackServer", "serving"]

# Headers that describe the recorded transfer, not the answer: the server frames the
# body itself.
_TRANSFER = frozenset({"content-length", "transfer-encoding", "content-encoding", "connection"})


class PlaybackServer(http.server.ThreadingHTTPServer):
    """Serves ``player``'s recording on ``host``:``port`` (0: a free port; ``url`` says
    which). Mismatches are printed to ``log`` (stderr by default)."""

    daemon_threads = True

    def __init__(
        self, player: Player, *, host: str = "127.0.0.1", port: int = 0, log: IO[str] | None = None
    ) -> None:
        if ":" in host:
            self.address_family = socket.AF_INET6
        self.player = player
        self.log = log
        super().__init__((host, port), _Handler)
        if not ipaddress.ip_address(str(self.server_address[0])).is_loopback:  # as bound
            self.server_close()
            raise RecordingError(
                f"the playback server serves loopback addresses only (127.0.0.1, ::1), "
                f"not {host!r}: it answers anyone who reaches it"
            )

    @property
    def url(self) -> str:
        """The base URL to point a client at."""
        host, port = str(self.server_address[0]), self.server_address[1]
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}"


@contextlib.contextmanager
def serving(player: Player, *, host: str = "127.0.0.1", port: int = 0) -> Iterator[PlaybackServer]:
    """A ``PlaybackServer`` running in a thread for the ``with`` block, stopped after."""
    with running(PlaybackServer(player, host=host, port=port)) as server:
        yield server


S = TypeVar("S", bound=socketserver.BaseServer)


@contextlib.contextmanager
def running(server: S) -> Iterator[S]:
    """``server`` serving in a thread for the ``with`` block, then shut down and closed
    (the tests' loopback servers run this way too)."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class _Handler(http.server.BaseHTTPRequestHandler):
    server: PlaybackServer
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self._answer()

    do_GET = do_PUT = do_DELETE = do_PATCH = do_POST

    def _answer(self) -> None:
        content = self._body()
        player = self.server.player
        try:
            recorded = player.take(None, self.command, self.path, content)
        except PlaybackMismatchError as exc:
            self._mismatch(str(exc))
            return
        # The client may give up first: nothing left to answer then.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._send(recorded, player.speed)

    def _body(self) -> bytes:
        """The request's body: ``content-length`` bytes, or its chunks (a client
        streaming its request, as Node's fetch may)."""
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            parts = []
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                parts.append(self.rfile.read(size))
                self.rfile.readline()  # the CRLF after the chunk
            while self.rfile.readline().strip():  # trailers, up to the blank line
                pass
            return b"".join(parts)
        length = self.headers.get("content-length", "")
        return self.rfile.read(int(length)) if length.isdigit() else b""

    def _send(self, recorded: RecordedCall, speed: float | None) -> None:
        if recorded.status is None:  # failed before any answer: none is given
            self.close_connection = True
            return
        chunks = list(recorded.chunks(speed))
        whole = len(chunks) <= 1 and not recorded.raises and not recorded.request.get("stream")
        self.send_response(recorded.status)
        for name, value in recorded.headers.items():
            if name not in _TRANSFER:
                self.send_header(name, value)
        if "content-type" not in recorded.headers:
            self.send_header("content-type", recorded.content_type)
        if whole:
            body = chunks[0][0] if chunks else b""
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for chunk, delay in chunks:
            if delay:
                time.sleep(delay)
            if chunk:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
        if recorded.raises:  # cut as recorded: no last chunk, the connection ends
            self.close_connection = True
            return
        self.wfile.write(b"0\r\n\r\n")

    def _mismatch(self, message: str) -> None:
        print(f"convo playback-server: {message}", file=self.server.log or sys.stderr, flush=True)
        error = {"type": "playback_mismatch", "code": 400, "status": "INVALID_ARGUMENT"}
        body = json.dumps(
            {"type": "error", "error": {**error, "message": message}, "message": message}
        ).encode()
        self.send_response(400)
        self.send_header("content-type", "application/json")
        self.send_header("x-should-retry", "false")
        self.send_header("x-amzn-errortype", "ValidationException")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: mismatches are printed, answers are the recording's
