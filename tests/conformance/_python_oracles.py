"""The Python reference accumulators (``../shared/oracles``), loaded in-process.

The oracle scripts are imported once with importlib (importing the SDKs costs about a
second, too much per fixture) and driven through their own functions, so the events
they fold come from the oracle's own file reader and the folding is the SDK's.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

from tests._shared import shared_path

__all__ = [
    "anthropic_messages",
    "anthropic_read_events",
    "openai_chat",
    "openai_read_events",
    "openai_responses",
    "replay_events",
]


@functools.cache
def _load(name: str) -> ModuleType:
    path: Path = shared_path("oracles", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_oracle_{name}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def anthropic_read_events(path: Path) -> list[dict[str, Any]]:
    """The events ``oracle_anthropic.py`` folds for ``path`` (pings dropped)."""
    events: list[dict[str, Any]] = _load("oracle_anthropic").read_events(
        path.read_text(encoding="utf-8")
    )
    return events


def anthropic_messages(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The SDK accumulator's final message for ``events``, as the oracle script folds it,
    with the beta accumulator's ``usage.iterations`` (see ``_beta_anthropic_messages``).

    One element: the SDK folds a whole stream into one message (a second
    ``message_start`` is ignored and its blocks are appended to the first message).
    """
    from anthropic.lib.streaming._messages import accumulate_event

    if any(_is_compaction_start(event) for event in events):
        return _beta_anthropic_messages(events)
    accumulate: Any = accumulate_event  # the SDK types events; the oracle folds raw dicts
    snapshot: Any = None
    json_bufs: dict[int, bytes] = {}
    for event in events:
        if snapshot is None and event.get("type") != "message_start":
            continue
        snapshot = accumulate(event=event, current_snapshot=snapshot, json_bufs=json_bufs)
    if snapshot is None:
        return []
    message: dict[str, Any] = snapshot.to_dict(mode="json", warnings=False)
    if any(_iterations(event) is not None for event in events):
        [beta] = _beta_anthropic_messages(events)
        message["usage"]["iterations"] = beta["usage"]["iterations"]
    return [message]


def _iterations(event: dict[str, Any]) -> Any:
    """A ``message_delta``'s ``usage.iterations`` (``None`` for any other event)."""
    usage = event.get("usage") if event.get("type") == "message_delta" else None
    return usage.get("iterations") if isinstance(usage, dict) else None


def _is_compaction_start(event: dict[str, Any]) -> bool:
    block = event.get("content_block")
    return (
        event.get("type") == "content_block_start"
        and isinstance(block, dict)
        and block.get("type") == "compaction"
    )


def _beta_anthropic_messages(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The beta accumulator's message: compaction blocks (and ``compaction_delta``)
    are a beta feature, folded only by ``lib/streaming/_beta_messages``. Of the beta
    message's own fields the protocol set keeps ``usage.iterations`` (the
    compaction iteration's tokens are there, and nowhere else) and leaves out
    ``context_management``, as the stable SDK's accumulator does (a stream without
    compaction blocks sends both too)."""
    import httpx
    from anthropic.lib.streaming._beta_messages import accumulate_event

    accumulate: Any = accumulate_event
    snapshot: Any = None
    json_bufs: dict[int, bytes] = {}
    for event in events:
        if snapshot is None and event.get("type") != "message_start":
            continue
        snapshot = accumulate(
            event=event,
            current_snapshot=snapshot,
            json_bufs=json_bufs,
            request_headers=httpx.Headers(),
        )
    if snapshot is None:
        return []
    message: dict[str, Any] = snapshot.to_dict(mode="json", warnings=False)
    message.pop("context_management", None)
    return [message]


def openai_read_events(path: Path) -> list[dict[str, Any]]:
    """The events ``oracle_openai.py`` folds for ``path`` (``[DONE]`` dropped)."""
    events: list[dict[str, Any]] = _load("oracle_openai").read_events(
        path.read_text(encoding="utf-8")
    )
    return events


def openai_chat(events: list[dict[str, Any]]) -> dict[str, Any]:
    """``ChatCompletionStreamState``'s final completion for ``events`` (one completion)."""
    result: dict[str, Any] = _load("oracle_openai").run_chat(events, False)
    return result


def openai_responses(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``ResponseStreamState`` per response (split at each further ``response.created``).

    Each element is ``{"final": ..., "delta_snapshot": ...}`` as the oracle prints them.
    """
    out: dict[str, Any] = _load("oracle_openai").run_responses(events, False)
    results: list[dict[str, Any]] = out.get("responses", [out])
    return results


def replay_events(path: Path) -> list[Any]:
    """``replay.load_events(path).events``, or skip while replay has no reader yet."""
    import pytest

    try:
        from replay import load_events
    except ImportError:
        pytest.skip("replay.load_events does not exist yet")
    events: list[Any] = load_events(path).events
    return events
