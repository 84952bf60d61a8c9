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
    except ImportError:  # convo-engine is not importable here: record nothing
        return
    install_hooks()


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
