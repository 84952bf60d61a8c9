"""A loopback HTTP server that answers every request with one recorded body, so an
official client (google-genai, boto3) can be pointed at it and iterated as in an
application. Listens on 127.0.0.1 on a free port; stopped when the ``with`` ends."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from replay.recording._server import running


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.server.paths.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", self.server.content_type)
        self.send_header("Content-Length", str(len(self.server.body)))
        self.end_headers()
        self.wfile.write(self.server.body)

    def log_message(self, format: str, *args: object) -> None:  # quiet tests
        pass


class _Server(ThreadingHTTPServer):
    body: bytes
    content_type: str
    paths: list[str]


@contextmanager
def serving(body: bytes, content_type: str) -> Iterator[_Server]:
    """A server answering ``body`` to every POST; ``.server_address`` has its port."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.body, server.content_type, server.paths = body, content_type, []
    with running(server):
        yield server
