"""Logs, stores and replay: everything around the pure engine that touches files.

``read_log``/``write_log``/``LogWriter`` handle our JSON Lines log (one envelope per
line); ``load_events`` reads any recording (our log, SSE, JSON arrays, JSON Lines of
raw provider events); ``EventStore`` is the embedded SQLite event store,
``PostgresEventStore`` the shared one, and ``open_store`` opens either by name.
``detect_protocol`` tells which protocol a recording speaks and ``protocol_definitions``
/ ``load_definitions`` give the ``DefinitionSet`` (definitions, pre-pass, routing) to
replay it with, as ``convo replay`` does.
``record`` appends every model call an official SDK client makes to a log or store;
``playback`` answers the client's calls from that recording with no network.
``replay`` folds a log into its final view; ``check_determinism`` proves every way
of replaying it agrees; ``render_json``/``render_text``/``render_html`` render views.
"""

from ._detect import PROTOCOLS as PROTOCOLS
from ._detect import DefinitionSet as DefinitionSet
from ._detect import Detection as Detection
from ._detect import detect_protocol as detect_protocol
from ._detect import load_definitions as load_definitions
from ._detect import protocol_definitions as protocol_definitions
from ._determinism import WAYS as WAYS
from ._determinism import DeterminismError as DeterminismError
from ._determinism import Divergence as Divergence
from ._determinism import Report as Report
from ._determinism import assert_deterministic as assert_deterministic
from ._determinism import check_determinism as check_determinism
from ._errors import ConcurrencyError as ConcurrencyError
from ._errors import DefinitionSpecError as DefinitionSpecError
from ._errors import LogError as LogError
from ._errors import RenderError as RenderError
from ._errors import ReplayError as ReplayError
from ._errors import StoreBusyError as StoreBusyError
from ._errors import StoreError as StoreError
from ._errors import UnstorableEventError as UnstorableEventError
from ._formats import Format as Format
from ._formats import Loaded as Loaded
from ._formats import load_events as load_events
from ._log import Entry as Entry
from ._log import Log as Log
from ._log import LogWriter as LogWriter
from ._log import read_log as read_log
from ._log import write_log as write_log
from ._postgres import AppendUnknownError as AppendUnknownError
from ._postgres import Landed as Landed
from ._postgres import PostgresEventStore as PostgresEventStore
from ._postgres import StoreChange as StoreChange
from ._render import render_json as render_json
from ._render_html import HtmlRenderer as HtmlRenderer
from ._render_html import render_html as render_html
from ._render_text import render_text as render_text
from ._render_text import strip_controls as strip_controls
from ._replay import replay as replay
from ._store import EventStore as EventStore
from ._stores import Store as Store
from ._stores import open_store as open_store
from .recording import PlaybackMismatchError as PlaybackMismatchError
from .recording import RecordingError as RecordingError
from .recording import RecordingLostWarning as RecordingLostWarning
from .recording import UnsupportedClientError as UnsupportedClientError
from .recording import playback as playback
from .recording import record as record

__all__ = [
    "PROTOCOLS",
    "WAYS",
    "AppendUnknownError",
    "ConcurrencyError",
    "DefinitionSet",
    "DefinitionSpecError",
    "Detection",
    "DeterminismError",
    "Divergence",
    "Entry",
    "EventStore",
    "Format",
    "HtmlRenderer",
    "Landed",
    "Loaded",
    "Log",
    "LogError",
    "LogWriter",
    "PlaybackMismatchError",
    "PostgresEventStore",
    "RecordingError",
    "RecordingLostWarning",
    "RenderError",
    "ReplayError",
    "Report",
    "Store",
    "StoreBusyError",
    "StoreChange",
    "StoreError",
    "UnstorableEventError",
    "UnsupportedClientError",
    "assert_deterministic",
    "check_determinism",
    "detect_protocol",
    "load_definitions",
    "load_events",
    "open_store",
    "playback",
    "protocol_definitions",
    "read_log",
    "record",
    "render_html",
    "render_json",
    "render_text",
    "replay",
    "strip_controls",
    "write_log",
]
