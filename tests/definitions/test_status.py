"""The status kind: rows replaced by each update, progress, a model fold."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from definitions import event_type, status
from engine import DefinitionError, ManualScheduler, Node, create_conversation_engine

D = status.DEFINITION


def fold(events: list[Any]) -> tuple[Node, ...]:
    engine = create_conversation_engine([D], ManualScheduler(), event_type=event_type)
    engine.push_many(events)
    return engine.nodes()


class TestTransitions:
    """Each update replaces the row in place."""

    def test_running_progress_done(self) -> None:
        nodes = fold(
            [
                {
                    "type": "status.update",
                    "id": "s",
                    "label": "Indexing",
                    "completed": 3,
                    "total": 10,
                },
                {"type": "status.update", "id": "other", "label": "Waiting"},
                status.Update(id="s", label="Indexing", progress=0.5),
                {"type": "status.update", "id": "s", "status": "done", "label": "Indexed"},
            ]
        )
        assert [n.key for n in nodes] == ["status:s", "status:other"]
        assert nodes[0].state == status.StatusRow("done", "Indexed")
        assert D.render_text(nodes[0]) == "[done] Indexed"

    def test_progress_rendering(self) -> None:
        (node,) = fold([status.Update(id="s", label="Copy", completed=3, total=10)])
        assert D.render_text(node) == "[running] Copy (3/10, 30%)"
        assert 'value="0.3000"' in D.render_html(node)
        (node,) = fold([status.Update(id="s", label="Copy", progress=0.25)])
        assert D.render_text(node) == "[running] Copy (25%)"
        (node,) = fold([status.Update(id="s", status="failed", label="Copy", completed=4)])
        assert D.render_text(node) == "[failed] Copy (4)"
        assert node.state.fraction is None

    @pytest.mark.parametrize(
        ("event", "fragment"),
        [
            ({"type": "status.update", "id": "s", "progress": 1.5}, "$.progress"),
            ({"type": "status.update", "id": "s", "completed": -1}, "$.completed"),
            ({"type": "status.update", "id": "s", "status": "paused"}, "$.status"),
            ({"type": "status.update"}, "needs an 'id' str"),
        ],
    )
    def test_bad_updates_are_named(self, event: dict[str, Any], fragment: str) -> None:
        engine = create_conversation_engine([D], ManualScheduler())
        with pytest.raises(DefinitionError) as info:
            engine.push(event)
        assert fragment in str(info.value.__cause__)

    def test_publication(self) -> None:
        assert D.publication({"type": "status.update", "id": "s"}) == "animation-frame"
        assert D.publication(status.Update(id="s", status="done")) == "immediate"
        assert D.publication({"type": "status.update", "status": "failed"}) == "immediate"


updates = st.builds(
    status.Update,
    id=st.sampled_from(["a", "b", "c"]),
    status=st.sampled_from(["running", "done", "failed"]),
    label=st.text(max_size=4),
    progress=st.none() | st.floats(0, 1),
    completed=st.none() | st.integers(0, 20),
    total=st.none() | st.integers(0, 20),
)


class TestModel:
    """Any update sequence leaves each row equal to its last update, in first-seen order."""

    @pytest.mark.slow
    @settings(max_examples=100)
    @given(st.lists(st.tuples(updates, st.booleans()), max_size=30))
    def test_last_update_wins(self, pairs: list[tuple[status.Update, bool]]) -> None:
        nodes = fold([msgspec.to_builtins(u) if plain else u for u, plain in pairs])
        last: dict[str, dict[str, Any]] = {}
        for update, _ in pairs:
            fields = msgspec.structs.asdict(update)
            last[fields.pop("id")] = fields
        assert [n.id for n in nodes] == list(last)
        assert {n.id: D.render_json(n) for n in nodes} == last
