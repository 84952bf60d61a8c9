"""The errors ``replay`` raises: one root under ``engine.ConversationError``.

Each class names the situation and who is at fault: bad input (``LogError``), a
refused store operation (``StoreError`` and its kinds), a view that cannot be
rendered (``RenderError``), a ``--definitions`` spec that cannot be loaded
(``DefinitionSpecError``). ``DeterminismError`` (in ``_determinism``) joins them.
"""

from __future__ import annotations

import enum

from engine import ConversationError

__all__ = [
    "EXIT_MEANINGS",
    "ConcurrencyError",
    "DefinitionSpecError",
    "Exit",
    "LogError",
    "RenderError",
    "ReplayError",
    "StoreBusyError",
    "StoreError",
    "UnstorableEventError",
]


class ReplayError(ConversationError):
    """Root of the errors raised by ``replay`` (logs, stores)."""


class LogError(ReplayError, ValueError):
    """A line (or frame) of a log or recording could not be decoded.

    ``path`` names the file (``None`` for an unnamed stream), ``line`` and ``column``
    are 1-based (the column counts characters; 1 when msgspec gives no offset),
    ``truncated`` is true for an unterminated last line, the trace of a crash while
    appending. The message says all of that and what was expected; msgspec's own
    location (``- at `$.position```) is kept at its end.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None,
        line: int,
        column: int,
        truncated: bool = False,
    ) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        self.column = column
        self.truncated = truncated


class StoreError(ReplayError):
    """The event store refused or failed an operation.

    Opening a store raises it for a path that cannot be a store (a missing directory or
    file, a file that is not SQLite or not ours, one that cannot be written when writing
    is asked): the message names the path and the cause, ``__cause__`` is the driver's
    own error when there is one.
    """


class UnstorableEventError(StoreError, ValueError):
    """An event of an append has no JSON form (an object JSON has no type for, a NaN or
    infinite float, which JSON cannot carry); nothing was written.

    ``conversation`` and ``index`` (the event's place in the batch) say which.
    """

    def __init__(self, conversation: str, index: int, reason: str) -> None:
        super().__init__(
            f"conversation {conversation!r}, event #{index} of the batch: {reason}; "
            "nothing was written"
        )
        self.conversation = conversation
        self.index = index


class ConcurrencyError(StoreError):
    """An append expected a conversation's length that it no longer has; nothing was written.

    ``conversation``, ``expected`` (the caller's ``expected_position``) and ``actual``
    (the length found) say which; read the new events and retry.
    """

    def __init__(self, conversation: str, expected: int, actual: int) -> None:
        super().__init__(
            f"conversation {conversation!r}: expected to append at position {expected}, "
            f"but it has {actual} events (another writer appended first); nothing was written"
        )
        self.conversation = conversation
        self.expected = expected
        self.actual = actual


class StoreBusyError(StoreError):
    """Another connection held the write lock for longer than the busy timeout.

    Nothing was written; the append may be retried as it is. ``__cause__`` is
    SQLite's error.
    """


class RenderError(ReplayError):
    """A node could not be rendered: its definition's render member raised, or its
    state has no JSON form. ``kind``, ``key`` and ``method`` say where; the original
    exception is ``__cause__``."""

    def __init__(self, message: str, *, kind: str, key: str, method: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.key = key
        self.method = method


class DefinitionSpecError(ReplayError, ValueError):
    """A definitions spec (``MODULE`` or ``MODULE:ATTR``) could not be loaded.

    ``spec`` is the spec as given; the message starts ``cannot import '<spec>':`` and
    says why (the import failed, the attribute is missing, the value is not
    definitions). The import's own exception, if any, is ``__cause__``.
    """

    def __init__(self, spec: str, reason: str) -> None:
        super().__init__(f"cannot import {spec!r}: {reason}")
        self.spec = spec


class Exit(enum.IntEnum):
    """The exit status of ``convo``: what a command's ``run`` returns and ``main`` gives
    back (here, beside the errors that decide most of them, so every room's command
    returns the same names)."""

    OK = 0
    DIVERGED = 1
    # The same status under the worker's name: a supervisor restarts a worker whose
    # database went away, as it restarts one that failed in any other way.
    DATABASE_LOST = 1
    SERVER_FAILED = 1  # serve: the port or the store failed (not the input)
    BAD_INPUT = 2
    # Above 128, the shell's convention: 128 + the signal (SIGINT, SIGPIPE).
    INTERRUPTED = 130
    BROKEN_PIPE = 141

    @property
    def meaning(self) -> str:
        """What the status tells the caller (as ``convo --help`` says it)."""
        return EXIT_MEANINGS[self.name]


EXIT_MEANINGS = {
    "OK": "ok",
    "DIVERGED": "check found a divergence",
    "DATABASE_LOST": "a worker lost its database (its supervisor restarts it)",
    "SERVER_FAILED": "serve could not bind its port, or its store failed",
    "BAD_INPUT": "bad input or usage",
    "INTERRUPTED": "interrupted (Ctrl-C)",
    "BROKEN_PIPE": "the reader of the output stopped early (`head`): convo stops quietly",
}
"""Each name of ``Exit`` (aliases too) and what it means: docs/cli.md lists them."""
