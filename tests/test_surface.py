"""The public surface: every exported name resolves and says what it is for."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = [
    "engine",
    "engine.context",
    "engine.testing",
    "definitions",
    "definitions.harness",
    "replay",
    "replay.serve",
    "replay.cli",
]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_resolves_and_has_a_docstring(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__doc__, f"{package} has no module docstring"
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{package} has no __all__"
    for name in exported:
        value = getattr(module, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert inspect.getdoc(value), f"{package}.{name} has no docstring"


def test_engine_re_exports_the_context() -> None:
    # Users import the context's names from ``engine`` today; that keeps working.
    import engine
    import engine.context

    assert set(engine.context.__all__) <= set(engine.__all__)
    for name in engine.context.__all__:
        assert getattr(engine, name) is getattr(engine.context, name)


def test_the_engine_knows_no_harness() -> None:
    # The shell and harness tables live in definitions.harness; the economy is given them.
    import engine
    import engine.context

    for module in (engine, engine.context):
        assert not {"is_ephemeral", "command_of"} & set(dir(module))


def _imports(folder: Path) -> set[str]:
    found: set[str] = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found


def test_engine_imports_neither_definitions_nor_replay() -> None:
    assert not _imports(ROOT / "engine") & {"definitions", "replay"}


def test_definitions_import_only_engine_of_ours() -> None:
    assert "replay" not in _imports(ROOT / "definitions")


def test_engine_does_no_io() -> None:
    # The core reads no files, sockets or clocks of its own (time enters via clock=).
    assert not _imports(ROOT / "engine") & {"socket", "os", "io", "pathlib", "sqlite3", "json"}


def test_replay_imports_each_name_where_its_table_says() -> None:
    """``replay`` imports its names on first use from the modules of its ``_HOME``
    table; the imports under ``TYPE_CHECKING`` (what type checkers read) must say the
    same, name for name and module for module."""
    import ast
    import subprocess
    import sys

    import replay

    tree = ast.parse((ROOT / "replay" / "__init__.py").read_text(encoding="utf-8"))
    guarded = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING"
    )
    declared = {
        alias.name: "." * node.level + (node.module or "")
        for node in guarded.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert declared == replay._HOME
    fresh = subprocess.run(
        [sys.executable, "-c", "import replay, sys; print(sorted(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    )
    loaded = fresh.stdout
    for heavy in ("replay.serve", "replay.recording", "replay.render", "replay._determinism"):
        assert f"'{heavy}" not in loaded, f"import replay pulls in {heavy}"
