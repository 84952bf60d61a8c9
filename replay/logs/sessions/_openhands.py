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

A ``condensation`` action (V0: ``args.forgotten_event_ids`` or
``forgotten_events_start_id``/``_end_id``, ``summary``) or a ``Condensation``
event (V1: ``forgotten_event_ids``, ``summary``, ``summary_offset``) is a
``compaction.mark``: ``through`` the latest forgotten event's node, ``keep``
the earlier events it did not forget (the run's first events).

V1 (the software-agent-sdk, ``{"kind": "ActionEvent", "action": {"kind":
"TerminalAction", ...}}``), told apart by its ``kind`` field:
``SystemPromptEvent`` (``system_prompt.text``) and ``MessageEvent``
(``llm_message {role, content}``) are turns; an ``ActionEvent`` is a model
turn's ``thought`` (once per ``llm_response_id``) and its ``tool_call {id,
name, arguments}``; ``ObservationEvent`` (``observation.content``,
``is_error``), ``AgentErrorEvent`` (``error``) and ``UserRejectObservation``
(``rejection_reason``: a denial) answer the call named by ``tool_call_id``;
state updates, pauses and condensation requests are not conversation.

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
from ._thread import Emitter, Thread, action_of, bad_record, json_lines, reject, text_of

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
            model = _configured(record.get("metadata"))
            threads.append(Thread(name=name, events=_emit(record["history"], prefix, model)))
        return threads, problems
    return [Thread(name="main", events=_emit(records, ""))], problems


def _is_v1(events: list[Any]) -> bool:
    """Whether ``events`` are the V1 SDK's (``{"kind": "ActionEvent", "action":
    {"kind": ...}}``): its events name their class in ``kind``."""
    return any(isinstance(e, dict) and isinstance(e.get("kind"), str) for e in events)


def _configured(metadata: Any) -> str | None:
    """The model an evaluation run's LLM config names (``metadata.llm_config.model``)."""
    config = metadata.get("llm_config") if isinstance(metadata, dict) else None
    model = config.get("model") if isinstance(config, dict) else None
    return model if isinstance(model, str) and model else None


def _emit(events: list[Any], prefix: str, model: str | None = None) -> list[dict[str, Any]]:
    """The events of one run, V0's or V1's (``_is_v1``), each read by its reader;
    ``model``, the one its LLM config names (else each model response's is read)."""
    read = _event_v1 if _is_v1(events) else _event_v0
    em = Emitter(prefix)
    em.litellm_model(model)
    configured = model is not None
    nodes: dict[str, str] = {}  # tool_call_id -> node
    spoken: set[str] = set()  # model responses whose text is emitted
    keys: dict[str, list[str]] = {}  # event id -> the keys of the nodes it started
    for event in events:
        if not isinstance(event, dict):
            continue
        before = len(em.events)
        meta = event.get("tool_call_metadata")
        if (
            not configured
            and isinstance(meta, dict)
            and isinstance(meta.get("model_response"), dict)
        ):
            # What the endpoint served, by its own name (not litellm's): whose, unsaid.
            em.model(meta["model_response"].get("model"), "")
        read(em, event, nodes, spoken, keys)
        keys[str(event.get("id"))] = _started(em.events[before:])
    return em.events


def _started(events: list[dict[str, Any]]) -> list[str]:
    """The keys (``kind:id``) of the nodes ``events`` start."""
    return [
        f"{str(e['type']).split('.')[0]}:{e['id']}"
        for e in events
        if str(e.get("type")).endswith((".start", ".mark", ".request"))
    ]


def _condensation(
    em: Emitter, key: str, fields: dict[str, Any], keys: dict[str, list[str]]
) -> None:
    """A condensation (V0 ``condensation`` action args, V1 ``Condensation`` event) as
    a ``compaction.mark``: the latest forgotten event's last node is ``through``,
    the earlier events not forgotten are kept (OpenHands keeps a run's first
    events), ``summary`` is the summary."""
    forgotten = {str(i) for i in fields.get("forgotten_event_ids") or ()}
    start, end = fields.get("forgotten_events_start_id"), fields.get("forgotten_events_end_id")
    if isinstance(start, int) and isinstance(end, int):  # V0 writes a range instead
        forgotten |= {str(i) for i in range(start, end + 1)}
    order = list(keys)
    last = max((order.index(i) for i in forgotten if i in keys), default=-1)
    through = next(
        (k for i in reversed(order[: last + 1]) if i in forgotten for k in keys[i][-1:]), None
    )
    keep = [k for i in order[:last] if i not in forgotten for k in keys[i]]
    mark: dict[str, Any] = {"summary": str(fields.get("summary") or "")}
    if through is not None:
        mark["through"] = through
    if keep:
        mark["keep"] = keep
    em.compaction(key, mark)


def _event_v0(
    em: Emitter,
    event: dict[str, Any],
    nodes: dict[str, str],
    spoken: set[str],
    keys: dict[str, list[str]],
) -> None:
    key = f"event-{event.get('id')}"
    args: dict[str, Any] = event["args"] if isinstance(event.get("args"), dict) else {}
    meta = event.get("tool_call_metadata")
    action, observation = event.get("action"), event.get("observation")
    if not isinstance(action, str | None) or not isinstance(observation, str | None):
        return  # not a V0 event (a V1 event's action is an object)
    if action == "condensation":
        _condensation(em, key, args, keys)
        return
    if action is not None:
        if action in _SKIPPED:
            return
        if isinstance(meta, dict) and isinstance(meta.get("tool_call_id"), str):
            _call(em, key, args, meta, nodes, spoken)
            return
        text = args.get("content") if isinstance(args.get("content"), str) else None
        if text is None:
            text = str(event.get("message") or "")
        if action == "system":
            em.message(key, "system", text)
        elif action == "message":
            role = "user" if event.get("source") == "user" else "assistant"
            em.message(key, role, text)
        return
    if observation is None or observation in _SKIPPED or observation == "agent_state_changed":
        return
    content = event.get("content")
    text = content if isinstance(content, str) else str(event.get("message") or "")
    if isinstance(meta, dict) and isinstance(meta.get("tool_call_id"), str):
        node = nodes.get(meta["tool_call_id"])
        if node is None or not em.pending(node):
            return
        if observation == "user_rejected":
            em.denied(node, _action(meta), text, "user")
        elif observation == "error":
            em.error(node, text)
        else:
            em.result(node, text)
    elif observation == "error":
        em.message(key, "user", text)


# -- V1 (the software-agent-sdk's events) ---------------------------------------------


def _event_v1(
    em: Emitter,
    event: dict[str, Any],
    nodes: dict[str, str],
    spoken: set[str],
    keys: dict[str, list[str]],
) -> None:
    kind = event.get("kind")
    key = f"event-{event.get('id')}"
    if kind == "SystemPromptEvent":
        prompt = event.get("system_prompt")
        text = prompt.get("text") if isinstance(prompt, dict) else None
        if isinstance(text, str) and text:
            em.message(key, "system", text)
    elif kind == "MessageEvent":
        message = event.get("llm_message")
        if isinstance(message, dict):
            role = str(message.get("role") or "user")
            text = text_of(message.get("content"))
            if role in ("user", "assistant", "system") and text:
                em.message(key, role, text)
    elif kind == "ActionEvent":
        call = event.get("tool_call") if isinstance(event.get("tool_call"), dict) else {}
        assert isinstance(call, dict)
        call_id = str(event.get("tool_call_id") or call.get("id") or key)
        response = str(event.get("llm_response_id") or key)
        if response not in spoken:
            spoken.add(response)
            thought = text_of(event.get("thought"))
            if thought:
                em.message(f"{key}:text", "assistant", thought)
        arguments = call.get("arguments")
        if not isinstance(arguments, str):
            action = event.get("action")
            arguments = action if isinstance(action, dict) else {}
        name = str(event.get("tool_name") or call.get("name") or "")
        nodes[call_id] = em.call(call_id, name, arguments)
    elif kind in ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation"):
        node = nodes.get(str(event.get("tool_call_id")))
        if node is None or not em.pending(node):
            return
        if kind == "UserRejectObservation":
            reason = str(event.get("rejection_reason") or "rejected by the user")
            em.denied(node, str(event.get("tool_name") or ""), reason, "user")
        elif kind == "AgentErrorEvent":
            em.error(node, str(event.get("error") or ""))
        else:
            observation = event.get("observation")
            body = observation if isinstance(observation, dict) else {}
            text = text_of(body.get("content"))
            if body.get("is_error") is True:
                em.error(node, text)
            else:
                em.result(node, text)
    elif kind == "Condensation":
        _condensation(em, key, event, keys)


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
