"""Started by ``convo record`` (first on ``PYTHONPATH``): record every supported SDK
client the program creates (``replay.recording._auto``), then run the
``sitecustomize`` this one hides, if any."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys


def _install() -> None:
    try:
        from replay.recording._auto import install_hooks
    except ImportError as exc:  # convo-engine is not importable here: record nothing
        _report(f"cannot import convo-engine ({exc})")
        return
    install_hooks()


def _report(line: str) -> None:
    # What replay.recording._auto.report does, for a Python that cannot import it.
    path = os.environ.get("CONVO_RECORD_REPORT")
    if not path:
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, f"{os.getpid()} {line}\n".encode())
        finally:
            os.close(fd)
    except OSError:
        pass


def _chain() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [entry for entry in sys.path if os.path.abspath(entry or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


_install()
_chain()
