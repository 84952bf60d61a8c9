"""Claude Code session JSONL as threads of built-in events (see ``replay.logs.sessions``).

A session file holds one record per line. ``user`` and ``assistant`` records are
conversation; they form a tree by ``parentUuid`` (``logicalParentUuid`` across a
compaction), and the conversation is the chain from the last record back to its
root, with what parallel tool calls hang beside it (the other blocks of a turn
on it, and their results); records on abandoned branches (an edited prompt, a
retried turn) are left out. ``isSidechain`` records are sub-agents' own transcripts: each root (a
sidechain record with no parent) starts a thread of its own, and so does each
side file ``<session>/subagents/agent-*.jsonl`` next to the session file. A file
of sidechain records only (a side file, read alone or beside its session) is read
whole, in file order, one thread per ``agentId``: its parents are in the main
session. An
assistant message arrives as one record per content block, sharing
``message.id``: the records of one id are one model turn.

A compaction is a ``system`` record of subtype ``compact_boundary`` (its
``compactMetadata``: ``trigger``, ``preTokens``, ``postTokens``, ``durationMs``,
``messagesSummarized``), then a ``user`` record flagged ``isCompactSummary``
holding the summary: together one ``compaction.mark`` (the summary is never a
user turn). The boundary's ``parentUuid`` is null and its ``logicalParentUuid``
names the last record before it, so the chain (and the view) goes on through the
history it replaced; the preserved segment newer versions re-emit after the
summary is ordinary records after the mark. ``microcompact_boundary`` (old tool
results cleared: ``microcompactMetadata {trigger, preTokens, tokensSaved,
compactedToolIds}``) is a mark with ``cleared`` and no summary.

Not conversation, left out of every thread: ``summary``, ``system`` (hook
notices, with their ANSI escapes; turn durations), ``attachment`` other than a
queued prompt, ``file-history-snapshot``, ``permission-mode``, ``last-prompt``,
``queue-operation`` and any record type this reader does not know. A queued
prompt (``attachment`` of type ``queued_command``) is the user turn it became.

What decides a denial (``approval.decision`` ``denied``): a ``tool_result``
block with ``is_error: true`` on a record that carries ``toolDenialKind`` (the
harness's own marker), or, for versions that wrote none (1.0.x), whose whole
content is one of the harness's fixed refusal records (``_REFUSALS``), compared
whole, never searched. What decides an interruption: a ``user`` record that has
no ``toolUseResult`` and whose whole content is the harness's fixed
interruption record (``_INTERRUPTIONS``): cause ``user``; ``toolUseResult.interrupted``
true on a result: cause ``user`` at that call; ``isApiErrorMessage`` true on an
``assistant`` record: cause ``retry_error``; a call with no result when the
chain moves on: cause ``cut``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Final

from definitions import branch, builtin

from ..._errors import LogError
from ._thread import Emitter, Thread, action_of, json_lines, text_of

__all__ = ["read"]

# The harness's own synthetic records (Claude Code's REJECT_MESSAGE, its
# feedback variant's prefix, CANCEL_MESSAGE, INTERRUPT_MESSAGE and
# INTERRUPT_MESSAGE_FOR_TOOL_USE): whole records it writes in place of a
# result or a turn, not text anybody typed.
_REFUSALS: Final = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected "
    "(eg. if it was a file edit, the new_string was NOT written to the file). STOP what "
    "you are doing and wait for the user to tell you how to proceed.",
    "The user doesn't want to take this action right now. STOP what you are doing and "
    "wait for the user to tell you how to proceed.",
)
_REFUSAL_WITH_FEEDBACK: Final = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected "
    "(eg. if it was a file edit, the new_string was NOT written to the file). To tell you "
    "how to proceed, the user said:\n"
)
_STARTS: Final = branch.starts_of(builtin.DEFINITIONS)
_INTERRUPTIONS: Final = frozenset(
    {"[Request interrupted by user]", "[Request interrupted by user for tool use]"}
)


def read(data: bytes, path: str | None, lenient: bool) -> tuple[list[Thread], list[LogError]]:
    """The threads of a Claude Code session file: the main conversation first (or
    the file's first sub-agent, for a side file), then sidechains, then side files."""
    lines, problems = json_lines(data, path, lenient)
    threads = _threads([line.value for line in lines], "")
    if path is not None:
        for side in _side_files(path):
            side_lines, side_problems = json_lines(Path(side).read_bytes(), side, lenient)
            problems.extend(side_problems)
            threads += _threads([line.value for line in side_lines], Path(side).stem)
    return threads, problems


def _side_files(path: str) -> list[str]:
    folder = Path(os.fspath(path))
    side = folder.with_suffix("") / "subagents"
    if folder.suffix != ".jsonl" or not side.is_dir():
        return []
    return sorted(str(p) for p in side.glob("agent-*.jsonl"))


def _threads(records: list[Any], name: str) -> list[Thread]:
    """Main chain first, then each sidechain root's chain, in file order."""
    nodes = [r for r in records if isinstance(r, dict) and isinstance(r.get("uuid"), str)]
    by_uuid = {r["uuid"]: r for r in nodes}
    main = [r for r in nodes if not r.get("isSidechain")]
    if nodes and not main:
        return _side_file(nodes, name)
    groups: list[tuple[str, list[dict[str, Any]]]] = []
    if main:
        groups.append((name or "main", main))
    roots: dict[str, list[dict[str, Any]]] = {}
    for record in nodes:
        if record.get("isSidechain"):
            roots.setdefault(_root(record, by_uuid), []).append(record)
    for index, members in enumerate(roots.values(), start=1):
        agent = members[0].get("agentId")
        label = f"agent-{agent}" if isinstance(agent, str) and agent else f"sidechain-{index}"
        groups.append((label, members))
    threads = []
    for position, (label, members) in enumerate(groups):
        prefix = "" if position == 0 and not name else f"{label}/"
        threads.append(Thread(name=label, events=_branched(members, by_uuid, prefix)))
    return threads


def _branched(
    members: list[dict[str, Any]], by_uuid: dict[str, dict[str, Any]], prefix: str
) -> list[dict[str, Any]]:
    """The events of every branch of ``members`` (``definitions.branch``): the chain
    of each leaf, with what hangs beside it, in the order the leaves were written,
    the chain of the last record (the one the harness resumed) last and active. A
    session with no abandoned branch is that one chain's events."""
    parents = {_parent(r) for r in members}
    leaves = [r for r in members if r["uuid"] not in parents and r is not members[-1]]
    active = _with_siblings(members, _chain(members[-1], by_uuid))
    chains: list[tuple[int, str, set[str]]] = []
    covered = set(active)
    order = {r["uuid"]: n for n, r in enumerate(members)}
    for leaf in reversed(leaves):  # the newest first: an older leaf beside it is covered
        if leaf["uuid"] in covered:
            continue
        chain = _with_siblings(members, _chain(leaf, by_uuid))
        covered |= chain
        chains.append((order[leaf["uuid"]], f"{prefix}{leaf['uuid']}", chain))
    chains.sort(key=lambda found: found[0])
    resumed = f"{prefix}{members[-1]['uuid']}"
    chains.append((len(members), resumed, active))
    paths = [
        (label, _emit([r for r in members if r["uuid"] in chain], prefix))
        for _, label, chain in chains
    ]
    if len(paths) == 1:
        return paths[0][1]
    return branch.join_paths(paths, _STARTS, active=resumed)


def _side_file(nodes: list[dict[str, Any]], name: str) -> list[Thread]:
    """A side file (every record a sidechain: a sub-agent's or a compaction helper's
    transcript) read whole, one thread per ``agentId`` in file order: its records'
    parents live in the main session, so no chain inside the file holds them all."""
    agents: dict[str, list[dict[str, Any]]] = {}
    for record in nodes:
        agent = record.get("agentId")
        agents.setdefault(agent if isinstance(agent, str) else "", []).append(record)
    threads = []
    for position, (agent, members) in enumerate(agents.items()):
        label = name or (f"agent-{agent}" if agent else "sidechain")
        prefix = "" if position == 0 and not name else f"{label}/"
        threads.append(Thread(name=label, events=_emit(members, prefix)))
    return threads


def _parent(record: dict[str, Any]) -> str | None:
    # An id is a string: any other value (a damaged record's) links to nothing.
    parent = record.get("parentUuid")
    if parent is None:
        parent = record.get("logicalParentUuid")
    return parent if isinstance(parent, str) else None


def _root(record: dict[str, Any], by_uuid: dict[str, dict[str, Any]]) -> str:
    seen: set[str] = set()
    while True:
        parent = _parent(record)
        if not isinstance(parent, str) or parent not in by_uuid or parent in seen:
            return str(record["uuid"])
        seen.add(parent)
        record = by_uuid[parent]


def _chain(leaf: dict[str, Any], by_uuid: dict[str, dict[str, Any]]) -> set[str]:
    chain = {leaf["uuid"]}
    record = leaf
    while True:
        parent = _parent(record)
        if not isinstance(parent, str) or parent not in by_uuid or parent in chain:
            return chain
        chain.add(parent)
        record = by_uuid[parent]


def _turn(record: dict[str, Any]) -> str | None:
    """The model turn an assistant record belongs to (its message's string ``id``)."""
    message = record.get("message")
    if record.get("type") != "assistant" or not isinstance(message, dict):
        return None
    turn = message.get("id")
    return turn if isinstance(turn, str) else None


def _with_siblings(members: list[dict[str, Any]], chain: set[str]) -> set[str]:
    """The chain plus what parallel tool calls leave beside it: the other records of
    a model turn on the chain (same ``message.id``) and the results of its calls,
    which the harness hangs off each call's own record rather than one line."""
    turns = {_turn(r) for r in members if r["uuid"] in chain}
    turns.discard(None)
    calls: set[str] = set()
    for record in members:
        message = record.get("message")
        if isinstance(message, dict) and _turn(record) in turns:
            chain.add(record["uuid"])
            calls.update(_block_ids(message.get("content"), "tool_use", "id"))
    for record in members:
        message = record.get("message")
        if (
            record.get("type") == "user"
            and isinstance(message, dict)
            and calls & _block_ids(message.get("content"), "tool_result", "tool_use_id")
        ):
            chain.add(record["uuid"])
    return chain


def _block_ids(content: Any, kind: str, field: str) -> set[str]:
    if not isinstance(content, list):
        return set()
    return {str(b.get(field)) for b in content if isinstance(b, dict) and b.get("type") == kind}


# compactMetadata's fields (Claude Code 2.x session records) -> compaction.mark's.
_COMPACT_NUMBERS: Final = {
    "trigger": "trigger",
    "preTokens": "tokens_before",
    "postTokens": "tokens_after",
    "durationMs": "duration_ms",
    "messagesSummarized": "messages",
}


def _compaction(record: dict[str, Any], summary: str) -> dict[str, Any]:
    """A ``compact_boundary`` (or ``microcompact_boundary``) record as a mark."""
    subtype = record.get("subtype")
    field = "compactMetadata" if subtype == "compact_boundary" else "microcompactMetadata"
    meta = record.get(field)
    mark: dict[str, Any] = {"summary": summary}
    if isinstance(meta, dict):
        for field, name in _COMPACT_NUMBERS.items():
            value = meta.get(field)
            if name == "trigger":
                if value in ("auto", "manual"):
                    mark[name] = value
            elif isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                mark[name] = value
        if subtype == "microcompact_boundary":
            saved = meta.get("tokensSaved")
            before = mark.get("tokens_before")
            if isinstance(saved, int) and isinstance(before, int):
                mark["tokens_after"] = max(0, before - saved)
            cleared = meta.get("compactedToolIds")
            if isinstance(cleared, list):
                mark["cleared"] = [str(c) for c in cleared]
    return mark


def _emit(records: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    em = Emitter(prefix)
    calls: dict[str, tuple[str, str, Any]] = {}  # tool_use id -> (node, name, input)
    turn: object = None
    boundary: dict[str, Any] | None = None  # a compact_boundary waiting for its summary
    for record in records:
        kind = record.get("type")
        message = record.get("message")
        uuid = record["uuid"]
        if kind == "system" and record.get("subtype") == "microcompact_boundary":
            mark = _compaction(record, "")
            # compactedToolIds are tool_use ids: the mark names the calls' nodes
            mark["cleared"] = [calls[c][0] if c in calls else c for c in mark.get("cleared", ())]
            em.compaction(uuid, mark)
            continue
        if kind == "system" and record.get("subtype") == "compact_boundary":
            if boundary is not None:
                em.compaction(boundary["uuid"], _compaction(boundary, ""))
            boundary = record
            continue
        if kind == "user" and record.get("isCompactSummary") is True:
            summary = text_of(message.get("content")) if isinstance(message, dict) else ""
            source = boundary if boundary is not None else record
            em.compaction(source["uuid"], _compaction(source, summary))
            boundary = None
            turn = None
            continue
        if boundary is not None:  # a boundary with no summary after it
            em.compaction(boundary["uuid"], _compaction(boundary, ""))
            boundary = None
        if kind == "attachment":
            attachment = record.get("attachment")
            if isinstance(attachment, dict) and attachment.get("type") == "queued_command":
                prompt = attachment.get("prompt")
                if isinstance(prompt, str):
                    em.message(uuid, "user", prompt)
                    turn = None
            continue
        if kind not in ("user", "assistant") or not isinstance(message, dict):
            continue
        content = message.get("content")
        if kind == "assistant":
            if record.get("isApiErrorMessage") is True:
                em.interruption("retry_error", text=text_of(content))
                continue
            message_id = message.get("id", uuid)
            if message_id != turn:
                em.cut_pending()
                turn = message_id
            if message.get("model") != "<synthetic>":  # Claude Code's own notices
                em.model(message.get("model"), "anthropic")
            _assistant(em, uuid, content, calls)
            continue
        turn = None
        _user(em, record, content, calls)
    if boundary is not None:
        em.compaction(boundary["uuid"], _compaction(boundary, ""))
    return em.events


def _assistant(
    em: Emitter, uuid: str, content: Any, calls: dict[str, tuple[str, str, Any]]
) -> None:
    if isinstance(content, str):
        em.message(uuid, "assistant", content)
        return
    if not isinstance(content, list):
        return
    for index, block in enumerate(content):
        if not isinstance(block, dict):
            continue
        key = uuid if index == 0 else f"{uuid}:{index}"
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            em.message(key, "assistant", block["text"])
        elif kind == "thinking":
            em.reasoning(
                key, str(block.get("thinking") or ""), encrypted=str(block.get("signature") or "")
            )
        elif kind == "redacted_thinking":
            em.reasoning(key, "", redacted=str(block.get("data") or ""))
        elif kind == "tool_use" and isinstance(block.get("id"), str):
            name = str(block.get("name") or "")
            arguments = block.get("input", {})
            calls[block["id"]] = (em.call(block["id"], name, arguments), name, arguments)


def _user(
    em: Emitter, record: dict[str, Any], content: Any, calls: dict[str, tuple[str, str, Any]]
) -> None:
    uuid = record["uuid"]
    outcome = record.get("toolUseResult")
    if isinstance(content, str) or (
        isinstance(content, list)
        and not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    ):
        text = text_of(content)
        if outcome is None and text in _INTERRUPTIONS:
            em.interruption("user", text=text)
        elif text:
            em.message(uuid, "user", text)
        return
    if not isinstance(content, list):
        return
    texts = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") != "tool_result":
            if isinstance(block.get("text"), str):
                texts.append(block["text"])
            continue
        known = calls.get(str(block.get("tool_use_id")))
        if known is None or not em.pending(known[0]):
            continue  # a result whose call is not on this chain (or answered already)
        node, name, arguments = known
        body = block.get("content", "")
        if block.get("is_error") is True:
            text = text_of(body)
            if _is_refusal(record, text):
                em.denied(node, action_of(name, arguments), text, "user")
            else:
                em.error(node, text)
            continue
        em.result(node, body)
        if isinstance(outcome, dict) and outcome.get("interrupted") is True:
            em.interruption("user", tool_call_id=node)
    if texts:
        em.message(f"{uuid}:text", "user", "\n".join(texts))


def _is_refusal(record: dict[str, Any], text: str) -> bool:
    if "toolDenialKind" in record:
        return True
    outcome = record.get("toolUseResult")
    if isinstance(outcome, dict) and "toolDenialKind" in outcome:
        return True
    return text in _REFUSALS or text.startswith(_REFUSAL_WITH_FEEDBACK)
