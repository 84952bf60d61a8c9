"""Recording and playing back the official SDK clients: every model call an
``anthropic``, ``openai``, ``google.genai`` or boto3 ``bedrock-runtime`` client makes,
appended to our log or a store as it happens, and answered from that recording later
with no network.

Owns the instrumentation (``httpx``/``httpx2`` transports, botocore's HTTP session),
the recording format's writer (``recording/request``, ``/response``, ``/event``,
``/body``, ``/end`` records; see docs/recording.md) and playback.

May import: ``replay.logs``, ``replay.stores``, ``replay._errors``,
``definitions._eventstream``; never serving or rendering. The SDKs themselves are
imported only when a client of theirs is given.
"""

from pathlib import Path as _Path

from ._clients import SUPPORTED as SUPPORTED
from ._clients import playback as playback
from ._clients import playback_transport as playback_transport
from ._clients import record as record
from ._clients import recorder_of as recorder_of
from ._clients import recording_transport as recording_transport
from ._errors import PlaybackMismatchError as PlaybackMismatchError
from ._errors import RecordingError as RecordingError
from ._errors import RecordingLostWarning as RecordingLostWarning
from ._errors import UnsupportedClientError as UnsupportedClientError
from ._player import Player as Player
from ._recorder import Recorder as Recorder
from ._wire import API_NAMES as API_NAMES

EXAMPLE = _Path(__file__).parent.parent / "examples" / "sdk_calls.jsonl"
"""A recording the package ships: the calls of the recording guide's examples
(``docs/recording.md``), to try playback and ``convo playback-server --example``
without an API key."""

__all__ = [
    "API_NAMES",
    "EXAMPLE",
    "SUPPORTED",
    "PlaybackMismatchError",
    "Player",
    "Recorder",
    "RecordingError",
    "RecordingLostWarning",
    "UnsupportedClientError",
    "playback",
    "playback_transport",
    "record",
    "recorder_of",
    "recording_transport",
]
