"""``anthropic.BLOCK.update_many`` is ``update`` over the run, exactly.

It must raise whenever one-by-one ``update`` would, and otherwise return an equal
state (the state itself exactly when no update changed it). Runs mix the delta types
of every block type, bad payloads with good.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from definitions import anthropic
from engine import create_conversation_engine

from ._runs import Counting, check_run

BLOCK = anthropic.BLOCK

strings = st.one_of(st.text(max_size=5), st.sampled_from(['{"a": [1, "', "\\", "🙂", ""]))
payloads = st.one_of(strings, strings, strings, st.sampled_from([None, 5]))
deltas = st.one_of(
    st.builds(lambda t: {"type": "text_delta", "text": t}, payloads),
    st.builds(lambda t: {"type": "thinking_delta", "thinking": t}, payloads),
    st.builds(lambda t: {"type": "input_json_delta", "partial_json": t}, payloads),
    st.builds(lambda t: {"type": "signature_delta", "signature": t}, payloads),
    st.builds(lambda c: {"type": "citations_delta", "citation": c}, st.integers(0, 3)),
    st.just({"type": "text_delta"}),  # no text: update raises KeyError
    st.just({"text": "a"}),  # no type: update raises KeyError
)
block_types = st.sampled_from(["text", "thinking", "tool_use", "server_tool_use", "image", 5])


def scoped(delta: dict[str, Any] | None) -> anthropic.Envelope:
    """A delta, or for ``None`` the block's stop."""
    if delta is None:
        return anthropic.Envelope("m", {"type": "content_block_stop", "index": 0})
    return anthropic.Envelope("m", {"type": "content_block_delta", "index": 0, "delta": delta})


def one_of_a_kind(draw: Any, block_type: object) -> list[dict[str, Any] | None]:
    """Mostly runs of the block's own delta type (the fast path), now and then mixed."""
    own = {
        "text": ("text_delta", "text"),
        "thinking": ("thinking_delta", "thinking"),
        "tool_use": ("input_json_delta", "partial_json"),
        "server_tool_use": ("input_json_delta", "partial_json"),
    }.get(block_type)
    run: list[dict[str, Any] | None]
    if own is None or draw(st.booleans()):
        # now and then a stop among them (update_many takes any run update would)
        run = draw(st.lists(st.one_of(deltas, deltas, deltas, st.none()), min_size=2, max_size=6))
    else:
        kind, key = own
        run = draw(st.lists(st.builds(lambda t: {"type": kind, key: t}, payloads), min_size=2))
    return run


class _NoNodes:
    """A reader of an empty view (what ``start`` reads for a conversation's first node)."""

    def previous(self, kind: str, /) -> None:
        return None


NO_NODES = _NoNodes()


@pytest.mark.slow
@settings(max_examples=500)
@given(st.data(), block_types)
def test_update_many_is_update_over_the_run(data: Any, block_type: object) -> None:
    state = BLOCK.start(
        anthropic.Envelope(
            "m", {"type": "content_block_start", "index": 0, "content_block": {"type": block_type}}
        ),
        NO_NODES,
    )
    check_run(BLOCK, state, [scoped(d) for d in one_of_a_kind(data.draw, block_type)])


@pytest.mark.parametrize("bad", [None, 5])
def test_a_bad_text_anywhere_fails_the_run(bad: object) -> None:
    state = BLOCK.start(
        anthropic.Envelope(
            "m", {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}
        ),
        NO_NODES,
    )
    for at in range(3):
        texts: list[object] = ["a", "b", "c"]
        texts[at] = bad
        with pytest.raises(TypeError):
            BLOCK.update_many(state, [scoped({"type": "text_delta", "text": t}) for t in texts])


def test_a_streamed_block_is_folded_through_one_update_many_call() -> None:
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        *(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "ab"},
            }
            for _ in range(40)
        ),
        {"type": "content_block_stop", "index": 0},
    ]
    engine = create_conversation_engine(
        [anthropic.MESSAGE, counting := Counting(BLOCK)], event_type=anthropic.event_type
    )
    engine.push_many(anthropic.prepare(events))
    assert counting.runs == [39]  # the first delta is folded by update, the rest as a run
    assert anthropic.messages(engine.nodes())[0]["content"][0]["text"] == "ab" * 40


@pytest.mark.parametrize("block_type", [["text"], {"a": 1}])
def test_an_unhashable_block_type_folds_as_update_does(block_type: object) -> None:
    """A block whose type is unhashable trips ``update`` only on some deltas."""
    state = BLOCK.start(
        anthropic.Envelope(
            "m", {"type": "content_block_start", "index": 0, "content_block": {"type": block_type}}
        ),
        NO_NODES,
    )
    for run in (
        [{"type": "text_delta", "text": "a"}, None, {"type": "citations_delta", "citation": 1}],
        [{"type": "text_delta", "text": "a"}, {"type": "input_json_delta", "partial_json": "{"}],
    ):
        check_run(BLOCK, state, [scoped(d) for d in run])
