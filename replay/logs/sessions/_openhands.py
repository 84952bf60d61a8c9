"""OpenHands event streams as threads of built-in events (see ``replay.logs.sessions``).

Read: a JSON array of events, JSON Lines of events, or JSON Lines of evaluation
outputs (``{"instance_id", "history": [events], ...}``: one thread per run, in
file order, named by the instance). An event is ``{"id", "source", "action"
| "observation", ...}``:

- ``system`` and ``message`` actions are system, user or assistant turns
  (``args.content``);
- an action with ``tool_call_metadata`` is a model turn: the model response's
  text (once per response, however many calls it made) and the call
  (``tool_call_id``, ``function_name``, the response's own arguments);
- an observation with ``tool_call_metadata`` is that call's result (its
  ``content``); an ``error`` observation without one is what the agent was told
  as a user turn;
- ``recall`` actions and observations, state changes and other bookkeeping are
  not conversation.

What decides a denial: an action whose ``args.confirmation_state`` is
``"rejected"``, or a ``user_rejected`` observation for a call. What decides an
interruption: a call with no observation when the conversation moves on: cause
``cut`` (OpenHands records no other interruption in its events).
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from ..._errors import LogError
from ._thread import Emitter, Thread, action_of, bad_record, json_lines, reject

__all__ = ["read"]

_SKIPPED = {"recall", "change_agent_state", "null"}


def read(data: bytes, path: str | None, lenient: bool) -> tuple[list[Thread], list[LogError]]:
    """One thread per run (an evaluation output) or one for a plain event stream."""
    start = data.lstrip()
    if start.startswith(b"["):
        events = msgspec.json.decode(start)
        return [Thread(name="main", events=_emit(events, ""))], []
    lines, problems = json_lines(data, path, lenient)
    records = [line.value for line in lines]
    if records and isinstance(records[0], dict) and isinstance(records[0].get("history"), list):
        threads: list[Thread] = []
        for numbered in lines:
            line, record = numbered.number, numbered.value
            if not isinstance(record, dict) or not isinstance(record.get("history"), list):
                error = bad_record(path, line, "an evaluation output needs a 'history' list")
                reject(error, problems, lenient=lenient)
                continue
            name = str(record.get("instance_id") or f"run-{line}")
            prefix = "" if not threads else f"{name}/"
            threads.append(Thread(name=name, events=_emit(record["history"], prefix)))
        return threads, problems
    return [Thread(name="main", events=_emit(records, ""))], problems


def _emit(events: list[Any], prefix: str) -> list[dict[str, Any]]:
    em = Emitter(prefix)
    nodes: dict[str, str] = {}  # tool_call_id -> node
    spoken: set[str] = set()  # model responses whose text is emitted
    for event in events:
        if not isinstance(event, dict):
            continue
        key = f"event-{event.get('id')}"
        args: dict[str, Any] = event["args"] if isinstance(event.get("args"), dict) else {}
        meta = event.get("tool_call_metadata")
        action, observation = event.get("action"), event.get("observation")
        if action is not None:
            if action in _SKIPPED:
                continue
            if isinstance(meta, dict) and isinstance(meta.get("tool_call_id"), str):
                _call(em, key, args, meta, nodes, spoken)
                continue
            text = args.get("content") if isinstance(args.get("content"), str) else None
            if text is None:
                text = str(event.get("message") or "")
            if action == "system":
                em.message(key, "system", text)
            elif action == "message":
                role = "user" if event.get("source") == "user" else "assistant"
                em.message(key, role, text)
            continue
        if observation is None or observation in _SKIPPED or observation == "agent_state_changed":
            continue
        content = event.get("content")
        text = content if isinstance(content, str) else str(event.get("message") or "")
        if isinstance(meta, dict) and isinstance(meta.get("tool_call_id"), str):
            node = nodes.get(meta["tool_call_id"])
            if node is None or not em.pending(node):
                continue
            if observation == "user_rejected":
                em.denied(node, _action(meta), text, "user")
            elif observation == "error":
                em.error(node, text)
            else:
                em.result(node, text)
        elif observation == "error":
            em.message(key, "user", text)
    return em.events


def _call(
    em: Emitter,
    key: str,
    args: dict[str, Any],
    meta: dict[str, Any],
    nodes: dict[str, str],
    spoken: set[str],
) -> None:
    call_id = meta["tool_call_id"]
    response: dict[str, Any] = (
        meta["model_response"] if isinstance(meta.get("model_response"), dict) else {}
    )
    message = _first_message(response)
    response_id = str(response.get("id") or key)
    if response_id not in spoken:
        spoken.add(response_id)
        text = message.get("content") if isinstance(message.get("content"), str) else None
        if text is None and isinstance(args.get("thought"), str):
            text = args["thought"]
        if text:
            em.message(f"{key}:text", "assistant", text)
    arguments: Any = None
    for call in message.get("tool_calls") or ():
        if isinstance(call, dict) and call.get("id") == call_id:
            function = call.get("function") or {}
            arguments = function.get("arguments")
    if not isinstance(arguments, str):
        arguments = json.dumps({k: v for k, v in args.items() if k != "thought"})
    node = em.call(call_id, str(meta.get("function_name") or ""), arguments)
    nodes[call_id] = node
    if args.get("confirmation_state") == "rejected":
        em.denied(node, _action(meta, arguments), "rejected by the user", "user")


def _first_message(response: dict[str, Any]) -> dict[str, Any]:
    choices = response.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict):
            return message
    return {}


def _action(meta: dict[str, Any], arguments: str = "") -> str:
    try:
        parsed = json.loads(arguments) if arguments else {}
    except ValueError:
        parsed = arguments
    return action_of(str(meta.get("function_name") or ""), parsed)
