"""The engine's error tree: one root, one class per party at fault."""

from __future__ import annotations

__all__ = [
    "ConversationError",
    "DefinitionError",
    "EventError",
    "HookError",
    "ListenerError",
    "RegistrationError",
    "UsageError",
]


class ConversationError(Exception):
    """Root of every error the engine raises on purpose."""


class RegistrationError(ConversationError, TypeError):
    """A definition, hook or scheduler was rejected when the engine was created.

    Raised before any event is folded; the message names the object and the fix.
    """


class DefinitionError(ConversationError):
    """A definition raised (or returned something invalid) while an event was folded.

    The event left no trace: no node changed. ``kind`` names the definition,
    ``method`` the member that failed (``match``, ``start``, ``update`` or
    ``publication``), ``position`` the event's position in the engine's input,
    ``key`` the node involved when known. The original exception is ``__cause__``.
    """

    def __init__(
        self, message: str, *, kind: str, method: str, position: int, key: str | None
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.method = method
        self.position = position
        self.key = key


class EventError(ConversationError, ValueError):
    """An event could not be routed (the ``event_type`` function raised or gave an unhashable).

    ``position`` is the event's position; the original exception is ``__cause__``.
    """

    def __init__(self, message: str, *, position: int) -> None:
        super().__init__(message)
        self.position = position


class HookError(ConversationError):
    """A push hook raised. ``method`` names the hook member; ``position`` the event."""

    def __init__(self, message: str, *, hook: object, method: str, position: int) -> None:
        super().__init__(message)
        self.hook = hook
        self.method = method
        self.position = position


class ListenerError(ConversationError):
    """A subscriber raised while being notified.

    Every other subscriber was still notified; the first failure is ``__cause__``.
    """


class UsageError(ConversationError, RuntimeError):
    """The engine was used against its contract (a push from inside a definition, a
    reader kept past ``start()``)."""
