"""``convo serve``: the live web view from the command line.

Imported lazily by the CLI; starlette and uvicorn (the ``serve`` extra) are imported
only inside ``run``, so ``convo`` works without them until ``serve`` is used.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import ipaddress
import os
import sys
import tempfile
from collections.abc import Callable, Coroutine, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from definitions import ProtocolSet, builtin
from engine import RegistrationError

from .._errors import DefinitionSpecError, Exit
from ..protocols._detect import detect_protocol, load_definitions, protocol_definitions
from ..protocols._unclaimed import unclaimed_note

if TYPE_CHECKING:
    from ._app import Live

__all__ = [
    "COLLECTOR_THRESHOLD",
    "EXAMPLE",
    "HEADER_TIMEOUT",
    "add_arguments",
    "demo_delay",
    "demo_writer",
    "main",
    "run",
]

EXAMPLE = Path(__file__).parents[1] / "examples" / "agent_session.jsonl"
"""The bundled example log that ``--demo`` replays."""

COLLECTOR_THRESHOLD = 50_000
"""The collector's young-generation threshold while ``convo serve`` runs (CPython's
default is 700). A server holds every stream's state, and each young pass promotes
the states alive at that moment; enough promotions set off a pass over the whole heap
(about 120 ms with 1,000 streams open, all of it a pause of the event loop: that was
the p99 latency). Fewer young passes promote less. An application serving
``create_app`` from its own process decides this for itself (docs/serving.md)."""

HEADER_TIMEOUT = 10.0
"""Seconds a connection may take to send a request's line and headers. uvicorn has
no such limit: a client that opens connections and trickles headers would hold each
one for ever."""

_INSTALL = "convo serve needs the serve extra: pip install 'convo-engine[serve]'"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``serve``'s arguments to ``parser``."""
    parser.add_argument(
        "log",
        nargs="?",
        metavar="LOG",
        help="a recording to show (any format `convo replay` reads); loaded into a "
        "temporary store as one conversation named after the file",
    )
    parser.add_argument(
        "--store",
        metavar="STORE",
        help="serve the conversations of this store, a SQLite file or a postgresql:// URL "
        "(any number of servers may serve one database); it must exist, unless --create",
    )
    parser.add_argument(
        "--create",
        action="store_true",
        help="with --store: create the store when the file (or the database's tables) is missing",
    )
    parser.add_argument(
        "--definitions",
        "-d",
        action="append",
        metavar="MODULE[:ATTR]",
        help="definitions for every conversation (repeatable, in order), as for `convo "
        "replay`. Default: each conversation's protocol, detected from its first events",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: loopback only)"
    )
    parser.add_argument("--port", type=int, default=8000, help="port (0 picks a free one)")
    parser.add_argument(
        "--demo",
        action="store_true",
        help="stream the bundled example conversation with realistic timing",
    )
    parser.add_argument(
        "--demo-speed",
        type=float,
        default=1.0,
        metavar="X",
        help="demo time runs X times faster (0: no pauses)",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("CONVO_SERVE_TOKEN"),
        help="$CONVO_SERVE_TOKEN (preferred: a --token on the command line is visible to "
        "other users in ps) enables POST /conversations/{id}/events, requiring "
        "'Authorization: Bearer TOKEN'; ingest is off without one. At least 16 characters",
    )
    parser.add_argument(
        "--read-token",
        default=os.environ.get("CONVO_SERVE_READ_TOKEN"),
        help="$CONVO_SERVE_READ_TOKEN (preferred, as above) makes every page and stream "
        "need this token: 'Authorization: Bearer TOKEN', or ?token=TOKEN once in a browser "
        "(it sets a cookie). The same value as the ingest token is fine. Default: reads "
        "are open to whoever can connect",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also answer requests for this Host name (repeatable); by default only "
        "loopback names and --host are answered, which stops DNS rebinding",
    )
    parser.add_argument(
        "--poll-interval",
        type=float,
        default=0.05,
        metavar="SECONDS",
        help="how often a SQLite store is checked for events from other processes "
        "(PostgreSQL notifies them)",
    )
    parser.add_argument(
        "--header-timeout",
        type=float,
        default=HEADER_TIMEOUT,
        metavar="SECONDS",
        help="close a connection whose request line and headers have not all arrived "
        f"this long after it opened or after its first bytes (default {HEADER_TIMEOUT:g})",
    )
    parser.add_argument(
        "--max-loaded",
        type=int,
        default=64,
        metavar="N",
        help="conversations kept loaded beyond those being watched (least recently used out)",
    )


def demo_delay(event: Any) -> float:
    """Seconds to wait before ``event`` in the demo: tokens quickly, tools and people
    slowly, so every kind of update is visible."""
    kind = event.get("type", "") if isinstance(event, dict) else ""
    if kind.endswith(".delta") or kind == "tool_call.arguments_delta":
        return 0.035
    if kind == "message.start":
        return 0.9 if event.get("role") == "user" else 0.4
    return {
        "tool_call.result": 1.2,
        "tool_call.denied": 0.8,
        "approval.request": 0.5,
        "approval.decision": 2.0,
        "status.update": 0.6,
        "tool_call.start": 0.4,
    }.get(kind, 0.15)


def demo_writer(
    events: Sequence[Any], *, speed: float = 1.0, runs: int = 20, pause: float = 4.0
) -> Callable[[Live], Coroutine[Any, Any, None]]:
    """A background job appending ``events`` to conversations ``demo-01``,
    ``demo-02``, ... one at a time with ``demo_delay`` pauses (divided by ``speed``;
    ``speed=0`` means none), ``runs`` times, so a late visitor still sees one stream."""

    async def write(live: Live) -> None:
        scale = 0.0 if speed <= 0 else 1.0 / speed
        for run in range(1, runs + 1):
            conversation = f"demo-{run:02d}"
            for index, event in enumerate(events):
                # The first event at once: the announced page exists as soon as it is shown.
                if scale and (run > 1 or index > 0):
                    await asyncio.sleep(demo_delay(event) * scale)
                await live.append(conversation, [event], None)
            await asyncio.sleep(pause * scale)

    return write


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@contextlib.contextmanager
def _store_path(args: argparse.Namespace) -> Iterator[tuple[str, list[Any]]]:
    """The store file to serve and the events of LOG to load into it first."""
    from ..logs._formats import load_events

    events: list[Any] = []
    if args.log is not None:
        events = load_events(args.log).events
    if args.store is not None:
        yield args.store, events
        return
    with tempfile.TemporaryDirectory(prefix="convo-serve-") as directory:
        yield os.path.join(directory, "events.sqlite"), events


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; returns the exit status."""
    try:
        import uvicorn

        from ._app import ServeOptions, create_app
    except ImportError as exc:
        print(f"{_INSTALL} ({exc})", file=sys.stderr)
        return Exit.BAD_INPUT
    from .._errors import StoreError
    from ..logs._formats import load_events
    from ..stores._open import open_store
    from ..stores._sqlite import SQLiteStore
    from ._security import allowed_hosts

    if args.log is None and args.store is None and not args.demo:
        print("convo serve: give a LOG, --store FILE or --demo", file=sys.stderr)
        return Exit.BAD_INPUT
    if args.log is not None and args.store is not None:
        print("convo serve: give a LOG or --store FILE, not both", file=sys.stderr)
        return Exit.BAD_INPUT
    try:
        # Every setting in one record, checked as it is built (tokens too short...).
        options = ServeOptions(
            token=args.token,
            read_token=args.read_token,
            hosts=allowed_hosts(args.host, args.allow_host),
            poll_interval=args.poll_interval,
            max_loaded=args.max_loaded,
        )
    except ValueError as exc:
        print(f"convo serve: {exc}", file=sys.stderr)
        return Exit.BAD_INPUT
    if args.store is not None:
        # A mistyped path must not be served as a new empty store.
        try:
            open_store(args.store, mode="rwc" if args.create else "rw").close()
        except StoreError as exc:
            hint = "" if args.create else " (--create makes a new one)"
            print(f"convo serve: {exc}{hint}", file=sys.stderr)
            return Exit.BAD_INPUT
    if not _loopback(args.host):
        print(
            f"convo serve: warning: binding {args.host}, reachable from other machines; "
            "conversation content will be visible to anyone who can connect",
            file=sys.stderr,
        )
    try:
        with _store_path(args) as (path, events):
            if events:
                with SQLiteStore(path) as store:
                    store.append(Path(args.log).stem, events)
            background = []
            if args.demo:
                example = load_events(EXAMPLE).events
                background.append(demo_writer(example, speed=args.demo_speed))
            chosen = _chosen(args.definitions, events)
            options = attrs.evolve(
                options,
                definitions=chosen,
                # Ingest takes what the named set folds; by default the built-in kinds.
                vocabulary=builtin.Event if chosen is None else chosen.vocabulary,
                background=background,
            )
            app = create_app(path, options)
            config = uvicorn.Config(
                app,
                host=args.host,
                port=args.port,
                log_level="warning",
                lifespan="on",
                http=_header_deadline(args.header_timeout),
            )
            server = _server(uvicorn, config, app.state.live)
            before = gc.get_threshold()
            gc.set_threshold(COLLECTOR_THRESHOLD, *before[1:])
            try:
                asyncio.run(_serve(server, args))
            finally:
                gc.set_threshold(*before)
    except (DefinitionSpecError, RegistrationError) as exc:
        print(f"convo serve: {exc}", file=sys.stderr)
        return Exit.BAD_INPUT
    except (OSError, StoreError) as exc:
        print(f"convo serve: {exc}", file=sys.stderr)
        return Exit.SERVER_FAILED
    except KeyboardInterrupt:
        pass
    return Exit.OK


def _server(uvicorn: Any, config: Any, live: Live) -> Any:
    """A uvicorn server that ends every stream with a complete response when told to
    exit, instead of sse-starlette cancelling them mid-response (which uvicorn logs as
    "ASGI callable returned without completing response")."""
    from sse_starlette.sse import AppStatus

    # This process serves one app, ours, which ends its streams itself.
    AppStatus.disable_automatic_graceful_drain()  # type: ignore[no-untyped-call]

    class Server(uvicorn.Server):  # type: ignore[misc]
        def handle_exit(self, sig: int, frame: Any) -> None:
            # A signal handler, on the loop's thread: the loop runs close_streams next.
            asyncio.get_event_loop().call_soon_threadsafe(live.close_streams)
            super().handle_exit(sig, frame)

    return Server(config)


def _header_deadline(seconds: float) -> type[Any]:
    """uvicorn's h11 protocol with a deadline for each request's line and headers:
    armed when a connection opens and when a request's first bytes come, disarmed
    when the request's headers are all in; at the deadline the connection closes."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderDeadline(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is h11.IDLE:  # a request begun, headers not all in
                if self._deadline is None:
                    self._arm()
            else:
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._deadline = self.loop.call_later(seconds, self._expire)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expire(self) -> None:
            self._deadline = None
            if self.conn.their_state is h11.IDLE:
                self.transport.close()

    return HeaderDeadline


def _chosen(specs: Sequence[str] | None, events: Sequence[Any]) -> ProtocolSet | None:
    """The set named by ``-d`` (``None``: detect per conversation); says on stderr when
    the LOG's events go to no definition of the set that will fold them."""
    chosen = None if not specs else load_definitions(specs)
    if events:
        folding = chosen or protocol_definitions(detect_protocol(events).protocol)
        unclaimed = folding.folded(events).statistics().events_unclaimed
        note = unclaimed_note(unclaimed, len(events), events, folding.label)
        if note is not None:
            print(f"convo serve: warning: {note}", file=sys.stderr)
    return chosen


async def _serve(server: Any, args: argparse.Namespace) -> None:
    async def announce() -> None:
        while not server.started:
            await asyncio.sleep(0.02)
        host, port = server.servers[0].sockets[0].getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        where = "/conversations/demo-01" if args.demo else "/"
        # Tests and scripts read this line to learn the port when --port 0.
        print(f"convo serve: http://{shown}:{port}{where}", flush=True)

    task = asyncio.get_running_loop().create_task(announce())
    try:
        await server.serve()
    finally:
        task.cancel()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m replay.serve._command``: the same as ``convo serve``."""
    parser = argparse.ArgumentParser(prog="convo serve", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
