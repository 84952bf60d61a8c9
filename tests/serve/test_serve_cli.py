"""``convo serve`` refuses, before it binds anything, what it could only serve wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._shared import require_serve

require_serve()

from replay.serve._command import main  # noqa: E402


def test_a_missing_store_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    typo = tmp_path / "typo.db"
    assert main(["--store", str(typo), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err == f"convo serve: {typo}: no such event store (--create makes a new one)\n"
    assert not typo.exists()


def test_a_file_that_is_not_a_store_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "notes.txt"
    other.write_bytes(b"some notes, not a database " * 50)
    before = other.read_bytes()
    assert main(["--store", str(other), "--create", "--port", "0"]) == 2
    assert "not an SQLite database" in capsys.readouterr().err
    assert other.read_bytes() == before


def test_the_collector_threshold_is_raised_while_serving_and_restored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server runs with ``COLLECTOR_THRESHOLD`` (its p99 latency depends on it) and
    gives the process back its collector as it found it."""
    import gc

    import replay.serve._command as serve_cli

    seen: list[tuple[int, ...]] = []

    async def serve(server: object, args: object) -> None:
        seen.append(gc.get_threshold())

    monkeypatch.setattr(serve_cli, "_serve", serve)
    before = gc.get_threshold()
    store = tmp_path / "events.db"
    assert main(["--store", str(store), "--create", "--port", "0"]) == 0
    assert seen == [(serve_cli.COLLECTOR_THRESHOLD, *before[1:])]
    assert gc.get_threshold() == before
