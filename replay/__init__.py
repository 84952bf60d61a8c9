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

import importlib
from typing import TYPE_CHECKING, Any

from engine._deprecation import renamed

if TYPE_CHECKING:
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

# Where each public name lives. It is imported on first use (PEP 562): ``import
# replay`` costs almost nothing, and ``load_events`` pulls in only what a load needs
# (no server, no recorder, no renderer). tests/test_surface.py holds this table to the
# imports above, which are what type checkers read.
_HOME: dict[str, str] = {
    "WAYS": "._determinism",
    "DeterminismError": "._determinism",
    "Divergence": "._determinism",
    "Report": "._determinism",
    "assert_deterministic": "._determinism",
    "check_determinism": "._determinism",
    "ConcurrencyError": "._errors",
    "DefinitionSpecError": "._errors",
    "LogError": "._errors",
    "RenderError": "._errors",
    "ReplayError": "._errors",
    "StoreBusyError": "._errors",
    "StoreError": "._errors",
    "UnstorableEventError": "._errors",
    "replay": "._replay",
    "Format": ".logs._formats",
    "Loaded": ".logs._formats",
    "load_events": ".logs._formats",
    "Entry": ".logs._jsonl",
    "Log": ".logs._jsonl",
    "LogWriter": ".logs._jsonl",
    "read_log": ".logs._jsonl",
    "write_log": ".logs._jsonl",
    "PROTOCOLS": ".protocols._detect",
    "Detection": ".protocols._detect",
    "detect_protocol": ".protocols._detect",
    "load_definitions": ".protocols._detect",
    "protocol_definitions": ".protocols._detect",
    "PlaybackMismatchError": ".recording",
    "RecordingError": ".recording",
    "RecordingLostWarning": ".recording",
    "UnsupportedClientError": ".recording",
    "playback": ".recording",
    "record": ".recording",
    "render_json": ".render._common",
    "HtmlRenderer": ".render._html",
    "render_html": ".render._html",
    "render_text": ".render._text",
    "strip_controls": ".render._text",
    "Store": ".stores._open",
    "open_store": ".stores._open",
    "AppendUnknownError": ".stores._postgres",
    "Landed": ".stores._postgres",
    "PostgresStore": ".stores._postgres",
    "StoreChange": ".stores._postgres",
    "SQLiteStore": ".stores._sqlite",
}

__all__ = sorted(_HOME)

# The names of one release ago.
_RENAMED = {
    "DefinitionSet": "definitions.ProtocolSet",
    "EventStore": "SQLiteStore",
    "PostgresEventStore": "PostgresStore",
}
_renamed = renamed(__name__, globals(), _RENAMED)


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (then a plain global); an
    old name, with its warning."""
    home = _HOME.get(name)
    if home is None:
        new = _RENAMED.get(name, "")
        if new in _HOME:
            __getattr__(new)
        elif "." in new:  # another package's name, brought here under its last part
            module, _, attribute = new.rpartition(".")
            globals()[attribute] = getattr(importlib.import_module(module), attribute)
        return _renamed(name)
    value = getattr(importlib.import_module(home, __name__), name)
    globals()[name] = value
    return value
