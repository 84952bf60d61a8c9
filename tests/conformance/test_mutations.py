"""Bad input from the wire gets a library error (issue #25 item 9).

Every shared recording of every protocol set (and, for ``recorded``, the recordings
of model calls in tests/recorded), mutated at random as a stream damaged
on the way might be (events cut off, dropped, repeated or swapped; one field set to
null, deleted, or given another JSON type), folds both ways a user folds it: batch
(``prepare`` into ``push_many``, as ``replay`` does) and live (the set's counted
``pre_pass()`` on each event, as the server does, then ``push``), then ``rebuild``.
Each either succeeds or raises an ``engine.ConversationError`` whose message names
the event's position where it has one (the pre-pass's ``EventError``, a definition's
``DefinitionError`` with its kind, the live engine's ``HookError``); anything else
(a bare ``KeyError`` from a pre-pass, ``AttributeError`` from a definition) fails.

Derandomized (the same examples every run; hypothesis prints a failing one in full
and the recording it came from).
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from definitions import RebuildError, ag_ui
from engine import (
    ConversationError,
    DefinitionError,
    EventError,
    HookError,
    create_conversation_engine,
)
from replay import load_events
from tests._shared import require

from . import _provider_oracles, _sdk
from ._sets import MODULES

SETS = {name: module.PROTOCOL for name, module in MODULES.items()}
# The provider sets' recordings live in their own folders (read as the oracles do).
_PROVIDERS = {"gemini": "google", "bedrock": "bedrock"}


@functools.cache
def streams(name: str) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """The recordings of set ``name``: (file name, its events as plain dicts)."""
    if name == "recorded":  # recordings of model calls: this project's own
        found = [
            (path.name, tuple(load_events(path).events))
            for path in sorted(Path(__file__).parents[1].joinpath("recorded").glob("*.jsonl"))
        ]
    elif name in _PROVIDERS:
        provider = _PROVIDERS[name]
        names = [param.values[0] for param in _provider_oracles.recording_names(provider)]
        found = [
            (each, tuple(_provider_oracles.recording(provider, each)))
            for each in names
            if each is not None
        ]
    else:
        found = [
            (param.values[0].name, tuple(_sdk.events_of(param.values[0])))
            for param in _sdk.recordings(name)
            if param.values[0] is not None
        ]
    require("../shared", f"no {name} recordings under {_sdk.RECORDED}", found=bool(found))
    return tuple((each, events) for each, events in found if events)


# -- mutations --------------------------------------------------------------------------

# What a field becomes when retyped: each JSON type, empty and not.
_OTHER_VALUES: tuple[Any, ...] = (0, 7, -1, 1.5, True, "", "x", [], [1], {}, {"a": 1})


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path (keys and indexes) of every field and item inside ``value``."""
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return []
    found: list[tuple[Any, ...]] = []
    for key, item in items:
        found.append((*prefix, key))
        found.extend(_paths(item, (*prefix, key)))
    return found


@st.composite
def mutated(draw: st.DrawFn, events: tuple[Any, ...]) -> list[Any]:
    """``events`` (copied) with one mutation."""
    out = copy.deepcopy(list(events))
    at = draw(st.integers(0, len(out) - 1))
    how = draw(st.sampled_from(["cut", "drop", "repeat", "swap", "null", "delete", "retype"]))
    if how == "cut":
        return out[:at]
    if how == "drop":
        del out[at]
    elif how == "repeat":
        out.insert(at, copy.deepcopy(out[at]))
    elif how == "swap":
        other = draw(st.integers(0, len(out) - 1))
        out[at], out[other] = out[other], out[at]
    else:
        paths = _paths(out[at])
        if not paths:  # an event of no fields: the event itself changes
            out[at] = None if how != "retype" else draw(st.sampled_from(_OTHER_VALUES))
            return out
        *parents, key = draw(st.sampled_from(paths))
        holder = out[at]
        for step in parents:
            holder = holder[step]
        if how == "null":
            holder[key] = None
        elif how == "delete":
            del holder[key]
        else:
            holder[key] = draw(st.sampled_from(_OTHER_VALUES))
    return out


# -- what a fold may raise ----------------------------------------------------------------


def _library_error(exc: BaseException, events: list[Any]) -> None:
    """``exc`` is the library's, and says where."""
    assert isinstance(exc, ConversationError), f"not a library error: {exc!r}"
    message = str(exc)
    if isinstance(exc, RebuildError):  # the stream folded; its nodes cannot be given back
        return
    assert isinstance(exc, EventError | DefinitionError | HookError), repr(exc)
    assert 0 <= exc.position < len(events), message
    assert f"event #{exc.position}" in message, message
    if isinstance(exc, DefinitionError):
        assert repr(exc.kind) in message, message
    if isinstance(exc, HookError):  # the live pre-pass: its own error is the cause
        cause = exc.__cause__
        assert isinstance(cause, EventError), repr(cause)
        assert cause.position == exc.position, message


def _batch(name: str, events: list[Any]) -> None:
    protocol = SETS[name]
    engine = create_conversation_engine(protocol.registration)
    engine.push_many(protocol.prepare(events))
    protocol.rebuild(engine.nodes())


def _live(name: str, events: list[Any]) -> None:
    protocol = SETS[name]
    engine = protocol.engine()
    for event in events:
        engine.push(event)
    protocol.rebuild(engine.nodes())


def _server(name: str, events: list[Any]) -> None:
    """As ``convo serve`` feeds a live engine: the pre-pass called by hand."""
    protocol = SETS[name]
    engine = create_conversation_engine(protocol.registration)
    pre_pass = protocol.pre_pass()
    for event in events:
        envelope = pre_pass(event)
        if envelope is not None:
            engine.push(envelope)
    protocol.rebuild(engine.nodes())


@pytest.mark.slow
@pytest.mark.parametrize("name", SETS)
@settings(
    max_examples=120,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_a_damaged_stream_folds_or_raises_a_library_error_naming_the_event(
    name: str, data: st.DataObject
) -> None:
    recordings = streams(name)
    file, events = recordings[data.draw(st.integers(0, len(recordings) - 1))]
    note(f"recording: {file}")
    damaged = data.draw(mutated(events), label="damaged")
    for fold in (_batch, _live, _server):
        try:
            fold(name, damaged)
        except Exception as exc:  # the assertion says which
            _library_error(exc, damaged)


def test_a_missing_field_is_named_with_its_event_and_position() -> None:
    """The message a user reads: the set, the position, the event, what was wrong."""
    events = [
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "delta": "no id"},
    ]
    with pytest.raises(EventError, match=r"^AG-UI: cannot fold event #1 \(dict .*KeyError") as info:
        ag_ui.PROTOCOL.accumulate(events)
    assert info.value.position == 1
    assert isinstance(info.value.__cause__, KeyError)
    live = ag_ui.PROTOCOL.pre_pass()
    live(events[0])
    with pytest.raises(EventError, match=r"cannot fold event #1 ") as again:
        live(events[1])
    assert str(again.value) == str(info.value)
