"""Push hooks (after seed 003): order, rewrite, skip, errors, end hooks always run."""

from __future__ import annotations

import contextlib
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import (
    DefinitionError,
    HookError,
    Node,
    PushContext,
    RegistrationError,
    create_conversation_engine,
)

from .harness import ev, route_to, routed_tallies, tallies


@attrs.define
class Recorder:
    """A hook that logs every call as (name, method, detail)."""

    name: str
    log: list[tuple[str, str, Any]]

    def on_push_start(self, ctx: PushContext) -> None:
        self.log.append((self.name, "start", ctx.position))

    def on_error(self, ctx: PushContext) -> None:
        self.log.append((self.name, "error", type(ctx.error).__name__))

    def on_push_end(self, ctx: PushContext) -> None:
        self.log.append((self.name, "end", (ctx.changed, ctx.error is not None)))

    def on_publish(self, nodes: tuple[Node, ...]) -> None:
        self.log.append((self.name, "publish", len(nodes)))


class TestOrder:
    """Engine-level hooks before per-call hooks, each list in order."""

    def test_installed_before_per_call_and_publish_after_the_push(self) -> None:
        log: list[tuple[str, str, Any]] = []
        engine = create_conversation_engine(
            tallies(), hooks=[Recorder("A", log), Recorder("B", log)]
        )
        per_call = attrs.evolve(Recorder("C", log))
        per_call_hook = _WithoutPublish(per_call)
        engine.push(ev("a", "start", "1"), hooks=[per_call_hook])
        assert log == [
            ("A", "start", 0),
            ("B", "start", 0),
            ("C", "start", 0),
            ("A", "end", (("a:1",), False)),
            ("B", "end", (("a:1",), False)),
            ("C", "end", (("a:1",), False)),
            ("A", "publish", 1),
            ("B", "publish", 1),
        ]

    def test_on_error_runs_before_on_push_end(self) -> None:
        log: list[tuple[str, str, Any]] = []
        engine = create_conversation_engine(tallies(), hooks=[Recorder("A", log)])
        with pytest.raises(DefinitionError):
            engine.push(ev("a", "start", "1", v=13))
        assert log == [
            ("A", "start", 0),
            ("A", "error", "DefinitionError"),
            ("A", "end", ((), True)),
        ]

    def test_push_many_runs_hooks_once_per_event(self) -> None:
        log: list[tuple[str, str, Any]] = []
        engine = create_conversation_engine(tallies(), hooks=[Recorder("A", log)])
        engine.push_many([ev("a", "start", "1"), ev("a", "update", "1", v=0)])
        assert [entry for entry in log if entry[1] != "publish"] == [
            ("A", "start", 0),
            ("A", "end", (("a:1",), False)),
            ("A", "start", 1),
            ("A", "end", ((), False)),
        ]


@attrs.define
class _WithoutPublish:
    inner: Recorder

    def on_push_start(self, ctx: PushContext) -> None:
        self.inner.on_push_start(ctx)

    def on_push_end(self, ctx: PushContext) -> None:
        self.inner.on_push_end(ctx)


class TestStartHookPolicy:
    """A start hook may rewrite, redact or skip the event."""

    def test_rewrite_the_event(self) -> None:
        class Redact:
            def on_push_start(self, ctx: PushContext) -> None:
                ctx.event = {**ctx.event, "v": 100}

        engine = create_conversation_engine(tallies(), hooks=[Redact()])
        engine.push(ev("a", "start", "1", v=1))
        assert engine.nodes()[0].state.total == 100

    def test_skip_the_event_still_runs_end_hooks_and_consumes_a_position(self) -> None:
        ends: list[PushContext] = []

        class SkipOdd:
            def on_push_start(self, ctx: PushContext) -> None:
                if ctx.position % 2:
                    ctx.skip()

            def on_push_end(self, ctx: PushContext) -> None:
                ends.append(ctx)

        engine = create_conversation_engine(tallies(), hooks=[SkipOdd()])
        engine.push_many([ev("a", "start", str(i)) for i in range(4)])
        assert [n.id for n in engine.nodes()] == ["0", "2"]
        assert [(c.position, c.skipped) for c in ends] == [
            (0, False),
            (1, True),
            (2, False),
            (3, True),
        ]
        stats = engine.statistics()
        assert (stats.events_pushed, stats.events_skipped) == (4, 2)

    def test_elapsed_time_comes_from_the_injected_clock(self) -> None:
        ticks = iter([10.0, 10.5])
        ends: list[float] = []

        class End:
            def on_push_end(self, ctx: PushContext) -> None:
                ends.append(ctx.elapsed_ms)

        engine = create_conversation_engine(tallies(), hooks=[End()], clock=lambda: next(ticks))
        engine.push(ev("a", "start", "1"))
        assert ends == [500.0]


class TestHookErrors:
    """A raising start hook aborts; a raising end hook does not stop the others."""

    def test_raising_start_hook_aborts_the_event(self) -> None:
        log: list[tuple[str, str, Any]] = []

        class Deny:
            def on_push_start(self, ctx: PushContext) -> None:
                if ctx.position == 0:
                    raise PermissionError("denied")

        engine = create_conversation_engine(tallies(), hooks=[Deny(), Recorder("R", log)])
        with pytest.raises(HookError, match="on_push_start\\(\\) at event #0") as info:
            engine.push(ev("a", "start", "1"))
        assert isinstance(info.value.__cause__, PermissionError)
        assert engine.nodes() == ()
        assert log == [("R", "error", "HookError"), ("R", "end", ((), True))]
        engine.push(ev("a", "start", "2"))  # usable, and the failed push used position 0
        assert engine.statistics().events_pushed == 2
        assert [n.key for n in engine.nodes()] == ["a:2"]

    def test_every_end_hook_runs_and_the_first_error_is_raised_last(self) -> None:
        ran: list[str] = []

        @attrs.define
        class End:
            name: str
            fails: bool

            def on_push_end(self, ctx: PushContext) -> None:
                ran.append(self.name)
                if self.fails:
                    raise RuntimeError(self.name)

        engine = create_conversation_engine(
            tallies(), hooks=[End("1", True), End("2", True), End("3", False)]
        )
        with pytest.raises(HookError) as info:
            engine.push(ev("a", "start", "1"))
        assert ran == ["1", "2", "3"]
        assert str(info.value.__cause__) == "1"
        assert [n.key for n in engine.nodes()] == ["a:1"]  # the event itself succeeded

    def test_end_hook_errors_do_not_mask_the_definition_error(self) -> None:
        class End:
            def on_push_end(self, ctx: PushContext) -> None:
                raise RuntimeError("end hook bug")

        engine = create_conversation_engine(tallies(), hooks=[End()])
        with pytest.raises(DefinitionError) as info:
            engine.push(ev("a", "start", "1", v=13))
        assert any("end hook bug" in note for note in info.value.__notes__)


class TestHookValidation:
    """Hooks are checked when they are given."""

    def test_hook_without_any_member_is_rejected(self) -> None:
        with pytest.raises(RegistrationError, match="has none of on_push_start"):
            create_conversation_engine(tallies(), hooks=[object()])

    def test_per_call_on_publish_is_rejected_with_the_fix(self) -> None:
        engine = create_conversation_engine(tallies())
        with pytest.raises(RegistrationError, match="create_conversation_engine\\(hooks="):
            engine.push(ev("a", "start", "1"), hooks=[Recorder("X", [])])
        assert engine.nodes() == ()


_EVENTS = st.lists(
    st.builds(
        ev,
        to=st.sampled_from(["a", "b", "c", "*"]),
        op=st.sampled_from(["start", "update", "noise"]),
        id=st.sampled_from(["1", "2"]),
        v=st.sampled_from([0, 1, 2, 13]),
    ),
    max_size=20,
)


class TestChangedKeys:
    """``ctx.changed`` names exactly the nodes an event started, reopened or changed,
    on the one-slot path of a routed engine as on the general path."""

    @pytest.mark.slow
    @given(events=_EVENTS, routed=st.booleans())
    def test_changed_is_the_nodes_whose_frozen_form_changed(
        self, events: list[dict[str, Any]], routed: bool
    ) -> None:
        seen: list[tuple[str, ...]] = []

        class End:
            def on_push_end(self, ctx: PushContext) -> None:
                seen.append(ctx.changed)

        engine = (
            create_conversation_engine(routed_tallies(), hooks=[End()], event_type=route_to)
            if routed
            else create_conversation_engine(tallies(), hooks=[End()])
        )
        for event in events:
            before = {node.key: node for node in engine.nodes()}
            with contextlib.suppress(DefinitionError):
                engine.push(event)
            after = engine.nodes()
            expected = tuple(node.key for node in after if before.get(node.key) is not node)
            assert sorted(seen[-1]) == sorted(expected)


class TestHooksThatRunNothingPerEvent:
    """An engine whose hooks have no per-event member pushes as one without hooks."""

    def test_an_on_publish_only_hook_still_hears_every_notification(self) -> None:
        published: list[int] = []

        class Publish:
            def on_publish(self, nodes: tuple[Node, ...]) -> None:
                published.append(len(nodes))

        engine = create_conversation_engine(tallies(), hooks=[Publish()])
        engine.push(ev("a", "start", "1"))
        engine.push(ev("b", "start", "1"))
        engine.push_many([ev("a", "update", "1"), ev("c", "start", "1")])
        assert published == [1, 2, 3]

    def test_per_call_hooks_run_on_an_engine_whose_hooks_run_nothing_per_event(self) -> None:
        log: list[tuple[str, str, Any]] = []
        engine = create_conversation_engine(tallies(), hooks=[])
        engine.push(ev("a", "start", "1"), hooks=[_WithoutPublish(Recorder("C", log))])
        assert log == [("C", "start", 0), ("C", "end", (("a:1",), False))]

    def test_elapsed_ms_is_read_only_for_end_hooks(self) -> None:
        reads: list[float] = []
        kept: list[PushContext] = []

        def clock() -> float:
            reads.append(1.0)
            return 1.0

        class Start:
            def on_push_start(self, ctx: PushContext) -> None:
                kept.append(ctx)

        engine = create_conversation_engine(tallies(), hooks=[Start()], clock=clock)
        engine.push(ev("a", "start", "1"))
        assert (reads, kept[0].elapsed_ms) == ([], 0.0)


class TestPushContext:
    """The context is a mutable keyword-only value."""

    def test_fields_defaults_and_skip(self) -> None:
        ctx = PushContext(event={"x": 1}, position=3)
        assert (ctx.skipped, ctx.changed, ctx.error, ctx.elapsed_ms) == (False, (), None, 0.0)
        ctx.event = {"x": 2}
        ctx.skip()
        assert ctx == PushContext(event={"x": 2}, position=3, skipped=True)
        with pytest.raises(TypeError):
            PushContext({"x": 1}, 3)  # type: ignore[misc]
