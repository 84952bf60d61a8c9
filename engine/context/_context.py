"""The cooperative model context: areas, effect ranges, collection at safepoints.

Theory of operation (docs/context.md, rules C1-C7; seed 000):

- ``Context`` is an append-only list of provider-native items (rule C1). A gateway
  turns each generic ``Message`` into its items; ``gateway=None`` keeps the
  messages themselves. Only ``CoopContext``'s collection removes items, and only a
  tail.
- ``CoopContext.render()`` is the safepoint. In this order: collect (rule C5:
  the tail component of overlapping effect ranges, when all of its areas are
  retired, plus retired areas that never rendered anything); append the
  conversation items queued with ``extend`` since the last render (rule C4); run
  one unfold pass over the ring of areas from the cursor (rule C2), extending
  effect ranges (rule C3). A retired area's last call is thus answered by the model
  before its tail is collected, and that answer (which arrives after the
  collection) follows the promoted messages.
- The collection plan is fixed before any callback runs (rule C6); a raising
  ``promote()`` cancels it, raising ``gc_prologue()`` calls do not.
- Every render produces a ``RenderRecord`` (rule C7): what was collected and
  promoted, how many conversation messages were appended, which area appended
  which messages. ``Context.apply(record, conversation)`` replays one without the
  areas, so the same records rebuild the same items.

Cost per render is O(areas + items appended): the snapshot an area observes is a
read-only view over its range, never a copy of the history.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol, overload

import attrs
import msgspec

from .._errors import ConversationError, RegistrationError, UsageError
from ._message import Message

__all__ = [
    "AreaAppend",
    "AreaError",
    "AreaFlowState",
    "AreaLifeState",
    "Collection",
    "Context",
    "ContextAreaImplementation",
    "CoopContext",
    "Gateway",
    "RenderRecord",
]


class AreaLifeState(enum.Enum):
    """An area's lifecycle: ``retain`` (may observe and render) -> ``retired`` (final)."""

    retain = "retain"
    retired = "retired"


class AreaFlowState(enum.Enum):
    """Scheduling after a render: ``exclusive`` keeps the cursor, ``yielded`` passes it."""

    exclusive = "exclusive"
    yielded = "yielded"


class ContextAreaImplementation(Protocol):
    """A caller-defined area: any object with these members (no base class).

    - ``life_state``: read before each visit and when collecting. ``retain`` ->
      ``retired`` is one-way; a retired area is never observed or rendered again.
    - ``flow_state``: read right after a successful ``render()``.
    - ``observe(snapshot)``: before a visit once the area has an effect range; a
      read-only view of the items from its range's ``earliest`` to ``latest``,
      valid during the call. It may retire the area (its render is then skipped).
    - ``render()``: the messages to append (``[]`` when nothing is new).
    - ``promote()``: when the area is collected; the messages kept after it.
    - ``gc_prologue()``: just before its tail is detached; release resources.
    """

    @property
    def life_state(self) -> AreaLifeState:
        """``retain`` or ``retired``."""
        ...

    @property
    def flow_state(self) -> AreaFlowState:
        """``exclusive`` or ``yielded``."""
        ...

    def observe(self, context: Sequence[Any], /) -> None:
        """See the items of the area's own effect range."""
        ...

    def render(self) -> list[Message]:
        """The generic messages to append now."""
        ...

    def promote(self) -> tuple[Message, ...]:
        """The messages appended after the area's tail is collected."""
        ...

    def gc_prologue(self) -> None:
        """Last notice before the area is removed."""
        ...


_MEMBERS = ("life_state", "flow_state", "observe", "render", "promote", "gc_prologue")
_METHODS = frozenset({"observe", "render", "promote", "gc_prologue"})


class Gateway(Protocol):
    """Converts a generic message into a provider's native request items."""

    def items(self, message: Message, /) -> Sequence[Any]:
        """The native items ``message`` becomes, in order (one or more)."""
        ...


class AreaError(ConversationError):
    """An area broke its contract or raised; ``area`` names it, ``member`` the member.

    The original exception, if any, is ``__cause__``.
    """

    def __init__(self, message: str, *, area: str, member: str) -> None:
        super().__init__(message)
        self.area = area
        self.member = member


class AreaAppend(msgspec.Struct, frozen=True):
    """Messages one area's ``render()`` appended (``area`` is its label)."""

    area: str
    messages: tuple[Message, ...]


class Collection(msgspec.Struct, frozen=True):
    """One safepoint's collection: items from ``start`` on were detached (``None``:
    nothing detached), the ``areas`` removed, the ``promoted`` messages appended."""

    start: int | None
    areas: tuple[str, ...]
    promoted: tuple[Message, ...]


class RenderRecord(msgspec.Struct, frozen=True):
    """What one ``render()`` did, enough to redo it without the areas (rule C7).

    ``call`` counts renders from 0; ``collection`` is ``None`` when nothing was
    collected; ``conversation`` is how many queued conversation messages were
    appended (after the collection, before the pass); ``appended`` the pass's
    non-empty renders in order; ``length`` the context's length after it.
    """

    call: int
    collection: Collection | None
    conversation: int
    appended: tuple[AreaAppend, ...]
    length: int


class _RangeView(Sequence[Any]):
    """A read-only window on the context's items; O(1) to make."""

    __slots__ = ("_items", "_start", "_stop")

    def __init__(self, items: list[Any], start: int, stop: int) -> None:
        self._items = items
        self._start = start
        self._stop = stop

    def __len__(self) -> int:
        return self._stop - self._start

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        # A range indexes (negative indexes, slices, IndexError) as a sequence must.
        positions = range(self._start, self._stop)[index]
        if isinstance(positions, range):
            return tuple(self._items[i] for i in positions)
        return self._items[positions]

    def __iter__(self) -> Iterator[Any]:
        for i in range(self._start, self._stop):
            yield self._items[i]


class Context(Sequence[Any]):
    """The request items for the next model call: an append-only ``Sequence``.

    ``gateway`` converts each appended message (``None`` keeps the ``Message``
    itself). ``messages`` lists the generic messages behind the items, in order.
    """

    __slots__ = ("_gateway", "_items", "_messages", "_sizes")

    def __init__(self, gateway: Gateway | None = None) -> None:
        self._gateway = gateway
        self._items: list[Any] = []
        self._messages: list[Message] = []
        # items per message, so a collection can cut the messages at an item index
        self._sizes: list[int] = []

    @property
    def gateway(self) -> Gateway | None:
        """The gateway items are converted through (``None``: items are messages)."""
        return self._gateway

    @property
    def messages(self) -> tuple[Message, ...]:
        """The generic messages behind the items, in order (a copy)."""
        return tuple(self._messages)

    def emplace_message(self, message: Message) -> int:
        """Convert ``message`` through the gateway and append; returns the items added."""
        if not isinstance(message, Message):
            raise TypeError(f"emplace_message takes a Message, not {type(message).__name__}")
        if self._gateway is None:
            self._items.append(message)
            added = 1
        else:
            native = self._gateway.items(message)
            self._items.extend(native)
            added = len(native)
        self._messages.append(message)
        self._sizes.append(added)
        return added

    def apply(self, record: RenderRecord, conversation: Sequence[Message]) -> None:
        """Redo a recorded render (rule C7): ``conversation`` is its conversation messages.

        Raises ``ValueError`` when the record does not fit this context.
        """
        if len(conversation) != record.conversation:
            raise ValueError(
                f"render record of call {record.call} appended {record.conversation} "
                f"conversation messages, {len(conversation)} were given"
            )
        if record.collection is not None:
            if record.collection.start is not None:
                self._detach(record.collection.start)
            for message in record.collection.promoted:
                self.emplace_message(message)
        for message in conversation:
            self.emplace_message(message)
        for append in record.appended:
            for message in append.messages:
                self.emplace_message(message)
        if len(self._items) != record.length:
            raise ValueError(
                f"render record of call {record.call} left {record.length} items, "
                f"replaying it left {len(self._items)}"
            )

    def _detach(self, start: int) -> None:
        # Only whole messages leave: cut at the message whose items begin at start.
        total = len(self._items)
        count = 0
        index = len(self._sizes)
        while total > start and index > 0:
            index -= 1
            total -= self._sizes[index]
            count += 1
        if total != start:
            raise ValueError(f"item {start} is inside a message; cannot detach from it")
        del self._items[start:]
        del self._messages[index:]
        del self._sizes[index:]

    def _mark(self) -> tuple[int, int]:
        return len(self._items), len(self._messages)

    def _rollback(self, mark: tuple[int, int]) -> None:
        del self._items[mark[0] :]
        del self._messages[mark[1] :]
        del self._sizes[mark[1] :]

    def _view(self, start: int, stop: int) -> Sequence[Any]:
        return _RangeView(self._items, start, stop)

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return tuple(self._items[index])
        return self._items[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)

    def __repr__(self) -> str:
        return f"Context({len(self._items)} items, gateway={self._gateway!r})"


@attrs.define(eq=False)
class _Slot:
    area: Any
    label: str
    order: int
    earliest: int | None = None
    latest: int | None = None
    retired: bool = False


def _label(area: object, order: int) -> str:
    return f"{type(area).__qualname__}#{order}"


class CoopContext:
    """Builds the next request cooperatively: registered areas plus the conversation.

    ``register(area)`` adds an area to the end of the ring; ``extend(messages)``
    queues what the log added since the last call; ``render()`` is the safepoint
    and one unfold pass (docs/context.md, rules 2-6) and returns the ``Context``.
    ``records`` holds one ``RenderRecord`` per render (rule C7).
    """

    def __init__(self, context: Context) -> None:
        if not isinstance(context, Context):
            raise TypeError(f"CoopContext takes a Context, not {type(context).__name__}")
        self._context = context
        self._ring: list[_Slot] = []
        self._cursor = 0
        self._registered = 0
        self._pending: list[Message] = []
        self._records: list[RenderRecord] = []
        self._busy = False

    @property
    def context(self) -> Context:
        """The context this builds."""
        return self._context

    @property
    def areas(self) -> tuple[object, ...]:
        """The registered areas in ring order (removed ones are gone)."""
        return tuple(slot.area for slot in self._ring)

    @property
    def records(self) -> tuple[RenderRecord, ...]:
        """One record per ``render()`` so far, in order (a copy: O(renders))."""
        return tuple(self._records)

    @property
    def last_record(self) -> RenderRecord | None:
        """The record of the latest ``render()`` (``None`` before the first); O(1), for
        an agent that logs each render as it happens."""
        return self._records[-1] if self._records else None

    def register(self, area: ContextAreaImplementation) -> str:
        """Add ``area`` at the end of the ring; returns its label (``Class#n``).

        Raises ``RegistrationError`` for a missing member or an instance already
        registered.
        """
        if self._busy:
            raise UsageError("register() was called from inside an area callback")
        missing = [name for name in _MEMBERS if not hasattr(area, name)]
        if missing:
            raise RegistrationError(
                f"area {type(area).__qualname__} lacks {', '.join(missing)}: an area needs "
                f"{', '.join(_MEMBERS)} (see engine.ContextAreaImplementation)"
            )
        for name in _METHODS:
            if not callable(getattr(area, name)):
                raise RegistrationError(
                    f"area {type(area).__qualname__}.{name} is not callable: make it a method"
                )
        for slot in self._ring:
            if slot.area is area:
                raise RegistrationError(
                    f"area {slot.label} is already registered: register a new instance "
                    f"instead of the same one twice"
                )
        label = _label(area, self._registered)
        self._ring.append(_Slot(area, label, self._registered))
        self._registered += 1
        return label

    def extend(self, messages: Iterable[Message]) -> None:
        """Queue conversation messages (model output, tool results, user turns) in log
        order; the next ``render()`` appends them before its pass (rule C4)."""
        for message in messages:
            if not isinstance(message, Message):
                raise TypeError(
                    f"extend takes Messages, not {type(message).__name__}: convert the "
                    f"conversation first (definitions.conversation_messages)"
                )
            self._pending.append(message)

    def render(self) -> Context:
        """Collect at this safepoint, append the queued conversation, run one pass.

        Returns the context (the same object every time). Raises ``AreaError``
        naming the area and member when an area raises or breaks its contract.
        """
        if self._busy:
            raise UsageError("render() was called from inside an area callback")
        self._busy = True
        try:
            return self._render()
        finally:
            self._busy = False

    # -- the safepoint -------------------------------------------------------

    def _render(self) -> Context:
        call = len(self._records)
        collection, prologue_error = self._collect()
        context = self._context
        conversation = len(self._pending)
        for message in self._pending:
            context.emplace_message(message)
        self._pending.clear()
        appended: tuple[AreaAppend, ...] = ()
        try:
            if prologue_error is None:
                appended = self._pass()
        finally:
            # Recorded even when the pass failed: the collection and the
            # conversation happened, and a replay must do them too.
            record = RenderRecord(call, collection, conversation, appended, len(context))
            self._records.append(record)
        if prologue_error is not None:
            raise prologue_error
        return context

    def _life(self, slot: _Slot, member: str) -> bool:
        """Whether the area is retired now; enforces that retirement is final."""
        state = self._read(slot, "life_state", member)
        if state is AreaLifeState.retired:
            slot.retired = True
        elif state is AreaLifeState.retain:
            if slot.retired:
                raise AreaError(
                    f"area {slot.label} went back from retired to retain (seen {member}): "
                    f"retirement is final",
                    area=slot.label,
                    member="life_state",
                )
        else:
            raise AreaError(
                f"area {slot.label}.life_state is {state!r}, not an AreaLifeState",
                area=slot.label,
                member="life_state",
            )
        return slot.retired

    def _read(self, slot: _Slot, name: str, when: str) -> Any:
        try:
            return getattr(slot.area, name)
        except Exception as exc:
            raise AreaError(
                f"area {slot.label}.{name} raised {type(exc).__name__} ({when}): {exc}",
                area=slot.label,
                member=name,
            ) from exc

    def _call(self, slot: _Slot, name: str, *args: Any) -> Any:
        try:
            return getattr(slot.area, name)(*args)
        except Exception as exc:
            raise AreaError(
                f"area {slot.label}.{name}() raised {type(exc).__name__}: {exc}",
                area=slot.label,
                member=name,
            ) from exc

    def _collect(self) -> tuple[Collection | None, AreaError | None]:
        """Rule 5 and 6: plan first, then promote, gc_prologue, detach, remove, append."""
        ring = self._ring
        for slot in ring:
            self._life(slot, "when collecting")
        victims = [slot for slot in ring if slot.retired and slot.earliest is None]
        start: int | None = None
        ranged = [slot for slot in ring if slot.earliest is not None]
        if ranged:
            tail = max(ranged, key=lambda s: (s.latest, s.order))
            low = tail.earliest
            assert low is not None
            component = [tail]
            # Walk backward: every range reaching into [low, end] joins the component
            # and may stretch low further back; ranges never overlap past the tail.
            for slot in sorted(ranged, key=lambda s: s.latest or 0, reverse=True):
                if slot is tail:
                    continue
                assert slot.latest is not None
                assert slot.earliest is not None
                if slot.latest < low:
                    break
                component.append(slot)
                low = min(low, slot.earliest)
            if all(slot.retired for slot in component):
                victims.extend(component)
                start = low
        if not victims:
            return None, None
        victims.sort(key=lambda s: s.order)
        promoted: list[Message] = []
        for slot in victims:
            kept = self._call(slot, "promote")
            if not isinstance(kept, tuple) or not all(isinstance(m, Message) for m in kept):
                raise AreaError(
                    f"area {slot.label}.promote() returned {type(kept).__name__}: "
                    f"return a tuple of Messages",
                    area=slot.label,
                    member="promote",
                )
            promoted.extend(kept)
        first_error: AreaError | None = None
        for slot in victims:
            try:
                self._call(slot, "gc_prologue")
            except AreaError as exc:
                if first_error is None:
                    first_error = exc
        context = self._context
        if start is not None:
            context._detach(start)
        self._remove(victims)
        for message in promoted:
            context.emplace_message(message)
        labels = tuple(slot.label for slot in victims)
        return Collection(start, labels, tuple(promoted)), first_error

    def _remove(self, victims: list[_Slot]) -> None:
        ring = self._ring
        gone = {id(slot) for slot in victims}
        if ring:
            # The cursor moves to the next remaining area in ring order.
            n = len(ring)
            for step in range(n):
                slot = ring[(self._cursor + step) % n]
                if id(slot) not in gone:
                    keep = slot
                    break
            else:
                keep = None
        self._ring = [slot for slot in ring if id(slot) not in gone]
        self._cursor = 0 if keep is None else self._ring.index(keep)

    # -- the unfold pass -----------------------------------------------------

    def _pass(self) -> tuple[AreaAppend, ...]:
        ring = self._ring
        context = self._context
        appended: list[AreaAppend] = []
        n = len(ring)
        mark = context._mark()
        saved = [(slot.earliest, slot.latest) for slot in ring]
        cursor = self._cursor
        try:
            for step in range(n):
                index = (cursor + step) % n
                slot = ring[index]
                if self._life(slot, "before render"):
                    continue
                if slot.earliest is not None:
                    assert slot.latest is not None
                    self._call(slot, "observe", context._view(slot.earliest, slot.latest + 1))
                    if self._life(slot, "after observe"):
                        continue
                messages = self._call(slot, "render")
                if not isinstance(messages, list) or not all(
                    isinstance(m, Message) for m in messages
                ):
                    raise AreaError(
                        f"area {slot.label}.render() returned {type(messages).__name__}: "
                        f"return a list of Messages",
                        area=slot.label,
                        member="render",
                    )
                if messages:
                    first = len(context)
                    for message in messages:
                        context.emplace_message(message)
                    if len(context) > first:
                        if slot.earliest is None:
                            slot.earliest = first
                        slot.latest = len(context) - 1
                    appended.append(AreaAppend(slot.label, tuple(messages)))
                flow = self._read(slot, "flow_state", "after render")
                if flow is AreaFlowState.exclusive:
                    self._cursor = index
                    return tuple(appended)
                if flow is not AreaFlowState.yielded:
                    raise AreaError(
                        f"area {slot.label}.flow_state is {flow!r}, not an AreaFlowState",
                        area=slot.label,
                        member="flow_state",
                    )
        except AreaError:
            # A failed pass leaves nothing behind: nothing of it was sent.
            context._rollback(mark)
            for slot, (earliest, latest) in zip(ring, saved, strict=True):
                slot.earliest, slot.latest = earliest, latest
            raise
        return tuple(appended)
