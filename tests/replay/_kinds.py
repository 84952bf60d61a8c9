"""Small definitions for the replay tests, independent of the built-in kinds.

Deterministic: ``message`` (start/delta/end, streamed text, frame publication),
``counter`` (a discrete count), ``note`` (reads ``reader.previous("message")``),
``bare`` (no render members). Not deterministic, each in its own way: a clock, a
global counter, random, and a state mutated in place.
"""

from __future__ import annotations

import itertools
import random
import time
from html import escape
from typing import Any

import msgspec
from hypothesis import strategies as st

from definitions import StreamedText
from engine import Claim, Node, Reader

Event = dict[str, Any]


class Message(msgspec.Struct, frozen=True):
    role: str
    text: Any  # StreamedText
    done: bool = False


class MessageKind:
    kind = "message"
    event_types = frozenset({"message.start", "message.delta", "message.end"})

    def match(self, event: Event) -> Claim | None:
        type_ = event.get("type")
        if type_ == "message.start":
            return Claim(event["id"], "start")
        if type_ in ("message.delta", "message.end"):
            return Claim(event["id"], "update")
        return None

    def start(self, event: Event, reader: Reader) -> Message:
        return Message(role=event.get("role", "assistant"), text=StreamedText())

    def update(self, state: Message, event: Event) -> Message:
        if event["type"] == "message.end":
            return state if state.done else msgspec.structs.replace(state, done=True)
        if not event["delta"]:
            return state
        return msgspec.structs.replace(state, text=state.text + event["delta"])

    def publication(self, event: Event) -> str:
        return "animation-frame" if event["type"] == "message.delta" else "immediate"

    def render_text(self, node: Node) -> str:
        return f"{node.state.role}: {node.state.text}"

    def render_html(self, node: Node) -> str:
        return f"<p>{escape(node.state.role)}: {escape(str(node.state.text))}</p>"


class Count(msgspec.Struct, frozen=True):
    value: int


class CounterKind:
    kind = "counter"
    event_types = frozenset({"count"})
    publication = "none"

    def match(self, event: Event) -> Claim | None:
        if event.get("type") != "count":
            return None
        return Claim(event["id"], "start" if event.get("reset") else "update")

    def start(self, event: Event, reader: Reader) -> Count:
        return Count(0)

    def update(self, state: Count, event: Event) -> Count:
        return Count(state.value + event.get("by", 1))


class Note(msgspec.Struct, frozen=True):
    after: str | None
    text_so_far: str


class NoteKind:
    """Reads the previous message when it starts: what it saw must not depend on how
    the log was replayed."""

    kind = "note"
    event_types = frozenset({"note"})

    def match(self, event: Event) -> Claim | None:
        return Claim(event["id"], "start") if event.get("type") == "note" else None

    def start(self, event: Event, reader: Reader) -> Note:
        previous = reader.previous("message")
        if previous is None:
            return Note(after=None, text_so_far="")
        return Note(after=previous.key, text_so_far=str(previous.state.text))

    def update(self, state: Note, event: Event) -> Note:
        return state


class BareKind:
    """A kind with no render members at all; its state carries untrusted text."""

    kind = "bare"
    event_types = frozenset({"bare"})

    def match(self, event: Event) -> Claim | None:
        return Claim(event["id"], "start") if event.get("type") == "bare" else None

    def start(self, event: Event, reader: Reader) -> dict[str, Any]:
        return {"content": event["content"]}

    def update(self, state: dict[str, Any], event: Event) -> dict[str, Any]:
        return state


def kinds() -> list[Any]:
    return [MessageKind(), CounterKind(), NoteKind(), BareKind()]


# -- not deterministic ---------------------------------------------------------------


class _Stamped(NoteKind):
    kind = "stamped"

    def start(self, event: Event, reader: Reader) -> Any:
        return {"value": self.value()}

    def value(self) -> object:
        raise NotImplementedError


class ClockKind(_Stamped):
    def value(self) -> object:
        return time.time()


_ids = itertools.count()


class GlobalCounterKind(_Stamped):
    def value(self) -> object:
        return next(_ids)


class RandomKind(_Stamped):
    def value(self) -> object:
        return random.random()


class MutatingKind:
    """Appends to its state's list in place and reports "no change"."""

    kind = "mutating"
    event_types = frozenset({"message.start", "message.delta"})

    def match(self, event: Event) -> Claim | None:
        if event.get("type") == "message.start":
            return Claim(event["id"], "start")
        if event.get("type") == "message.delta":
            return Claim(event["id"], "update")
        return None

    def start(self, event: Event, reader: Reader) -> dict[str, list[str]]:
        return {"deltas": []}

    def update(self, state: dict[str, list[str]], event: Event) -> dict[str, list[str]]:
        state["deltas"].append(event["delta"])
        return {"deltas": state["deltas"]}  # a new object, sharing the mutated list


# -- logs ----------------------------------------------------------------------------

IDS = st.sampled_from(["a", "b", "c"])

EVENTS = st.one_of(
    st.builds(
        lambda i, role: {"type": "message.start", "id": i, "role": role},
        IDS,
        st.sampled_from(["user", "assistant"]),
    ),
    st.builds(
        lambda i, d: {"type": "message.delta", "id": i, "delta": d},
        IDS,
        st.text(alphabet="ab <>&\x1b\n", max_size=4),
    ),
    st.builds(lambda i: {"type": "message.end", "id": i}, IDS),
    st.builds(
        lambda i, reset, by: {"type": "count", "id": i, "reset": reset, "by": by},
        IDS,
        st.booleans(),
        st.integers(-3, 3),
    ),
    st.builds(lambda i: {"type": "note", "id": i}, IDS),
    st.builds(lambda i, c: {"type": "bare", "id": i, "content": c}, IDS, st.text(max_size=5)),
    st.just({"type": "unknown"}),
)
LOGS = st.lists(EVENTS, max_size=40)


def conversation() -> list[Event]:
    """A fixed small conversation touching every deterministic kind."""
    return [
        {"type": "message.start", "id": "m1", "role": "user"},
        {"type": "message.delta", "id": "m1", "delta": "Hello"},
        {"type": "message.end", "id": "m1"},
        {"type": "count", "id": "c", "reset": True},
        {"type": "message.start", "id": "m2", "role": "assistant"},
        {"type": "message.delta", "id": "m2", "delta": "Hi "},
        {"type": "count", "id": "c", "by": 2},
        {"type": "message.delta", "id": "m2", "delta": "there"},
        {"type": "note", "id": "n1"},
        {"type": "message.delta", "id": "m2", "delta": "!"},
        {"type": "message.end", "id": "m2"},
        {"type": "bare", "id": "b1", "content": "<b>raw</b>"},
        {"type": "count", "id": "c"},
        {"type": "message.start", "id": "m1", "role": "user"},
        {"type": "message.delta", "id": "m1", "delta": "Again"},
        {"type": "note", "id": "n2"},
    ]


def long_conversation(count: int, late: int) -> list[Event]:
    """``count`` events of streamed messages (many deltas each) with a single ``note``
    at position ``late``: a large log whose only stamped node starts late."""
    events: list[Event] = []
    message = 0
    while len(events) < count:
        ident = f"m{message}"
        events.append({"type": "message.start", "id": ident, "role": "assistant"})
        events.extend({"type": "message.delta", "id": ident, "delta": f"w{i} "} for i in range(200))
        events.append({"type": "message.end", "id": ident})
        message += 1
    del events[count:]
    events[late] = {"type": "note", "id": "late"}
    return events
