"""The server on a shared machine: hosts, tokens, hostile bodies and ids, clean stops."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._shared import require_serve

require_serve()

from definitions import builtin  # noqa: E402
from replay import LogError, SQLiteStore, load_events  # noqa: E402
from replay.serve import ServeOptions, create_app  # noqa: E402
from replay.serve._app import parse_events  # noqa: E402
from replay.serve._command import main  # noqa: E402
from replay.serve._security import allowed_hosts  # noqa: E402
from tests.serve._helpers import running  # noqa: E402

TOKEN = "ingest-token-0123456789"
READ = "read-token-0123456789"
EVENT = {"type": "message.start", "id": "m", "role": "user", "text": "hello"}
ROOT = Path(__file__).parents[2]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "events.sqlite"
    with SQLiteStore(path) as s:
        s.append("c", [EVENT])
    return path


def app_for(store: Path, **options: Any) -> Any:
    return create_app(store, ServeOptions(poll_interval=3600.0, **options))


def run(scenario: Any) -> None:
    asyncio.run(scenario())


class TestHosts:
    """DNS rebinding: only loopback names and the names the server was told of."""

    @pytest.mark.parametrize("host", ["attacker.example.com", "evil.localhost.example", "10.0.0.1"])
    def test_a_foreign_host_is_refused(self, store: Path, host: str) -> None:
        async def scenario() -> None:
            async with running(app_for(store)) as client:
                for path in ("/", "/conversations/c", "/conversations/c/stream"):
                    response = await client.get(path, headers={"Host": host})
                    assert response.status_code == 400, path
                    assert "hello" not in response.text
                    assert response.headers["x-content-type-options"] == "nosniff"

        run(scenario)

    @pytest.mark.parametrize("host", ["localhost", "127.0.0.1:8000", "[::1]:8000", "LOCALHOST"])
    def test_loopback_names_are_answered(self, store: Path, host: str) -> None:
        async def scenario() -> None:
            async with running(app_for(store)) as client:
                response = await client.get("/conversations/c", headers={"Host": host})
                assert response.status_code == 200
                assert "hello" in response.text

        run(scenario)

    def test_the_configured_names(self) -> None:
        assert allowed_hosts("127.0.0.1") == ["localhost", "127.0.0.1", "[::1]"]
        assert allowed_hosts("0.0.0.0", ["box.lan"])[-1] == "box.lan"
        assert "0.0.0.0" not in allowed_hosts("0.0.0.0")
        assert allowed_hosts("::1") == ["localhost", "127.0.0.1", "[::1]"]
        assert allowed_hosts("fd00::5")[-1] == "[fd00::5]"
        assert allowed_hosts("Box.Lan")[-1] == "box.lan"

    def test_a_configured_name_is_answered(self, store: Path) -> None:
        async def scenario() -> None:
            app = app_for(store, hosts=allowed_hosts("0.0.0.0", ["box.lan"]))
            async with running(app) as client:
                assert (await client.get("/", headers={"Host": "box.lan:80"})).status_code == 200
                assert (await client.get("/", headers={"Host": "other.lan"})).status_code == 400

        run(scenario)


class TestTokens:
    """Empty or short tokens are refused before serving; reads can need a token too."""

    @pytest.mark.parametrize("token", ["", "short", "x" * 15])
    @pytest.mark.parametrize("which", ["token", "read_token"])
    def test_a_short_token_is_refused(self, store: Path, token: str, which: str) -> None:
        with pytest.raises(ValueError, match="at least 16 random characters"):
            ServeOptions(**{which: token})

    @pytest.mark.parametrize("argv", [["--token", ""], ["--read-token", "abc"]])
    def test_the_command_refuses_it_at_start_up(
        self, store: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert main(["--store", str(store), "--port", "0", *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith("convo serve: the ")
        assert "at least 16 random characters" in err

    def test_an_empty_environment_token_is_refused(
        self, store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        monkeypatch.setenv("CONVO_SERVE_TOKEN", "")
        import replay.serve._command as serve_cli

        parser = serve_cli.argparse.ArgumentParser()
        serve_cli.add_arguments(parser)
        args = parser.parse_args(["--store", str(store), "--port", "0"])
        assert serve_cli.run(args) == 2
        assert "the ingest token is empty" in capsys.readouterr().err

    def test_help_presents_the_environment_first(self) -> None:
        import replay.serve._command as serve_cli

        parser = serve_cli.argparse.ArgumentParser()
        serve_cli.add_arguments(parser)
        helps = {a.dest: a.help or "" for a in parser._actions}
        assert helps["token"].startswith("$CONVO_SERVE_TOKEN (preferred")
        assert helps["read_token"].startswith("$CONVO_SERVE_READ_TOKEN (preferred")

    def test_an_empty_bearer_never_ingests(self, store: Path) -> None:
        async def scenario() -> None:
            async with running(app_for(store, token=TOKEN)) as client:
                for header in ("Bearer", "Bearer ", "Bearer  "):
                    response = await client.post(
                        "/conversations/x/events", json=EVENT, headers={"Authorization": header}
                    )
                    assert response.status_code == 401

        run(scenario)

    def test_reads_need_the_read_token(self, store: Path) -> None:
        async def scenario() -> None:
            async with running(app_for(store, token=TOKEN, read_token=READ)) as client:
                for path in (
                    "/",
                    "/conversations/c",
                    "/conversations/c/stream?after=1",
                    "/conversations/c/ui-message-stream",
                    "/conversations/c/ag-ui",
                ):
                    response = await client.get(path)
                    assert response.status_code == 401, path
                    assert "hello" not in response.text
                    wrong = await client.get(path, headers={"Authorization": f"Bearer {TOKEN}"})
                    assert wrong.status_code == 401
                page = await client.get(
                    "/conversations/c", headers={"Authorization": f"Bearer {READ}"}
                )
                assert page.status_code == 200
                assert "hello" in page.text
                # The static files hold no conversation: public, so the page can load them.
                assert (await client.get("/static/convo.js")).status_code == 200

        run(scenario)

    def test_a_browser_opens_with_the_token_once(self, store: Path) -> None:
        async def scenario() -> None:
            async with running(app_for(store, read_token=READ)) as client:
                response = await client.get(f"/conversations/c?token={READ}")
                assert response.status_code == 200
                cookie = response.headers["set-cookie"]
                # Named for the port (httpx's base URL has none: port 80), holding a
                # value derived from the token, never the token itself.
                assert cookie.startswith("convo_read_80=")
                assert cookie.endswith("; HttpOnly; SameSite=Strict; Path=/")
                assert READ not in cookie
                value = cookie.split(";")[0].split("=", 1)[1]
                bearer = {"Authorization": f"Bearer {value}"}
                assert (await client.get("/", headers=bearer)).status_code == 200  # cookie
                other = {"cookie": f"convo_read_8001={value}"}
                client.cookies.clear()
                assert (await client.get("/", headers=other)).status_code == 401
                assert (await client.get("/", headers=bearer)).status_code == 401
                assert (await client.get(f"/?token={READ}")).status_code == 200
                # httpx keeps the cookie: the page's links and its stream now work.
                assert (await client.get("/")).status_code == 200
                assert (await client.get("/conversations/c")).status_code == 200
                client.cookies.clear()
                assert (await client.get("/")).status_code == 401
                assert (await client.get("/?token=wrong-token-but-long")).status_code == 401

        run(scenario)

    def test_ingest_keeps_its_own_token(self, store: Path) -> None:
        async def scenario() -> None:
            async with running(app_for(store, token=TOKEN, read_token=READ)) as client:
                url = "/conversations/c/events"
                response = await client.post(
                    url, json=EVENT, headers={"Authorization": f"Bearer {READ}"}
                )
                assert response.status_code == 401
                response = await client.post(
                    url, json=EVENT, headers={"Authorization": f"Bearer {TOKEN}"}
                )
                assert response.status_code == 201

        run(scenario)

    def test_one_token_for_both(self, store: Path) -> None:
        async def scenario() -> None:
            async with running(app_for(store, token=TOKEN, read_token=TOKEN)) as client:
                headers = {"Authorization": f"Bearer {TOKEN}"}
                assert (await client.get("/", headers=headers)).status_code == 200
                response = await client.post("/conversations/c/events", json=EVENT, headers=headers)
                assert response.status_code == 201

        run(scenario)


DEEP = b"[" * 100_000 + b"]" * 100_000


class TestBodies:
    """Hostile bodies get a 400 (or 408, 413) naming the problem; nothing is stored."""

    async def post(self, client: Any, body: bytes, conversation: str = "c") -> Any:
        return await client.post(
            f"/conversations/{conversation}/events",
            content=body,
            headers={"Authorization": f"Bearer {TOKEN}"},
        )

    @pytest.mark.parametrize(
        ("body", "problem"),
        [
            (DEEP, "nested deeper"),
            (b'{"type":"x","v":' + DEEP + b"}", "nested deeper"),
            (b'{"type":"x"}\n' + DEEP + b"\n", "line 2: nested deeper"),
            # Events of the built-in vocabulary that convo replay refuses: refused here.
            (
                json.dumps({"type": "approval.decision", "id": "a", "decision": "maybe"}).encode(),
                "the body: Invalid enum value 'maybe'",
            ),
            (
                json.dumps([EVENT, {"type": "message.delta", "id": "m", "text": 7}]).encode(),
                "item 1: Expected `str`, got `int`",
            ),
            (
                json.dumps(EVENT).encode() + b'\n{"type":"status.update"}\n',
                "line 2: Object missing required field `id`",
            ),
            (b"[1, 2]", "item 0: an event is a JSON object"),
        ],
        ids=["deep-array", "deep-field", "deep-line", "enum", "field", "missing", "not-object"],
    )
    def test_refused_and_nothing_stored(self, store: Path, body: bytes, problem: str) -> None:
        async def scenario() -> None:
            async with running(app_for(store, token=TOKEN)) as client:
                response = await self.post(client, body)
                assert response.status_code == 400
                assert problem in response.json()["error"]
            with SQLiteStore(store) as check:
                assert check.length("c") == 1

        run(scenario)

    def test_plug_in_kinds_pass(self, store: Path) -> None:
        async def scenario() -> None:
            async with running(app_for(store, token=TOKEN)) as client:
                response = await self.post(client, b'{"type":"sticky","id":"s","anything":[1]}')
                assert response.status_code == 201

        run(scenario)

    @pytest.mark.parametrize(
        ("conversation", "problem"),
        [("", "cannot be empty"), ("team/run", "cannot contain '/'"), ("a%07b", "control")],
    )
    def test_bad_ids_are_refused(self, store: Path, conversation: str, problem: str) -> None:
        async def scenario() -> None:
            async with running(app_for(store, token=TOKEN)) as client:
                response = await self.post(client, json.dumps(EVENT).encode(), conversation)
                assert response.status_code == 400
                assert problem in response.json()["error"]
            with SQLiteStore(store) as check:
                assert check.conversations() == {"c": 1}

        run(scenario)

    def test_a_long_id_is_refused(self, store: Path) -> None:
        async def scenario() -> None:
            async with running(app_for(store, token=TOKEN)) as client:
                response = await self.post(client, json.dumps(EVENT).encode(), "x" * 257)
                assert response.status_code == 400
                assert "at most 256 characters" in response.json()["error"]

        run(scenario)

    def test_a_body_slower_than_its_length_is_cut(self, store: Path) -> None:
        # The ASGI messages a client sends that declares 100 bytes and sends 10, then
        # nothing: the request is answered 408 when the body timeout ends.
        app = app_for(store, token=TOKEN, body_timeout=0.05)

        async def scenario() -> None:
            async with app.router.lifespan_context(app):
                sent: list[Any] = []
                stall = asyncio.Event()
                parts = [{"type": "http.request", "body": b'{"type":"', "more_body": True}]

                async def receive() -> Any:
                    if parts:
                        return parts.pop()
                    await stall.wait()  # never set: the rest never comes
                    return {"type": "http.disconnect"}

                async def send(message: Any) -> None:
                    sent.append(message)

                scope = {
                    "type": "http",
                    "asgi": {"version": "3.0"},
                    "http_version": "1.1",
                    "method": "POST",
                    "scheme": "http",
                    "path": "/conversations/c/events",
                    "raw_path": b"/conversations/c/events",
                    "query_string": b"",
                    "root_path": "",
                    "headers": [
                        (b"host", b"localhost"),
                        (b"authorization", f"Bearer {TOKEN}".encode()),
                        (b"content-length", b"100"),
                    ],
                    "client": ("127.0.0.1", 50000),
                    "server": ("localhost", 80),
                }
                await asyncio.wait_for(app(scope, receive, send), 20)  # a hang guard
                assert sent[0]["status"] == 408
                assert b"did not arrive within" in sent[1]["body"]

        run(scenario)


_known = st.sampled_from(
    [
        {"type": "approval.decision", "id": "a", "decision": "approved"},
        {"type": "approval.decision", "id": "a", "decision": "perhaps"},
        {"type": "status.update", "id": "s", "status": "done"},
        {"type": "status.update", "id": "s", "status": "exploded"},
        {"type": "message.delta", "id": "m", "text": "x"},
        {"type": "message.delta", "id": "m", "text": None},
        {"type": "message.start", "id": 3},
        {"type": "plug.in", "whatever": [1]},
    ]
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_known, min_size=1, max_size=6))
def test_ingest_refuses_exactly_what_replay_refuses(events: list[dict[str, Any]]) -> None:
    """One rule for both: the server's ingest and convo replay's strict decoding."""
    body = "".join(json.dumps(e) + "\n" for e in events).encode()
    replayed: LogError | None = None
    try:
        load_events(io.BytesIO(body), types=builtin.Event)
    except LogError as exc:
        replayed = exc
    if replayed is None:
        assert parse_events(body, builtin.Event) == events
        return
    where = "the body" if len(events) == 1 else f"line {replayed.line}"
    with pytest.raises(ValueError, match=f"^{where}: ") as info:
        parse_events(body, builtin.Event)
    assert str(info.value).split(": ", 1)[1] in str(replayed)


def convo_serve(store: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    """``convo serve --store STORE`` on a free port in a child process, and its URL."""
    command = ["serve", "--store", str(store), "--port", "0", *extra]
    server = subprocess.Popen(
        [sys.executable, "-m", "replay", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert server.stdout is not None
    line = server.stdout.readline()
    assert line.startswith("convo serve: http://"), line
    return server, line.split()[-1].rstrip("/")


@pytest.mark.slow
def test_stopping_the_server_ends_streams_cleanly(tmp_path: Path) -> None:
    """SIGINT with a stream open: the stream ends with a complete response, exit 0,
    and nothing on stderr (no "ASGI callable returned without completing response")."""
    import httpx

    store = tmp_path / "events.sqlite"
    with SQLiteStore(store) as s:
        s.append("c", [EVENT])
    server, url = convo_serve(store)
    try:
        with httpx.stream("GET", f"{url}/conversations/c/stream", timeout=20) as response:
            assert response.status_code == 200
            chunks = response.iter_bytes()
            first = next(chunks)
            assert first.startswith(b"retry:")
            server.send_signal(signal.SIGINT)
            rest = b"".join(chunks)  # ends when the server completes the response
        assert b"event: patch" in first + rest
        _, err = server.communicate(timeout=20)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert server.returncode == 0
    assert "ASGI callable" not in err
    assert err == ""


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
_EXAMPLE = [
    json.loads(line)
    for line in (ROOT / "replay" / "examples" / "agent_session.jsonl").read_text().splitlines()
    if line.strip()
]


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(
    st.integers(0, len(_EXAMPLE) - 1),
    st.data(),
    _JSON,
    st.sampled_from([builtin.Event, None]),
)
def test_any_value_in_any_field_is_a_400_with_nothing_stored_or_a_page(
    at: int, data: st.DataObject, value: Any, vocabulary: Any
) -> None:
    """An example conversation with one event's field retyped to any JSON value:
    ingest answers 400 and stores nothing, or stores it and the page still shows
    (a bad event is skipped and said on the page, never an HTTP 500)."""
    import tempfile

    event = dict(_EXAMPLE[at])
    event[data.draw(st.sampled_from(sorted(event)), label="field")] = value
    body = "".join(json.dumps(e) + "\n" for e in [*_EXAMPLE[:at], event]).encode()

    async def scenario(path: Path) -> None:
        app = app_for(path, token=TOKEN, vocabulary=vocabulary)
        async with running(app) as client:
            response = await client.post(
                "/conversations/c/events",
                content=body,
                headers={"authorization": f"Bearer {TOKEN}"},
            )
            assert response.status_code in (201, 400), response.text
            if response.status_code == 400:
                assert response.json()["error"].startswith("bad events: ")
                with SQLiteStore(path) as store:
                    assert store.length("c") == 0
                return
            page = await client.get("/conversations/c")
            assert page.status_code == 200

    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(scenario(Path(directory) / "events.sqlite"))


@pytest.mark.slow
def test_a_client_that_trickles_its_headers_is_cut_off(tmp_path: Path) -> None:
    """uvicorn alone would keep a connection whose headers never end for ever; the
    server closes it at its header deadline, and serves a whole request as before."""
    import socket

    store = tmp_path / "events.sqlite"
    with SQLiteStore(store) as s:
        s.append("c", [EVENT])
    # 2 s: a deadline the whole request below meets with a wide margin on a busy machine.
    server, url = convo_serve(store, "--header-timeout", "2")
    try:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=20) as slow:  # hang guard
            slow.sendall(b"GET / HTTP/1.1\r\nHost: local")  # and nothing more
            assert slow.recv(1024) == b""  # closed by the server, nothing answered
        with socket.create_connection(("127.0.0.1", port), timeout=20) as whole:
            whole.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            assert whole.recv(1024).startswith(b"HTTP/1.1 200")
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=20)
