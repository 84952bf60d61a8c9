"""Chat exports as threads of built-in events, every version kept (``definitions.branch``).

Two products let people download their chats as one JSON array, a conversation an
element, each a tree of messages (an edit or a regeneration adds a sibling):

- ChatGPT's ``conversations.json``: ``{id, title, mapping: {node id: {id, parent,
  children, message}}, current_node}``; a synthetic root whose ``message`` is null;
  ``message`` is ``{id, author: {role}, content: {content_type, parts | text}}``.
  ``current_node`` is the leaf the product showed.
- Claude.ai's ``conversations.json``: ``{uuid, name, chat_messages: [{uuid, sender
  (human, assistant), text, content: [{type, text | thinking}], parent_message_uuid}],
  current_leaf_message_uuid}``; the bulk export may leave out the parent and the
  leaf: then the messages are one line, in order, and the newest leaf is shown.

Each conversation is a ``Thread`` named by its id. Its events: each leaf's path
(root to leaf, children in the order the export lists them) as whole messages,
joined by ``branch.join_paths``, the leaf the product showed active; a reasoning
model's thoughts (ChatGPT's ``thoughts`` content, Claude's ``thinking`` blocks) as
``reasoning``. Messages with
no text (a tool's hidden call, an empty system turn) and those ChatGPT marks
``metadata.is_visually_hidden_from_conversation`` are left out.

May import what ``replay.logs.sessions`` may.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any, Final

from definitions import branch, builtin

from ..._errors import LogError
from ._thread import Thread, any_decoder, bad_record, reject, text_of

__all__ = ["read_chatgpt", "read_claude_ai"]

_STARTS: Final = branch.starts_of(builtin.DEFINITIONS)


def _conversations(data: bytes, path: str | None) -> list[Any]:
    try:
        value = any_decoder.decode(data)
    except Exception as exc:  # msgspec.DecodeError, RecursionError
        raise LogError(
            f"{path or '<data>'}: not a JSON export: {exc}", path=path, line=1, column=1
        ) from exc
    return value if isinstance(value, list) else [value]


def _each(
    data: bytes,
    path: str | None,
    lenient: bool,
    field: str,
    kind: type,
    problems: list[LogError],
) -> Iterator[tuple[int, dict[str, Any], Any]]:
    """Each conversation of an export with its ``field`` (of type ``kind``); one
    without it is refused (``lenient``: listed in ``problems`` and skipped)."""
    for index, conversation in enumerate(_conversations(data, path)):
        value = conversation.get(field) if isinstance(conversation, dict) else None
        if not isinstance(value, kind):
            error = bad_record(path, 1, f"conversation #{index} has no {field!r} {kind.__name__}")
            reject(error, problems, lenient=lenient)
            continue
        yield index, conversation, value


def _leaf_paths(
    root: str | None, children: Callable[[str | None], list[str]]
) -> Iterator[list[str]]:
    """Root-to-leaf paths of a tree, depth first, children in order (iteratively:
    an export's chain may be thousands deep)."""
    stack: list[tuple[str | None, list[str]]] = [(root, [])]
    while stack:
        node, above = stack.pop()
        below = children(node)
        path = above if node is None else [*above, node]
        if not below:
            yield path
        stack.extend((child, path) for child in reversed(below))


def _join(paths: list[tuple[str, list[dict[str, Any]]]], active: str | None) -> list[Any]:
    if len(paths) <= 1:
        return paths[0][1] if paths else []
    names = {name for name, _ in paths}
    return branch.join_paths(paths, _STARTS, active=active if active in names else None)


def _below(tree: dict[str | None, list[str]], node: str | None) -> list[str]:
    return tree.get(node, [])


def _reasoning(events: list[dict[str, Any]], id: str, text: str) -> None:
    events.append({"type": "reasoning.start", "id": id})
    events.append({"type": "reasoning.delta", "id": id, "text": text})
    events.append({"type": "reasoning.end", "id": id})


def _message(events: list[dict[str, Any]], id: str, role: str, text: str) -> None:
    events.append({"type": "message.start", "id": id, "role": role, "text": text})
    events.append({"type": "message.end", "id": id})


# -- ChatGPT ---------------------------------------------------------------------------


def _chatgpt_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if not isinstance(content, dict):
        return ""
    parts = content.get("parts")
    if isinstance(parts, list):
        return "\n".join(p for p in parts if isinstance(p, str))
    text = content.get("text")
    return text if isinstance(text, str) else ""


def _chatgpt_events(mapping: dict[str, Any], ids: list[str]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for node_id in ids:
        message = mapping[node_id].get("message")
        if not isinstance(message, dict):
            continue  # the synthetic root
        metadata = message.get("metadata")
        if isinstance(metadata, dict) and metadata.get("is_visually_hidden_from_conversation"):
            continue  # the product's own context (a system prompt), never shown
        author = message.get("author")
        role = author.get("role") if isinstance(author, dict) else None
        id = str(message.get("id") or node_id)
        thoughts = _chatgpt_thoughts(message)
        if thoughts:
            _reasoning(events, id, thoughts)
            continue
        text = _chatgpt_text(message)
        if isinstance(role, str) and text.strip():
            _message(events, id, role, text)
    return events


def _chatgpt_thoughts(message: dict[str, Any]) -> str:
    """A reasoning model's ``thoughts`` content (``{thoughts: [{summary, content}]}``)."""
    content = message.get("content")
    if not isinstance(content, dict) or content.get("content_type") != "thoughts":
        return ""
    thoughts = content.get("thoughts")
    if not isinstance(thoughts, list):
        return ""
    return "\n\n".join(
        t["content"] for t in thoughts if isinstance(t, dict) and isinstance(t.get("content"), str)
    )


def read_chatgpt(
    data: bytes, path: str | None, lenient: bool
) -> tuple[list[Thread], list[LogError]]:
    """The conversations of a ChatGPT export, in the export's order."""
    threads: list[Thread] = []
    problems: list[LogError] = []
    for index, conversation, mapping in _each(data, path, lenient, "mapping", dict, problems):
        name = str(conversation.get("id") or conversation.get("conversation_id") or index)

        def children(node: str | None, mapping: dict[str, Any] = mapping) -> list[str]:
            if node is None:
                return [
                    k
                    for k, v in mapping.items()
                    if isinstance(v, dict) and v.get("parent") not in mapping
                ]
            below = mapping[node].get("children") if isinstance(mapping[node], dict) else None
            return [c for c in below or () if c in mapping]

        paths = [
            (ids[-1], _chatgpt_events(mapping, ids)) for ids in _leaf_paths(None, children) if ids
        ]
        threads.append(Thread(name=name, events=_join(paths, conversation.get("current_node"))))
    return threads, problems


# -- Claude.ai -------------------------------------------------------------------------


def _claude_events(message: dict[str, Any]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    id = str(message.get("uuid"))
    role = "user" if message.get("sender") == "human" else "assistant"
    content = message.get("content")
    if isinstance(content, list) and content:
        for n, block in enumerate(content):
            if not isinstance(block, dict):
                continue
            if block.get("type") == "thinking" and isinstance(block.get("thinking"), str):
                _reasoning(events, f"{id}:{n}", block["thinking"])
        text = text_of([b for b in content if isinstance(b, dict) and b.get("type") == "text"])
    else:
        raw = message.get("text")
        text = raw if isinstance(raw, str) else ""
    if text.strip():
        _message(events, id, role, text)
    return events


def read_claude_ai(
    data: bytes, path: str | None, lenient: bool
) -> tuple[list[Thread], list[LogError]]:
    """The conversations of a Claude.ai export, in the export's order."""
    threads: list[Thread] = []
    problems: list[LogError] = []
    for index, conversation, messages in _each(
        data, path, lenient, "chat_messages", list, problems
    ):
        name = str(conversation.get("uuid") or index)
        by_id = {str(m.get("uuid")): m for m in messages if isinstance(m, dict)}
        order = list(by_id)
        if any("parent_message_uuid" in m for m in by_id.values()):
            below: dict[str | None, list[str]] = {}
            for id, message in by_id.items():
                parent = message.get("parent_message_uuid")
                below.setdefault(parent if parent in by_id else None, []).append(id)
            paths_of = list(_leaf_paths(None, functools.partial(_below, below)))
        else:
            paths_of = [order] if order else []
        paths = [
            (ids[-1], [e for id in ids for e in _claude_events(by_id[id])])
            for ids in paths_of
            if ids
        ]
        active = conversation.get("current_leaf_message_uuid")
        if active not in by_id and paths_of:  # no leaf named: the newest shown
            newest = max(
                paths_of,
                key=lambda ids: (str(by_id[ids[-1]].get("created_at") or ""), order.index(ids[-1])),
            )
            active = newest[-1]
        threads.append(Thread(name=name, events=_join(paths, active)))
    return threads, problems
