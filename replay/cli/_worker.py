"""A projection worker: owns partitions of the conversations by lease and publishes each
conversation's view to the convo_views table."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from ..stores._open import is_postgres
from ..stores._worker import Worker
from ._common import Exit

HELP = "keep published views of a share of a PostgreSQL store's conversations"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``worker``'s arguments to ``parser``."""
    parser.add_argument("--store", required=True, metavar="URL", help="a postgresql:// URL")
    parser.add_argument(
        "--partitions",
        type=int,
        required=True,
        metavar="N",
        help="how many partitions the conversations are split into (the same for every worker)",
    )
    parser.add_argument(
        "--lease", type=float, default=5.0, metavar="SECONDS", help="lease length (default 5)"
    )
    parser.add_argument("--id", metavar="NAME", help="this worker's name (default host:pid)")


def run(args: argparse.Namespace) -> int:
    """Project until SIGTERM or Ctrl-C; prints ownership changes."""
    if not is_postgres(args.store):
        print(
            f"convo worker: --store must be a postgresql:// URL, not {args.store!r} "
            "(workers share their partitions through PostgreSQL)",
            file=sys.stderr,
        )
        return Exit.BAD_INPUT
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    worker = Worker(
        args.store,
        partitions=args.partitions,
        lease=args.lease,
        worker_id=args.id,
        on_change=lambda message: print(message, flush=True),
    )
    print(f"convo worker {worker.id}: {args.partitions} partitions", flush=True)
    try:
        worker.run(stop)
    except KeyboardInterrupt:
        pass
    except worker._pg.Error as exc:  # the database went away: a supervisor restarts us
        print(f"convo worker {worker.id}: lost the database: {exc}", file=sys.stderr)
        return Exit.DATABASE_LOST
    finally:
        worker.close()
    return Exit.OK
