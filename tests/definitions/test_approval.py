"""The approval kind: request, decision, a model fold."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from definitions import approval, event_type
from engine import DefinitionError, ManualScheduler, Node, create_conversation_engine

D = approval.DEFINITION


def fold(events: list[Any]) -> tuple[Node, ...]:
    engine = create_conversation_engine([D], ManualScheduler(), event_type=event_type)
    engine.push_many(events)
    return engine.nodes()


class TestTransitions:
    """Each event moves an approval the documented way."""

    def test_request_then_approved(self) -> None:
        (node,) = fold(
            [
                {
                    "type": "approval.request",
                    "id": "a",
                    "action": "rm -rf build",
                    "tool_call_id": "c",
                },
                {"type": "approval.decision", "id": "a", "decision": "approved", "by": "alice"},
            ]
        )
        assert node.state == approval.ApprovalState("rm -rf build", "c", "approved", "alice")
        assert D.render_text(node) == "approval for c: rm -rf build -> approved (by alice)"
        assert D.render_json(node)["status"] == "approved"

    def test_pending_then_denied_with_reason(self) -> None:
        (node,) = fold([approval.Request(id="a", action="deploy")])
        assert D.render_text(node) == "approval: deploy -> pending"
        (node,) = fold(
            [
                approval.Request(id="a", action="deploy"),
                approval.Decision(id="a", decision="denied", reason="not on Friday"),
            ]
        )
        assert D.render_text(node) == "approval: deploy -> denied (not on Friday)"

    def test_second_decision_is_an_error(self) -> None:
        engine = create_conversation_engine([D], ManualScheduler())
        engine.push_many(
            [approval.Request(id="a", action="x"), approval.Decision(id="a", decision="approved")]
        )
        with pytest.raises(DefinitionError) as info:
            engine.push(approval.Decision(id="a", decision="denied"))
        assert "already approved" in str(info.value.__cause__)

    def test_bad_decision_is_named(self) -> None:
        engine = create_conversation_engine([D], ManualScheduler())
        engine.push(approval.Request(id="a", action="x"))
        with pytest.raises(DefinitionError) as info:
            engine.push({"type": "approval.decision", "id": "a", "decision": "maybe"})
        assert "$.decision" in str(info.value.__cause__)

    def test_publication_is_immediate(self) -> None:
        assert D.publication == "immediate"


ids = st.sampled_from(["a", "b"])
words = st.text(max_size=4)
events = st.one_of(
    st.builds(approval.Request, id=ids, action=words, tool_call_id=st.none() | words),
    st.builds(
        approval.Decision,
        id=ids,
        decision=st.sampled_from(["approved", "denied"]),
        by=st.none() | words,
        reason=st.none() | words,
    ),
)


class TestModel:
    """Random event sequences fold to what a naive dictionary model says."""

    @pytest.mark.slow
    @settings(max_examples=100)
    @given(st.lists(st.tuples(events, st.booleans()), max_size=20))
    def test_random_sequences(self, pairs: list[tuple[approval.Event, bool]]) -> None:
        engine = create_conversation_engine([D], ManualScheduler(), event_type=event_type)
        model: dict[str, dict[str, Any]] = {}
        for event, plain in pairs:
            pushed = msgspec.to_builtins(event) if plain else event
            item = model.get(event.id)
            if isinstance(event, approval.Request):
                model[event.id] = {
                    "action": event.action,
                    "tool_call_id": event.tool_call_id,
                    "status": "pending",
                    "by": None,
                    "reason": None,
                }
            elif item is not None and item["status"] != "pending":
                with pytest.raises(DefinitionError):
                    engine.push(pushed)
                continue
            elif item is not None:
                item.update(status=event.decision, by=event.by, reason=event.reason)
            engine.push(pushed)
        assert {node.id: D.render_json(node) for node in engine.nodes()} == model
