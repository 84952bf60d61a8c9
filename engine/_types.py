"""Values and plug-in protocols of the engine.

``Claim`` and ``Node`` are frozen msgspec Structs rather than attrs classes: a
``Claim`` is built by a definition for nearly every event, and a frozen Struct is
made in about 55 ns against about 300 ns for a frozen attrs instance (measured on
this project's reference machine). Both compare and hash by value. ``PushContext``
is a mutable Struct for the same reason: push hooks get a fresh one per event, made
in about 60 ns against about 275 ns as an attrs class.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol, TypeVar

import attrs
import msgspec

__all__ = [
    "Cancel",
    "Claim",
    "ClaimRole",
    "Definition",
    "Listener",
    "Node",
    "Publication",
    "PushContext",
    "PushHook",
    "Reader",
    "Scheduler",
    "Statistics",
]

ClaimRole = Literal["start", "update"]
Publication = Literal["animation-frame", "immediate", "none"]

EventT_contra = TypeVar("EventT_contra", contravariant=True)
StateT = TypeVar("StateT")


class Claim(msgspec.Struct, frozen=True, gc=False):
    """A definition's answer to ``match``: the event belongs to node ``id``.

    ``role`` is ``"start"`` (open the node, or reopen it in place) or ``"update"``
    (fold the event into the open node; dropped when no such node is open).
    """

    id: str
    role: ClaimRole


class Node(msgspec.Struct, frozen=True):
    """One projected item of the conversation, frozen. Made only by the engine.

    ``key`` is ``"kind:id"`` and never changes for the node's life; ``seq`` is the
    node's place in the order of node starts, kept across updates and reopens.
    ``state`` is whatever the definition's ``start``/``update`` returned.
    """

    key: str
    kind: str
    id: str
    seq: int
    state: Any


@attrs.frozen(kw_only=True)
class Statistics:
    """Counters since the engine was created; makes coalescing testable without clocks.

    ``events_pushed`` counts every event handed to the engine (skipped and failed
    included); ``events_accepted`` those that started, reopened or changed a node
    (every event of a run handed to ``update_many`` that changed its node);
    ``events_skipped`` those a hook skipped; ``updates_dropped`` update claims for
    which no node was open; ``events_unclaimed`` those no definition claimed at all
    (every ``match`` returned None: no start or update claim; failed and skipped events
    are not counted). ``frames_requested``/``frames_fired``/``frames_cancelled``
    count scheduler frames; ``notifications`` counts rounds delivered to subscribers.
    """

    events_pushed: int
    events_accepted: int
    events_skipped: int
    updates_dropped: int
    events_unclaimed: int
    nodes: int
    frames_requested: int
    frames_fired: int
    frames_cancelled: int
    notifications: int


class Reader(Protocol):
    """Read-only, backward-looking access to the view, handed to ``start``.

    Valid only during the ``start`` call it was given to.
    """

    def previous(self, kind: str, /) -> Node | None:
        """The node of ``kind`` with the greatest ``seq`` below the starting node's own.

        For a reopen, "own" is the kept ``seq``. ``None`` when there is none (or
        ``kind`` is not registered). Nodes started later are never visible, which is
        what makes replay deterministic. O(log n) in the nodes of that kind.
        """
        ...


class Definition(Protocol[EventT_contra, StateT]):
    """A per-kind state machine: any object (instance, module, attrs class) with these members.

    Optional members, looked up once at registration:

    - ``publication``: a function ``(event) -> Publication``, a constant
      ``Publication``, or a mapping from event type to ``Publication`` (types it
      leaves out are immediate; needs the engine's ``event_type=``, unless the mapping
      is also callable: engines without one call it); how soon subscribers see a
      change this definition made. Missing means ``"immediate"``.
    - ``event_types``: a collection of the event types this definition can ever
      claim. With the engine's ``event_type=`` function, ``match`` is called only for
      those events, which is observably the same as calling it for every event.
    - ``fallback``: ``True`` makes the definition also receive, with ``event_type=``,
      the events of every type that no other definition admits (in its
      ``event_types``, or by declaring none): an event that would otherwise reach
      no definition and change nothing, silently (a foreign object pushed where the
      definitions expect their own envelopes), can then be refused with an error
      naming the fix. Decided once per event type, when its route is made: nothing
      per event. Without ``event_type=`` it sees every event, as every definition
      does. Missing means ``False``.
    - ``update_many(state, events)``: ``update`` over a *run*, for streamed deltas.
      With ``event_type=``, an update of a node goes to ``update``, and the
      consecutive events of its type in the same batch that claim an update of the
      same node after it are handed over together (in order, as a list; one alone
      goes to ``update``) once something else comes or the batch ends. It must return
      what calling ``update`` on each in turn returns (``state`` itself when none
      changed it), or raise: the engine then folds the run one event at a time, so
      a failing event is named and the ones before it kept, as without it. A run
      that changed its node counts as accepted in every event, and publishes the most
      urgent of its events' publications.
    """

    @property
    def kind(self) -> str:
        """The node kind; unique among the engine's definitions, no ``':'``."""
        ...

    def match(self, event: EventT_contra, /) -> Claim | None:
        """Say whether ``event`` starts or updates one of this kind's nodes. Called for
        every event (see ``event_types``); must be pure."""
        ...

    def start(self, event: EventT_contra, reader: Reader, /) -> StateT:
        """The initial state of a node that ``event`` starts (or reopens: the old state
        is discarded)."""
        ...

    def update(self, state: StateT, event: EventT_contra, /) -> StateT:
        """The next state; return ``state`` itself for "no change". Must not mutate
        ``state``: views may still hold it."""
        ...


Cancel = Callable[[], object]


class Scheduler(Protocol):
    """Where animation frames come from: how the engine coalesces notifications."""

    def request_frame(self, callback: Callable[[], object], /) -> Cancel:
        """Arrange for ``callback()`` to be called once, later, and return a function
        that cancels it. The engine requests at most one frame at a time."""
        ...


class Listener(Protocol):
    """A subscriber: called with ``engine.nodes()`` at the moment of notification."""

    def __call__(self, nodes: tuple[Node, ...], /) -> object: ...


class PushContext(msgspec.Struct, kw_only=True):
    """What push hooks see of one event; the same object flows through all of them.

    A start hook may replace ``event`` (rewrite, redact) or call ``skip()``.
    ``changed`` holds the keys of the nodes the event started, reopened or changed,
    ``error`` the exception when the push failed, ``elapsed_ms`` the time from the
    first start hook to the end hooks (read from the engine's ``clock`` when there
    are end hooks to read it; else it stays 0.0).
    """

    event: Any
    position: int
    skipped: bool = False
    changed: tuple[str, ...] = ()
    error: BaseException | None = None
    elapsed_ms: float = 0.0

    def skip(self) -> None:
        """Do not fold this event; end hooks still run."""
        self.skipped = True


class PushHook(Protocol):
    """An observer or policy around ``push``; implement any subset of these members.

    Order for one event (engine-level hooks first, then per-call hooks, each list in
    order)::

        push(event, hooks=per_call)
        |
        +- active = engine hooks + per-call hooks
        +- ctx = PushContext(event, position)
        +- try:
        |    +- on_push_start(ctx)   each may set ctx.event, or ctx.skip()
        |    +- fold ctx.event        unless skipped; ctx.changed = changed keys
        |    +- (failure) --> ctx.error = exc; on_error(ctx), each; re-raise
        |  finally:
        |    +- ctx.elapsed_ms
        |    +- on_push_end(ctx)     each, always, once; a raising one does not stop
        |                            the others, the first such error is raised last
        +- (end of the outermost push) publication -> on_publish(nodes), listeners

    ``on_publish(nodes)`` runs before the listeners at each notification; it is
    honoured on engine-level hooks only.
    """

    def on_push_start(self, ctx: PushContext, /) -> object: ...

    def on_error(self, ctx: PushContext, /) -> object: ...

    def on_push_end(self, ctx: PushContext, /) -> object: ...

    def on_publish(self, nodes: tuple[Node, ...], /) -> object: ...
