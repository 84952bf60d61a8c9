"""The determinism checker: replay one log many ways and prove the views agree.

Theory of operation
-------------------
A view is a function of the log only if every way of folding the log gives the
same nodes, compared by value (the canonical JSON of ``_render.state_json``, or
``==`` for a state without one). The checker folds the log:

- ``whole``: one ``push_many``; its final view is the baseline;
- ``one``: one ``push`` per event;
- ``twice``: ``whole`` again in the same process (global counters show here);
- ``batches``: ``push_many`` over random splits;
- ``frames``: random splits through a ``ManualScheduler`` with ``fire()`` and
  ``flush()`` at random points and a recording listener;
- ``windows``: random windows ``[i:j]`` of the log, as a paginated reader sees
  them, each folded ``whole``, ``one``, in ``batches`` and with ``frames``.

Every way but ``whole``/``twice`` runs in lockstep with a *reference* engine fed
by ``push_many`` up to the same point, and the two views are compared at its
observations: after each batch, at each notification, and for ``one`` after every
event of a log of at most ``SAMPLES`` events, else after one random event in each
of ``SAMPLES`` equal strata and after the last. When ``one`` first sees a
divergence at a sampled point, it replays afresh to the last point that agreed and
compares after every event from there: the report names the first event where the
views differ, as a comparison after every event would. Each way's final view is
also compared with the baseline.

Comparisons are incremental (``_Pair``): nodes are frozen, so only the indices whose
``Node`` objects moved since the last comparison that agreed are encoded and
compared, and the moved ones are found by C-level pointer scans. So a comparison is
O(nodes) pointer checks plus the encoding of what changed, the number of
comparisons is bounded, and the whole check is linear in the log. (Comparing after
every event re-encoded every changed node each time: a long streamed text cost
events x its length, and the node scan events x nodes.) The trade: a divergence
that appears and heals between two sampled points of a long log is seen only if
another way observes it.

A notification must carry the nodes of the one-shot fold of the same prefix, be
``engine.nodes()`` at that moment, never repeat the previous notification's
version (tuple identity: the engine keeps the tuple until an event is accepted),
and after the final ``flush()`` the last notification must be the final view:
nothing is lost. Every node a notification delivered new is re-encoded at the end:
a state that changed after it was delivered was mutated in place.

With a protocol's pre-pass (``prepare``: raw events in, the envelopes the
definitions match out, e.g. ``definitions.anthropic.prepare``), ``events`` are raw:
every way feeds a fresh run of the pre-pass, and a window is cut from the raw log
and wrapped afresh, as a paginated reader would (so a pre-pass that cannot take a
stream starting inside a message shows here). Positions in a report are positions
in the raw log: a wrapped event is placed at the raw event the pre-pass had just
read when it produced it.

For a window, the rules for cut-off nodes (DESIGN rule 3) are checked against the
definitions' own ``match``: the window's nodes are exactly the keys that a start
claim inside the window opened, and the engine dropped exactly the update claims
for keys not yet opened in the window.

Random choices come from ``random.Random(f"{seed}/{way}")``, so a report is
reproduced by its seed alone, whichever ways are selected.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Sequence
from itertools import chain, compress
from operator import is_not
from typing import Any, NoReturn

import attrs
import msgspec

from definitions.branch import Tree, is_branch_event, path_events, starts_of
from engine import ConversationEngine, ConversationError, ManualScheduler, Node
from engine import create_conversation_engine as _create

from ._errors import ReplayError
from .context._requests import check_requests
from .render._common import state_json

__all__ = [
    "SAMPLES",
    "WAYS",
    "DeterminismError",
    "Divergence",
    "Report",
    "assert_deterministic",
    "check_determinism",
    "steps",
]

WAYS: tuple[str, ...] = ("whole", "one", "twice", "batches", "frames", "windows")
"""Every way ``check_determinism`` can replay a log, in the order it tries them."""

SAMPLES = 1024
"""The event-by-event way compares after every event of a log (or window) of at most
this many events; on a longer one, after this many sampled events and the last."""


@attrs.frozen(kw_only=True)
class Divergence:
    """The first place two ways of replaying a log disagreed.

    ``position`` is the index in the log of the last event folded when the views
    were compared (``-1`` before any). ``key`` is the node that differs (``None``
    when the disagreement is not about one node, e.g. a duplicate notification).
    ``left``/``right`` are that node's states in ``left_way``/``right_way`` (``None``
    where the node is absent). ``reason`` says what differs, in words.
    """

    position: int
    key: str | None
    left: Any
    right: Any
    left_way: str
    right_way: str
    reason: str

    def describe(self) -> str:
        """A readable, multi-line account of the divergence."""
        lines = [
            f"{self.left_way} and {self.right_way} disagree after event #{self.position}"
            + (f", node {self.key}" if self.key else "")
            + f": {self.reason}"
        ]
        if self.key is not None:
            lines.append(f"  {self.left_way}: {_show(self.left)}")
            lines.append(f"  {self.right_way}: {_show(self.right)}")
        return "\n".join(lines)


@attrs.frozen(kw_only=True)
class Report:
    """What ``check_determinism`` did and found.

    ``ok`` is true when every way agreed; ``ways`` names each way tried, in order
    (the checker stops at the first divergence); ``seed`` reproduces the random
    ones; ``events`` is the log's length.
    """

    ok: bool
    seed: int
    events: int
    ways: tuple[str, ...]
    divergence: Divergence | None

    def describe(self) -> str:
        """A readable summary: the verdict, the ways tried, the divergence if any."""
        head = (
            f"{'deterministic' if self.ok else 'NOT deterministic'}: {self.events} events "
            f"replayed {len(self.ways)} ways (seed={self.seed})"
        )
        if self.divergence is None:
            return head
        return f"{head}\n{self.divergence.describe()}"


class DeterminismError(ReplayError, AssertionError):
    """``assert_deterministic`` found two ways of replaying a log that disagree.

    ``report`` is the full ``Report``; the message is its description.
    """

    def __init__(self, report: Report) -> None:
        super().__init__(report.describe())
        self.report = report


def _show(state: Any, limit: int = 400) -> str:
    if state is None:
        return "(absent)"
    try:
        text = state_json(state).decode()
    except TypeError:
        text = repr(state)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _delivered(form: object) -> Any:
    """A state as it was when encoded (its canonical form, decoded)."""
    if isinstance(form, bytes):
        return msgspec.json.decode(form)
    return form.value if isinstance(form, _ByValue) else form


class _ByValue:
    """The canonical form of a state with no JSON form: compares with ``==``."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _ByValue):
            return False
        try:
            return bool(self.value == other.value)
        except Exception:
            return False

    __hash__ = None  # type: ignore[assignment]


def _canonical(node: Node) -> tuple[str, str, int, object]:
    try:
        state: object = state_json(node.state)
    except TypeError:
        state = _ByValue(node.state)
    return (node.kind, node.id, node.seq, state)


class _Canon:
    """Canonical forms of one engine's nodes, cached per key while the node object
    is the same (the engine makes a new ``Node`` whenever the state changes)."""

    __slots__ = ("_cache",)

    def __init__(self) -> None:
        self._cache: dict[str, tuple[Node, tuple[str, str, int, object]]] = {}

    def __call__(self, node: Node) -> tuple[str, str, int, object]:
        cached = self._cache.get(node.key)
        if cached is not None and cached[0] is node:
            return cached[1]
        form = _canonical(node)
        self._cache[node.key] = (node, form)
        return form


_Difference = tuple[str | None, Any, Any, str]


def _compare(
    left: Sequence[Node],
    right: Sequence[Node],
    left_canon: _Canon,
    right_canon: _Canon,
    start: int = 0,
) -> _Difference | None:
    """The first node (in seq order, from ``start``) where two views differ, or
    ``None``: O(n) encodes at worst; ``_Pair`` is the incremental form used while a
    way runs."""
    for index in range(start, max(len(left), len(right))):
        a = left[index] if index < len(left) else None
        b = right[index] if index < len(right) else None
        if a is None:
            assert b is not None
            return (b.key, None, b.state, f"node {b.key} (seq {index}) is only in the second view")
        if b is None:
            return (a.key, a.state, None, f"node {a.key} (seq {index}) is only in the first view")
        if a.key != b.key:
            return (
                a.key,
                a.state,
                None,
                f"seq {index} is {a.key} in the first view but {b.key} in the second",
            )
        if left_canon(a) != right_canon(b):
            return (a.key, a.state, b.state, "the states differ")
    return None


class _Pair:
    """Compares the views of two engines as they advance, looking only at what moved.

    The last pair of views found equal is kept; a node that is the same ``Node`` object
    on both sides as then is equal still (nodes are frozen; a state mutated in place is
    caught separately, see ``frames``). Finding the moved indices is two C-level scans
    (``map(is_not, ...)``), so a comparison costs O(n) pointer checks plus the encoding
    of the nodes that changed since the last one, instead of O(n) encodings.
    """

    __slots__ = ("left_canon", "left_seen", "right_canon", "right_seen")

    def __init__(self, left_canon: _Canon, right_canon: _Canon) -> None:
        self.left_canon = left_canon
        self.right_canon = right_canon
        self.left_seen: tuple[Node, ...] = ()
        self.right_seen: tuple[Node, ...] = ()

    def __call__(self, left: tuple[Node, ...], right: tuple[Node, ...]) -> _Difference | None:
        if left is self.left_seen and right is self.right_seen:
            return None
        count = len(left)
        if count != len(right):
            return _compare(left, right, self.left_canon, self.right_canon)
        seen = min(len(self.left_seen), count)
        moved = set(compress(range(seen), map(is_not, left, self.left_seen)))
        moved.update(compress(range(seen), map(is_not, right, self.right_seen)))
        left_canon = self.left_canon
        right_canon = self.right_canon
        for index in chain(sorted(moved), range(seen, count)):
            a = left[index]
            b = right[index]
            if a.key != b.key or left_canon(a) != right_canon(b):
                return _compare(left, right, left_canon, right_canon, index)
        self.left_seen = left
        self.right_seen = right
        return None


class _Diverged(Exception):
    """Internal: unwinds a way at its first divergence."""

    def __init__(self, divergence: Divergence) -> None:
        super().__init__(divergence.reason)
        self.divergence = divergence


@attrs.frozen
class _Fed:
    """Raw events ``[offset:offset + raw]`` of the log as the definitions take them.

    ``origins[k]`` is the log position of the raw event last read by the pre-pass when
    it produced ``events[k]`` (``None`` without a pre-pass: fed event ``k`` is raw
    event ``offset + k``), so every reported position is a position in the raw log.
    """

    events: tuple[Any, ...]
    origins: tuple[int, ...] | None
    offset: int
    raw: int

    def at(self, index: int) -> int:
        """The log position after fed event ``index`` (``-1``: before any)."""
        if index < 0:
            return self.offset - 1
        if self.origins is None:
            return self.offset + index
        return self.origins[index]

    @property
    def last(self) -> int:
        """The log position of the window's last raw event."""
        return self.offset + self.raw - 1


def _feed(
    raw: Sequence[Any],
    prepare: Callable[[Iterable[Any]], Iterable[Any]] | None,
    offset: int = 0,
) -> _Fed:
    if prepare is None:
        return _Fed(tuple(raw), None, offset, len(raw))
    pulled = offset - 1

    def tracked() -> Iterator[Any]:
        nonlocal pulled
        for position, event in enumerate(raw, offset):
            pulled = position
            yield event

    events: list[Any] = []
    origins: list[int] = []
    for event in prepare(tracked()):
        events.append(event)
        origins.append(pulled)
    return _Fed(tuple(events), tuple(origins), offset, len(raw))


class _Reference:
    """An engine fed by ``push_many`` up to whatever position a way observes."""

    def __init__(self, check: _Check, events: Sequence[Any]) -> None:
        self.engine = check.engine()
        self.events = events
        self.position = 0
        self.canon = _Canon()

    def at(self, position: int) -> tuple[Node, ...]:
        if position > self.position:
            self.engine.push_many(self.events[self.position : position])
            self.position = position
        return self.engine.nodes()


_Baseline = tuple[tuple[Node, ...], _Canon]


class _Check:
    def __init__(
        self,
        raw: Sequence[Any],
        definitions: Sequence[Any],
        event_type: Callable[[Any], Hashable] | None,
        prepare: Callable[[Iterable[Any]], Iterable[Any]] | None,
        seed: int,
        rounds: int,
        samples: int,
        progress: Callable[[], None],
    ) -> None:
        self.raw = raw
        self.progress = progress
        self.definitions = definitions
        self.event_type = event_type
        self.prepare = prepare
        self.seed = seed
        self.rounds = rounds
        self.samples = samples
        self.tried: list[str] = []

    def engine(self, scheduler: ManualScheduler | None = None) -> ConversationEngine:
        return _create(self.definitions, scheduler, event_type=self.event_type)

    def rng(self, way: str) -> random.Random:
        return random.Random(f"{self.seed}/{way}")

    def feed(self, start: int, end: int) -> _Fed:
        """Raw events ``[start:end]`` through a fresh run of the pre-pass."""
        return _feed(self.raw[start:end], self.prepare, start)

    # -- comparisons ---------------------------------------------------------------

    @staticmethod
    def expect(
        left: tuple[Node, ...],
        right: tuple[Node, ...],
        pair: _Pair,
        position: int,
        ways: tuple[str, str],
    ) -> None:
        difference = pair(left, right)
        if difference is not None:
            key, a, b, reason = difference
            raise _Diverged(
                Divergence(
                    position=position,
                    key=key,
                    left=a,
                    right=b,
                    left_way=ways[0],
                    right_way=ways[1],
                    reason=reason,
                )
            )

    @staticmethod
    def fail(position: int, way: str, other: str, reason: str) -> NoReturn:
        raise _Diverged(
            Divergence(
                position=position,
                key=None,
                left=None,
                right=None,
                left_way=way,
                right_way=other,
                reason=reason,
            )
        )

    # -- the ways ------------------------------------------------------------------

    def run(self, ways: Collection[str]) -> Divergence | None:
        self.tried.append("whole")
        fed = self.feed(0, len(self.raw))
        baseline = self.whole(fed)  # errors here are the log's own: they propagate
        self.progress()
        try:
            if "one" in ways:
                self.one(self.feed(0, len(self.raw)), "", baseline)
                self.progress()
            if "twice" in ways:
                self.tried.append("twice")
                again = self.whole(self.feed(0, len(self.raw)))
                self.expect(
                    again[0],
                    baseline[0],
                    _Pair(again[1], baseline[1]),
                    fed.last,
                    ("twice", "whole"),
                )
                self.progress()
            for round in range(self.rounds):
                if "batches" in ways:
                    self.batches(self.feed(0, len(self.raw)), f"batches#{round}", baseline)
                    self.progress()
            for round in range(self.rounds):
                if "frames" in ways:
                    self.frames(self.feed(0, len(self.raw)), f"frames#{round}", baseline)
                    self.progress()
            if "windows" in ways:
                self.windows()
                self.progress()
        except _Diverged as diverged:
            return diverged.divergence
        return None

    def whole(self, fed: _Fed) -> _Baseline:
        engine = self.engine()
        engine.push_many(fed.events)
        return engine.nodes(), _Canon()

    def guarded(self, fed: _Fed, way: str, reference_way: str, step: Callable[[], None]) -> None:
        """Run ``step``; an engine error (which the baseline did not raise) diverges."""
        try:
            step()
        except ConversationError as exc:
            position = getattr(exc, "position", -1)
            self.fail(
                fed.at(position) if position >= 0 else fed.offset - 1,
                way,
                reference_way,
                f"{way} raised {type(exc).__name__}: {exc}",
            )

    def checkpoints(self, rng: random.Random, count: int) -> list[int]:
        """Where an event-by-event fold compares with its reference: after every event
        of a short log, else after one random event in each of ``samples`` equal
        strata of the log, and after the last."""
        if count <= self.samples:
            return list(range(count))
        points = {count - 1}
        for stratum in range(self.samples):
            low = stratum * count // self.samples
            high = (stratum + 1) * count // self.samples
            points.add(rng.randrange(low, high))
        return sorted(points)

    def one(self, fed: _Fed, prefix: str, baseline: _Baseline) -> None:
        way = f"{prefix}one"
        reference_way = f"{prefix}whole"
        self.tried.append(way)
        events = fed.events
        engine = self.engine()
        reference = _Reference(self, events)
        canon = _Canon()
        pair = _Pair(canon, reference.canon)
        points = self.checkpoints(self.rng(way), len(events))
        agreed = -1  # the last checkpoint where the views agreed

        def step() -> None:
            nonlocal agreed
            push = engine.push
            done = 0
            for point in points:
                for event in events[done : point + 1]:
                    push(event)
                done = point + 1
                try:
                    self.expect(
                        engine.nodes(),
                        reference.at(done),
                        pair,
                        fed.at(point),
                        (way, reference_way),
                    )
                except _Diverged as diverged:
                    if point > agreed + 1:
                        self.narrow(fed, way, reference_way, agreed, point)
                    raise diverged from None
                agreed = point

        self.guarded(fed, way, reference_way, step)
        self.expect(
            engine.nodes(), baseline[0], _Pair(canon, baseline[1]), fed.last, (way, reference_way)
        )

    def narrow(self, fed: _Fed, way: str, reference_way: str, agreed: int, seen: int) -> None:
        """Replay ``one`` afresh to the last checkpoint that agreed, then compare after
        every event up to the one where the divergence was seen: raises at the first
        event where the views differ. Returns if the rerun does not diverge there (a
        definition that is only sometimes wrong); the caller reports what it saw."""
        events = fed.events
        engine = self.engine()
        reference = _Reference(self, events)
        pair = _Pair(_Canon(), reference.canon)

        def step() -> None:
            for event in events[: agreed + 1]:
                engine.push(event)
            for index in range(agreed + 1, seen + 1):
                engine.push(events[index])
                self.expect(
                    engine.nodes(),
                    reference.at(index + 1),
                    pair,
                    fed.at(index),
                    (way, reference_way),
                )

        self.guarded(fed, way, reference_way, step)

    def splits(self, rng: random.Random, count: int) -> list[int]:
        """Random cut points: the ends of the batches, the last one ``count``."""
        if count <= 1:
            return [count] if count else []
        cuts = rng.sample(range(1, count), rng.randint(1, min(count - 1, 64)))
        return [*sorted(cuts), count]

    def batches(
        self, fed: _Fed, way: str, baseline: _Baseline, reference_way: str = "whole"
    ) -> None:
        self.tried.append(way)
        events = fed.events
        engine = self.engine()
        reference = _Reference(self, events)
        canon = _Canon()
        pair = _Pair(canon, reference.canon)
        ends = self.splits(self.rng(way), len(events))

        def step() -> None:
            start = 0
            for end in ends:
                engine.push_many(events[start:end])
                start = end
                self.expect(
                    engine.nodes(), reference.at(end), pair, fed.at(end - 1), (way, reference_way)
                )

        self.guarded(fed, way, reference_way, step)
        self.expect(
            engine.nodes(), baseline[0], _Pair(canon, baseline[1]), fed.last, (way, reference_way)
        )

    def frames(
        self, fed: _Fed, way: str, baseline: _Baseline, reference_way: str = "whole"
    ) -> None:
        self.tried.append(way)
        events = fed.events
        rng = self.rng(way)
        scheduler = ManualScheduler()
        engine = self.engine(scheduler)
        reference = _Reference(self, events)
        canon = _Canon()
        pair = _Pair(canon, reference.canon)
        ends = self.splits(rng, len(events))
        folded = 0  # events pushed when the current push returns
        last: list[tuple[Node, ...]] = []
        # What each notification delivered that the one before had not: (position,
        # node, its canonical form then), re-encoded at the end to catch in-place
        # mutation. Each changed node once per notification: O(events) in all.
        delivered: list[tuple[int, Node, tuple[str, str, int, object]]] = []
        failure: list[_Diverged] = []
        label = f"{way} notification"

        def listener(nodes: tuple[Node, ...]) -> None:
            if failure:
                return
            try:
                position = fed.at(folded - 1)
                if last and nodes is last[-1]:
                    self.fail(position, label, way, "notified twice with the same version")
                if nodes is not engine.nodes():
                    self.fail(position, label, way, "notified with a tuple other than nodes()")
                self.expect(nodes, reference.at(folded), pair, position, (label, reference_way))
                before = last[0] if last else ()
                moved = compress(range(len(before)), map(is_not, nodes, before))
                for index in chain(moved, range(len(before), len(nodes))):
                    node = nodes[index]
                    delivered.append((position, node, canon(node)))  # cached by the compare
                last[:] = [nodes]
            except _Diverged as diverged:
                failure.append(diverged)
            except ConversationError as exc:  # the reference engine raised
                failure.append(
                    _Diverged(
                        Divergence(
                            position=fed.at(folded - 1),
                            key=None,
                            left=None,
                            right=None,
                            left_way=label,
                            right_way=reference_way,
                            reason=f"{reference_way} raised {type(exc).__name__}: {exc}",
                        )
                    )
                )

        engine.subscribe(listener)

        def step() -> None:
            nonlocal folded
            start = 0
            for end in ends:
                folded = end
                if end - start == 1:
                    engine.push(events[start])
                else:
                    engine.push_many(events[start:end])
                start = end
                if failure:
                    raise failure[0]
                choice = rng.random()
                if choice < 0.4:
                    scheduler.fire()
                elif choice < 0.5:
                    engine.flush()
                if failure:
                    raise failure[0]
            engine.flush()
            if failure:
                raise failure[0]

        self.guarded(fed, way, reference_way, step)
        final = engine.nodes()
        if engine.statistics().events_accepted and (not last or last[-1] is not final):
            self.fail(fed.last, label, way, "the final view was never notified, even after flush()")
        self.expect(final, baseline[0], _Pair(canon, baseline[1]), fed.last, (way, reference_way))
        for position, node, form in delivered:
            if _canonical(node) != form:
                raise _Diverged(
                    Divergence(
                        position=position,
                        key=node.key,
                        left=_delivered(form[3]),
                        right=node.state,
                        left_way=label,
                        right_way=f"{way} at the end",
                        reason="the state changed after it was delivered: a definition "
                        "mutated its state in place instead of returning a new one",
                    )
                )

    def windows(self) -> None:
        count = len(self.raw)
        if count < 2:
            return
        rng = self.rng("windows")
        chosen = {(count // 2, count)}  # the newest page, as a paginated reader loads it
        for _ in range(self.rounds):
            start = rng.randrange(0, count)
            chosen.add((start, rng.randint(start + 1, count)))
        for start, end in sorted(chosen):
            self.window(start, end)

    def window(self, start: int, end: int) -> None:
        """Raw events ``[start:end]``, wrapped afresh by the pre-pass as a paginated
        reader would, replayed every way."""
        prefix = f"window[{start}:{end}]/"
        self.tried.append(f"{prefix}whole")

        def fresh() -> _Fed:
            try:
                return self.feed(start, end)
            except Exception as exc:  # the pre-pass cannot take a cut-off stream
                self.fail(
                    start,
                    f"{prefix}whole",
                    "whole",
                    f"the pre-pass raised on the window: {type(exc).__name__}: {exc}",
                )

        fed = fresh()
        engine = self.engine()
        try:
            engine.push_many(fed.events)
        except ConversationError as exc:
            position = getattr(exc, "position", -1)
            self.fail(
                fed.at(position) if position >= 0 else start,
                f"{prefix}whole",
                "whole",
                f"the window raised {type(exc).__name__}: {exc}",
            )
        baseline = (engine.nodes(), _Canon())
        self.cut_off_rules(fed, prefix, engine)
        self.one(fresh(), prefix, baseline)
        self.batches(fresh(), f"{prefix}batches", baseline, f"{prefix}whole")
        self.frames(fresh(), f"{prefix}frames", baseline, f"{prefix}whole")

    def cut_off_rules(self, fed: _Fed, prefix: str, engine: ConversationEngine) -> None:
        """The window shows exactly the nodes started inside it; updates before their
        start (in the window) are dropped."""
        routed = [
            (definition.kind, definition.match, getattr(definition, "event_types", None))
            for definition in self.definitions
        ]
        event_type = self.event_type
        started: dict[str, int] = {}
        dropped = 0
        for index, event in enumerate(fed.events):
            kind_of_event = event_type(event) if event_type is not None else None
            for kind, match, types in routed:
                if event_type is not None and types is not None and kind_of_event not in types:
                    continue
                claim = match(event)
                if claim is None:
                    continue
                key = f"{kind}:{claim.id}"
                if claim.role == "start":
                    started.setdefault(key, fed.at(index))
                elif key not in started:
                    dropped += 1
        nodes = engine.nodes()
        shown = {node.key for node in nodes}
        for node in nodes:
            if node.key not in started:
                raise _Diverged(
                    Divergence(
                        position=fed.last,
                        key=node.key,
                        left=node.state,
                        right=None,
                        left_way=f"{prefix}whole",
                        right_way=f"{prefix}claims",
                        reason="the node's start is cut off by the window, yet it is shown",
                    )
                )
        for key, position in started.items():
            if key not in shown:
                self.fail(
                    position, f"{prefix}whole", f"{prefix}claims", f"{key} started but absent"
                )
        actual = engine.statistics().updates_dropped
        if actual != dropped:
            self.fail(
                fed.last,
                f"{prefix}whole",
                f"{prefix}claims",
                f"the engine dropped {actual} updates; the claims say {dropped} came before "
                "their node's start in the window",
            )


def _nothing() -> None:
    pass


def steps(ways: Collection[str] = WAYS, rounds: int = 3) -> int:
    """How many times ``check_determinism`` calls ``progress`` (without ``context``)."""
    rounded = sum(way in ways for way in ("batches", "frames"))
    return 1 + sum(way in ways for way in ("one", "twice", "windows")) + rounds * rounded


def check_determinism(
    events: Iterable[Any],
    definitions: Iterable[Any],
    *,
    seed: int = 0,
    ways: Collection[str] = WAYS,
    rounds: int = 3,
    event_type: Callable[[Any], Hashable] | None = None,
    prepare: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
    samples: int = SAMPLES,
    context: str | None = None,
    progress: Callable[[], None] | None = None,
    leaf: str | None = None,
) -> Report:
    """Replay ``events`` through ``definitions`` in many ways and report whether the
    views agree (see the module docstring for the ways and what each checks).

    A log with branch events (``definitions.branch``) is checked along one branch's
    path, the log its view is made of: the active one, or the one ``leaf`` names
    (``convo check`` proves each); positions in the report are positions on it.

    ``context`` names a provider (``"anthropic"``, ...): once the views agree, the
    model requests of the log (``replay.context._requests.check_requests``, the log's own
    definition set) must also be byte-identical however the log is batched.

    ``ways`` selects among ``WAYS`` (``whole`` always runs: it is the baseline);
    ``rounds`` is how many random variants of ``batches`` and ``frames`` run, and how
    many random windows; ``seed`` fixes every random choice. ``progress`` is called
    after each way (and each round of one) finishes: ``steps(ways, rounds)`` of them,
    one more with ``context``. ``prepare`` is the
    protocol's pre-pass (``ProtocolSet.prepare``): ``events`` are then the raw
    events, and every way (each window too) feeds a fresh run of ``prepare`` over its
    raw events; positions in the report are positions in ``events``. ``samples``
    bounds the comparisons of the event-by-event way on a log longer than it (see
    the module docstring). The checker stops at the first divergence. Definitions
    must be reusable across engines (each way makes fresh ones).

    Cost: about ``4 + 2 * rounds`` folds of the log plus as many of each window,
    ``O(samples + 64 * rounds)`` comparisons of O(nodes) pointer checks each, and
    one encoding of each node per comparison it changed between: linear in the log.

    Raises what the engine (or ``prepare``) raises when the plain ``whole`` replay
    fails (the log cannot be replayed at all); an error in any other way is a
    divergence.
    """
    unknown = sorted(set(ways) - set(WAYS))
    if unknown:
        raise ValueError(f"unknown ways {unknown}; choose among {', '.join(WAYS)}")
    if rounds < 0:
        raise ValueError(f"rounds must be >= 0, not {rounds!r}")
    if samples < 1:
        raise ValueError(f"samples must be >= 1, not {samples!r}")
    events = tuple(events)
    definitions = tuple(definitions)
    if leaf is not None or any(map(is_branch_event, events)):
        events = tuple(path_events(events, Tree(events, starts_of(definitions)), leaf))
    check = _Check(
        events,
        definitions,
        event_type,
        prepare,
        seed,
        rounds,
        samples,
        progress or _nothing,
    )
    divergence = check.run(ways)
    if divergence is None and context is not None:
        reason = check_requests(check.raw, context, seed=seed, rounds=rounds)
        check.tried.append("context")
        check.progress()
        if reason is not None:
            divergence = Divergence(
                position=-1,
                key=None,
                left=None,
                right=None,
                left_way="context",
                right_way="context batches",
                reason=reason,
            )
    return Report(
        ok=divergence is None,
        seed=seed,
        events=len(check.raw),
        ways=tuple(check.tried),
        divergence=divergence,
    )


def assert_deterministic(
    events: Iterable[Any],
    definitions: Iterable[Any],
    *,
    seed: int = 0,
    ways: Collection[str] = WAYS,
    rounds: int = 3,
    event_type: Callable[[Any], Hashable] | None = None,
    prepare: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
    samples: int = SAMPLES,
    leaf: str | None = None,
) -> Report:
    """``check_determinism`` that raises ``DeterminismError`` (an ``AssertionError``)
    describing the first divergence; returns the report when the views agree."""
    report = check_determinism(
        events,
        definitions,
        seed=seed,
        ways=ways,
        rounds=rounds,
        event_type=event_type,
        prepare=prepare,
        samples=samples,
        leaf=leaf,
    )
    if not report.ok:
        raise DeterminismError(report)
    return report
