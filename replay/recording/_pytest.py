"""The ``convo_recorder`` fixture's recorder: each test's model calls recorded to, or
played back from, ``recordings/<module>/<test>.jsonl`` beside the test, by record mode.

The record modes are pytest-recording's (VCR.py's, plus ``rewrite``):

- ``none`` (the default: CI never records): play back; a call the recording lacks (or a
  test with no recording) fails, naming the mode that records it;
- ``once``: play back when the recording exists, else record it;
- ``new_episodes``: play back the recorded calls, record the calls beyond them;
- ``all``: record every call, never play back (appending to the recording);
- ``rewrite``: delete the recording, then record every call.

A VCR.py / pytest-recording cassette already beside the test
(``cassettes/<module>/<test>.yaml``, where pytest-recording keeps them, or the one the
``convo_recording(cassette=...)`` marker names) is played back as it is, by the
modes that play back (``none``, ``once``) while no recording of ours exists; the
modes that record write our recording, never the cassette.

A request matches its recorded call with a ``null`` and an absent field taken alike;
``convo_recording(strict=True)`` tells them apart.

A test that passes with recorded calls it never made fails at teardown (``unused``
says why): its recording is stale. ``@pytest.mark.convo_recording(allow_unused=True)``
allows it, for a test whose calls depend on something outside it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._clients import install
from ._errors import RecordingError
from ._player import Player, read_calls
from ._recorder import Recorder, open_sink

__all__ = ["MODES", "ConvoRecorder"]

MODES = ("none", "once", "new_episodes", "all", "rewrite")


class ConvoRecorder:
    """Records or plays back the clients a test wraps, by ``mode``, in one recording at
    ``path`` (several clients share it: their calls are numbered in one sequence)."""

    def __init__(
        self, path: Path, mode: str, *, cassette: Path | None = None, strict: bool = False
    ) -> None:
        if mode not in MODES:
            raise RecordingError(f"unknown record mode {mode!r}: choose one of {', '.join(MODES)}")
        self.mode = mode
        self.strict = strict
        exists = path.exists()
        if not exists and mode in ("none", "once") and cassette is not None and cassette.exists():
            path, exists = cassette, True  # played back as it is
        self.path = path
        plays = mode == "none" or (exists and mode in ("once", "new_episodes"))
        self._plays = plays
        self._records = mode != "none" and not (exists and mode == "once")
        self._recorder: Recorder | None = None
        self._player: Player | None = None
        self._started = False
        self._exists = exists

    @property
    def recording(self) -> bool:
        """Whether this test's calls (some of them, for ``new_episodes``) go to the
        network and are recorded: a test points its client at the real service then."""
        return self._records

    def wrap(self, client: Any) -> Any:
        """Instrument an official SDK ``client`` as the mode says; returns the client."""
        self._start()
        return install(client, recorder=self._recorder, player=self._player)

    def _start(self) -> None:
        if self._started:
            return
        self._started = True
        if self.mode == "rewrite" and self._exists:
            self.path.unlink()
            self._exists = False
        if self._plays:
            calls = read_calls(self.path) if self._exists else []
            hint = (
                "; record it with pytest --convo-record-mode=once (or new_episodes)"
                if self.mode == "none"
                else ""
            )
            self._player = Player(
                calls, speed=None, path=str(self.path), hint=hint, strict=self.strict
            )
        if self._records:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._recorder = Recorder(open_sink(self.path, None))

    def unused(self) -> str | None:
        """Why the recording is stale, or ``None``: the recorded calls this test did not
        make (played back, none of them made again), the first named by number, API and
        model."""
        if self._player is None:
            return None
        left = self._player.unused
        if not left:
            return None
        first = left[0].request
        body = first.get("body")
        model = body.get("model") if isinstance(body, dict) else None
        what = f"call {left[0].n} ({first.get('api', 'unknown API')}, model {model!r})"
        return (
            f"{self.path}: {len(left)} recorded call(s) were not made by the test, the "
            f"first {what}; the recording is stale: re-record it with "
            "pytest --convo-record-mode=rewrite, or allow it with "
            "@pytest.mark.convo_recording(allow_unused=True)"
        )

    @property
    def lost(self) -> int:
        """Records that could not be written (also warned about)."""
        return 0 if self._recorder is None else self._recorder.lost

    def close(self) -> None:
        """Close the recording (the fixture does at the end of the test)."""
        if self._recorder is not None:
            self._recorder.close()
