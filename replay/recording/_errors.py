"""The errors and the warning of recording and playback."""

from __future__ import annotations

from typing import Any

from .._errors import ReplayError

__all__ = [
    "PlaybackMismatchError",
    "RecordingError",
    "RecordingLostWarning",
    "UnsupportedClientError",
]


class RecordingError(ReplayError):
    """Recording or playing back a client failed: the log cannot be opened or read as a
    recording, or the client is already instrumented."""


class UnsupportedClientError(RecordingError, TypeError):
    """``record``/``playback`` was given a client they cannot instrument; the message
    names the clients they support."""


class PlaybackMismatchError(RecordingError, AssertionError):
    """A request made during playback is not the one recorded at its place.

    ``call`` is the call's number (0-based), ``field`` the path of the first
    difference (``"model"``, ``"messages[2].content"``; ``"call"`` for a call beyond
    the recording), ``recorded`` and ``sent`` the two values. Nothing was sent to the
    network.
    """

    def __init__(
        self, message: str, *, call: int, field: str, recorded: Any = None, sent: Any = None
    ) -> None:
        super().__init__(message)
        self.call = call
        self.field = field
        self.recorded = recorded
        self.sent = sent

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), str(self), self.call, self.field, self.recorded, self.sent))


def _rebuild(
    cls: type[PlaybackMismatchError], message: str, call: int, field: str, recorded: Any, sent: Any
) -> PlaybackMismatchError:
    return cls(message, call=call, field=field, recorded=recorded, sent=sent)


class RecordingLostWarning(UserWarning):
    """The recorder could not write a record (disk full, store down): the SDK's call went
    on unchanged, the record is lost and counted in the recorder's ``lost``."""
