"""definitions.bedrock against the AI SDK's Bedrock provider, on every Bedrock recording.

Two references: ``@ai-sdk/amazon-bedrock`` run in node on each recorded body (the
JSON Lines recordings framed as ``application/vnd.amazon.eventstream``; the
cassette's real binary body as recorded, decoded by the provider's own
``@smithy/eventstream-codec``), and the snapshots the AI SDK's own tests assert for
the real recordings (``ai-sdk-expected/``). Compared through the projection in
``_provider_oracles`` (blocks, stop reason, usage).

The AI SDK's tests of the hand-written ``json-*`` recordings are not a reference for
the protocol: they ask for ``responseFormat: json``, in which the provider turns the
call of its own ``json`` tool into text (an AI SDK feature). The node oracle runs
without it, so those recordings are checked as the tool calls they are.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from definitions import bedrock
from tests._shared import shared_path

from . import _provider_oracles as oracles
from ._compare import assert_same
from ._provider_strategies import bedrock_stream

NAMES = oracles.recording_names("bedrock")


@pytest.fixture(scope="module")
def provider() -> dict[str, dict[str, Any]]:
    """The provider's stream parts per recording, one node process for all."""
    return oracles.provider_results("bedrock", NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_recording_matches_the_ai_sdk_provider(name: str, provider: dict[str, Any]) -> None:
    """What an application reads from our rebuilt message is what the provider yields."""
    result = provider[name]
    assert "error" not in result, result["error"]
    [message] = bedrock.PROTOCOL.accumulate(oracles.recording("bedrock", name))
    assert_same(oracles.bedrock_view(message), oracles.bedrock_sdk_view(result["parts"]))


SNAPSHOTS = {
    "doStream > text > should stream text deltas 1": "amazon-bedrock-text",
    "doStream > reasoning > should stream reasoning and text parts 1": "amazon-bedrock-reasoning",
}


@pytest.fixture(scope="module")
def snapshots() -> dict[str, Any]:
    folder = shared_path("fixtures", "recorded", "bedrock", "ai-sdk-expected")
    return oracles.parse_snapshots(folder / "amazon-bedrock-chat-language-model.test.ts.snap")


@pytest.mark.parametrize(("snapshot", "fixture"), SNAPSHOTS.items(), ids=SNAPSHOTS.values())
def test_recording_matches_the_ai_sdk_test_snapshot(
    snapshot: str, fixture: str, snapshots: dict[str, Any]
) -> None:
    """The stream the AI SDK's own tests expect from the recording shows what we rebuild."""
    [message] = bedrock.PROTOCOL.accumulate(oracles.recording("bedrock", f"{fixture}.chunks.txt"))
    assert_same(oracles.bedrock_view(message), oracles.bedrock_sdk_view(snapshots[snapshot]))


def test_every_stream_snapshot_is_checked(snapshots: dict[str, Any]) -> None:
    assert {name for name in snapshots if name.startswith("doStream")} == set(SNAPSHOTS)


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


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(bedrock_stream(), min_size=10, max_size=15))
def test_generated_streams_match_the_ai_sdk_provider(streams: list[list[dict[str, Any]]]) -> None:
    """Random messages (text and reasoning in pieces, signatures, tool input JSON cut
    anywhere, empty input, with or without messageStart, metadata before or after
    messageStop), framed as event streams: what the provider shows, one node run each."""
    oracles.oracles_or_skip()
    results = oracles.run_providers([oracles.job("bedrock", stream) for stream in streams])
    for stream, result in zip(streams, results, strict=True):
        assert "error" not in result, result["error"]
        [message] = bedrock.PROTOCOL.accumulate(stream)
        assert_same(oracles.bedrock_view(message), oracles.bedrock_sdk_view(result["parts"]))


class TestWhereTheProviderIsWrong:
    """Streams on which @ai-sdk/amazon-bedrock mangles what the protocol sent."""

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
