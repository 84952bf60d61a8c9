"""Access to ``../shared`` (recorded fixtures, reference oracles) for tests.

``../shared`` is not part of this project: it sits beside the clone on the team's
machines and in CI. Where it is absent (a user's clone) the tests that need it
skip, saying so. ``CONVO_SHARED`` points elsewhere if it lives somewhere else.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CONVO_SHARED", ROOT.parent / "shared"))


def shared_path(*parts: str) -> Path:
    """The path under ``../shared``, or skip the calling test with the reason."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(
            f"{path} is absent: the recorded fixtures and oracles live in ../shared beside "
            "the clone (set CONVO_SHARED to use another place)"
        )
    return path


def shared_files(*parts: str, pattern: str = "*") -> list[object]:
    """Files under ``../shared`` matching ``pattern`` as pytest params (id = file name).

    Where the folder is absent this is one skipped param carrying the reason, so a
    parametrized test reports a skip instead of silently collecting nothing.
    """
    folder = SHARED.joinpath(*parts)
    if not folder.is_dir():
        return [
            pytest.param(
                None,
                id="shared-absent",
                marks=pytest.mark.skip(reason=f"{folder} is absent (see tests/_shared.py)"),
            )
        ]
    return [
        pytest.param(p, id=p.name)
        for p in sorted(folder.glob(pattern))
        if p.is_file() and p.name != "README.md"
    ]
