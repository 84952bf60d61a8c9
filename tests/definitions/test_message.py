"""The message kind: transitions, dict/Struct equivalence, a model fold, linearity."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from definitions import StreamedText, event_type, message
from engine import DefinitionError, ManualScheduler, Node, create_conversation_engine

D = message.DEFINITION


def fold(events: list[Any]) -> tuple[Node, ...]:
    engine = create_conversation_engine([D], ManualScheduler(), event_type=event_type)
    engine.push_many(events)
    return engine.nodes()


class TestTransitions:
    """Each event moves a message the documented way."""

    def test_stream_then_end(self) -> None:
        (node,) = fold(
            [
                {"type": "message.start", "id": "m", "role": "user"},
                {"type": "message.delta", "id": "m", "text": "Hel"},
                message.Delta(id="m", text="lo"),
                {"type": "message.end", "id": "m"},
            ]
        )
        assert node.key == "message:m"
        assert node.state == message.MessageState("user", StreamedText("Hello"), "done")
        assert D.render_text(node) == "user: Hello"
        assert D.render_json(node) == {
            "role": "user",
            "text": "Hello",
            "status": "done",
            "reason": None,
        }

    def test_whole_message_and_default_role(self) -> None:
        (node,) = fold([message.Start(id="m", text="hi"), message.End(id="m")])
        assert node.state.role == "assistant"
        assert node.state.text == "hi"

    def test_abort_keeps_text_and_reason(self) -> None:
        (node,) = fold(
            [
                message.Start(id="m"),
                message.Delta(id="m", text="partial"),
                {"type": "message.abort", "id": "m", "reason": "user stopped"},
            ]
        )
        assert node.state.status == "aborted"
        assert node.state.reason == "user stopped"
        assert D.render_text(node) == "assistant: partial [aborted: user stopped]"

    def test_streaming_render_shows_it_is_not_done(self) -> None:
        (node,) = fold([message.Start(id="m"), message.Delta(id="m", text="x")])
        assert D.render_text(node) == "assistant: x …"
        assert 'data-status="streaming"' in D.render_html(node)

    def test_empty_delta_is_no_change(self) -> None:
        state = D.start(message.Start(id="m"), None)  # type: ignore[arg-type]
        assert D.update(state, {"type": "message.delta", "id": "m", "text": ""}) is state

    @pytest.mark.parametrize(
        "late",
        [
            {"type": "message.delta", "id": "m", "text": "x"},
            {"type": "message.end", "id": "m"},
            {"type": "message.abort", "id": "m"},
        ],
    )
    def test_events_after_the_end_are_errors(self, late: dict[str, Any]) -> None:
        engine = create_conversation_engine([D], ManualScheduler())
        engine.push_many([message.Start(id="m"), message.End(id="m")])
        before = engine.nodes()
        with pytest.raises(DefinitionError, match="already done"):
            engine.push(late)
        assert engine.nodes() is before

    @pytest.mark.parametrize(
        ("event", "fragment"),
        [
            ({"type": "message.delta", "id": "m"}, "needs a 'text' str"),
            ({"type": "message.delta", "id": "m", "text": 3}, "needs a 'text' str"),
            ({"type": "message.start", "id": 7}, "needs an 'id' str"),
            ({"type": "message.abort", "id": "m", "reason": 1}, "Expected `str`"),
        ],
    )
    def test_bad_events_name_the_problem(self, event: dict[str, Any], fragment: str) -> None:
        engine = create_conversation_engine([D], ManualScheduler())
        engine.push(message.Start(id="m"))
        with pytest.raises(DefinitionError) as info:
            engine.push(event)
        assert fragment in str(info.value.__cause__)

    def test_other_events_are_not_claimed(self) -> None:
        assert D.match({"type": "reasoning.delta", "id": "m", "text": "x"}) is None
        assert D.match({"id": "m"}) is None

    def test_publication(self) -> None:
        assert D.publication({"type": "message.delta"}) == "animation-frame"
        assert D.publication(message.Delta(id="m", text="x")) == "animation-frame"
        assert D.publication(message.End(id="m")) == "immediate"
        assert D.event_types == {"message.start", "message.delta", "message.end", "message.abort"}


# -- a model fold ------------------------------------------------------------------

ids = st.sampled_from(["a", "b", "c"])
texts = st.text(max_size=6)
events = st.one_of(
    st.builds(
        message.Start, id=ids, role=st.sampled_from(["user", "assistant", "tool"]), text=texts
    ),
    st.builds(message.Delta, id=ids, text=texts),
    st.builds(message.End, id=ids),
    st.builds(message.Abort, id=ids, reason=texts),
)


def as_dict(event: message.Event) -> dict[str, Any]:
    return msgspec.to_builtins(event)  # type: ignore[no-any-return]


class TestModel:
    """Random event sequences fold to what a naive dictionary model says."""

    @pytest.mark.slow
    @settings(max_examples=150)
    @given(st.lists(st.tuples(events, st.booleans()), max_size=40))
    def test_random_sequences(self, pairs: list[tuple[message.Event, bool]]) -> None:
        engine = create_conversation_engine([D], ManualScheduler(), event_type=event_type)
        model: dict[str, dict[str, Any]] = {}
        for event, plain in pairs:
            item = model.get(event.id)
            expect_error = False
            if isinstance(event, message.Start):
                model[event.id] = {
                    "role": event.role,
                    "text": event.text,
                    "status": "streaming",
                    "reason": None,
                }
            elif item is None:
                pass  # dropped: no open node
            elif item["status"] != "streaming":
                expect_error = True
            elif isinstance(event, message.Delta):
                item["text"] += event.text
            elif isinstance(event, message.End):
                item["status"] = "done"
            else:
                item["status"] = "aborted"
                item["reason"] = event.reason
            if expect_error:
                with pytest.raises(DefinitionError):
                    engine.push(as_dict(event) if plain else event)
            else:
                engine.push(as_dict(event) if plain else event)
        got = {node.id: D.render_json(node) for node in engine.nodes()}
        assert got == model


class TestLinear:
    """Streamed text appends without copying what came before."""

    def test_old_states_keep_their_text_and_share_storage(self) -> None:
        state = D.start(message.Start(id="m"), None)  # type: ignore[arg-type]
        states = [state]
        for i in range(500):
            state = D.update(state, {"type": "message.delta", "id": "m", "text": f"{i:07d},"})
            states.append(state)
        assert str(states[-1].text) == "".join(f"{i:07d}," for i in range(500))
        assert states[10].text == "".join(f"{i:07d}," for i in range(10))
        # every version with a full block extends the same backing store (those before
        # the first block share an empty one): no per-delta copy of the text
        stores = {id(s.text._prefix[0]) for s in states[1:] if s.text._prefix}
        assert len(stores) == 1

    @given(st.lists(st.text(max_size=8), max_size=60))
    def test_text_is_the_concatenation(self, deltas: list[str]) -> None:
        (node,) = fold([message.Start(id="m")] + [message.Delta(id="m", text=d) for d in deltas])
        assert node.state.text == "".join(deltas)
