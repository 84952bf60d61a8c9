"""Everything around the pure engine that touches files, sockets and processes.

One room a role, from the bottom up (each package's docstring says what it may
import; nothing imports upwards):

- ``logs``: every file a conversation comes in (``read_log``, ``write_log``,
  ``LogWriter``, ``load_events``), agent sessions included;
- ``render``: a view as JSON, terminal text or HTML (``render_json``,
  ``render_text``, ``render_html``);
- ``stores``: the SQLite and PostgreSQL event stores (``open_store``) and the
  projection workers;
- ``protocols``: which set (a ``definitions.ProtocolSet``) folds a recording
  (``detect_protocol``, ``protocol_definitions``, ``load_definitions``);
- ``context``: the model request before each call, and the context economy;
- ``serve``: the live server (the ``serve`` extra);
- ``recording``: official SDK clients' model calls recorded as they happen
  (``record``) and answered from the recording with no network (``playback``);
- at the top: ``replay`` (fold a log to its final view), the determinism checker
  (``check_determinism``), the errors, the pytest plugin and the ``convo`` CLI.
"""

from definitions import ProtocolSet  # noqa: F401 (the deprecated DefinitionSet is it)
from engine._deprecation import renamed

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
from ._replay import replay as replay
from .logs._formats import Format as Format
from .logs._formats import Loaded as Loaded
from .logs._formats import load_events as load_events
from .logs._jsonl import Entry as Entry
from .logs._jsonl import Log as Log
from .logs._jsonl import LogWriter as LogWriter
from .logs._jsonl import read_log as read_log
from .logs._jsonl import write_log as write_log
from .protocols._detect import PROTOCOLS as PROTOCOLS
from .protocols._detect import Detection as Detection
from .protocols._detect import detect_protocol as detect_protocol
from .protocols._detect import load_definitions as load_definitions
from .protocols._detect import protocol_definitions as protocol_definitions
from .recording import PlaybackMismatchError as PlaybackMismatchError
from .recording import RecordingError as RecordingError
from .recording import RecordingLostWarning as RecordingLostWarning
from .recording import UnsupportedClientError as UnsupportedClientError
from .recording import playback as playback
from .recording import record as record
from .render._common import render_json as render_json
from .render._html import HtmlRenderer as HtmlRenderer
from .render._html import render_html as render_html
from .render._text import render_text as render_text
from .render._text import strip_controls as strip_controls
from .stores._open import Store as Store
from .stores._open import open_store as open_store
from .stores._postgres import AppendUnknownError as AppendUnknownError
from .stores._postgres import Landed as Landed
from .stores._postgres import PostgresStore as PostgresStore
from .stores._postgres import StoreChange as StoreChange
from .stores._sqlite import SQLiteStore as SQLiteStore

__all__ = [
    "PROTOCOLS",
    "WAYS",
    "AppendUnknownError",
    "ConcurrencyError",
    "DefinitionSpecError",
    "Detection",
    "DeterminismError",
    "Divergence",
    "Entry",
    "Format",
    "HtmlRenderer",
    "Landed",
    "Loaded",
    "Log",
    "LogError",
    "LogWriter",
    "PlaybackMismatchError",
    "PostgresStore",
    "RecordingError",
    "RecordingLostWarning",
    "RenderError",
    "ReplayError",
    "Report",
    "SQLiteStore",
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

# The names of one release ago.
__getattr__ = renamed(
    __name__,
    globals(),
    {
        "DefinitionSet": "definitions.ProtocolSet",
        "EventStore": "SQLiteStore",
        "PostgresEventStore": "PostgresStore",
    },
)
