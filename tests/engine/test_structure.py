"""The engine stays readable: no function longer than 80 lines (issue #13).

Complexity (McCabe, at most 20) is ruff's C901, configured for ``engine/`` in
pyproject.toml; length is checked here, since no ruff rule counts lines.
"""

from __future__ import annotations

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "engine"
MAX_LINES = 80


def functions() -> list[tuple[str, int]]:
    found = []
    for path in sorted(ENGINE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                found.append((f"{path.name}:{node.lineno} {node.name}", lines))
    return found


def test_no_function_is_longer_than_80_lines() -> None:
    found = functions()
    assert len(found) > 50  # the walk did find the engine's functions
    too_long = [f"{where} ({lines} lines)" for where, lines in found if lines > MAX_LINES]
    assert not too_long, f"split these (target: {MAX_LINES} lines): {too_long}"
