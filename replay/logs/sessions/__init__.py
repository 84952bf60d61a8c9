"""Agent sessions read as logs: Claude Code, Codex CLI, OpenHands, SWE-agent.

Theory of operation
-------------------
Four harnesses write sessions we read: Claude Code (session JSONL), Codex CLI
(rollout JSONL), OpenHands (event streams) and SWE-agent (``.traj``). Each
importer (``_claude``, ``_codex``, ``_openhands``, ``_sweagent``) turns one file
into ``Thread``\\ s of built-in
events, the same kinds a live agent logs (``definitions.builtin``):

- a user or system turn is a ``message`` (start with its text, end);
- a model turn is its ``reasoning`` blocks (a provider signature or encrypted
  payload as ``reasoning.redacted`` with ``variant="encrypted"``), its text as a
  ``message`` and its ``tool_call``\\ s (arguments as one delta of JSON text), in
  the order the harness recorded them;
- a tool's outcome is ``tool_call.result`` (strings and lists as recorded),
  ``tool_call.error``, or, for a refused call, ``approval.request`` +
  ``approval.decision`` (``denied``) + ``tool_call.denied``;
- an interruption is an ``interruption.mark`` (``definitions.interruption``).

Which fields decide a denial or an interruption is said in each importer; every
one of them is a structural marker the harness writes, never a match on free
text. A call still unanswered when the conversation moves on (the next user turn
or model turn) is marked ``cut`` by ``Emitter`` itself: that is structure too.

Where a session names the model its turns were made with (Claude Code: each
assistant record's ``message.model``; Codex: ``turn_context.model``, its provider
from ``session_meta.model_provider``; OpenHands: the run's ``llm_config.model``, else
each model response's; SWE-agent: its run config's ``agent.model.name``), a
``session.model`` event (``MODEL_EVENT``) says so before the turns, so the next
request needs no ``--model``.

A file may hold several conversations (Claude Code sub-agents, the runs of an
OpenHands evaluation): each is a ``Thread``; the first is the primary one, the
session the file is about, and ``load_events`` returns its events. Records that
are not conversation (summaries, hook notices, snapshots, token counts, ...)
are left out of every thread, never an error.

Layout: ``_thread`` holds what every importer shares (``Thread``, ``Emitter``, the
line reader); each ``_<harness>`` module reads one format; ``_read`` detects the
format and dispatches. May import: ``replay.logs._jsonl``, ``replay._errors``,
``definitions``; nothing above ``replay.logs``.
"""

from ._read import detect as detect
from ._read import read_transcript as read_transcript
from ._thread import MODEL_EVENT as MODEL_EVENT
from ._thread import Thread as Thread
from ._thread import Transcript as Transcript
from ._thread import TranscriptFormat as TranscriptFormat

__all__ = ["MODEL_EVENT", "Thread", "Transcript", "TranscriptFormat", "detect", "read_transcript"]
