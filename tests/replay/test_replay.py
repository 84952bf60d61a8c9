"""replay(): the final view of a log, whatever the batching."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from definitions import event_type
from engine import DefinitionError, create_conversation_engine
from replay._replay import replay

from ._kinds import LOGS, MessageKind, conversation, kinds


def fold_one_by_one(events: list[dict[str, object]]) -> tuple[object, ...]:
    engine = create_conversation_engine(kinds())
    for event in events:
        engine.push(event)
    return engine.nodes()


class TestReplay:
    """replay(events, definitions)"""

    def test_final_view(self) -> None:
        """The nodes of the conversation, in start order, with folded states."""
        nodes = replay(conversation(), kinds())
        assert [node.key for node in nodes] == [
            "message:m1",
            "counter:c",
            "message:m2",
            "note:n1",
            "bare:b1",
            "note:n2",
        ]
        assert str(nodes[0].state.text) == "Again"  # reopened in place: old text discarded
        assert nodes[1].state.value == 3
        assert str(nodes[2].state.text) == "Hi there!"
        assert nodes[3].state.text_so_far == "Hi there"

    @settings(max_examples=60, deadline=None)
    @given(LOGS, st.none() | st.integers(1, 7), st.booleans())
    def test_same_as_pushing_one_by_one(
        self, events: list[dict[str, object]], batch: int | None, routed: bool
    ) -> None:
        """Batching and routing do not change the view."""
        nodes = replay(events, kinds(), batch=batch, event_type=event_type if routed else None)
        assert nodes == fold_one_by_one(events)

    def test_consumes_an_iterator_once(self) -> None:
        """A generator (a log reader) is enough: the log need not be in memory."""
        nodes = replay((event for event in conversation()), kinds(), batch=3)
        assert nodes == replay(conversation(), kinds())

    def test_empty_log(self) -> None:
        assert replay([], kinds()) == ()

    @pytest.mark.parametrize("batch", [0, -1])
    def test_bad_batch(self, batch: int) -> None:
        with pytest.raises(ValueError, match="batch must be a positive"):
            replay(conversation(), kinds(), batch=batch)

    def test_definition_error_propagates(self) -> None:
        """A failing definition is reported by the engine, with the event's position."""
        events = [{"type": "message.start", "id": "m"}, {"type": "message.delta", "id": "m"}]
        with pytest.raises(DefinitionError, match=r"'message'.*update\(\).*#1"):
            replay(events, [MessageKind()])
