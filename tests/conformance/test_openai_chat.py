"""definitions.openai_chat against the OpenAI SDK's ChatCompletionStreamState."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from definitions import openai_chat
from tests._shared import shared_files

from . import _python_oracles as oracles
from ._compare import assert_same, assert_same_events
from ._strategies import openai_chat_streams

FIXTURES = [
    *shared_files("fixtures", "recorded", pattern="openai-python-*"),
    *shared_files("fixtures", "recorded", pattern="openai_chat_*"),
    *shared_files("fixtures", "recorded", pattern="vercel-openai-chat-*"),
    *shared_files("fixtures", "synthetic", pattern="openai_chat_*"),
]


def reference(events: list[dict[str, Any]]) -> dict[str, Any]:
    result = oracles.openai_chat(copy.deepcopy(events))
    result.pop("_finish_error", None)
    return result


@pytest.mark.slow
@pytest.mark.parametrize("path", FIXTURES)
def test_fixture_matches_the_sdk(path: Path) -> None:
    """Every recorded and synthetic chat stream rebuilds the SDK's completion."""
    events = oracles.openai_read_events(path)
    assert_same(openai_chat.PROTOCOL.accumulate(events), [reference(events)])


@pytest.mark.parametrize("path", FIXTURES)
def test_replay_reads_the_same_events(path: Path) -> None:
    """replay.load_events yields the events the oracle's reader does."""
    assert_same_events(path, oracles.replay_events(path), oracles.openai_read_events(path))


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(openai_chat_streams())
def test_generated_streams_match_the_sdk(completions: list[list[dict[str, Any]]]) -> None:
    """Random streams (interleaved tool calls, JSON split mid-token, several completions).

    The SDK folds one completion per state, so each completion is its reference.
    """
    events = [chunk for chunks in completions for chunk in chunks]
    assert_same(
        openai_chat.PROTOCOL.accumulate(events), [reference(chunks) for chunks in completions]
    )


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(openai_chat_streams(), st.integers(1, 60))
def test_window_cut_mid_completion(completions: list[list[dict[str, Any]]], cut: int) -> None:
    """A window without the first K chunks drops the cut-off completion entirely."""
    events = [chunk for chunks in completions for chunk in chunks]
    cut = min(cut, len(events))
    window = events[cut:]
    whole = [chunks for chunks in completions if chunks[0] in window]
    assert_same(openai_chat.PROTOCOL.accumulate(window), [reference(chunks) for chunks in whole])


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [choice],
    }


class TestKnownReferenceErrors:
    """Where ChatCompletionStreamState is wrong, we are right and say why."""

    def test_repeated_tool_call_id_is_not_concatenated(self) -> None:
        """Some providers repeat the tool call id and name on every chunk; the SDK
        concatenates them ("call_1call_1"), we keep them once."""
        call = {"index": 0, "id": "call_1", "type": "function"}
        events = [
            _chunk({"role": "assistant"}),
            _chunk({"tool_calls": [{**call, "function": {"name": "f", "arguments": '{"a"'}}]}),
            _chunk({"tool_calls": [{**call, "function": {"name": "f", "arguments": ": 1}"}}]}),
            _chunk({}, "tool_calls"),
        ]
        wrong = reference(events)["choices"][0]["message"]["tool_calls"][0]
        assert wrong["id"] == "call_1call_1"
        assert wrong["function"]["name"] == "ff"
        [ours] = openai_chat.PROTOCOL.accumulate(events)
        call_out = ours["choices"][0]["message"]["tool_calls"][0]
        assert call_out["id"] == "call_1"
        assert call_out["function"] == {
            "arguments": '{"a": 1}',
            "name": "f",
            "parsed_arguments": None,
        }

    def test_tool_index_1_before_index_0(self) -> None:
        """The SDK inserts tool calls by list position, so index 1 arriving first lands
        at position 0, and looking it up by index then fails (IndexError); we place
        tool calls by index."""
        events = [
            _chunk({"role": "assistant"}),
            _chunk(
                {
                    "tool_calls": [
                        {
                            "index": 1,
                            "id": "b",
                            "type": "function",
                            "function": {"name": "g", "arguments": "{}"},
                        }
                    ]
                }
            ),
            _chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "a",
                            "type": "function",
                            "function": {"name": "f", "arguments": "[]"},
                        }
                    ]
                }
            ),
            _chunk({}, "tool_calls"),
        ]
        with pytest.raises(IndexError):
            reference(events)
        [ours] = openai_chat.PROTOCOL.accumulate(events)
        calls = ours["choices"][0]["message"]["tool_calls"]
        assert [(c["index"], c["id"], c["function"]["arguments"]) for c in calls] == [
            (0, "a", "[]"),
            (1, "b", "{}"),
        ]

    def test_several_completions_are_not_merged(self) -> None:
        """Two completions in one log stay two; the SDK would merge the second's
        choice deltas into the first (same choice index)."""
        second = [{**c, "id": "c2"} for c in [_chunk({"role": "assistant", "content": "B"})]]
        events = [_chunk({"role": "assistant", "content": "A"}), *second]
        assert reference(events)["choices"][0]["message"]["content"] == "AB"
        ours = openai_chat.PROTOCOL.accumulate(events)
        assert [c["choices"][0]["message"]["content"] for c in ours] == ["A", "B"]
