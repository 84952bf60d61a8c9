"""The workbench: where the economy's spill files live, and its index area.

A workbench is a directory with three folders (seed 004's second and third
layers): ``spill/`` holds what the economy cut out of the context (files named
by their content, ``engine.spill_name``, so a replay writes the same files and
nothing is written twice); ``scripts/`` and ``artifacts/`` hold what the agent
wrote to keep and reuse. ``WorkbenchIndex`` is a context area listing up to
``limit`` (40) entries of ``scripts/`` and ``artifacts/`` as a system message,
so the model knows what exists without a tool call to discover it; it renders
again whenever that listing changes, and never otherwise.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

from engine import AreaFlowState, AreaLifeState, Economy, Message, Role, Spill

__all__ = ["Workbench", "WorkbenchIndex"]

LIMIT: Final = 40
"""How many entries the index lists at most."""


class Workbench:
    """The workbench rooted at ``root`` (created on first write)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(os.fspath(root))
        self.spill_dir = self.root / "spill"

    def economy(self, economy: Economy) -> Economy:
        """``economy`` with its pointers naming this workbench's spill folder."""
        import msgspec

        return msgspec.structs.replace(economy, spill_dir=str(self.spill_dir))

    def write(self, spills: Iterable[Spill]) -> int:
        """Write the spill files not there yet; returns how many were written. A file
        already there of another size (a damaged file: names are content hashes) is
        an ``OSError``: the pointer would lie."""
        written = 0
        for spill in spills:
            path = self.spill_dir / spill.name
            data = spill.content.encode("utf-8", "surrogatepass")
            if path.exists():
                if path.stat().st_size != len(data):
                    raise OSError(f"{path}: holds other content than the spill of that name")
                continue
            self.spill_dir.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(".partial")
            partial.write_bytes(data)
            partial.replace(path)  # whole or absent: a reader never sees half a file
            written += 1
        return written

    def read(self, name: str) -> str:
        """The spilled string named ``name`` (what the pointer tells the model to read)."""
        return (self.spill_dir / name).read_bytes().decode("utf-8", "surrogatepass")

    def entries(self, limit: int = LIMIT) -> list[tuple[str, int]]:
        """Up to ``limit`` (path relative to the root, size) of ``scripts/`` and
        ``artifacts/``, scripts first, each folder in name order."""
        found: list[tuple[str, int]] = []
        for folder in ("scripts", "artifacts"):
            base = self.root / folder
            if not base.is_dir():
                continue
            for path in sorted(p for p in base.rglob("*") if p.is_file()):
                found.append((path.relative_to(self.root).as_posix(), path.stat().st_size))
                if len(found) >= limit:
                    return found
        return found


class WorkbenchIndex:
    """A context area: the workbench's index as a system message, again whenever
    the listing changes (``engine.ContextAreaImplementation``; always retained and
    yielded, so it is asked on every call and answers ``[]`` when nothing changed)."""

    life_state: Final = AreaLifeState.retain
    flow_state: Final = AreaFlowState.yielded

    def __init__(self, workbench: Workbench, limit: int = LIMIT) -> None:
        self.workbench = workbench
        self.limit = limit
        self._shown: str | None = None

    def text(self) -> str:
        """The index as the model reads it."""
        entries = self.workbench.entries(self.limit)
        root = self.workbench.root.as_posix()
        lines = [
            f"Workbench at {root}: reusable scripts and artifacts (run or read them instead "
            "of writing them again). Long outputs go to artifacts/; spilled tool output is "
            "in spill/."
        ]
        if not entries:
            lines.append("(empty)")
        lines += [f"- {path} ({size:,} bytes)" for path, size in entries]
        return "\n".join(lines)

    def observe(self, context: Sequence[Any], /) -> None:
        """Nothing to see: the index depends on the disk, not on the context."""

    def render(self) -> list[Message]:
        """The index when it changed since the last render, else nothing."""
        text = self.text()
        digest = hashlib.sha256(text.encode()).hexdigest()
        if digest == self._shown:
            return []
        self._shown = digest
        return [Message(role=Role.system, content=text)]

    def promote(self) -> tuple[Message, ...]:
        """Never collected (always retained): nothing to promote."""
        return ()

    def gc_prologue(self) -> None:
        """Holds no resources."""
