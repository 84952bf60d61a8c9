"""The folder tree is the architecture: each room of ``replay`` imports only the rooms
below it (as its package docstring says), and no module imports itself in a circle."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# A room, and the rooms of ``replay`` it may import (lazy imports inside functions
# count too). The top-level modules (``_plugin``, ``__init__``) may import anything;
# ``_determinism`` sits above ``context``, ``render`` and ``protocols``; ``cli``, the
# command line, is the top floor.
ALLOWED: dict[str, set[str]] = {
    "_errors": set(),
    "_replay": set(),
    "logs": {"_errors", "logs"},
    "render": {"_errors", "render"},
    "stores": {"_errors", "logs", "render", "stores"},
    "protocols": {"_errors", "_replay", "logs", "protocols"},
    "context": {"_errors", "logs", "protocols", "context"},
    "_determinism": {"_errors", "_replay", "logs", "render", "protocols", "context"},
    "serve": {"_errors", "logs", "render", "stores", "protocols", "serve"},
    "recording": {"_errors", "logs", "stores", "recording"},
    # The top floor: every room below, and the modules only the command line uses.
    "cli": {
        "_errors",
        "_replay",
        "_branches",
        "_progress",
        "_determinism",
        "logs",
        "render",
        "stores",
        "protocols",
        "context",
        "serve",
        "recording",
        "cli",
    },
}


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted((ROOT / "replay").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, path


def imported(name: str, path: Path, top: str = "replay") -> set[str]:
    """The ``top`` modules ``name`` imports, resolved to absolute names."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if node.module is None:  # from . import a, b: each is a module
                found.update(f"{target}.{alias.name}" for alias in node.names)
            else:
                found.add(target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {t for t in found if t == top or t.startswith(f"{top}.")}


def room(module: str) -> str:
    return module.split(".")[1] if module.count(".") else "__init__"


GRAPH = {name: imported(name, path) for name, path in modules()}


@pytest.mark.parametrize("name", sorted(n for n in GRAPH if room(n) in ALLOWED))
def test_a_room_imports_only_the_rooms_below_it(name: str) -> None:
    here = room(name)
    climbing = {t for t in GRAPH[name] if t != "replay" and room(t) not in ALLOWED[here] | {here}}
    assert not climbing, f"{name} ({here}) imports {sorted(climbing)}: above its room"


def test_no_module_imports_itself_in_a_circle() -> None:
    """Depth-first search over module imports (a package counts as its __init__)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(GRAPH.get(name, ())):
            if target not in GRAPH:
                continue
            if state.get(target) == 1:
                circle = [*path[path.index(target) :], target] if target in path else [target]
                pytest.fail("import circle: " + " -> ".join(circle))
            if target not in state:
                visit(target, [*path, target])
        state[name] = 2

    for name in sorted(GRAPH):
        if name not in state:
            visit(name, [name])


def test_at_most_twelve_modules_at_the_top_of_replay() -> None:
    top = sorted(p.name for p in (ROOT / "replay").glob("*.py"))
    assert len(top) <= 12, top


def _engine_modules() -> Iterator[tuple[str, Path]]:
    for path in sorted((ROOT / "engine").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


ENGINE = {name: imported(name, path, "engine") for name, path in _engine_modules()}


@pytest.mark.parametrize("name", sorted(n for n in ENGINE if not n.startswith("engine.context")))
def test_the_fold_never_imports_the_context(name: str) -> None:
    # engine/__init__ re-exports the context's names for users; nothing of the fold may.
    if name == "engine":
        return
    assert not {t for t in ENGINE[name] if t.startswith("engine.context")}, name


@pytest.mark.parametrize("name", sorted(n for n in ENGINE if n.startswith("engine.context")))
def test_the_context_imports_only_the_errors_of_the_fold(name: str) -> None:
    outside = {t for t in ENGINE[name] if not t.startswith("engine.context")}
    assert outside <= {"engine._errors"}, f"{name} imports {sorted(outside)}"
