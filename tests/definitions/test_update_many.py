"""The built-in kinds' ``update_many`` (``definitions._runs.fold_run`` over their
deltas) is ``update`` over the run, exactly: one property test per kind.

The engine hands a run to ``update_many`` and, only if it raises, folds the run
again with ``update``. So ``update_many`` must raise whenever ``update`` would, and
otherwise either raise (the slow way round, still right) or return an equal state:
the state itself exactly when no update changed it. Runs here mix deltas with other
events, dicts with Structs, bad texts with good.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from definitions import event_type, message, reasoning, tool_call
from engine import create_conversation_engine

from ._runs import Counting, check_run


class Text(str):
    """A str subclass: update takes only exact str texts."""


texts = st.one_of(
    st.sampled_from(["", "a", "é", '{"x": [1, "', '2"]}', "\\", "🙂"]),
    st.text(max_size=6),
    st.sampled_from([None, 5, Text("sub")]),
)

# For each kind: its definition, a started node, the delta's Struct and tag, and the
# other update events (as dicts) that may appear in a run handed over by hand.
KINDS: dict[str, tuple[Any, dict[str, Any], type, str, list[dict[str, Any]]]] = {
    "message": (
        message.DEFINITION,
        {"type": "message.start", "id": "x", "role": "assistant"},
        message.Delta,
        "message.delta",
        [{"type": "message.end", "id": "x"}, {"type": "message.abort", "id": "x"}],
    ),
    "reasoning": (
        reasoning.DEFINITION,
        {"type": "reasoning.start", "id": "x"},
        reasoning.Delta,
        "reasoning.delta",
        [{"type": "reasoning.end", "id": "x"}, {"type": "reasoning.redacted", "id": "x"}],
    ),
    "tool_call": (
        tool_call.DEFINITION,
        {"type": "tool_call.start", "id": "x", "name": "search"},
        tool_call.ArgumentsDelta,
        "tool_call.arguments_delta",
        [
            {"type": "tool_call.arguments_end", "id": "x"},
            {"type": "tool_call.result", "id": "x", "output": 1},
        ],
    ),
}


def run_events(kind: str) -> st.SearchStrategy[list[Any]]:
    """Runs of one form (dicts, or Structs, as a decoded log has them), now and then
    mixed, with other update events among the deltas."""
    _, _, struct, tag, others = KINDS[kind]
    as_dict = st.builds(lambda t: {"type": tag, "id": "x", "text": t}, texts)
    as_struct = st.builds(lambda t: struct(id="x", text=t), texts)
    other = st.sampled_from(others)
    return st.one_of(
        st.lists(st.one_of(as_dict, as_dict, as_dict, other), min_size=2, max_size=8),
        st.lists(st.one_of(as_struct, as_struct, as_struct, other), min_size=2, max_size=8),
        st.lists(st.one_of(as_dict, as_struct, other), min_size=2, max_size=8),
    )


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
@settings(max_examples=500)
@given(data=st.data(), finished_first=st.booleans())
def test_update_many_is_update_over_the_run(kind: str, data: Any, finished_first: bool) -> None:
    definition, start, _, _, others = KINDS[kind]
    state = definition.start(start, None)
    if finished_first:  # a closed node: every delta must fail
        state = definition.update(state, others[0])
    events = data.draw(run_events(kind))
    # Runs mixing dicts and Structs too: fold_run hands what is not a delta to update.
    check_run(definition, state, events)


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_streamed_node_is_folded_through_update_many(kind: str) -> None:
    # The engine does hand the deltas over as one run (else the above proves nothing
    # about the fold): of 50 deltas, the first goes to update, the other 49 are one run.
    definition, start, struct, _, _ = KINDS[kind]
    counting = Counting(definition)
    engine = create_conversation_engine([counting], event_type=event_type)
    engine.push_many([start, *(struct(id="x", text="ab") for _ in range(50))])
    assert counting.runs == [49]  # the first delta is folded by update, the rest as a run
    assert len(str(engine.nodes()[0].state.__getattribute__(_TEXT[kind]))) == 100


_TEXT = {"message": "text", "reasoning": "text", "tool_call": "arguments"}


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("bad", [None, 5, Text("sub")], ids=["None", "int", "str subclass"])
@pytest.mark.parametrize("form", ["dict", "Struct"])
def test_a_bad_text_anywhere_fails_the_run(kind: str, bad: object, form: str) -> None:
    definition, start, struct, tag, _ = KINDS[kind]
    state = definition.start(start, None)
    for at in range(3):
        values = ["a", "b", "c"]
        values[at] = bad  # type: ignore[call-overload]
        if form == "dict":
            events: list[Any] = [{"type": tag, "id": "x", "text": t} for t in values]
        else:
            events = [struct(id="x", text=t) for t in values]
        with pytest.raises(TypeError):
            definition.update_many(state, events)
