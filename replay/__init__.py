"""Logs, stores and replay: everything around the pure engine that touches files.

``read_log``/``write_log``/``LogWriter`` handle our JSON Lines log (one envelope per
line); ``load_events`` reads any recording (our log, SSE, JSON arrays, JSON Lines of
raw provider events); ``EventStore`` is the embedded SQLite event store.
"""

from ._formats import Format as Format
from ._formats import Loaded as Loaded
from ._formats import load_events as load_events
from ._log import Entry as Entry
from ._log import Log as Log
from ._log import LogError as LogError
from ._log import LogWriter as LogWriter
from ._log import ReplayError as ReplayError
from ._log import read_log as read_log
from ._log import write_log as write_log
from ._store import ConcurrencyError as ConcurrencyError
from ._store import EventStore as EventStore
from ._store import StoreBusyError as StoreBusyError
from ._store import StoreError as StoreError

__all__ = [
    "ConcurrencyError",
    "Entry",
    "EventStore",
    "Format",
    "Loaded",
    "Log",
    "LogError",
    "LogWriter",
    "ReplayError",
    "StoreBusyError",
    "StoreError",
    "load_events",
    "read_log",
    "write_log",
]
