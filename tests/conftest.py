"""What every test shares: the Hypothesis profiles, the ``slow`` marker's rule, and
the throwaway PostgreSQL server (tests/README.md is the map of the suite).

Hypothesis profiles (``HYPOTHESIS_PROFILE``; CI loads ``ci``):

- ``default``: no per-example deadline (a loaded 2-core machine must not fail a
  test for being slow), and a failing example printed as a reproducible blob.
- ``ci``: the same, and no database of past failures written into the clone.
- ``dev``: 20 examples where a test does not set its own count, for a quick loop.

A test's own ``@settings(max_examples=...)`` states how hard that property is worth
searching, and wins over the profile; the quick run is ``pytest -m "not slow"``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests._postgres import Server, require_server
from tests._shared import in_ci

_COMMON = {
    "deadline": None,
    "print_blob": True,
    "suppress_health_check": [HealthCheck.too_slow],
}
settings.register_profile("default", **_COMMON)  # type: ignore[arg-type]
settings.register_profile("ci", database=None, **_COMMON)  # type: ignore[arg-type]
settings.register_profile("dev", max_examples=20, **_COMMON)  # type: ignore[arg-type]
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if in_ci() else "default"))


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Server]:
    """One PostgreSQL server for the whole session, started on first use (skips
    without PostgreSQL on a developer machine, fails when ``CI=true``)."""
    with require_server() as server:
        yield server
