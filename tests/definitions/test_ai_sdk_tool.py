"""The tool part's update, rewritten to build parts positionally, against the version
that built them with ``msgspec.structs.replace`` (kept here as the model).

The generated streams of the conformance tests leave out the optional fields of tool
chunks (title, toolMetadata, providerExecuted, providerMetadata, preliminary,
inputEncoding); here every chunk may carry any of them, absent, null or set.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from definitions import ai_sdk
from definitions._text import StreamedText
from engine import Claim

UNSET = ai_sdk.UNSET
_PARTIAL = "\x00partial"
_OUTPUT_STATES = {
    "tool-output-available": "output-available",
    "tool-output-error": "output-error",
}
TOOL = ai_sdk.DEFINITIONS[5]  # after the guard


def model_update(part: Any, routed: Any) -> Any:
    event = routed.event
    kind = event["type"]
    replace = msgspec.structs.replace
    if kind == "tool-input-delta":
        return replace(
            part,
            raw=part.raw + event.get("inputTextDelta", ""),
            input=_PARTIAL,
            raw_input=True,
        )
    provider_metadata = event.get("providerMetadata", UNSET)
    fields: dict[str, Any] = {}
    if kind == "tool-input-start":
        fields = {
            "state": "input-streaming",
            "raw": StreamedText(),
            "input": UNSET,
            "raw_input": UNSET,
            "input_encoding": event.get("inputEncoding", UNSET),
        }
    elif kind == "tool-input-available":
        fields = {"state": "input-available", "input": event.get("input", UNSET)}
    elif kind == "tool-input-error":
        if part.dynamic:
            fields = {"input": event.get("input", UNSET), "raw_input": UNSET}
        else:
            fields = {"input": UNSET, "raw_input": event.get("input", UNSET)}
        fields["state"] = "output-error"
        fields["error_text"] = event.get("errorText", UNSET)
    elif kind in _OUTPUT_STATES:
        fields = {"state": _OUTPUT_STATES[kind], "input_encoding": UNSET}
        if kind == "tool-output-available":
            fields["output"] = event.get("output", UNSET)
            fields["preliminary"] = event.get("preliminary", UNSET)
            fields["error_text"] = UNSET
        else:
            fields["error_text"] = event.get("errorText", UNSET)
            fields["output"] = fields["preliminary"] = UNSET
        if kind == "tool-output-available" or part.dynamic:
            fields["raw_input"] = UNSET
        tool_metadata = event.get("toolMetadata")
        if tool_metadata is not None:
            fields["tool_metadata"] = tool_metadata
        fields["provider_executed"] = event.get("providerExecuted", part.provider_executed)
        if provider_metadata is not None and provider_metadata is not UNSET:
            fields["result_provider_metadata"] = provider_metadata
        return replace(part, **fields)
    elif kind == "tool-approval-request":
        approval: dict[str, Any] = {"id": event.get("approvalId")}
        if event.get("approvalDescriptor") is not None:
            approval["descriptor"] = event["approvalDescriptor"]
        if "inputSchemaInput" in event:
            approval["inputSchemaInput"] = event["inputSchemaInput"]
        if event.get("signature") is not None:
            approval["signature"] = event["signature"]
        return replace(part, state="approval-requested", approval=approval)
    elif kind == "tool-output-denied":
        return replace(part, state="output-denied")
    else:
        return part
    # The input phase (updateToolPart with the chunk's own fields): fields the chunk
    # lacks become undefined, except providerExecuted, title and toolMetadata.
    fields.setdefault("output", UNSET)
    fields.setdefault("error_text", UNSET)
    fields.setdefault("preliminary", UNSET)
    fields.setdefault("raw_input", UNSET)
    fields["tool_name"] = event.get("toolName", part.tool_name)
    if kind != "tool-input-start":
        fields["input_encoding"] = event.get("inputEncoding", UNSET)
    title = event.get("title")
    if title is not None:
        fields["title"] = title
    tool_metadata = event.get("toolMetadata")
    if tool_metadata is not None:
        fields["tool_metadata"] = tool_metadata
    provider_executed = event.get("providerExecuted")
    if provider_executed is not None:
        fields["provider_executed"] = provider_executed
    if provider_metadata is not None and provider_metadata is not UNSET:
        key = "result_provider_metadata" if kind == "tool-input-error" else "call_provider_metadata"
        fields[key] = provider_metadata
    return replace(part, **fields)


OPTIONAL = st.fixed_dictionaries(
    {},
    optional={
        key: st.sampled_from([None, "v", {"a": 1}, True, False])
        for key in (
            "title",
            "toolMetadata",
            "providerExecuted",
            "providerMetadata",
            "preliminary",
            "inputEncoding",
            "toolName",
            "input",
            "output",
            "errorText",
            "dynamic",
        )
    },
)
KINDS = st.sampled_from(
    [
        "tool-input-start",
        "tool-input-delta",
        "tool-input-available",
        "tool-input-error",
        "tool-output-available",
        "tool-output-error",
        "tool-approval-request",
        "tool-output-denied",
        "tool-other",
    ]
)
CHUNKS = st.builds(
    lambda kind, fields: {"type": kind, "toolCallId": "c", "inputTextDelta": "{", **fields},
    KINDS,
    OPTIONAL,
)


class TestToolUpdate:
    """update is the replace() version, chunk by chunk, from any start."""

    @pytest.mark.slow
    @settings(max_examples=500)
    @given(
        start=st.builds(
            lambda kind, fields: {"type": kind, "toolCallId": "c", **fields},
            st.sampled_from(["tool-input-start", "tool-input-available", "tool-input-error"]),
            OPTIONAL,
        ),
        chunks=st.lists(CHUNKS, max_size=8),
    )
    def test_update_is_the_model(self, start: dict[str, Any], chunks: list[dict[str, Any]]) -> None:
        routed = ai_sdk.Envelope(start, tool=Claim("0/1", "start"))  # message "0", part 1
        dynamic = bool(start.get("dynamic"))
        first = ai_sdk.ToolPartState("0", "c", start.get("toolName") or "", dynamic, "")
        expected = model_update(first, routed)
        got = TOOL.start(routed, None)
        assert got == expected
        for chunk in chunks:
            routed = ai_sdk.Envelope(chunk)
            expected = model_update(expected, routed)
            got = TOOL.update(got, routed)
            assert got == expected
            assert msgspec.structs.astuple(got) == msgspec.structs.astuple(expected)
