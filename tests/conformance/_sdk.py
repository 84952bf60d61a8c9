"""The official SDKs' objects for the protocol sets' tests: which recordings each SDK
speaks, and the recorded events as the SDK's typed models (built as its stream
builds them, from the decoded JSON of each SSE frame)."""

from __future__ import annotations

import functools
import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests._shared import SHARED

RECORDED = SHARED / "fixtures" / "recorded"
SDK_PROTOCOLS = ("anthropic", "openai_chat", "openai_responses")
"""The protocols with an official Python SDK pinned in the test extra."""


def require(name: str) -> ModuleType:
    """The SDK module ``name``; skip without it, but fail in CI (which installs it)."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(f"{name} is not installed (pip install -e '.[test]'): {exc}")


@functools.cache
def _detected() -> dict[str, list[Path]]:
    from replay import detect_protocol, load_events

    found: dict[str, list[Path]] = {}
    if not RECORDED.is_dir():
        return found
    for path in sorted(RECORDED.iterdir()):
        if not path.is_file() or path.name == "README.md":
            continue
        try:
            events = load_events(path, lenient=True).events
        except Exception:  # a recording replay cannot read is another suite's business
            continue
        found.setdefault(detect_protocol(events).protocol, []).append(path)
    return found


def recordings(protocol: str) -> list[Any]:
    """The recordings of ``protocol`` as pytest params (one skipped param saying why
    when ../shared is absent)."""
    paths = _detected().get(protocol, [])
    if not paths:
        return [
            pytest.param(
                None,
                id="absent",
                marks=pytest.mark.skip(
                    reason=f"no {protocol} recordings under {RECORDED} (see tests/_shared.py)"
                ),
            )
        ]
    return [pytest.param(path, id=path.name) for path in paths]


def events_of(path: Path) -> list[dict[str, Any]]:
    """A recording's events as plain dicts."""
    from replay import load_events

    events: list[dict[str, Any]] = load_events(path, lenient=True).events
    return events


def typed(protocol: str, events: list[dict[str, Any]]) -> list[Any]:
    """``events`` as the SDK's stream yields them: its typed event models."""
    if protocol == "anthropic":
        models = require("anthropic._models")
        types = require("anthropic.types")
        return [
            models.construct_type_unchecked(type_=types.RawMessageStreamEvent, value=event)
            for event in events
        ]
    models = require("openai._models")
    if protocol == "openai_chat":
        chunk = require("openai.types.chat").ChatCompletionChunk
        return [models.construct_type(type_=chunk, value=event) for event in events]
    union = require("openai.types.responses").ResponseStreamEvent
    return [models.construct_type(type_=union, value=event) for event in events]


def view(protocol: Any, nodes: Any) -> tuple[Any, ...]:
    """What a user sees of ``nodes``: the text and HTML views and the protocol's final
    objects. (States may differ in the order they saw a chunk's keys: a typed model
    keeps its fields in its class's order, not the wire's.)"""
    from replay import render_html, render_text

    nodes = tuple(nodes)
    return (
        [(node.key, node.kind, node.seq) for node in nodes],
        render_text(nodes, protocol.definitions, color=False),
        render_html(nodes, protocol.definitions),
        protocol.rebuild(nodes),
    )
