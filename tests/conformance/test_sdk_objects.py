"""Every protocol set takes what its official SDK yields, through its declared
contract (``PROTOCOL``), and says what is wrong with anything else.

- The SDK's typed events (built as its stream builds them) fold to the same nodes
  and final objects as the recording's dicts, in batch (``prepare``) and live
  (``PROTOCOL.engine()``, one ``push`` per event, sync and async iteration).
- The Anthropic ``MessageStream`` helper's events (raw ones beside the derived
  ``TextEvent``, ``InputJsonEvent``, ...) count once.
- Misuse is never silent: a non-object, a typed object of another protocol, a raw
  event pushed without the pre-pass each raise an error naming what and the fix.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
import pytest

from definitions import ProtocolSet, ag_ui, ai_sdk, anthropic, openai_chat, openai_responses
from engine import ConversationError, EventError, HookError, create_conversation_engine

from ._sdk import SDK_PROTOCOLS, events_of, recordings, require, typed, view

SETS: dict[str, ModuleType] = {
    "anthropic": anthropic,
    "openai_chat": openai_chat,
    "openai_responses": openai_responses,
    "ag_ui": ag_ui,
    "ai_sdk": ai_sdk,
}
CASES = [
    pytest.param(protocol, param.values[0], id=f"{protocol}-{param.id}", marks=param.marks)
    for protocol in SDK_PROTOCOLS
    for param in recordings(protocol)
]


def replayed(protocol: ProtocolSet, events: list[dict[str, Any]]) -> tuple[Any, ...]:
    """The dict replay, or skip a recording the set itself refuses (other tests say why)."""
    try:
        return protocol.replay(events)
    except (ConversationError, ValueError) as exc:
        pytest.skip(f"the set refuses this recording as dicts: {exc}")


def pushed(protocol: ProtocolSet, events: Iterable[Any]) -> tuple[Any, ...]:
    """The nodes of a live engine after one ``push`` per event, as a client loop does."""
    engine = protocol.engine()
    for event in events:
        engine.push(event)
    return engine.nodes()


@pytest.mark.slow
@pytest.mark.parametrize(("name", "path"), CASES)
def test_typed_events_fold_as_their_dicts(name: str, path: Path) -> None:
    protocol = SETS[name].PROTOCOL
    dicts = events_of(path)
    expected = replayed(protocol, dicts)
    objects = typed(name, dicts)
    assert all(type(event) is not dict for event in objects)
    seen = view(protocol, expected)
    assert view(protocol, protocol.replay(objects)) == seen
    assert protocol.accumulate(objects) == protocol.rebuild(expected)
    assert view(protocol, pushed(protocol, objects)) == seen
    # Mixed: what a client that decodes some frames itself would push.
    mixed = [
        obj if at % 2 else raw for at, (obj, raw) in enumerate(zip(objects, dicts, strict=True))
    ]
    assert view(protocol, pushed(protocol, mixed)) == seen
    # In batch too, a dict first or a typed event first: the pre-pass looks at each.
    assert view(protocol, protocol.replay(mixed)) == seen
    assert view(protocol, protocol.replay([objects[0], *dicts[1:]])) == seen


class Sub(dict):  # type: ignore[type-arg]
    """A dict subclass (what a JSON decoder's ``object_hook`` might make)."""


@pytest.mark.slow
@pytest.mark.parametrize(("name", "path"), CASES)
def test_a_dict_subclass_folds_as_its_dict(name: str, path: Path) -> None:
    protocol = SETS[name].PROTOCOL
    dicts = events_of(path)
    expected = replayed(protocol, dicts)
    subs = [Sub(event) for event in dicts]
    assert view(protocol, protocol.replay(subs)) == view(protocol, expected)
    assert view(protocol, pushed(protocol, subs)) == view(protocol, expected)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "path"), CASES)
def test_each_typed_event_is_its_wire_dict(name: str, path: Path) -> None:
    """``plain`` gives exactly what the frame's JSON decoded to: the wire's names, its
    extra fields, no field it left out, values as JSON has them."""
    protocol = SETS[name].PROTOCOL
    dicts = events_of(path)
    for at, (obj, event) in enumerate(zip(typed(name, dicts), dicts, strict=True)):
        try:
            plain = protocol.plain(obj)
        except TypeError:  # a type this protocol does not know: the dicts say so too
            assert not protocol.detect(event)
            continue
        assert plain == event, f"event #{at}"
    # The second time (each class and type checked once) converts the same.
    assert [protocol.plain(obj) for obj in typed(name, dicts[:50])] == dicts[:50]


@pytest.mark.parametrize("name", SDK_PROTOCOLS)
def test_async_iteration_pushes_the_same(name: str) -> None:
    protocol = SETS[name].PROTOCOL
    for param in recordings(name)[:3]:
        if param.marks:
            pytest.skip("no recordings")
        dicts = events_of(param.values[0])
        expected = replayed(protocol, dicts)
        objects = typed(name, dicts)

        async def stream(objects: list[Any] = objects) -> AsyncIterator[Any]:
            for event in objects:
                await asyncio.sleep(0)
                yield event

        async def consume(engine: Any) -> tuple[Any, ...]:
            async for event in stream():
                engine.push(event)
            return engine.nodes()  # type: ignore[no-any-return]

        assert view(protocol, asyncio.run(consume(protocol.engine()))) == view(protocol, expected)


def message_stream_events(raw: list[Any]) -> list[Any]:
    """What ``client.messages.stream(...)`` yields for these raw typed events: each raw
    event, and after a delta the helper's derived event (``MessageStream.__stream__``)."""
    helpers = require("anthropic.lib.streaming._messages")
    snapshot: Any = None
    json_bufs: dict[int, bytes] = {}
    out: list[Any] = []
    for event in raw:
        if snapshot is None and event.type != "message_start":
            out.append(event)
            continue
        snapshot = helpers.accumulate_event(
            event=event, current_snapshot=snapshot, json_bufs=json_bufs
        )
        out.extend(helpers.build_events(event=event, message_snapshot=snapshot))
    return out


@pytest.mark.parametrize("path", [p.values[0] for p in recordings("anthropic")][:1] or [None])
def test_message_stream_helper_events_count_once(path: Path | None) -> None:
    if path is None:
        pytest.skip("no Anthropic recordings")
    dicts = events_of(path)
    protocol = anthropic.PROTOCOL
    expected = replayed(protocol, dicts)
    stream = message_stream_events(typed("anthropic", dicts))
    kinds = {type(event).__name__ for event in stream}
    assert {"TextEvent", "ParsedContentBlockStopEvent", "ParsedMessageStopEvent"} <= kinds
    assert view(protocol, pushed(protocol, stream)) == view(protocol, expected)
    assert protocol.accumulate(stream) == protocol.rebuild(expected)


@pytest.mark.slow
@pytest.mark.parametrize("path", [p.values[0] for p in recordings("anthropic")])
def test_every_anthropic_recording_through_message_stream(path: Path | None) -> None:
    if path is None:
        pytest.skip("no Anthropic recordings")
    dicts = events_of(path)
    expected = replayed(anthropic.PROTOCOL, dicts)
    try:
        stream = message_stream_events(typed("anthropic", dicts))
    except Exception as exc:  # the SDK's own accumulator refuses it
        pytest.skip(f"MessageStream refuses this recording: {exc!r}")
    assert view(anthropic.PROTOCOL, pushed(anthropic.PROTOCOL, stream)) == view(
        anthropic.PROTOCOL, expected
    )


# -- misuse --------------------------------------------------------------------------

RAW: dict[str, dict[str, Any]] = {
    "anthropic": {"type": "message_start", "message": {"id": "m", "content": []}},
    "openai_chat": {
        "id": "c",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": "hi"}}],
    },
    "openai_responses": {"type": "response.created", "response": {"id": "r", "output": []}},
    "ag_ui": {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
    "ai_sdk": {"type": "start", "messageId": "m"},
}
NOT_EVENTS = [5, "message_start", b"{}", None, [RAW["anthropic"]], object(), dict]


class Model(msgspec.Struct):
    """A typed object that is no SDK's (no pydantic model, no to_dict)."""

    type: str = "message_start"


@pytest.mark.parametrize("name", SETS)
@pytest.mark.parametrize("bad", [*NOT_EVENTS, Model()], ids=repr)
def test_a_non_event_is_an_error_naming_it_and_the_fix(name: str, bad: object) -> None:
    protocol = SETS[name].PROTOCOL
    what = type(bad).__qualname__
    fix = "push the stream's events as decoded JSON dicts or as the objects its official SDK"
    # The batch pre-pass names its position; its cause is ``plain``'s TypeError.
    cannot = rf"^{protocol.title}: cannot fold event #1 \(.*\): cannot fold a \S*{what}"
    with pytest.raises(EventError, match=cannot) as info:
        protocol.accumulate([RAW[name], bad])
    assert fix in str(info.value)
    assert info.value.position == 1
    assert isinstance(info.value.__cause__, TypeError)
    engine = protocol.engine()
    engine.push(RAW[name])
    # Live, the pre-pass's own EventError comes out of push as itself (no HookError).
    with pytest.raises(EventError, match=cannot) as live:
        engine.push(bad)
    assert not isinstance(live.value, HookError)
    assert live.value.position == 1
    assert pushed(protocol, [RAW[name]]) == engine.nodes()  # the bad push left no trace


def other_sdk_objects() -> list[Any]:
    return [
        typed("anthropic", [RAW["anthropic"]])[0],
        typed("openai_chat", [RAW["openai_chat"]])[0],
        typed("openai_responses", [RAW["openai_responses"]])[0],
    ]


@pytest.mark.parametrize("name", SETS)
def test_a_typed_object_of_another_protocol_is_an_error(name: str) -> None:
    protocol = SETS[name].PROTOCOL
    for obj in other_sdk_objects():
        if protocol.detect(obj.to_dict()):
            continue  # its own
        with pytest.raises(EventError, match="is not an event of this protocol") as info:
            protocol.accumulate([obj])
        assert type(obj).__qualname__ in str(info.value)
        assert "protocol set of its own SDK" in str(info.value)


@pytest.mark.parametrize("name", SETS)
def test_raw_events_without_the_pre_pass_are_an_error_naming_the_fix(name: str) -> None:
    protocol = SETS[name].PROTOCOL
    # Typed objects too: a set routed by ``type`` refuses them in its fallback
    # definition (tests/conformance/test_past_the_pre_pass.py has every kind of event).
    raw: list[Any] = [RAW[name], typed(name, [RAW[name]])[0]]
    fix = rf"{name}\.PROTOCOL\.engine\(\)"
    for event in raw:
        # The routing the set's own fold uses.
        engine = create_conversation_engine(protocol.registration)
        with pytest.raises(ConversationError, match=fix):
            engine.push(event)
        assert engine.nodes() == ()
        # Routed by hand with the set's key: the same.
        engine = create_conversation_engine(protocol.definitions, event_type=protocol.event_type)
        with pytest.raises(ConversationError, match=fix):
            engine.push(event)
    # With no routing every match sees the raw event: an error (or the set refuses to
    # be registered so), never 0 nodes.
    with pytest.raises(ConversationError):
        create_conversation_engine(protocol.definitions).push(RAW[name])
    # Through the contract the same event folds.
    assert pushed(protocol, [RAW[name]]) != ()
