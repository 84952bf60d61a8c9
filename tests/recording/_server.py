"""A loopback server (127.0.0.1, a free port) answering each provider's model call with a
body built from the shared recordings, and the faults a recorder must survive: a stream
cut mid-way, an error status with its JSON body, an answer slower than the client's
timeout.

``Loopback.base(answer)`` gives a base URL under which every POST gets ``answer``; the
server is started by the ``with`` and stopped when it ends, so a test can prove that
playback no longer needs it.
"""

from __future__ import annotations

import contextlib
import http.server
import itertools
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs

from definitions._eventstream import encode_frame
from replay.recording._server import running

from .._shared import shared_path

SSE = "text/event-stream"
EVENTSTREAM = "application/vnd.amazon.eventstream"
JSON = "application/json"


@attrs.frozen
class Answer:
    """What the server sends: ``chunks`` written and flushed one by one."""

    chunks: tuple[bytes, ...]
    content_type: str = JSON
    status: int = 200
    cut_after: int | None = None  # close the connection after this many chunks
    delay: float = 0.0  # seconds before the head (a timeout test)
    pace: float = 0.0  # seconds between chunks (a model producing tokens)
    # Each chunk its own HTTP chunk (transfer-encoding: chunked), as the model APIs send
    # a stream: the client then gets one piece per chunk however fast they come.
    chunked: bool = False
    headers: tuple[tuple[str, str], ...] = (("request-id", "req_loopback"),)

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)


class Loopback(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answers: dict[str, list[Answer]] = {}
        self.requests: list[tuple[str, bytes]] = []
        # Set by a test whose clients must stream at the same time: each answer starts
        # only when the barrier's parties have all asked (a hang guard bounds the wait).
        self.together: threading.Barrier | None = None
        self._ids = itertools.count()
        self._lock = threading.Lock()

    def base(self, *answers: Answer) -> str:
        """A base URL whose POSTs get ``answers`` in turn (the last one from then on)."""
        token = str(next(self._ids))
        self.answers[token] = list(answers)
        return f"http://127.0.0.1:{self.server_address[1]}/{token}"

    def root(self, *answers: Answer) -> str:
        """The server's own URL, whose POSTs (under no token) get ``answers`` in turn."""
        self.answers[""] = list(answers)
        return f"http://127.0.0.1:{self.server_address[1]}"

    def next_answer(self, token: str) -> Answer | None:
        with self._lock:
            answers = self.answers.get(token, self.answers.get(""))
            if not answers:
                return None
            return answers.pop(0) if len(answers) > 1 else answers[0]


class _Handler(http.server.BaseHTTPRequestHandler):
    server: Loopback
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        self.server.requests.append((self.path, body))
        answer = self.server.next_answer(self.path.split("/")[1])
        if answer is None:
            self.send_error(404)
            return
        if self.server.together is not None:
            self.server.together.wait(timeout=60)
        # The client may give up first (a timeout test): nothing left to answer then.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._answer(answer)

    def _answer(self, answer: Answer) -> None:
        if answer.delay:
            time.sleep(answer.delay)
        self.send_response(answer.status)
        self.send_header("content-type", answer.content_type)
        if answer.chunked:
            self.send_header("transfer-encoding", "chunked")
        else:
            self.send_header("content-length", str(len(answer.body)))
        for name, value in answer.headers:
            self.send_header(name, value)
        self.end_headers()
        for i, chunk in enumerate(answer.chunks):
            if answer.cut_after is not None and i == answer.cut_after:
                self.close_connection = True
                return
            if answer.pace and i:
                time.sleep(answer.pace)
            if answer.chunked:
                chunk = b"%x\r\n%s\r\n" % (len(chunk), chunk)
            self.wfile.write(chunk)
            self.wfile.flush()
        if answer.chunked:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: pytest shows failures, not every request


@contextmanager
def serving() -> Iterator[Loopback]:
    with running(Loopback()) as server:
        yield server


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def sse(events: list[dict[str, Any]], *, named: bool, done: bool = False) -> tuple[bytes, ...]:
    frames = [
        (f"event: {e['type']}\n" if named else "").encode()
        + b"data: "
        + json.dumps(e).encode()
        + b"\n\n"
        for e in events
    ]
    return (*frames, *([b"data: [DONE]\n\n"] if done else []))


def sse_file(*parts: str) -> tuple[bytes, ...]:
    """An SSE body as recorded, split at its frames (as a server flushes them)."""
    text = shared_path(*parts).read_bytes()
    pieces = text.split(b"\n\n")
    return tuple(piece + b"\n\n" for piece in pieces if piece.strip())


def anthropic_stream() -> Answer:
    return Answer(sse_file("fixtures", "recorded", "anthropic_sdk_tool_use_response.sse"), SSE)


def anthropic_text_stream() -> Answer:
    return Answer(sse_file("fixtures", "recorded", "anthropic-sdk-basic_response.txt"), SSE)


def anthropic_message() -> Answer:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": "Hello there."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 4},
    }
    return Answer((json.dumps(message).encode(),))


def openai_chat_stream() -> Answer:
    return Answer(sse_file("fixtures", "recorded", "openai_chat_parallel_tools.sse"), SSE)


def openai_chat_completion() -> Answer:
    completion = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "gpt-test",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hi!"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 2, "completion_tokens": 2, "total_tokens": 4},
    }
    return Answer((json.dumps(completion).encode(),))


def openai_responses_stream() -> Answer:
    path = shared_path("fixtures", "recorded", "vercel-openai-responses-openai-phase.1.chunks.txt")
    return Answer(sse(_lines(path), named=True), SSE)


def openai_response() -> Answer:
    events = _lines(
        shared_path("fixtures", "recorded", "vercel-openai-responses-openai-phase.1.chunks.txt")
    )
    final = next(e["response"] for e in reversed(events) if e["type"] == "response.completed")
    return Answer((json.dumps(final).encode(),))


def gemini_stream() -> Answer:
    events = _lines(shared_path("fixtures", "recorded", "gemini", "google-text.chunks.txt"))
    return Answer(tuple(b"data: " + json.dumps(e).encode() + b"\r\n\r\n" for e in events), SSE)


def gemini_response() -> Answer:
    body = shared_path("fixtures", "recorded", "gemini", "google-text.json").read_bytes()
    return Answer((body,))


def bedrock_stream() -> Answer:
    events = _lines(
        shared_path("fixtures", "recorded", "bedrock", "amazon-bedrock-text.chunks.txt")
    )
    frames = []
    for event in events:
        [(name, payload)] = event.items()
        headers = {
            ":message-type": "event",
            ":event-type": name,
            ":content-type": "application/json",
        }
        frames.append(encode_frame(headers, json.dumps(payload).encode()))
    return Answer(tuple(frames), EVENTSTREAM)


def bedrock_response() -> Answer:
    body = shared_path("fixtures", "recorded", "bedrock", "amazon-bedrock-text.json").read_bytes()
    return Answer((body,))


def expected_events(answer: Answer) -> list[dict[str, Any]]:
    """The ``recording/event`` and ``recording/body`` payloads ``answer`` should leave in
    a log (without ``call``), decoded independently of the recorder's parser."""
    if answer.content_type == EVENTSTREAM:
        from definitions._eventstream import decode_frames

        return [
            {
                "type": "recording/event",
                "event": {frame.headers[":event-type"]: json.loads(frame.payload)},
            }
            for frame in decode_frames(answer.body)
        ]
    if answer.content_type != SSE:
        return [{"type": "recording/body", "body": json.loads(answer.body)}]
    out: list[dict[str, Any]] = []
    for frame in answer.body.replace(b"\r\n", b"\n").split(b"\n\n"):
        fields = dict(line.split(": ", 1) for line in frame.decode().splitlines() if ": " in line)
        if "data" not in fields:
            continue
        if fields["data"] == "[DONE]":
            out.append({"type": "recording/event", "done": True})
            continue
        record: dict[str, Any] = {"type": "recording/event", "event": json.loads(fields["data"])}
        if "event" in fields:
            record["sse"] = fields["event"]
        out.append(record)
    return out


def main() -> None:
    """``python -m tests.recording._server BODY CONTENT_TYPE [PACE [chunked]]``: serve the
    file BODY, split at blank lines (SSE frames), to every POST (with ``chunked``, each
    frame its own HTTP chunk), from its own process (a benchmark's client then shares no
    interpreter lock with it); prints the port, then serves until killed."""
    import sys

    body, content_type = Path(sys.argv[1]).read_bytes(), sys.argv[2]
    pace = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    chunked = sys.argv[4:5] == ["chunked"]
    chunks = tuple(piece + b"\n\n" for piece in body.split(b"\n\n") if piece.strip())
    server = Loopback()
    server.root(Answer(chunks, content_type, pace=pace, chunked=chunked))
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
