"""DESIGN.md rule 6: frozen nodes, stable keys, and the identity of nodes()."""

from __future__ import annotations

import attrs
import msgspec
import pytest

from engine import Node, create_conversation_engine

from .harness import Tally, TallyState, ev, tallies


class TestNodeIsFrozen:
    """Nodes cannot be changed by a view."""

    def test_fields_cannot_be_assigned(self) -> None:
        engine = create_conversation_engine(tallies())
        engine.push(ev("a", "start", "1"))
        node = engine.nodes()[0]
        with pytest.raises(AttributeError):
            node.state = None  # type: ignore[misc]
        assert (node.key, node.kind, node.id, node.seq) == ("a:1", "a", "1", 0)

    def test_a_held_node_does_not_change_when_its_node_updates(self) -> None:
        engine = create_conversation_engine(tallies())
        engine.push(ev("a", "start", "1", v=1))
        held = engine.nodes()
        engine.push(ev("a", "update", "1", v=5))
        assert held[0].state.total == 1
        assert engine.nodes()[0].state.total == 6
        assert engine.nodes()[0].key == held[0].key

    def test_nodes_encode_to_json(self) -> None:
        engine = create_conversation_engine(tallies())
        engine.push(ev("a", "start", "1"))
        encoded = msgspec.json.encode(engine.nodes(), enc_hook=attrs.asdict)
        assert msgspec.json.decode(encoded)[0]["key"] == "a:1"


class TestNodesIdentity:
    """nodes() is the same tuple until the next accepted event."""

    def test_same_tuple_until_an_accepted_event(self) -> None:
        engine = create_conversation_engine(tallies())
        engine.push(ev("a", "start", "1"))
        first = engine.nodes()
        assert engine.nodes() is first
        engine.push(ev("a", "noise", "1"))  # nobody claims
        engine.push(ev("a", "update", "zz"))  # orphan update, dropped
        engine.push(ev("a", "update", "1", v=0))  # identical state: no change
        assert engine.nodes() is first
        engine.push(ev("a", "update", "1", v=2))
        assert engine.nodes() is not first

    def test_unchanged_nodes_keep_their_identity_across_tuples(self) -> None:
        engine = create_conversation_engine(tallies())
        engine.push_many([ev("a", "start", "1"), ev("a", "start", "2")])
        before = engine.nodes()
        engine.push(ev("a", "update", "2"))
        after = engine.nodes()
        assert after[0] is before[0]
        assert after[1] is not before[1]

    def test_statistics_count_accepted_and_ignored_events(self) -> None:
        engine = create_conversation_engine(tallies())
        engine.push_many(
            [ev("a", "start", "1"), ev("a", "update", "1", v=0), ev("a", "update", "9")]
        )
        stats = engine.statistics()
        assert (stats.events_pushed, stats.events_accepted, stats.updates_dropped) == (3, 1, 1)

    def test_identical_state_returned_by_update_is_no_change(self) -> None:
        calls: list[int] = []

        class Same(Tally):
            def update(self, state: TallyState, event: dict[str, object]) -> TallyState:
                calls.append(1)
                return state

        engine = create_conversation_engine([Same("a")])
        engine.push(ev("a", "start", "1"))
        seen: list[tuple[Node, ...]] = []
        engine.subscribe(seen.append)
        engine.push(ev("a", "update", "1"))
        assert calls == [1]
        assert seen == []
        assert engine.statistics().events_accepted == 1
