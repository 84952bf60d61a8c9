"""The engine: serialized pushes, push hooks, publication and notification.

The fold (``_fold.py``) decides what changed; this module decides who hears of it
and when. Each push (or ``push_many`` batch) folds its events, keeping the most
urgent publication level among the accepted ones. When the outermost push returns:

- ``immediate``: subscribers are notified now and a pending frame is cancelled;
- ``animation-frame``: a frame is requested unless one is pending; when it fires,
  subscribers get one notification for everything accepted until then;
- ``none``: nothing is scheduled; the next notification carries the change.

A notification is sent only if something was accepted since the last one, and
always carries ``nodes()`` as it is at that moment. A listener that pushes is
folded at once; its change is delivered in one more round after the current one.
With no subscriber (and no ``on_publish`` hook), nothing is scheduled at all.

One re-entrant lock serializes pushes, frames, subscriptions and reads, so seq
stays gapless under concurrent pushes and listeners run one round at a time.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from ._errors import EventError, HookError, ListenerError, RegistrationError, UsageError
from ._fold import FRAME, IMMEDIATE, NOT_ACCEPTED, Fold, Registration, _blamed
from ._types import Cancel, Definition, Listener, Node, PushContext, Scheduler, Statistics

_HOOK_METHODS = ("on_push_start", "on_error", "on_push_end", "on_publish")
_get_running_loop = asyncio.events._get_running_loop


class _Hooks:
    """The members of a hook list, looked up once: a tuple of (hook, member) per hook
    point, so a point nobody implements costs nothing. ``per_event``: some member runs
    for each event (only ``on_publish``, or nothing, leaves push() unhooked)."""

    __slots__ = ("end", "error", "hooks", "per_event", "publish", "start")

    def __init__(self, hooks: Iterable[object], *, per_call: bool) -> None:
        if type(hooks) not in (tuple, list) and (  # no ABC check for the usual ()
            isinstance(hooks, str | bytes) or not isinstance(hooks, Iterable)
        ):
            raise RegistrationError(f"hooks must be an iterable of hook objects, not {hooks!r}")
        self.hooks = tuple(hooks)
        found: dict[str, list[tuple[object, Callable[[Any], object]]]] = {
            name: [] for name in _HOOK_METHODS
        }
        for hook in self.hooks:
            implemented = False
            for name, bucket in found.items():
                member = getattr(hook, name, None)
                if member is None:
                    continue
                if not callable(member):
                    raise RegistrationError(f"hook {hook!r}: {name} is not callable")
                implemented = True
                bucket.append((hook, member))
            if not implemented:
                raise RegistrationError(
                    f"hook {hook!r} has none of {', '.join(_HOOK_METHODS)}; implement at "
                    "least one of them"
                )
        self.start: tuple[tuple[object, Callable[[PushContext], object]], ...] = tuple(
            found["on_push_start"]
        )
        self.error: tuple[tuple[object, Callable[[PushContext], object]], ...] = tuple(
            found["on_error"]
        )
        self.end: tuple[tuple[object, Callable[[PushContext], object]], ...] = tuple(
            found["on_push_end"]
        )
        self.publish: tuple[tuple[object, Callable[[tuple[Node, ...]], object]], ...] = tuple(
            found["on_publish"]
        )
        self.per_event = bool(self.start or self.error or self.end)
        if per_call and self.publish:
            raise RegistrationError(
                f"hook {self.publish[0][0]!r} passed per call has on_publish, which only "
                "engine-level hooks receive; pass it to create_conversation_engine(hooks=...)"
            )

    def __add__(self, other: _Hooks) -> _Hooks:
        combined = _Hooks((), per_call=False)
        combined.hooks = self.hooks + other.hooks
        combined.start = self.start + other.start
        combined.error = self.error + other.error
        combined.end = self.end + other.end
        combined.per_event = self.per_event or other.per_event
        return combined


_NO_HOOKS = _Hooks((), per_call=False)


class ConversationEngine:
    """Folds pushed events into frozen, seq-ordered nodes and notifies subscribers.

    Made by ``create_conversation_engine``; thread-safe.
    """

    def __init__(
        self,
        definitions: Iterable[Definition[Any, Any]] | Registration,
        *,
        scheduler: Scheduler | None = None,
        hooks: Iterable[object] = (),
        event_type: Callable[[Any], Hashable] | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._fold = Fold(definitions, event_type)
        self._apply_event = self._fold.apply_event  # bound once: push() calls it per event
        if scheduler is not None and not callable(getattr(scheduler, "request_frame", None)):
            raise RegistrationError(
                f"scheduler {scheduler!r} has no request_frame(callback) -> cancel; "
                "use ManualScheduler, AsyncioScheduler or None for the default"
            )
        self._scheduler = scheduler
        self._hooks = (
            _NO_HOOKS if type(hooks) is tuple and not hooks else _Hooks(hooks, per_call=False)
        )
        self._clock = clock
        self._lock = threading.RLock()
        self._listeners: dict[int, Listener] = {}
        self._next_listener = 0
        self._depth = 0  # nesting of push calls on the lock-holding thread
        self._frame: object | None = None  # token of the pending frame
        self._frame_cancel: Cancel | None = None
        self._frame_due = False  # a frame fired while a push was running
        self._notifying = False
        self._again = False
        self._notified_version = 0
        self._skipped = 0
        self._frames_requested = 0
        self._frames_fired = 0
        self._frames_cancelled = 0
        self._notifications = 0

    # -- input ---------------------------------------------------------------------

    def push(self, event: object, *, hooks: Iterable[object] = ()) -> None:
        """Fold one event, then run the publication check.

        Raises ``DefinitionError`` if a definition raised: the event left no trace and
        the engine stays usable. Cost: one ``match`` per definition (per routed
        definition with ``event_type=``), plus ``start``/``update`` for each claim.
        """
        if hooks:
            self.push_many((event,), hooks=hooks)
        elif self._hooks.per_event:
            self._push(self._fold_hooked, (event,))
        else:
            self._push(self._apply_event, event)

    def push_many(self, events: Iterable[object], *, hooks: Iterable[object] = ()) -> None:
        """Fold events in order with one publication check at the end.

        If event *k* fails, events before it stay folded (and are published), event
        *k* leaves no trace, later events are not folded, and the error is raised. An
        iterable that is not a list or tuple is read up to 1,024 events ahead; if it
        raises, the events it gave before are folded and its error goes up as it is.
        """
        if hooks:
            hooked = self._hooks + _Hooks(hooks, per_call=True)
            self._push(lambda events: self._fold_hooked(events, hooked), events)
        elif self._hooks.per_event:
            self._push(self._fold_hooked, events)
        else:
            self._push(self._fold.apply, events)

    def _push(self, fold_them: Callable[[Any], object], events: Any) -> None:
        """``fold_them(events)`` under the lock, then the publication check at the end of
        the outermost push (after a failure too: the events before it are published)."""
        # acquire/release rather than ``with``: ~750 CPU instructions less per push.
        self._lock.acquire()
        try:
            fold = self._fold
            if fold.busy:
                raise UsageError(
                    "push() was called from inside a definition or push hook; definitions "
                    "must be pure — push from a listener (subscribe) instead"
                )
            self._depth += 1
            try:
                fold_them(events)
            except BaseException as exc:
                self._depth -= 1
                if self._depth == 0:
                    try:
                        self._publish()
                    except ListenerError as listener_error:
                        exc.add_note(f"while publishing the events before it: {listener_error}")
                raise
            self._depth -= 1
            # The common streaming case, a frame already pending for frame-level
            # changes, needs no publication work: skip the call.
            if not self._depth and (fold.level != FRAME or self._frame is None or self._frame_due):
                self._publish()
        finally:
            self._lock.release()

    def _fold_hooked(self, events: Iterable[object], hooks: _Hooks | None = None) -> None:
        """Fold ``events`` one at a time inside the push hooks (see ``PushHook`` for the
        order); a hook point nobody implements is not looked at."""
        if hooks is None:
            hooks = self._hooks
        fold = self._fold
        apply_event = fold.apply_event
        starts, errors, ends = hooks.start, hooks.error, hooks.end
        clock = self._clock
        started = 0.0
        for event in events:
            ctx = PushContext(event=event, position=fold.position)
            if ends:  # only end hooks see elapsed_ms
                started = clock()
            fold.busy = True  # pushing from a hook is misuse, as from a definition
            try:
                for hook, member in starts:
                    try:
                        member(ctx)
                    except EventError as exc:  # blames the event (a pre-pass): as itself
                        _blamed(exc, ctx.position)
                        raise
                    except Exception as exc:
                        raise _hook_error(hook, "on_push_start", exc, ctx) from exc
                if ctx.skipped:
                    fold.position += 1
                    self._skipped += 1
                else:
                    ctx.changed = apply_event(ctx.event, True)
            except BaseException as exc:
                if fold.position == ctx.position:  # a start hook failed: still consumed
                    fold.position += 1
                ctx.error = exc
                for hook, member in errors:
                    try:
                        member(ctx)
                    except Exception as hook_exc:
                        exc.add_note(str(_hook_error(hook, "on_error", hook_exc, ctx)))
                raise
            finally:
                fold.busy = False
                if ends:
                    ctx.elapsed_ms = (clock() - started) * 1000.0
                    first: HookError | None = None
                    for hook, member in ends:
                        try:
                            member(ctx)
                        except Exception as hook_exc:
                            hook_error = _hook_error(hook, "on_push_end", hook_exc, ctx)
                            if ctx.error is not None:
                                ctx.error.add_note(str(hook_error))
                            elif first is None:
                                first = hook_error
                    if first is not None:
                        raise first

    # -- output --------------------------------------------------------------------

    def nodes(self) -> tuple[Node, ...]:
        """The view: every node in ``seq`` order.

        Returns the same tuple object until the next accepted event. Cost: O(1) when
        nothing changed, else O(changed nodes) to refreeze plus O(n) to make the tuple.
        """
        with self._lock:
            return self._fold.nodes()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(nodes)`` at each notification; return the unsubscribe function.

        Listeners run in subscription order, under the engine's lock, on the thread
        that delivers: the pushing thread for ``immediate`` changes, the scheduler's
        for frames (see ``SnapshotStream`` for asyncio). A listener may push.
        Unsubscribing twice is harmless.
        """
        if not callable(listener):
            raise RegistrationError(f"listener {listener!r} is not callable")
        with self._lock:
            token = self._next_listener
            self._next_listener += 1
            self._listeners[token] = listener

        def unsubscribe() -> None:
            with self._lock:
                self._listeners.pop(token, None)

        return unsubscribe

    def flush(self) -> None:
        """Deliver now whatever subscribers have not seen (a pending frame, or changes
        published as ``none``); cancels the pending frame. No-op when nothing is new."""
        with self._lock:
            if self._depth:
                self._frame_due = True
            else:
                self._notify()

    def statistics(self) -> Statistics:
        """A frozen snapshot of the engine's counters."""
        with self._lock:
            fold = self._fold
            return Statistics(
                events_pushed=fold.position,
                events_accepted=fold.version,
                events_skipped=self._skipped,
                updates_dropped=fold.dropped,
                events_unclaimed=fold.unclaimed,
                nodes=len(fold.records),
                frames_requested=self._frames_requested,
                frames_fired=self._frames_fired,
                frames_cancelled=self._frames_cancelled,
                notifications=self._notifications,
            )

    # -- publication ---------------------------------------------------------------

    def _publish(self) -> None:
        """The check at the end of the outermost push; the lock is held."""
        level = self._fold.level
        self._fold.level = NOT_ACCEPTED
        if self._frame_due:
            self._frame_due = False
            self._notify()
        elif level == IMMEDIATE:
            self._notify()
        elif level == FRAME and self._frame is None and (self._listeners or self._hooks.publish):
            self._request_frame()

    def _request_frame(self) -> None:
        self._frames_requested += 1
        scheduler = self._scheduler
        if scheduler is None:
            loop = _get_running_loop()
            if loop is None:
                # No loop: the frame is the end of the outermost push, which is now.
                self._frames_fired += 1
                self._notify()
                return
            token = self._frame = object()
            self._frame_cancel = loop.call_soon(self._on_frame, token).cancel
            return
        token = self._frame = object()
        cancel = scheduler.request_frame(functools.partial(self._on_frame, token))
        if self._frame is token:  # not fired synchronously inside request_frame
            self._frame_cancel = cancel

    def _on_frame(self, token: object) -> None:
        with self._lock:
            if self._frame is not token:
                return  # cancelled, or a stale callback: never fire twice for a change
            self._frame = None
            self._frame_cancel = None
            self._frames_fired += 1
            if self._depth:
                self._frame_due = True
            else:
                self._notify()

    def _notify(self) -> None:
        if self._frame is not None:
            cancel = self._frame_cancel
            self._frame = None
            self._frame_cancel = None
            self._frames_cancelled += 1
            if cancel is not None:
                cancel()
        if self._notifying:
            self._again = True
            return
        fold = self._fold
        fold.level = NOT_ACCEPTED  # what is pending is delivered now
        if not self._listeners and not self._hooks.publish:
            # Nobody to tell: skip the O(n) snapshot. A later subscriber hears of the
            # next change, with nodes() as it is then.
            self._notified_version = fold.version
            return
        self._notifying = True
        failure: tuple[Listener, Exception] | None = None  # the first listener to raise
        try:
            while fold.version != self._notified_version:
                self._again = False
                nodes = fold.nodes()
                self._notified_version = fold.version
                self._notifications += 1
                for hook, member in self._hooks.publish:
                    try:
                        member(nodes)
                    except Exception as exc:
                        raise _hook_error(hook, "on_publish", exc, nodes) from exc
                for token, listener in tuple(self._listeners.items()):
                    if token not in self._listeners:
                        continue  # unsubscribed by an earlier listener this round
                    try:
                        listener(nodes)
                    except Exception as listener_exc:
                        if failure is None:
                            failure = (listener, listener_exc)
                if not self._again:
                    break
        finally:
            self._notifying = False
        if failure is not None:
            failed, cause = failure
            raise ListenerError(
                f"listener {failed!r} raised {type(cause).__name__}: {cause}; every other "
                "listener was notified"
            ) from cause


def _hook_error(hook: object, method: str, exc: Exception, arg: Any) -> HookError:
    """The error for ``hook``'s ``method`` having raised ``exc`` (kept as the cause)."""
    position = arg.position if isinstance(arg, PushContext) else -1
    where = f" at event #{position}" if position >= 0 else ""
    error = HookError(
        f"hook {hook!r} raised in {method}(){where}: {type(exc).__name__}: {exc}",
        hook=hook,
        method=method,
        position=position,
    )
    error.__cause__ = exc
    return error


def create_conversation_engine(
    definitions: Iterable[Definition[Any, Any]] | Registration,
    scheduler: Scheduler | None = None,
    hooks: Iterable[object] = (),
    *,
    event_type: Callable[[Any], Hashable] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> ConversationEngine:
    """Make an engine folding events through ``definitions`` (validated here).

    ``scheduler`` replaces frame scheduling: ``None`` uses ``call_soon`` on the
    running asyncio loop when there is one, and otherwise fires the frame when the
    outermost ``push``/``push_many`` returns. ``hooks`` are engine-level push hooks
    (see ``PushHook``). ``event_type(event)`` lets the engine skip definitions whose
    ``event_types`` cannot claim the event (a type none admits goes to the ``fallback``
    definitions, see ``Definition``). ``clock`` times push hooks only.
    ``definitions`` may be a ``Registration`` (which carries its ``event_type``):
    engines made from one share the validation and routing work.

    Raises ``RegistrationError`` naming the fix for a duplicate kind, a missing
    member, a bad publication value or a malformed hook or scheduler.
    """
    return ConversationEngine(
        definitions, scheduler=scheduler, hooks=hooks, event_type=event_type, clock=clock
    )
