"""Progress bars for long commands: shown on a terminal after a second, never when piped.

A command that runs for more than about a second (``convo replay`` of a large log,
``convo check``, ``convo context --calls``, ``convo bench``, reading a large agent
session) tells a ``Progress`` how far it is; the bar appears only once
``DELAY`` seconds have passed and only when standard error is a terminal, so a quick
run, a pipe or a test sees nothing at all. With rich installed the bar is rich's;
otherwise one plain line, rewritten in place and cleared at the end.

The lower rooms of ``replay`` do not import this module: they take a plain callback
(``progress=``) that the command line connects to a ``Progress``.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any, TextIO

__all__ = ["DELAY", "Progress"]

DELAY = 1.0
"""Seconds of work before a bar appears: shorter runs show nothing."""


class Progress:
    """How far a long command is, as ``done`` out of ``total`` ``unit``; a context
    manager that clears the bar when the work ends.

    ``stream`` defaults to standard error; a stream that is not a terminal shows
    nothing. ``total`` may be ``None`` when unknown (a count is shown, no bar).
    ``delay`` defaults to ``DELAY``."""

    def __init__(
        self,
        label: str,
        total: int | None,
        *,
        unit: str = "",
        stream: TextIO | None = None,
        delay: float | None = None,
    ) -> None:
        self.label, self.total, self.unit = label, total, unit
        self.stream = sys.stderr if stream is None else stream
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = bool(isatty is not None and isatty())
        self.done = 0
        self._start = time.monotonic()
        self._delay = DELAY if delay is None else delay
        self._shown: _Plain | _Rich | None = None

    def update(self, done: int) -> None:
        """``done`` units finished so far."""
        self.done = done
        if not self.enabled:
            return
        if self._shown is None:
            if time.monotonic() - self._start < self._delay:
                return
            self._shown = _bar(self.label, self.total, self.unit, self.stream)
        self._shown.update(done)

    def advance(self, count: int = 1) -> None:
        """``count`` more units finished."""
        self.update(self.done + count)

    def close(self) -> None:
        """Clear the bar, if it was shown."""
        if self._shown is not None:
            self._shown.close()
            self._shown = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _bar(label: str, total: int | None, unit: str, stream: TextIO) -> _Plain | _Rich:
    try:
        import rich.progress  # noqa: F401  (optional: the plain bar serves without it)
    except ImportError:
        return _Plain(label, total, unit, stream)
    return _Rich(label, total, unit, stream)


class _Plain:
    """One line rewritten in place: ``label [####....]  42% 1,234/2,900 unit``."""

    WIDTH = 30

    def __init__(self, label: str, total: int | None, unit: str, stream: TextIO) -> None:
        self.label, self.total, self.unit, self.stream = label, total, unit, stream

    def update(self, done: int) -> None:
        unit = f" {self.unit}" if self.unit else ""
        if self.total:
            done = min(done, self.total)
            filled = self.WIDTH * done // self.total
            bar = f"[{'#' * filled}{'.' * (self.WIDTH - filled)}]"
            line = f"{self.label} {bar} {100 * done // self.total:3d}% {done:,}/{self.total:,}"
        else:
            line = f"{self.label} {done:,}"
        self.stream.write(f"\r{line}{unit}\x1b[K")
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\r\x1b[K")
        self.stream.flush()


class _Rich:
    """rich's bar on ``stream``, removed when the work ends (``transient``)."""

    def __init__(self, label: str, total: int | None, unit: str, stream: TextIO) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichProgress

        columns: list[Any] = [TextColumn("{task.description}"), BarColumn()]
        columns += [MofNCompleteColumn(), TextColumn(unit), TimeElapsedColumn()]
        self.bar = RichProgress(*columns, console=Console(file=stream), transient=True)
        self.task = self.bar.add_task(label, total=total)
        self.bar.start()

    def update(self, done: int) -> None:
        self.bar.update(self.task, completed=done)

    def close(self) -> None:
        self.bar.stop()
