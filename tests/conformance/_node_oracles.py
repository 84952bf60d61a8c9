"""Run the Node reference accumulators (``ai``'s readUIMessageStream, ``@ag-ui/client``).

The oracle scripts live in ``../shared/oracles`` (read-only); the agreed install is a
copy in ``<repo>/.oracles`` (gitignored) with its own ``node_modules``. Tests that need
node skip, naming the install command, when node or that install is missing (and
fail under ``CI=true``: ``tests._shared.require``).

``run_oracle`` runs one official script on one fixture file (one node process,
~0.3 s). ``run_batch`` runs many generated streams in one node process through
``_oracle_batch.mjs`` (same calls as the official scripts), copied next to the
oracles at test time so its imports resolve from their ``node_modules``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import pytest
from hypothesis import HealthCheck, settings

from tests._shared import ROOT, require

ORACLES = ROOT / ".oracles"
INSTALL = "mkdir -p .oracles && cp ../shared/oracles/* .oracles/ && cd .oracles && npm install"
_BATCH = Path(__file__).with_name("_oracle_batch.mjs")


def node_oracles() -> Path:
    """The oracle folder with its ``node_modules``, or skip saying how to install it."""
    require("node", f"not on PATH; the Node oracles need node, then: {INSTALL}")
    require(
        "the Node oracles",
        f"not installed in {ORACLES} (no node_modules); from the repository root run: {INSTALL}",
        found=(ORACLES / "node_modules").is_dir(),
    )
    return ORACLES


def run_oracle(script: str, fixture: Path, *flags: str) -> dict[str, Any]:
    """The JSON an official oracle script prints for ``fixture`` (exit code 2 = the
    reference reported an error, which the JSON carries)."""
    folder = node_oracles()
    require(str(folder / script), f"re-run: {INSTALL}", found=(folder / script).is_file())
    done = subprocess.run(
        ["node", str(folder / script), str(fixture), *flags],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode not in (0, 2):
        raise RuntimeError(f"{script} failed on {fixture} ({done.returncode}): {done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def refused(expected: dict[str, Any], name: str, refusals: Mapping[str, str]) -> bool:
    """Whether the reference refused fixture ``name`` (its result ``expected`` is an
    error), checking that it refuses exactly the fixtures of ``refusals`` (name -> what
    its error says): any other refusal, or a listed one no longer made, fails."""
    if "error" not in expected:
        assert name not in refusals, f"{name} is no longer refused: update REFUSED"
        return False
    assert name in refusals, f"the reference refused {name}: {expected['error']}"
    assert refusals[name] in expected["error"]
    return True


BATCHES: Final = settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
"""The settings of a test of generated streams against ``run_batch``: a few batches of
large streams, one node process each."""


def batch_results(
    protocol: str, streams: list[list[dict[str, Any]]], **job: Any
) -> Iterator[tuple[list[dict[str, Any]], dict[str, Any]]]:
    """Each of ``streams`` beside the reference's result on it (``run_batch``, one node
    process for all; ``job``: more fields of each job): a stream it refuses fails."""
    results = run_batch([{"protocol": protocol, "events": s, **job} for s in streams])
    for stream, expected in zip(streams, results, strict=True):
        assert "error" not in expected, (expected["error"], stream)
        yield stream, expected


def run_batch(jobs: list[dict[str, Any]], *, script: Path = _BATCH) -> list[dict[str, Any]]:
    """Results of many ``{"protocol": "aisdk"|"agui", "events": [...]}`` jobs, one node
    process for all of them (``script``: another batch runner of ours, same protocol)."""
    folder = node_oracles()
    target = folder / script.name
    if not target.is_file() or target.read_bytes() != script.read_bytes():
        shutil.copyfile(script, target)
    done = subprocess.run(
        ["node", str(target)],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{target.name} failed ({done.returncode}): {done.stderr}")
    results: list[dict[str, Any]] = json.loads(done.stdout)
    return results


def load_events(path: Path) -> list[Any]:
    """The raw events of a fixture in any of its formats (JSON array, BOM, JSONL)."""
    try:
        from replay import load_events as replay_load
    except ImportError:  # pragma: no cover - replay's loader not importable here
        pass
    else:
        return list(replay_load(path).events)
    text = path.read_text(encoding="utf-8-sig")
    if text.lstrip().startswith("["):
        events: list[Any] = json.loads(text)
        return events
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def diff(expected: Any, actual: Any, path: str = "$") -> list[str]:
    """Every place where ``actual`` differs from ``expected``, as ``path: a != b`` lines."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        lines = []
        for key in sorted(expected.keys() | actual.keys(), key=str):
            if key not in actual:
                lines.append(f"{path}.{key}: missing (expected {expected[key]!r:.200})")
            elif key not in expected:
                lines.append(f"{path}.{key}: unexpected {actual[key]!r:.200}")
            else:
                lines += diff(expected[key], actual[key], f"{path}.{key}")
        return lines
    if isinstance(expected, list) and isinstance(actual, list):
        lines = []
        if len(expected) != len(actual):
            lines.append(f"{path}: length {len(actual)} != expected {len(expected)}")
        for index, (e, a) in enumerate(zip(expected, actual, strict=False)):
            lines += diff(e, a, f"{path}[{index}]")
        return lines
    if expected != actual or (
        type(expected) is not type(actual)
        and not (isinstance(expected, int | float) and isinstance(actual, int | float))
    ):
        return [f"{path}: {actual!r:.200} != expected {expected!r:.200}"]
    return []


def assert_same(expected: Any, actual: Any, what: str) -> None:
    """Fail with a field-by-field diff when the rebuilt value differs from the oracle's."""
    lines = diff(expected, actual)
    if lines:
        shown = "\n  ".join(lines[:40])
        more = f"\n  ... {len(lines) - 40} more" if len(lines) > 40 else ""
        pytest.fail(f"{what} differs from the reference:\n  {shown}{more}")
