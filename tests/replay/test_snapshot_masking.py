"""convo_snapshot masks what changes on every re-record (``replay._plugin.mask_volatile``).

A re-recorded conversation gets new provider ids (message, tool call, response), new
timestamps and new request ids, and nothing else: its masked view must equal the old
one, ids that were equal stay equal, and the snapshot names every path it masked.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from definitions import anthropic
from replay._plugin import mask_volatile
from replay.render._common import render_json
from tests.replay.test_plugin import PLUGIN

pytest_plugins = ["pytester"]


def recording(ids: dict[str, str], created: int) -> list[dict[str, Any]]:
    """One streamed Anthropic answer with a tool call, its ids and time given."""
    message = {
        "id": ids["msg"],
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [],
        "created_at": created,
    }
    return [
        {"type": "message_start", "message": message},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": ids["tool"], "name": "f", "input": {}},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}},
        {"type": "message_stop"},
    ]


def view(events: list[dict[str, Any]]) -> list[Any]:
    nodes = anthropic.PROTOCOL.replay(events)
    decoded: list[Any] = msgspec.json.decode(render_json(nodes, anthropic.DEFINITIONS))
    return decoded


suffix = st.text(
    "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789", min_size=8, max_size=24
)


class TestMaskVolatile:
    """mask_volatile: ids, times, and the paths it names."""

    @given(suffix, suffix, suffix, suffix, st.integers(0, 2**31), st.integers(0, 2**31))
    def test_a_re_recording_masks_to_the_same_view(
        self, m1: str, m2: str, t1: str, t2: str, c1: int, c2: int
    ) -> None:
        first = view(recording({"msg": f"msg_{m1}", "tool": f"toolu_{t1}"}, c1))
        again = view(recording({"msg": f"msg_{m2}", "tool": f"toolu_{t2}"}, c2))
        assert mask_volatile(first) == mask_volatile(again)

    def test_ids_are_numbered_and_replaced_in_keys(self) -> None:
        masked, paths = mask_volatile(
            view(recording({"msg": "msg_01AbCdEfGhIj", "tool": "toolu_01XyZaBcDeF"}, 5))
        )
        keys = [node["key"] for node in masked]
        assert keys == ["anthropic_message:<id 1>", "anthropic_block:<id 1>/0"]
        assert masked[1]["state"]["block"]["id"] == "<id 2>"
        assert masked[0]["state"]["message"]["created_at"] == "<time>"
        assert "msg_01AbCdEfGhIj" not in json.dumps(masked)
        assert paths == [
            "state.block.id",
            "state.message.created_at",
            "state.message.id",
            "state.message_id",
        ]

    def test_equal_ids_stay_equal_under_any_key(self) -> None:
        nodes = [
            {"key": "k:a", "id": "a", "state": {"id": "call_0123456789", "x": "call_0123456789"}},
            {"key": "k:b", "id": "b", "state": {"tool_use_id": "call_0123456789"}},
        ]
        masked, _ = mask_volatile(nodes)
        assert masked[0]["state"] == {"id": "<id 1>", "x": "<id 1>"}
        assert masked[1]["state"] == {"tool_use_id": "<id 1>"}

    def test_short_hand_made_ids_stay(self) -> None:
        nodes = [{"key": "message:m1", "id": "m1", "state": {"id": "m1", "text": "hi"}}]
        assert mask_volatile(nodes) == (nodes, [])

    def test_mask_and_keep_name_paths(self) -> None:
        nodes = [
            {
                "key": "k:a",
                "id": "a",
                "state": {
                    "usage": {"input_tokens": 3, "output_tokens": 4},
                    "container": {"id": "container_0123456789"},
                    "created": 17,
                },
            }
        ]
        masked, paths = mask_volatile(
            copy.deepcopy(nodes), mask=("usage.output_tokens",), keep=("container.id", "created")
        )
        state = masked[0]["state"]
        assert state["usage"] == {"input_tokens": 3, "output_tokens": "<masked>"}
        assert state["container"] == {"id": "container_0123456789"}
        assert state["created"] == 17
        assert paths == ["state.usage.output_tokens"]

    def test_a_shuffled_node_order_numbers_by_first_appearance(self) -> None:
        ids = [f"msg_{n:010d}" for n in range(5)]
        rng = random.Random(0)
        rng.shuffle(ids)
        nodes = [{"key": f"k:{i}", "id": i, "state": {"id": i}} for i in ids]
        masked, _ = mask_volatile(nodes)
        assert [n["state"]["id"] for n in masked] == [f"<id {n}>" for n in range(1, 6)]


SNAPSHOT_TEST = """
import json
from pathlib import Path

def test_view(convo_snapshot):
    convo_snapshot("stream.jsonl")
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_view=SNAPSHOT_TEST)
    return pytester


def write(pytester: pytest.Pytester, msg: str, tool: str, created: int) -> None:
    events = recording({"msg": msg, "tool": tool}, created)
    pytester.path.joinpath("stream.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))


@pytest.mark.slow
def test_a_re_recorded_conversation_keeps_its_snapshot(project: pytest.Pytester) -> None:
    write(project, "msg_01AAAAAAAAAAAAAA", "toolu_01BBBBBBBBBBBB", 1)
    project.runpytest(*PLUGIN).assert_outcomes(passed=1)
    snapshot = json.loads(
        (project.path / "__snapshots__" / "test_view" / "test_view.json").read_text()
    )
    assert "state.message.id" in snapshot["masked"]
    assert snapshot["nodes"][0]["key"] == "anthropic_message:<id 1>"
    write(project, "msg_01CCCCCCCCCCCCCC", "toolu_01DDDDDDDDDDDD", 2)
    result = project.runpytest(*PLUGIN)
    result.assert_outcomes(passed=1)
    assert "wrote" not in result.stdout.str()
    # A change that is not volatile still fails.
    events = recording({"msg": "msg_01CCCCCCCCCCCCCC", "tool": "toolu_01DDDDDDDDDDDD"}, 2)
    events[1]["content_block"]["name"] = "g"
    project.path.joinpath("stream.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    project.runpytest(*PLUGIN).assert_outcomes(failed=1)
