"""A throwaway PostgreSQL server for the tests, and a TCP proxy that can cut connections.

``start_server()`` runs ``initdb`` and ``postgres`` from the PostgreSQL binaries on
this machine (``PATH``, else the newest ``/usr/lib/postgresql/*/bin``) in a fresh
temporary directory, on a free loopback port, with its socket in that directory,
as the ``postgres`` user when we are root (initdb refuses root). It is stopped by
its PID. ``require_server()`` is what fixtures call: it skips with the reason on a
machine without PostgreSQL or psycopg, and fails instead when ``CI=true``
(``.ci/run`` installs both).
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests._shared import require

# Not a timing assertion: how long a starting server may take before we give up.
START_GUARD = 30.0
_databases = itertools.count()


@dataclass
class Server:
    """A running throwaway PostgreSQL server."""

    directory: Path
    port: int
    process: subprocess.Popen[bytes]

    def dsn(self, database: str = "postgres") -> str:
        """The URL of ``database`` on this server (user ``convo``, no password)."""
        return f"postgresql://convo@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A new empty database; its URL."""
        import psycopg

        name = f"t{os.getpid()}_{next(_databases)}"
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.dsn(name)

    def stop(self) -> None:
        """Stop the server and remove its directory. Immediate shutdown (SIGQUIT): the
        data is thrown away, so the checkpoint a fast shutdown writes, and its wait
        for every backend (a test's stalled proxy or child keeps one), buy nothing."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT)
            try:
                self.process.wait(timeout=START_GUARD)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


def binaries() -> Path | None:
    """The directory holding ``initdb`` and ``postgres``, or ``None``."""
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    return Path(candidates[-1]).parent if candidates else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(*, durable: bool = False) -> Server:
    """Start a server; ``RuntimeError`` saying why when it cannot.

    ``durable=False`` turns fsync off: the tests check logic, not disks. The
    benchmarks pass ``durable=True`` to measure what a user gets.
    """
    bin_dir = binaries()
    if bin_dir is None:
        raise RuntimeError("no PostgreSQL binaries (initdb) on PATH or in /usr/lib/postgresql")
    directory = Path(tempfile.mkdtemp(prefix="convo-pg-"))
    user: str | None = None
    if os.geteuid() == 0:
        user = "postgres"
        try:
            entry = pwd.getpwnam(user)
        except KeyError:
            raise RuntimeError("running as root and there is no postgres user") from None
        os.chown(directory, entry.pw_uid, entry.pw_gid)
    data = directory / "data"
    initdb = subprocess.run(
        [bin_dir / "initdb", "-D", data, "-U", "convo", "--auth=trust", "-E", "UTF8", "--no-sync"],
        user=user,
        capture_output=True,
        check=False,
    )
    if initdb.returncode != 0:
        shutil.rmtree(directory, ignore_errors=True)
        raise RuntimeError(f"initdb failed: {initdb.stderr.decode(errors='replace').strip()}")
    settings = [
        "-c",
        "listen_addresses=127.0.0.1",
        "-k",
        str(directory),
        "-c",
        "max_connections=200",
    ]
    if not durable:
        settings += [
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
        ]
    last = ""
    for _ in range(5):  # another process may take the free port first
        port = _free_port()
        process = subprocess.Popen(
            [bin_dir / "postgres", "-D", data, "-p", str(port), *settings],
            user=user,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        server = Server(directory, port, process)
        if _wait_ready(server):
            assert process.stderr is not None
            process.stderr.close()  # the log would fill the pipe
            return server
        if process.poll() is None:
            process.kill()
        process.wait()
        assert process.stderr is not None
        last = process.stderr.read().decode(errors="replace").strip()
    shutil.rmtree(directory, ignore_errors=True)
    raise RuntimeError(f"postgres did not start: {last[-500:]}")


def _wait_ready(server: Server) -> bool:
    import psycopg

    deadline = time.monotonic() + START_GUARD
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            return False
        try:
            psycopg.connect(server.dsn(), connect_timeout=2).close()
        except psycopg.OperationalError:
            time.sleep(0.05)
        else:
            return True
    return False


def _unavailable(reason: str) -> None:
    require(
        "PostgreSQL",
        f"{reason} (install PostgreSQL and pip install -e '.[postgres]')",
        found=False,
    )


@contextlib.contextmanager
def require_server(*, durable: bool = False) -> Iterator[Server]:
    """A server for the duration, or skip (fail when ``CI=true``) saying why not."""
    try:
        import psycopg  # noqa: F401
    except ImportError as exc:
        _unavailable(f"psycopg is not installed ({exc})")
    try:
        server = start_server(durable=durable)
    except (RuntimeError, OSError) as exc:
        _unavailable(str(exc))
    try:
        yield server
    finally:
        server.stop()


@dataclass
class Proxy:
    """A loopback TCP proxy to ``port``; ``cut()`` drops the client side of every
    connection while the server side stays open, as a network failure would."""

    port: int
    listen_port: int = 0
    _clients: list[socket.socket] = field(default_factory=list)
    _servers: list[socket.socket] = field(default_factory=list)
    _listener: socket.socket | None = None

    def start(self) -> Proxy:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.listen_port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def dsn(self, database_dsn: str) -> str:
        """``database_dsn`` with its port replaced by the proxy's."""
        return database_dsn.replace(f":{self.port}/", f":{self.listen_port}/")

    def cut(self) -> None:
        for sock in self._clients:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self._clients.clear()

    def close(self) -> None:
        self.cut()
        for sock in self._servers:
            sock.close()
        if self._listener is not None:
            self._listener.close()

    def _accept(self) -> None:
        assert self._listener is not None
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.port))
            self._clients.append(client)
            self._servers.append(server)
            threading.Thread(target=_pump, args=(client, server), daemon=True).start()
            threading.Thread(target=_pump, args=(server, client), daemon=True).start()


def _pump(source: socket.socket, target: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            target.sendall(data)
