"""definitions.bedrock against the AI SDK's Bedrock provider: the set's own checks.

Every recording against ``@ai-sdk/amazon-bedrock`` (the JSON Lines recordings framed as
``application/vnd.amazon.eventstream``; the cassette's real binary body as recorded,
decoded by the provider's own ``@smithy/eventstream-codec``) and the AI SDK's test
snapshots, and random streams, are checked for Bedrock and Gemini alike in
``test_ai_sdk_providers.py``; here are the bodies, where the provider is wrong, and
the official client.

The AI SDK's tests of the hand-written ``json-*`` recordings are not a reference for
the protocol: they ask for ``responseFormat: json``, in which the provider turns the
call of its own ``json`` tool into text (an AI SDK feature). The node oracle runs
without it, so those recordings are checked as the tool calls they are.
"""

from __future__ import annotations

from typing import Any

import pytest

from definitions import bedrock

from . import _provider_oracles as oracles
from ._compare import assert_same

NAMES = oracles.recording_names("bedrock")


def test_the_binary_body_folds_as_its_decoded_events() -> None:
    """The cassette's raw event-stream body and the JSON events it carries fold alike,
    and re-framing those events gives a body that folds alike too (the test encoder is
    the decoder's inverse)."""
    name = "pydantic-ai-test_bedrock_model_thinking_part_stream.yaml#1"
    body = oracles.recording_body("bedrock", name)
    events = bedrock.events_from_eventstream(body)
    assert (
        bedrock.PROTOCOL.accumulate(body)
        == bedrock.PROTOCOL.accumulate(events)
        == bedrock.PROTOCOL.accumulate(oracles.eventstream(events))
    )
    assert all("p" not in next(iter(event.values())) for event in events)  # padding dropped


class TestWhereTheProviderIsWrong:
    """Streams on which @ai-sdk/amazon-bedrock mangles what the protocol sent."""

    @pytest.mark.slow
    def test_redacted_reasoning_in_pieces_is_joined_as_bytes(self) -> None:
        """``redactedContent`` is a blob, base64 in JSON. The provider joins the pieces
        as strings, which is not base64 of the joined bytes once a piece is padded;
        ours decodes, joins and encodes (boto3 hands bytes, which it joins as bytes)."""
        events = [
            {"messageStart": {"role": "assistant"}},
            *(
                {
                    "contentBlockDelta": {
                        "contentBlockIndex": 0,
                        "delta": {"reasoningContent": {"redactedContent": piece}},
                    }
                }
                for piece in ("YWI=", "Y2Q=")  # b"ab", b"cd"
            ),
            {"contentBlockStop": {"contentBlockIndex": 0}},
            {"messageStop": {"stopReason": "end_turn"}},
        ]
        [result] = oracles.run_providers([oracles.job("bedrock", events)])
        [block] = oracles.bedrock_sdk_view(result["parts"])["blocks"]
        assert block["redacted"] == "YWI=Y2Q="  # not base64 of anything
        [message] = bedrock.PROTOCOL.accumulate(events)
        [content] = message["output"]["message"]["content"]
        assert content == {"reasoningContent": {"redactedContent": "YWJjZA=="}}  # b"abcd"


# boto3 1.44.5 (botocore 1.44.x) leaves an empty ``usage.serverToolUsage`` out of the
# metadata event it yields: it never reaches an application.
SDK_DROPS = frozenset({"serverToolUsage"})
# A hand-written recording that is not a valid service response: its
# ``contentBlockStart.start`` is empty, and boto3 refuses it ("must have one and only
# one member set"), as it would from the service.
CLIENT_REFUSES = "handwritten/amazon-bedrock-tool-no-args.chunks.txt"


def _without_drops(message: dict[str, Any]) -> dict[str, Any]:
    usage = message.get("usage")
    if usage is None:
        return message
    return {**message, "usage": {k: v for k, v in usage.items() if k not in SDK_DROPS}}


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_the_official_client_streams_what_the_dicts_fold_to(name: str) -> None:
    """boto3's ``bedrock-runtime`` ``converse_stream`` (pinned test extra) pointed at a
    loopback server replaying the recording as an event-stream body: each event of
    ``response["stream"]``, pushed as it comes into ``PROTOCOL.engine()``, gives the
    view and the messages the dict replay gives."""
    boto3 = oracles.client_or_skip("boto3")

    from ._loopback import serving

    events = oracles.recording("bedrock", name)
    body = oracles.recording_body("bedrock", name) if "#" in name else oracles.eventstream(events)
    with serving(body, "application/vnd.amazon.eventstream") as server:
        client = boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            endpoint_url=f"http://127.0.0.1:{server.server_address[1]}",
            aws_access_key_id="test",
            aws_secret_access_key="test",
        )
        response = client.converse_stream(
            modelId="test", messages=[{"role": "user", "content": [{"text": "hi"}]}]
        )
        engine = bedrock.PROTOCOL.engine()
        if name == CLIENT_REFUSES:
            from botocore.parsers import ResponseParserError

            with pytest.raises(ResponseParserError, match="one and only one member"):
                list(response["stream"])
            return
        for event in response["stream"]:
            engine.push(event)
    replayed = bedrock.PROTOCOL.replay(events)
    assert oracles.rendered(engine.nodes(), bedrock.MESSAGE) == oracles.rendered(
        replayed, bedrock.MESSAGE
    )
    expected = [_without_drops(message) for message in bedrock.messages(replayed)]
    assert_same(bedrock.messages(engine.nodes()), expected)
