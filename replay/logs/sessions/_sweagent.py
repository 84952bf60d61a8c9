"""SWE-agent ``.traj`` trajectories as a thread of built-in events (see
``replay.logs.sessions``).

A trajectory is one JSON object; its ``history`` is the conversation the agent
kept (``trajectory`` repeats it step by step). Demonstration messages
(``is_demo``) are left out. A ``system`` or ``user`` message is a turn; an
``assistant`` message is a model turn: its text (``thought``, else
``content``) and its call, either the function calls it made (``tool_calls``,
answered by ``tool`` messages naming them in ``tool_call_ids``) or, for agents
that parse commands out of text, its ``action`` as one ``bash`` call (id
``step-N``), answered by the ``user`` message that follows it.

Denials and interruptions: trajectories record neither (SWE-agent runs
unattended); a call with no answer when the conversation moves on is cut.

The model is the one ``replay_config`` (the run's config, an object or its JSON
text) names in ``agent.model.name``, as litellm names it; SWE-agent's own
stand-ins for a model (a replay, a human) name none.
"""

from __future__ import annotations

import msgspec

from ..._errors import LogError
from .._jsonl import line_error
from ._thread import Emitter, Thread, bad_record, text_of

__all__ = ["read"]


def read(data: bytes, path: str | None, lenient: bool) -> tuple[list[Thread], list[LogError]]:
    """The trajectory's one thread."""
    try:
        trajectory = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise line_error(exc, data, path=path, line=1, what="SWE-agent trajectory") from exc
    history = trajectory.get("history") if isinstance(trajectory, dict) else None
    if not isinstance(history, list):
        raise bad_record(path, 1, "a SWE-agent trajectory needs a 'history' list")
    em = Emitter()
    em.litellm_model(_model(trajectory.get("replay_config")))
    awaiting: str | None = None  # a text command's call, answered by the next user turn
    nodes: dict[str, str] = {}
    for step, message in enumerate(history):
        if not isinstance(message, dict) or message.get("is_demo"):
            continue
        role = message.get("role")
        text = text_of(message.get("content"))
        key = f"step-{step}"
        if role == "tool":
            for call_id in message.get("tool_call_ids") or ():
                node = nodes.get(str(call_id))
                if node is not None and em.pending(node):
                    em.result(node, text)
            continue
        if role == "user" and awaiting is not None and em.pending(awaiting):
            em.result(awaiting, text)
            awaiting = None
            continue
        awaiting = None
        if role != "assistant":
            em.message(key, "system" if role == "system" else "user", text)
            continue
        thought = message.get("thought")
        em.message(key, "assistant", thought if isinstance(thought, str) and thought else text)
        calls = message.get("tool_calls")
        if isinstance(calls, list) and calls:
            for call in calls:
                if not isinstance(call, dict):
                    continue
                function = call.get("function") or {}
                call_id = str(call.get("id") or key)
                arguments = function.get("arguments")
                nodes[call_id] = em.call(
                    call_id,
                    str(function.get("name") or ""),
                    arguments if isinstance(arguments, str) else {},
                )
        elif isinstance(message.get("action"), str) and message["action"].strip():
            awaiting = em.call(f"{key}:call", "bash", {"command": message["action"].strip()})
    return [Thread(name="main", events=em.events)], []


# SWE-agent's models that are no model: a replay of recorded actions, a human at the
# keyboard, a test stand-in.
_NO_MODEL = frozenset({"replay", "human", "human_thought", "instant_empty_submit"})


def _model(config: object) -> str | None:
    """The model a trajectory's run config names (``agent.model.name``), if any."""
    if isinstance(config, str):
        try:
            config = msgspec.json.decode(config)
        except msgspec.DecodeError:
            return None
    agent = config.get("agent") if isinstance(config, dict) else None
    model = agent.get("model") if isinstance(agent, dict) else None
    name = model.get("name") if isinstance(model, dict) else None
    return name if isinstance(name, str) and name not in _NO_MODEL else None
