"""Serve a live view."""

from __future__ import annotations

import argparse
import importlib
import sys
from types import ModuleType

from ._common import Exit

HELP = "serve a live view (the [serve] extra)"

SERVE_HINT = "install the server extra: pip install -e '.[serve]'"

# The command itself lives with the server; only its argparse half is imported to
# build the parser, and that half must not import starlette: ``convo`` works without
# the extra until ``serve`` is run.
_COMMAND = "replay.serve._command"


def _module() -> ModuleType | None:
    try:
        return importlib.import_module(_COMMAND)
    except ImportError:
        return None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the server's arguments to ``parser``; without the extra, take any arguments
    (``run`` then says what to install) and say so under ``--help``."""
    module = _module()
    if module is not None:
        module.add_arguments(parser)
    else:
        parser.epilog = SERVE_HINT
        parser.set_defaults(options_unknown=True)


def run(args: argparse.Namespace) -> int:
    """Run the server, or say what to install when its extra is missing."""
    module = _module()
    if module is None:
        print(SERVE_HINT, file=sys.stderr)
        return Exit.BAD_INPUT
    try:
        status: int = module.run(args)
    except ImportError as exc:
        if isinstance(exc, ModuleNotFoundError) and exc.name and exc.name.startswith("replay"):
            raise
        print(SERVE_HINT, file=sys.stderr)
        return Exit.BAD_INPUT
    return status
