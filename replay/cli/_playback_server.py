"""Serve RECORDING (our log, or a VCR.py / pytest-recording cassette) on a loopback port
as the Anthropic, OpenAI (Chat, Responses), Gemini and Bedrock HTTP APIs: point a
client's base URL at it and each request is answered from the recording, as
replay.playback answers, a request the recording does not hold getting HTTP 400 with
the first difference. Runs until interrupted."""

from __future__ import annotations

import argparse

from ._common import Exit, Failure

HELP = "serve a recording or cassette as the providers' HTTP APIs, for any language"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``playback-server``'s arguments to ``parser``."""
    parser.add_argument("recording", nargs="?", metavar="RECORDING", help="the recording")
    parser.add_argument(
        "--example",
        action="store_true",
        help="serve the recording the package ships (the recording guide's calls; implies "
        "--any-order)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="a loopback address")
    parser.add_argument("--port", type=int, default=8765, help="0: a free port")
    parser.add_argument(
        "--speed", type=float, help="pace streams by the recorded times (1.0: real time)"
    )
    parser.add_argument(
        "--any-order",
        action="store_true",
        help="answer each request with the first recorded call it matches, however often",
    )
    parser.add_argument(
        "--strict", action="store_true", help="a null and an absent field do not match"
    )
    parser.add_argument("--conversation", metavar="ID", help="the store's conversation")


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted."""
    from ..recording import EXAMPLE
    from ..recording._errors import RecordingError
    from ..recording._player import Player, read_calls
    from ..recording._server import PlaybackServer

    if (args.recording is None) == (not args.example):
        raise Failure("convo playback-server: give RECORDING or --example")
    path = str(EXAMPLE) if args.example else args.recording
    try:
        calls = read_calls(path, args.conversation)
        player = Player(
            calls,
            speed=args.speed,
            path=path,
            strict=args.strict,
            any_order=args.any_order or args.example,
        )
        server = PlaybackServer(player, host=args.host, port=args.port)
    except RecordingError as exc:
        raise Failure(f"convo playback-server: {exc}") from exc
    except OSError as exc:  # the port is taken
        raise Failure(f"convo playback-server: {args.host}:{args.port}: {exc.strerror}") from exc
    print(f"serving {path} ({len(calls)} calls) at {server.url}", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return Exit.OK
