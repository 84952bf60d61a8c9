"""``tests._shared.require``: missing infrastructure skips on a developer's machine and
fails under ``CI=true``."""

from __future__ import annotations

import pytest

from tests._shared import require

MISSING = "convo-no-such-tool-anywhere"


@pytest.mark.parametrize("ci", ["", "false", "1"])
def test_skips_outside_ci(monkeypatch: pytest.MonkeyPatch, ci: str) -> None:
    monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.skip.Exception, match=f"missing {MISSING}: install it"):
        require(MISSING, "install it")


@pytest.mark.parametrize("ci", ["true", "TRUE", " true "])
def test_fails_under_ci(monkeypatch: pytest.MonkeyPatch, ci: str) -> None:
    monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.fail.Exception, match="CI=true: missing infrastructure fails"):
        require(MISSING, "install it")
    with pytest.raises(pytest.fail.Exception):
        require("python", "a check of its own", found=False)


def test_present_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    require("sh", "a shell is on PATH")
    require(MISSING, "found by another check", found=True)
