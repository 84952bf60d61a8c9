"""Logs: every file a conversation comes in, read as events in order.

``_jsonl`` is our own log (one ``Entry`` per line: ``read_log``, ``write_log``,
``LogWriter``); ``_formats`` reads any recording (``load_events``: our log, SSE, JSON
arrays, JSON Lines of raw provider events, AWS event streams) and detects which it
is; ``sessions`` reads agent sessions (Claude Code, Codex CLI, OpenHands,
SWE-agent) as built-in events.

May import: ``replay._errors``, ``engine``, ``definitions``. Nothing else of
``replay``: every other room reads its input through this one.
"""
