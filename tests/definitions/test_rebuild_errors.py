"""A protocol set's ``rebuild`` (and ``fold``) raises the library's ``RebuildError`` for
nodes its protocol's objects cannot be made of (issue #25 item 9): what the SDK's
accumulator refuses, or a field the fold kept as the wire gave it, of another type."""

from __future__ import annotations

from typing import Any

import pytest

from definitions import RebuildError, anthropic, bedrock


class TestRebuildError:
    def test_a_tool_input_that_is_not_json_is_a_library_error_naming_the_block(self) -> None:
        def tool(index: int) -> dict[str, Any]:
            block = {"toolUseId": "t", "name": "f"}
            return {"contentBlockStart": {"contentBlockIndex": index, "start": {"toolUse": block}}}

        delta = {
            "contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": "{]"}}}
        }
        with pytest.raises(
            RebuildError,
            match=r"^AWS Bedrock ConverseStream: cannot rebuild.*tool input of block 0",
        ) as info:
            bedrock.PROTOCOL.accumulate([tool(0), delta])
        assert isinstance(info.value, ValueError)  # as the SDK's accumulator raises
        assert isinstance(info.value.__cause__, ValueError)

    def test_a_field_of_another_type_the_fold_kept_is_a_library_error(self) -> None:
        events = [
            {"type": "message_start", "message": {"id": "m", "content": 5, "usage": {}}},
            {"type": "message_stop"},
        ]
        with pytest.raises(RebuildError, match=r"^Anthropic Messages: cannot rebuild"):
            anthropic.PROTOCOL.accumulate(events)
