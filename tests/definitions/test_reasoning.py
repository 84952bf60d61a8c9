"""The reasoning kind: streamed text, redacted and encrypted variants, a model fold."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from definitions import event_type, reasoning
from engine import DefinitionError, ManualScheduler, Node, create_conversation_engine

D = reasoning.DEFINITION


def fold(events: list[Any]) -> tuple[Node, ...]:
    engine = create_conversation_engine([D], ManualScheduler(), event_type=event_type)
    engine.push_many(events)
    return engine.nodes()


class TestTransitions:
    """Each event moves a reasoning block the documented way."""

    def test_streamed(self) -> None:
        (node,) = fold(
            [
                {"type": "reasoning.start", "id": "r"},
                {"type": "reasoning.delta", "id": "r", "text": "Let me "},
                reasoning.Delta(id="r", text="think."),
                reasoning.End(id="r"),
            ]
        )
        assert node.state.text == "Let me think."
        assert node.state.done
        assert D.render_text(node) == "reasoning: Let me think."

    @pytest.mark.parametrize("variant", ["redacted", "encrypted"])
    def test_hidden_content_shows_a_placeholder_not_the_data(self, variant: str) -> None:
        (node,) = fold(
            [
                reasoning.Start(id="r"),
                {"type": "reasoning.redacted", "id": "r", "variant": variant, "data": "SECRET"},
                reasoning.End(id="r"),
            ]
        )
        assert node.state.redacted == variant
        assert node.state.data == "SECRET"
        for rendered in (D.render_text(node), D.render_html(node)):
            assert "SECRET" not in rendered
            assert "content not shown" in rendered
        assert "SECRET" not in str(D.render_json(node))
        assert D.render_json(node)["data_length"] == 6

    def test_summary_text_next_to_encrypted_content(self) -> None:
        (node,) = fold(
            [
                reasoning.Start(id="r"),
                reasoning.Delta(id="r", text="Summary."),
                reasoning.Redacted(id="r", variant="encrypted", data="x"),
            ]
        )
        assert D.render_text(node) == (
            "reasoning: Summary. [reasoning encrypted: content not shown] …"
        )

    def test_default_variant_is_redacted(self) -> None:
        (node,) = fold([reasoning.Start(id="r"), {"type": "reasoning.redacted", "id": "r"}])
        assert node.state.redacted == "redacted"

    @pytest.mark.parametrize(
        "late",
        [
            {"type": "reasoning.delta", "id": "r", "text": "x"},
            {"type": "reasoning.end", "id": "r"},
            {"type": "reasoning.redacted", "id": "r"},
        ],
    )
    def test_events_after_the_end_are_errors(self, late: dict[str, Any]) -> None:
        engine = create_conversation_engine([D], ManualScheduler())
        engine.push_many([reasoning.Start(id="r"), reasoning.End(id="r")])
        with pytest.raises(DefinitionError) as info:
            engine.push(late)
        assert "already ended" in str(info.value.__cause__)

    def test_bad_variant_is_named(self) -> None:
        engine = create_conversation_engine([D], ManualScheduler())
        engine.push(reasoning.Start(id="r"))
        with pytest.raises(DefinitionError) as info:
            engine.push({"type": "reasoning.redacted", "id": "r", "variant": "hidden"})
        assert "$.variant" in str(info.value.__cause__)

    def test_empty_delta_is_no_change(self) -> None:
        state = D.start(reasoning.Start(id="r"), None)  # type: ignore[arg-type]
        assert D.update(state, reasoning.Delta(id="r", text="")) is state

    def test_publication(self) -> None:
        assert D.publication({"type": "reasoning.delta"}) == "animation-frame"
        assert D.publication(reasoning.End(id="r")) == "immediate"


ids = st.sampled_from(["a", "b"])
events = st.one_of(
    st.builds(reasoning.Start, id=ids),
    st.builds(reasoning.Delta, id=ids, text=st.text(max_size=6)),
    st.builds(
        reasoning.Redacted,
        id=ids,
        variant=st.sampled_from(["redacted", "encrypted"]),
        data=st.text(max_size=4),
    ),
    st.builds(reasoning.End, id=ids),
)


class TestModel:
    """Random event sequences fold to what a naive dictionary model says."""

    @pytest.mark.slow
    @settings(max_examples=150)
    @given(st.lists(st.tuples(events, st.booleans()), max_size=40))
    def test_random_sequences(self, pairs: list[tuple[reasoning.Event, bool]]) -> None:
        engine = create_conversation_engine([D], ManualScheduler(), event_type=event_type)
        model: dict[str, dict[str, Any]] = {}
        for event, plain in pairs:
            pushed = msgspec.to_builtins(event) if plain else event
            item = model.get(event.id)
            if isinstance(event, reasoning.Start):
                model[event.id] = {"text": "", "done": False, "redacted": None, "data": ""}
            elif item is None:
                pass
            elif item["done"]:
                with pytest.raises(DefinitionError):
                    engine.push(pushed)
                continue
            elif isinstance(event, reasoning.Delta):
                item["text"] += event.text
            elif isinstance(event, reasoning.Redacted):
                item["redacted"] = event.variant
                item["data"] = event.data or item["data"]
            else:
                item["done"] = True
            engine.push(pushed)
        got = {node.id: {**D.render_json(node), "data": node.state.data} for node in engine.nodes()}
        want = {id: {**item, "data_length": len(item["data"])} for id, item in model.items()}
        assert got == want
