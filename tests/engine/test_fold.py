"""DESIGN.md semantics 1-5 and 7: claims, seq order, orphans, reopen, previous, atomicity."""

from __future__ import annotations

import contextlib
import operator
from typing import Any

import pytest

from engine import Claim, DefinitionError, UsageError, create_conversation_engine

from .harness import RoutedTally, Tally, TallyState, Unlucky, as_tuples, ev, model_fold, tallies


def fold(events: list[dict[str, Any]], definitions: list[Any] | None = None) -> Any:
    engine = create_conversation_engine(definitions if definitions is not None else tallies())
    engine.push_many(events)
    return engine


class TestEveryDefinitionSeesEveryEvent:
    """Rule 1: the engine does not stop at the first claim."""

    def test_one_event_drives_a_node_per_definition(self) -> None:
        engine = fold([ev("*", "start", "x")])
        assert [n.key for n in engine.nodes()] == ["a:x", "b:x", "c:x"]

    def test_match_is_called_for_every_definition_even_after_a_claim(self) -> None:
        calls: list[str] = []

        class Spy(Tally):
            def match(self, event: dict[str, Any]) -> Claim | None:
                calls.append(self.kind)
                return super().match(event)

        fold([ev("a", "start", "x"), ev("*", "noise", "y")], [Spy("a"), Spy("b")])
        assert calls == ["a", "b", "a", "b"]


class TestOrderIsFixedAtStart:
    """Rule 2: seq counts starts; within an event, registration order."""

    def test_seq_counts_starts_in_event_then_registration_order(self) -> None:
        engine = fold([ev("b", "start", "1"), ev("*", "start", "2"), ev("a", "start", "3")])
        assert [(n.key, n.seq) for n in engine.nodes()] == [
            ("b:1", 0),
            ("a:2", 1),
            ("b:2", 2),
            ("c:2", 3),
            ("a:3", 4),
        ]

    def test_updates_never_move_a_node(self) -> None:
        engine = fold([ev("a", "start", "1"), ev("a", "start", "2")])
        engine.push_many([ev("a", "update", "1", v=5)] * 3)
        assert [(n.key, n.seq, n.state.total) for n in engine.nodes()] == [
            ("a:1", 0, 16),
            ("a:2", 1, 1),
        ]


class TestOrphanUpdatesAreDropped:
    """Rule 3: an update with no open node of that kind is dropped."""

    def test_update_before_start_is_dropped_and_counted(self) -> None:
        engine = fold([ev("a", "update", "1"), ev("a", "start", "1", v=7)])
        assert [(n.key, n.state.total) for n in engine.nodes()] == [("a:1", 7)]
        assert engine.statistics().updates_dropped == 1

    def test_open_node_of_another_kind_does_not_count(self) -> None:
        engine = fold([ev("b", "start", "1"), ev("a", "update", "1", v=5)])
        assert [(n.key, n.state.total) for n in engine.nodes()] == [("b:1", 1)]


class TestUnclaimedEventsAreCounted:
    """``events_unclaimed``: events no definition claimed at all (a dropped update
    was claimed; it counts as dropped instead)."""

    @pytest.mark.parametrize("routed", [False, True], ids=["unrouted", "routed"])
    def test_only_events_nobody_claims_count(self, routed: bool) -> None:
        if routed:
            kinds = [RoutedTally("a"), RoutedTally("b")]
            engine = create_conversation_engine(kinds, event_type=operator.itemgetter("to"))
        else:
            engine = create_conversation_engine([Tally("a"), Tally("b")])
        engine.push_many([ev("a", "start", "1"), ev("z", "start", "1"), ev("*", "noise", "2")])
        engine.push(ev("b", "update", "9"))  # claimed, then dropped
        engine.push(ev("a", "noise", "1"))
        engine.push(ev("*", "start", "3"))
        stats = engine.statistics()
        assert (stats.events_unclaimed, stats.updates_dropped) == (3, 1)

    def test_a_failed_event_is_not_counted(self) -> None:
        engine = create_conversation_engine(tallies())
        with pytest.raises(DefinitionError):
            engine.push(ev("*", "start", "1", v=13))
        assert engine.statistics().events_unclaimed == 0


class TestRepeatedStartReopensInPlace:
    """Rule 4: state discarded (not merged), seq and position kept."""

    def test_reopen_discards_state_and_keeps_seq(self) -> None:
        engine = fold(
            [
                ev("a", "start", "1", v=1),
                ev("a", "update", "1", v=10),
                ev("b", "start", "2"),
                ev("a", "start", "1", v=100),
            ]
        )
        assert [(n.key, n.seq, n.state.total) for n in engine.nodes()] == [
            ("a:1", 0, 100),
            ("b:2", 1, 1),
        ]
        assert engine.statistics().nodes == 2

    def test_reopen_sees_previous_below_its_kept_seq(self) -> None:
        engine = fold(
            [ev("a", "start", "1"), ev("a", "start", "2"), ev("a", "start", "1")],
            [Tally("a", looks_at=("a",))],
        )
        first, second = engine.nodes()
        assert first.state.previous == (None,)  # not a:2, which started later
        assert second.state.previous == (("a", "1", 0),)


class TestPreviousLooksBackwardOnly:
    """Rule 5: the greatest seq below the starting node's own; never a later node."""

    def test_previous_is_the_latest_earlier_node_of_that_kind(self) -> None:
        engine = fold([ev("a", "start", "1"), ev("b", "start", "2"), ev("a", "start", "3")])
        assert engine.nodes()[2].state.previous == (("a", "1", 0), ("b", "2", 1))

    def test_within_one_event_a_later_registered_definition_sees_earlier_starts(self) -> None:
        engine = fold([ev("*", "start", "x")])
        by_key = {n.key: n for n in engine.nodes()}
        assert by_key["a:x"].state.previous == (None, None)
        assert by_key["b:x"].state.previous == (("a", "x", 0),)
        assert by_key["c:x"].state.previous == (None, ("a", "x", 0), ("b", "x", 1))

    def test_unregistered_kind_reads_none(self) -> None:
        engine = fold([ev("a", "start", "1")], [Tally("a", looks_at=("nope",))])
        assert engine.nodes()[0].state.previous == (None,)

    def test_previous_returns_the_current_state_of_the_earlier_node(self) -> None:
        engine = fold([ev("a", "start", "1"), ev("a", "update", "1", v=4), ev("b", "start", "2")])
        assert engine.nodes()[1].state.previous == (("a", "1", 0),)

    def test_reader_is_closed_when_start_returns(self) -> None:
        kept: list[Any] = []

        class Keeper(Tally):
            def start(self, event: dict[str, Any], reader: Any) -> TallyState:
                kept.append(reader)
                return super().start(event, reader)

        fold([ev("a", "start", "1")], [Keeper("a")])
        with pytest.raises(UsageError, match="after start\\(\\) returned"):
            kept[0].previous("a")


class TestEventsAreAtomic:
    """Rule 7: a raising definition leaves no trace; the engine stays usable."""

    def test_raising_update_leaves_no_trace_of_the_event(self) -> None:
        engine = fold([ev("*", "start", "x", v=2)])
        before = engine.nodes()
        # a updates fine, then b raises: a's change must be rolled back too.
        with pytest.raises(DefinitionError) as info:
            engine.push({"to": "*", "op": "update", "id": "x", "v": 13, "pub": "immediate"})
        assert engine.nodes() is before
        assert info.value.kind == "a"
        assert info.value.method == "update"
        assert info.value.position == 1
        assert info.value.key == "a:x"
        assert isinstance(info.value.__cause__, Unlucky)
        assert "definition 'a' update() raised Unlucky" in str(info.value)
        assert "at event #1, key a:x" in str(info.value)

    def test_raising_start_after_another_start_rolls_back_both(self) -> None:
        class LaterRaises(Tally):
            def start(self, event: dict[str, Any], reader: Any) -> TallyState:
                raise Unlucky("no")

        engine = fold([], [Tally("a"), LaterRaises("b")])
        with pytest.raises(DefinitionError, match="definition 'b' start\\(\\) raised"):
            engine.push(ev("*", "start", "x"))
        assert engine.nodes() == ()
        assert engine.statistics().nodes == 0
        # The engine stays usable and seq has no gap.
        engine.push(ev("a", "start", "y"))
        assert [(n.key, n.seq) for n in engine.nodes()] == [("a:y", 0)]

    def test_raising_reopen_keeps_the_old_state(self) -> None:
        engine = fold([ev("a", "start", "1", v=5)])
        with pytest.raises(DefinitionError):
            engine.push(ev("a", "start", "1", v=13))
        assert engine.nodes()[0].state.total == 5

    def test_raising_match_names_the_method(self) -> None:
        class BadMatch(Tally):
            def match(self, event: dict[str, Any]) -> Claim | None:
                raise KeyError("to")

        engine = fold([], [BadMatch("a")])
        with pytest.raises(DefinitionError) as info:
            engine.push({})
        assert (info.value.method, info.value.position, info.value.key) == ("match", 0, None)
        assert isinstance(info.value.__cause__, KeyError)

    @pytest.mark.parametrize("routed", [False, True], ids=["unrouted", "routed"])
    @pytest.mark.parametrize("others", [0, 1], ids=["one definition", "two definitions"])
    def test_a_raising_match_names_no_earlier_events_key(self, routed: bool, others: int) -> None:
        # match() raises on event #2 after claiming events #0 and #1: the error must not
        # name the key of the claim of event #1 (issue 12).
        class Picky(RoutedTally):
            def match(self, event: dict[str, Any]) -> Claim | None:
                if event["v"] == 99:
                    raise KeyError("v")
                return super().match(event)

        definitions: list[Any] = [RoutedTally("b")] * others + [Picky("a")]
        engine = create_conversation_engine(
            definitions, event_type=operator.itemgetter("to") if routed else None
        )
        with pytest.raises(DefinitionError) as info:
            engine.push_many(
                [ev("a", "start", "m1"), ev("a", "update", "m1"), ev("a", "update", "m2", v=99)]
            )
        assert (info.value.method, info.value.position, info.value.key) == ("match", 2, None)
        assert "key" not in str(info.value)

    def test_events_before_a_failure_in_a_batch_are_kept(self) -> None:
        engine = fold([])
        with pytest.raises(DefinitionError, match="at event #2"):
            engine.push_many(
                [
                    ev("a", "start", "1"),
                    ev("a", "update", "1"),
                    ev("a", "update", "1", v=13),
                    ev("a", "start", "never"),
                ]
            )
        assert [(n.key, n.state.total) for n in engine.nodes()] == [("a:1", 2)]
        assert engine.statistics().events_pushed == 3

    @pytest.mark.parametrize("routed", [False, True])
    def test_a_long_generator_fails_at_the_right_position(self, routed: bool) -> None:
        # Iterables that are not lists are folded in chunks: positions run across them.
        def source() -> Any:
            yield ev("a", "start", "1")
            for i in range(1, 2500):
                yield ev("a", "update", "1", v=13 if i == 2000 else 1)

        router: Any = (lambda event: event["op"]) if routed else None
        engine = create_conversation_engine(tallies(), event_type=router)
        with pytest.raises(DefinitionError, match="at event #2000") as info:
            engine.push_many(source())
        assert info.value.position == 2000
        assert engine.nodes()[0].state.total == 2000
        assert engine.statistics().events_pushed == 2001

    @pytest.mark.parametrize("routed", [False, True])
    def test_a_failing_event_source_keeps_what_came_before_and_goes_up_as_it_is(
        self, routed: bool
    ) -> None:
        def source() -> Any:
            yield ev("a", "start", "1")
            yield ev("a", "update", "1")
            raise OSError("the log went away")

        router: Any = (lambda event: event["op"]) if routed else None
        engine = create_conversation_engine(tallies(), event_type=router)
        with pytest.raises(OSError, match="went away") as info:
            engine.push_many(source())
        assert not isinstance(info.value, DefinitionError)  # no definition is to blame
        assert [(n.key, n.state.total) for n in engine.nodes()] == [("a:1", 2)]
        assert engine.statistics().events_pushed == 2
        engine.push(ev("a", "update", "1"))  # still usable, positions continue
        assert engine.nodes()[0].state.total == 3

    @pytest.mark.parametrize(
        ("returned", "message"),
        [
            (("x", "start"), "must return Claim\\(id, role\\) or None"),
            (Claim("x", "begin"), "role 'begin'"),  # type: ignore[arg-type]
            (Claim(7, "start"), "ids must be str"),  # type: ignore[arg-type]
        ],
    )
    def test_invalid_claims_are_definition_errors(self, returned: Any, message: str) -> None:
        class Odd(Tally):
            def match(self, event: dict[str, Any]) -> Any:
                return returned

        engine = fold([], [Odd("a")])
        with pytest.raises(DefinitionError, match=message):
            engine.push(ev("a", "start", "x"))
        assert engine.nodes() == ()

    def test_invalid_publication_value_is_a_definition_error_and_rolls_back(self) -> None:
        engine = fold([])
        with pytest.raises(DefinitionError, match="publication\\(\\) returned 'soon'"):
            engine.push(ev("a", "start", "x", pub="soon"))
        assert engine.nodes() == ()

    def test_keyboard_interrupt_rolls_back_and_propagates_unwrapped(self) -> None:
        class Interrupted(Tally):
            def update(self, state: TallyState, event: dict[str, Any]) -> TallyState:
                raise KeyboardInterrupt

        engine = fold([ev("*", "start", "x")], [Tally("a"), Interrupted("b")])
        before = engine.nodes()
        with pytest.raises(KeyboardInterrupt):
            engine.push(ev("*", "update", "x", v=3))
        assert engine.nodes() is before

    def test_pushing_from_inside_a_definition_is_misuse(self) -> None:
        holder: list[Any] = []

        class Pusher(Tally):
            def update(self, state: TallyState, event: dict[str, Any]) -> TallyState:
                holder[0].push(ev("a", "start", "sneaky"))
                return state

        engine = fold([ev("a", "start", "1")], [Pusher("a")])
        holder.append(engine)
        with pytest.raises(DefinitionError) as info:
            engine.push(ev("a", "update", "1"))
        assert isinstance(info.value.__cause__, UsageError)
        assert [n.key for n in engine.nodes()] == ["a:1"]


class TestAnUndoneStartLeavesNoTrace:
    """Rule 7 for a node started by an event that a later definition then failed: the
    undone record must leave the list of records to refreeze too."""

    def test_a_later_change_refreezes_only_live_nodes(self) -> None:
        class FailsOnY(Tally):
            def start(self, event: dict[str, Any], reader: Any) -> TallyState:
                if event["id"] == "y":
                    raise KeyError("y")
                return super().start(event, reader)

        engine = fold([ev("a", "start", "1")], [Tally("a"), FailsOnY("b")])
        engine.nodes()
        with pytest.raises(DefinitionError):
            engine.push(ev("*", "start", "y"))  # a:y started, then undone
        engine.push(ev("a", "update", "1"))
        assert [(n.key, n.seq, n.state.total) for n in engine.nodes()] == [("a:1", 0, 2)]


class TestEventsAreAtomicOnTheInlinePath:
    """Rule 7 where one definition can claim the event (the fold's inline path, which
    keeps no undo log: every call that can raise must come before the change)."""

    def engine(self) -> Any:
        return fold([ev("a", "start", "x", v=2)], [Tally("a")])

    @pytest.mark.parametrize(
        ("event", "method"),
        [
            (ev("a", "update", "x", v=13), "update"),
            (ev("a", "start", "x", v=13), "start"),  # a reopen
            (ev("a", "update", "x", pub="soon"), "publication"),
            (ev("a", "start", "x", pub="soon"), "publication"),
            (ev("a", "start", "new", pub="soon"), "publication"),
        ],
    )
    def test_a_failure_leaves_no_trace(self, event: dict[str, Any], method: str) -> None:
        engine = self.engine()
        before = engine.nodes()
        with pytest.raises(DefinitionError) as info:
            engine.push_many([ev("a", "update", "x", v=0), event, ev("a", "update", "x")])
        assert (info.value.kind, info.value.method, info.value.position) == ("a", method, 2)
        assert engine.nodes() is before  # the no-change update before it changed nothing
        assert engine.statistics().events_pushed == 3
        engine.push(ev("a", "update", "x"))
        assert [(n.key, n.state.total) for n in engine.nodes()] == [("a:x", 3)]

    def test_a_raising_publication_function_leaves_no_trace(self) -> None:
        class Loud(Tally):
            def publication(self, event: dict[str, Any]) -> str:
                raise RuntimeError("no level")

        engine = fold([], [Loud("a")])
        with pytest.raises(DefinitionError, match="publication\\(\\) raised RuntimeError"):
            engine.push(ev("a", "start", "x"))
        assert engine.nodes() == ()
        assert engine.statistics().nodes == 0


class TestMatchesModel:
    """The engine agrees with the naive reference fold on a hand-written log."""

    def test_mixed_log(self) -> None:
        log = [
            ev("a", "update", "0"),
            ev("*", "start", "1"),
            ev("b", "update", "1", v=13),
            ev("c", "start", "2", v=13),
            ev("a", "start", "1", v=9),
            ev("*", "update", "1", v=0),
            ev("c", "start", "3"),
        ]
        engine = create_conversation_engine(tallies())
        for event in log:
            with contextlib.suppress(DefinitionError):
                engine.push(event)
        assert as_tuples(engine.nodes()) == model_fold(tallies(), log)
