"""Access to ``../shared`` (recorded fixtures, reference oracles) for tests, and
``require``: the one place a test decides that missing infrastructure skips or fails.

``../shared`` is not part of this project: it sits beside the clone on the team's
machines and in CI. Where it is absent (a user's clone) the tests that need it
skip, saying so. ``CONVO_SHARED`` points elsewhere if it lives somewhere else.

Missing infrastructure (``../shared``, node and the Node oracles, Chromium, a server,
a database) skips a test on a developer's machine, with the reason and the install
command, and FAILS it under ``CI=true``: CI installs everything (``.ci/run``), so a
skip there would be a test that silently cannot fail. Call ``require`` for any such
check::

    require("node", f"the Node oracles need node; then: {INSTALL}")
    require("postgres", "no PostgreSQL server: set CONVO_PG_DSN", found=dsn is not None)
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CONVO_SHARED", ROOT.parent / "shared"))


def in_ci() -> bool:
    """Whether missing infrastructure must fail: ``CI=true`` (any case), as CI sets it."""
    return os.environ.get("CI", "").strip().lower() == "true"


def require(tool: str, reason: str, *, found: bool | None = None) -> None:
    """Skip the calling test (or module) when ``tool`` is missing, saying ``reason``;
    under ``CI=true`` fail it instead.

    ``found`` says whether it is there; by default ``tool`` is a command looked up on
    ``PATH``. ``reason`` says what is missing and how to install it.
    """
    if found is None:
        found = shutil.which(tool) is not None
    if found:
        return
    message = f"missing {tool}: {reason}"
    if in_ci():
        pytest.fail(f"{message} (CI=true: missing infrastructure fails, it does not skip)")
    pytest.skip(message, allow_module_level=True)


def shared_path(*parts: str) -> Path:
    """The path under ``../shared``, or skip the calling test with the reason (fail in CI)."""
    path = SHARED.joinpath(*parts)
    require(
        "../shared",
        f"{path} is absent: the recorded fixtures and oracles live in ../shared beside "
        "the clone (set CONVO_SHARED to use another place)",
        found=path.exists(),
    )
    return path


def shared_files(*parts: str, pattern: str = "*") -> list[object]:
    """Files under ``../shared`` matching ``pattern`` as pytest params (id = file name).

    Where the folder is absent this is one skipped param carrying the reason (failed
    under ``CI=true``, see ``require``), so a parametrized test reports it instead of
    silently collecting nothing.
    """
    folder = SHARED.joinpath(*parts)
    if not folder.is_dir():
        reason = f"{folder} is absent (see tests/_shared.py)"
        if in_ci():  # at collection: the module fails to collect, the run fails
            require("../shared", reason, found=False)
        return [pytest.param(None, id="shared-absent", marks=pytest.mark.skip(reason=reason))]
    return [
        pytest.param(p, id=p.name)
        for p in sorted(folder.glob(pattern))
        if p.is_file() and p.name != "README.md"
    ]


def require_serve() -> None:
    """``require`` the serve extra and its test tools (starlette, sse-starlette, httpx)."""
    for module in ("starlette", "sse_starlette", "httpx"):
        require(
            module,
            "pip install -e '.[serve,serve-test]'",
            found=importlib.util.find_spec(module) is not None,
        )
