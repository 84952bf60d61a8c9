"""Fixtures shared across test packages: the throwaway PostgreSQL server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests._postgres import Server, require_server


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Server]:
    """One PostgreSQL server for the whole session, started on first use (skips
    without PostgreSQL on a developer machine, fails when ``CI=true``)."""
    with require_server() as server:
        yield server
