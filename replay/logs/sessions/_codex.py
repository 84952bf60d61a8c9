"""Codex CLI rollout JSONL as a thread of built-in events (see ``replay.logs.sessions``).

A rollout line is ``{"timestamp", "type", "payload"}``. ``response_item``
payloads are the items the model was sent and returned, so they are the
conversation: ``message`` (``user``, ``assistant``, ``developer``/``system``
roles; the text of its ``input_text``/``output_text`` parts), ``reasoning``
(summary text, and ``encrypted_content`` kept opaque), ``function_call`` /
``custom_tool_call`` / ``local_shell_call`` and their ``*_output`` items.
``session_meta``, ``turn_context``, ``ghost_snapshot`` items and every
``event_msg`` are not conversation (``event_msg`` echoes the items for the
terminal: ``user_message``, ``agent_reasoning``, ``token_count``), with two
exceptions: the interruption below, and a rollback. A rollback (``event_msg``
``thread_rolled_back`` ``{num_turns}``, Codex's ``ThreadRolledBack``) retracts the
newest N user turns without deleting them: it becomes a ``branch.edit`` of the
first retracted turn (``definitions.branch``), so the retracted turns stay a
branch and what follows is the new version, active. User turns are the ``user``
messages other than the context Codex writes itself (its environment and
instructions, told apart by their opening tag, as Codex's own turn parser does).

A ``compacted`` record (``payload``: ``message``, the summary, and in newer
versions ``replacement_history``, the items the next request starts from: user
turns, then a ``compaction`` item with ``encrypted_content``) is one
``compaction.mark``: the user turns preserved, the item kept opaque for the
Responses API. Its ``event_msg`` echo ``context_compacted`` is left out.

What decides an interruption: an ``event_msg`` of type ``turn_aborted`` (its
``reason`` kept as the text): cause ``user``; a call with no output when the
conversation moves on: cause ``cut``. A rollout that simply ends mid-turn ends
with its calls answered or pending, as recorded. Denials: rollouts of these
versions write no structural marker for a refused command (the refusal reaches
the model as an ordinary output string), so none is recognised.
"""

from __future__ import annotations

from typing import Any

from ..._errors import LogError
from ._thread import Emitter, Thread, bad_record, json_lines, reject, text_of

__all__ = ["read"]

# The user-role items Codex writes itself (its environment and instructions): not
# turns, by the prefixes its own turn parser tells them apart with.
_CONTEXT_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md")
_CALLS = {"function_call", "custom_tool_call", "local_shell_call"}
_OUTPUTS = {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}
# The gateway of a session_meta's model_provider: Codex speaks the Responses API to
# OpenAI and Azure; another provider's (a local server's) is not said.
_PROVIDERS = {"openai": "openai-responses", "azure": "openai-responses"}


def read(data: bytes, path: str | None, lenient: bool) -> tuple[list[Thread], list[LogError]]:
    """The rollout's one thread."""
    lines, problems = json_lines(data, path, lenient)
    em = Emitter()
    provider = "openai-responses"  # Codex's own (session_meta names another)
    nodes: dict[str, str] = {}  # call_id -> node
    turns: list[str] = []  # the user turns on the current branch, by node id
    rollbacks = 0
    for numbered in lines:
        line, record = numbered.number, numbered.value
        if not isinstance(record, dict) or not isinstance(record.get("payload"), dict):
            error = bad_record(path, line, "a rollout record needs an object 'payload'")
            reject(error, problems, lenient=lenient)
            continue
        payload = record["payload"]
        kind, item = record.get("type"), payload.get("type")
        if kind == "session_meta":
            provider = _PROVIDERS.get(str(payload.get("model_provider") or "openai"), "")
            em.model(payload.get("model"), provider)
        if kind == "turn_context":  # each turn's settings, its model among them
            em.model(payload.get("model"), provider)
        if kind == "event_msg" and item == "turn_aborted":
            em.interruption("user", text=str(payload.get("reason") or ""))
        if kind == "event_msg" and item == "thread_rolled_back":
            count = payload.get("num_turns")
            if type(count) is int and count > 0 and turns:
                # As Codex's own replay: the newest N user turns are retracted (all
                # of them when N is more); what follows is the new version.
                of = turns[max(0, len(turns) - count)]
                del turns[max(0, len(turns) - count) :]
                em.cut_pending()
                rollbacks += 1
                em.events.append(
                    {"type": "branch.edit", "id": f"rollback-{rollbacks}", "of": f"message:{of}"}
                )
        if kind == "compacted":
            em.compaction(f"compacted-{line}", _compaction(payload))
        if kind != "response_item":
            continue
        if item == "message":
            role = str(payload.get("role") or "user")
            role = "system" if role == "developer" else role
            text = text_of(payload.get("content"))
            em.message(f"item-{line}", role, text)
            if role == "user" and not text.lstrip().startswith(_CONTEXT_PREFIXES):
                turns.append(em.events[-1]["id"])
        elif item == "reasoning":
            summary = payload.get("summary")
            text = "\n\n".join(
                part["text"]
                for part in summary or ()
                if isinstance(part, dict) and isinstance(part.get("text"), str)
            )
            raw = text_of(payload.get("content"))
            em.reasoning(
                str(payload.get("id") or f"reasoning-{line}"),
                text if text else raw,
                encrypted=str(payload.get("encrypted_content") or ""),
            )
        elif item in _CALLS:
            call_id = str(payload.get("call_id") or payload.get("id") or f"call-{line}")
            arguments: Any = payload.get("arguments")
            if item == "custom_tool_call":
                arguments = {"input": payload.get("input", "")}
            elif item == "local_shell_call":
                arguments = payload.get("action", {})
            name = str(payload.get("name") or ("shell" if item == "local_shell_call" else ""))
            nodes[call_id] = em.call(call_id, name, arguments if arguments is not None else {})
        elif item in _OUTPUTS:
            node = nodes.get(str(payload.get("call_id")))
            if node is None or not em.pending(node):
                continue  # an output whose call this rollout does not hold
            output = payload.get("output")
            em.result(node, output if isinstance(output, str | list) else _dumps(output))
    return [Thread(name="main", events=em.events)], problems


def _compaction(payload: dict[str, Any]) -> dict[str, Any]:
    """A ``compacted`` record's payload as a mark's fields: ``message`` is the
    summary; ``replacement_history`` the history the next request starts from, its
    messages preserved and its ``compaction`` item kept opaque."""
    mark: dict[str, Any] = {"summary": str(payload.get("message") or "")}
    preserved: list[dict[str, str]] = []
    for entry in payload.get("replacement_history") or ():
        if not isinstance(entry, dict):
            continue
        if entry.get("type") == "compaction":
            mark["provider"] = "openai-responses"
            mark["item"] = entry
        elif entry.get("type") == "message":
            role = str(entry.get("role") or "user")
            role = "system" if role == "developer" else role
            text = text_of(entry.get("content"))
            if text and role in ("user", "assistant", "system"):
                preserved.append({"role": role, "text": text})
    if preserved:
        mark["preserved"] = preserved
    return mark


def _dumps(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)
