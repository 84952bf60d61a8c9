"""The tool call kind: streamed arguments with previews, outcomes, a model fold."""

from __future__ import annotations

import itertools
import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from definitions import event_type, tool_call
from engine import DefinitionError, ManualScheduler, Node, create_conversation_engine
from tests.definitions.test_json_preview import compatible, documents, same

D = tool_call.DEFINITION


def fold(events: list[Any]) -> tuple[Node, ...]:
    engine = create_conversation_engine([D], ManualScheduler(), event_type=event_type)
    engine.push_many(events)
    return engine.nodes()


def streamed(id: str, text: str, cuts: list[int]) -> list[dict[str, Any]]:
    bounds = [0, *sorted(cuts), len(text)]
    return [
        {"type": "tool_call.arguments_delta", "id": id, "text": text[a:b]}
        for a, b in itertools.pairwise(bounds)
    ]


class TestTransitions:
    """Each event moves a tool call the documented way."""

    def test_streamed_arguments_preview_then_result(self) -> None:
        engine = create_conversation_engine([D], ManualScheduler(), event_type=event_type)
        engine.push({"type": "tool_call.start", "id": "c", "name": "read_file"})
        engine.push(tool_call.ArgumentsDelta(id="c", text='{"path": "REA'))
        (node,) = engine.nodes()
        assert node.state.status == "streaming"
        assert node.state.preview == {"path": "REA"}
        engine.push({"type": "tool_call.arguments_delta", "id": "c", "text": 'DME.md", "n": 3}'})
        engine.push({"type": "tool_call.arguments_end", "id": "c"})
        (node,) = engine.nodes()
        assert node.state.status == "ready"
        assert node.state.input == {"path": "README.md", "n": 3}
        engine.push({"type": "tool_call.result", "id": "c", "output": {"lines": 12}})
        (node,) = engine.nodes()
        assert node.state.status == "done"
        assert D.render_text(node) == (
            'tool read_file [c] done\n  arguments: {"path": "README.md", "n": 3}\n'
            '  output: {"lines": 12}'
        )

    def test_malformed_arguments_are_a_visible_state(self) -> None:
        (node,) = fold(
            [
                tool_call.Start(id="c", name="t"),
                tool_call.ArgumentsDelta(id="c", text='{"a": 1,'),
                tool_call.ArgumentsEnd(id="c"),
            ]
        )
        assert node.state.status == "invalid"
        assert node.state.input is None
        assert "malformed JSON arguments" in (node.state.input_error or "")
        assert "ends before a string key" in (node.state.input_error or "")
        assert '  arguments (raw): {"a": 1,' in D.render_text(node)
        assert D.render_json(node)["input_error"] == node.state.input_error

    def test_empty_arguments_are_malformed(self) -> None:
        (node,) = fold([tool_call.Start(id="c", name="t"), tool_call.ArgumentsEnd(id="c")])
        assert node.state.status == "invalid"

    def test_error_and_denial(self) -> None:
        nodes = fold(
            [
                tool_call.Start(id="a", name="t"),
                tool_call.Start(id="b", name="t"),
                {"type": "tool_call.error", "id": "a", "message": "boom"},
                {"type": "tool_call.denied", "id": "b", "reason": "no"},
            ]
        )
        assert [(n.state.status, n.state.error, n.state.reason) for n in nodes] == [
            ("failed", "boom", None),
            ("denied", None, "no"),
        ]
        assert D.render_text(nodes[1]).endswith("denied: no")

    def test_string_output_is_shown_raw(self) -> None:
        (node,) = fold(
            [tool_call.Start(id="c", name="t"), tool_call.Result(id="c", output="line 1\nline 2")]
        )
        assert D.render_text(node).endswith("output: line 1\nline 2")

    @pytest.mark.parametrize(
        "late",
        [
            {"type": "tool_call.arguments_delta", "id": "c", "text": "x"},
            {"type": "tool_call.arguments_end", "id": "c"},
            {"type": "tool_call.result", "id": "c"},
            {"type": "tool_call.error", "id": "c", "message": "m"},
            {"type": "tool_call.denied", "id": "c"},
        ],
    )
    def test_events_after_the_outcome_are_errors(self, late: dict[str, Any]) -> None:
        engine = create_conversation_engine([D], ManualScheduler())
        engine.push_many(
            [
                tool_call.Start(id="c", name="t"),
                tool_call.ArgumentsDelta(id="c", text="{}"),
                tool_call.ArgumentsEnd(id="c"),
                tool_call.Result(id="c", output=1),
            ]
        )
        with pytest.raises(DefinitionError) as info:
            engine.push(late)
        assert "already" in str(info.value.__cause__)

    def test_arguments_after_their_end_are_errors(self) -> None:
        engine = create_conversation_engine([D], ManualScheduler())
        engine.push_many([tool_call.Start(id="c", name="t"), tool_call.ArgumentsEnd(id="c")])
        with pytest.raises(DefinitionError):
            engine.push(tool_call.ArgumentsDelta(id="c", text="{}"))

    def test_start_needs_a_name(self) -> None:
        engine = create_conversation_engine([D], ManualScheduler())
        with pytest.raises(DefinitionError) as info:
            engine.push({"type": "tool_call.start", "id": "c"})
        assert "name" in str(info.value.__cause__)

    def test_publication(self) -> None:
        assert D.publication({"type": "tool_call.arguments_delta"}) == "animation-frame"
        assert D.publication(tool_call.Result(id="c")) == "immediate"


class TestStreamedArguments:
    """Any JSON document split anywhere previews consistently and parses at the end."""

    @pytest.mark.slow
    @settings(max_examples=100)
    @given(documents, st.data())
    def test_previews_and_final_input(self, doc: tuple[Any, str], data: Any) -> None:
        value, text = doc
        cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=10))
        engine = create_conversation_engine([D], ManualScheduler(), event_type=event_type)
        engine.push(tool_call.Start(id="c", name="t"))
        for delta in streamed("c", text, cuts):
            engine.push(delta)
            preview = engine.nodes()[0].state.preview
            assert preview is None or compatible(preview, value)
        engine.push(tool_call.ArgumentsEnd(id="c"))
        state = engine.nodes()[0].state
        assert state.status == "ready"
        assert state.arguments == text
        assert same(state.input, json.loads(text))

    def test_older_nodes_keep_their_preview(self) -> None:
        engine = create_conversation_engine([D], ManualScheduler())
        engine.push(tool_call.Start(id="c", name="t"))
        engine.push(tool_call.ArgumentsDelta(id="c", text='{"a": "x'))
        old = engine.nodes()[0]
        engine.push(tool_call.ArgumentsDelta(id="c", text='yz"}'))
        assert old.state.preview == {"a": "x"}
        assert old.state.arguments == '{"a": "x'
        assert engine.nodes()[0].state.preview == {"a": "xyz"}


ids = st.sampled_from(["a", "b"])
events = st.one_of(
    st.builds(tool_call.Start, id=ids, name=st.sampled_from(["ls", "cat"])),
    st.builds(
        tool_call.ArgumentsDelta, id=ids, text=st.sampled_from(["", "{", '"k"', ":", "1", "}"])
    ),
    st.builds(tool_call.ArgumentsEnd, id=ids),
    st.builds(tool_call.Result, id=ids, output=st.none() | st.integers() | st.text(max_size=3)),
    st.builds(tool_call.Error, id=ids, message=st.text(max_size=3)),
    st.builds(tool_call.Denied, id=ids, reason=st.text(max_size=3)),
)


class TestModel:
    """Random event sequences fold to what a naive model says (the stdlib parses)."""

    @pytest.mark.slow
    @settings(max_examples=150)
    @given(st.lists(st.tuples(events, st.booleans()), max_size=30))
    def test_random_sequences(self, pairs: list[tuple[tool_call.Event, bool]]) -> None:
        engine = create_conversation_engine([D], ManualScheduler(), event_type=event_type)
        model: dict[str, dict[str, Any]] = {}
        for event, plain in pairs:
            pushed = msgspec.to_builtins(event) if plain else event
            item = model.get(event.id)
            if isinstance(event, tool_call.Start):
                model[event.id] = {"name": event.name, "arguments": "", "status": "streaming"}
                model[event.id].update(done=False, input=None, invalid=False, outcome=None)
                engine.push(pushed)
                continue
            if item is None:
                engine.push(pushed)
                continue
            final = item["status"] in ("done", "failed", "denied")
            if isinstance(event, tool_call.ArgumentsDelta):
                bad = final or item["done"]
                if not bad:
                    item["arguments"] += event.text
            elif isinstance(event, tool_call.ArgumentsEnd):
                bad = final or item["done"]
                if not bad:
                    item["done"] = True
                    try:
                        item["input"] = json.loads(item["arguments"])
                        item["status"] = "ready"
                    except ValueError:
                        item["status"] = "invalid"
                        item["invalid"] = True
            else:
                bad = final
                if not bad:
                    if isinstance(event, tool_call.Result):
                        item["status"], item["outcome"] = "done", event.output
                    elif isinstance(event, tool_call.Error):
                        item["status"], item["outcome"] = "failed", event.message
                    else:
                        assert isinstance(event, tool_call.Denied)
                        item["status"], item["outcome"] = "denied", event.reason
            if bad:
                with pytest.raises(DefinitionError):
                    engine.push(pushed)
            else:
                engine.push(pushed)
        got = {}
        for node in engine.nodes():
            s = node.state
            outcome = {"done": s.output, "failed": s.error, "denied": s.reason}.get(s.status)
            got[node.id] = {
                "name": s.name,
                "arguments": str(s.arguments),
                "status": s.status,
                "done": s.arguments_done,
                "input": s.input,
                "invalid": s.input_error is not None,
                "outcome": outcome,
            }
        assert got == model
