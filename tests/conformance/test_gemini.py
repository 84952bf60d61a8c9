"""definitions.gemini against the AI SDK's Google provider, on every Gemini recording.

Two references: ``@ai-sdk/google`` run in node on each recorded body
(``_oracle_providers.mjs``), and the snapshots the AI SDK's own tests assert for the
same recordings (``ai-sdk-expected/``). Both are compared through the projection in
``_provider_oracles`` (text, reasoning, signatures, calls, finish reason, usage).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from definitions import gemini
from tests._shared import shared_path

from . import _provider_oracles as oracles
from ._compare import assert_same
from ._provider_strategies import gemini_stream

NAMES = oracles.recording_names("google")


@pytest.fixture(scope="module")
def provider() -> dict[str, dict[str, Any]]:
    """The provider's stream parts per recording, one node process for all."""
    return oracles.provider_results("google", NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_recording_matches_the_ai_sdk_provider(name: str, provider: dict[str, Any]) -> None:
    """What an application reads from our rebuilt response is what the provider yields."""
    result = provider[name]
    assert "error" not in result, result["error"]
    [response] = gemini.PROTOCOL.accumulate(oracles.recording("google", name))
    assert_same(oracles.gemini_view(response), oracles.gemini_sdk_view(result["parts"]))


# The doStream snapshots of google-language-model.test.ts, by the recording each test
# prepares (prepareChunksFixtureResponse in its describe block).
SNAPSHOTS = {
    "doStream > text > should stream text deltas 1": "google-text",
    "doStream > tool-call > should stream tool call 1": "google-tool-call",
    "doStream > reasoning > should stream reasoning and text parts 1": "google-reasoning",
    "doStream > reasoning-gemini3 > should stream reasoning with thoughtSignature 1": (
        "google-reasoning-gemini3"
    ),
    "doStream > tool-call-gemini3 > should stream tool call with thoughtSignature 1": (
        "google-tool-call-gemini3"
    ),
    "doStream > streaming-tool-call-arguments > should stream partial function call "
    "arguments with parallel tool calls 1": "google-stream-tool-call-arguments",
    "doStream > streaming-tool-call-arguments-nested > should stream nested partial "
    "function call arguments into proper nested JSON 1": (
        "google-vertex-stream-tool-call-arguments-nested.1"
    ),
}


@pytest.fixture(scope="module")
def snapshots() -> dict[str, Any]:
    folder = shared_path("fixtures", "recorded", "gemini", "ai-sdk-expected")
    return oracles.parse_snapshots(folder / "google-language-model.test.ts.snap")


@pytest.mark.parametrize(("snapshot", "fixture"), SNAPSHOTS.items(), ids=SNAPSHOTS.values())
def test_recording_matches_the_ai_sdk_test_snapshot(
    snapshot: str, fixture: str, snapshots: dict[str, Any]
) -> None:
    """The stream the AI SDK's own tests expect from the recording shows what we rebuild."""
    [response] = gemini.PROTOCOL.accumulate(oracles.recording("google", f"{fixture}.chunks.txt"))
    assert_same(oracles.gemini_view(response), oracles.gemini_sdk_view(snapshots[snapshot]))


def test_every_snapshot_of_a_recording_is_checked(snapshots: dict[str, Any]) -> None:
    """No doStream snapshot of the stream parts is left out of SNAPSHOTS (the raw-chunks
    one holds only the raw chunks)."""
    streamed = {name for name in snapshots if name.startswith("doStream")}
    assert streamed - set(SNAPSHOTS) == {
        "doStream > text > should include raw chunks when includeRawChunks is enabled 1"
    }


# Inline expectations of google-language-model.test.ts (their describe blocks name the
# recording): the calls each test asserts.
INLINE = {
    # "should finalize streamed function call arguments when the final partialArgs
    # chunk omits willContinue"
    "google-stream-tool-call-array-arguments-missing-terminal-function-call": [
        (
            "writeItems",
            '{"operations":[{"action":"add","description":"Fresh red apple",'
            '"itemid":"apple_001","price":0.5},{"action":"add","description":'
            '"Ripe yellow banana","itemid":"banana_001","price":0.3}]}',
        )
    ],
    # "should emit no-args function calls and preserve thoughtSignature alongside
    # streamed-args calls"
    "google-stream-no-args-tool-call": [
        ("read_theme", "{}"),
        ("read_screen", '{"id":"A"}'),
        ("read_screen", '{"id":"B"}'),
        ("read_screen", '{"id":"C"}'),
    ],
}


@pytest.mark.parametrize(("fixture", "calls"), INLINE.items(), ids=INLINE.keys())
def test_calls_match_the_ai_sdk_inline_expectations(
    fixture: str, calls: list[tuple[str, str]]
) -> None:
    [response] = gemini.PROTOCOL.accumulate(oracles.recording("google", f"{fixture}.chunks.txt"))
    view = oracles.gemini_view(response)
    assert [(c["name"], c["input"]) for c in view["calls"]] == [
        (name, json.loads(args)) for name, args in calls
    ]
    if fixture == "google-stream-no-args-tool-call":
        # the response's one signature stays on the no-args call, not the streamed ones
        assert len(view["calls"][0]["signature"]) > 100
        assert all("signature" not in c for c in view["calls"][1:])


@pytest.mark.parametrize(
    "name", ["google-text", "google-reasoning", "google-reasoning-gemini3", "google-tool-call"]
)
def test_a_whole_response_folds_to_itself(name: str) -> None:
    """The non-streaming response of a call is a valid one-chunk stream: folding it gives
    it back, field for field (the rebuild has generateContent's shape)."""
    path = shared_path("fixtures", "recorded", "gemini", f"{name}.json")
    response = json.loads(path.read_text(encoding="utf-8"))
    assert gemini.PROTOCOL.accumulate([response]) == [response]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(gemini_stream(), min_size=10, max_size=15))
def test_generated_streams_match_the_ai_sdk_provider(streams: list[list[dict[str, Any]]]) -> None:
    """Random streams (text and thoughts in pieces, signatures on parts and on empty
    parts, whole calls with and without ids or args, calls streamed as partialArgs
    into nested objects and arrays) show what the provider shows, one node run each."""
    oracles.oracles_or_skip()
    results = oracles.run_providers([oracles.job("google", stream) for stream in streams])
    for stream, result in zip(streams, results, strict=True):
        assert "error" not in result, result["error"]
        [response] = gemini.PROTOCOL.accumulate(stream)
        assert_same(oracles.gemini_view(response), oracles.gemini_sdk_view(result["parts"]))


class TestWhereTheProviderIsWrong:
    """Streams on which @ai-sdk/google loses what the protocol sent; ours keeps it."""

    def test_every_candidate_is_kept_where_the_provider_reads_only_the_first(self) -> None:
        """With candidateCount > 1 the chunks interleave candidates by ``index``; the
        provider reads ``candidates[0]`` of each chunk, so it shows whichever candidate
        came first in each chunk, mixed. Ours keeps each candidate whole, apart."""
        chunks = [
            {"candidates": [{"index": 0, "content": {"role": "model", "parts": [{"text": "A1"}]}}]},
            {"candidates": [{"index": 1, "content": {"role": "model", "parts": [{"text": "B1"}]}}]},
            {
                "candidates": [
                    {"index": 1, "content": {"parts": [{"text": "B2"}]}, "finishReason": "STOP"},
                    {"index": 0, "content": {"parts": [{"text": "A2"}]}, "finishReason": "STOP"},
                ]
            },
        ]
        [result] = oracles.run_providers([oracles.job("google", chunks)])
        assert oracles.gemini_sdk_view(result["parts"])["text"] == "A1B1B2"  # mixed up
        [response] = gemini.PROTOCOL.accumulate(chunks)
        texts = {c["index"]: c["content"]["parts"][0]["text"] for c in response["candidates"]}
        assert texts == {0: "A1A2", 1: "B1B2"}

    def test_a_signature_after_thoughts_is_kept_where_the_provider_drops_it(self) -> None:
        """An empty part carrying a ``thoughtSignature`` after thought parts: the
        provider attaches such a signature only to an open text block, so here it is
        lost, and a client replaying the history cannot send it back as Gemini asks.
        Ours keeps it, byte for byte, on a part of its own."""
        signature = "c2lnbmF0dXJlLWJ5dGVz"
        chunks = [
            {"candidates": [{"content": {"parts": [{"text": "hm", "thought": True}]}}]},
            {
                "candidates": [
                    {
                        "content": {"parts": [{"text": "", "thoughtSignature": signature}]},
                        "finishReason": "STOP",
                    }
                ]
            },
        ]
        [result] = oracles.run_providers([oracles.job("google", chunks)])
        assert oracles.gemini_sdk_view(result["parts"])["signatures"] == []
        [response] = gemini.PROTOCOL.accumulate(chunks)
        parts = response["candidates"][0]["content"]["parts"]
        assert parts == [
            {"text": "hm", "thought": True},
            {"text": "", "thoughtSignature": signature},
        ]


# google-genai 3.3.0 does not map createTime from the Gemini API's responses onto its
# typed response (only from Vertex's): it never reaches an application.
SDK_DROPS = frozenset({"createTime"})


@pytest.mark.parametrize("name", NAMES)
def test_the_official_client_streams_what_the_dicts_fold_to(name: str) -> None:
    """google-genai (pinned test extra) pointed at a loopback server replaying the
    recording: what ``generate_content_stream`` yields, pushed as it comes into
    ``PROTOCOL.engine()``, gives the view and the responses the dict replay gives."""
    genai = oracles.client_or_skip("google.genai")
    from google.genai import types

    from ._loopback import serving

    events = oracles.recording("google", name)
    body = oracles.recording_body("google", name) if "#" in name else None
    body = body or oracles.gemini_sse(events).encode()
    with serving(body, "text/event-stream") as server:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        client = genai.Client(api_key="test", http_options=types.HttpOptions(base_url=url))
        engine = gemini.PROTOCOL.engine()
        for chunk in client.models.generate_content_stream(model="gemini-test", contents="hi"):
            assert not isinstance(chunk, dict)  # the SDK's typed response
            engine.push(chunk)
    replayed = gemini.PROTOCOL.replay(events)
    assert oracles.rendered(engine.nodes(), gemini.RESPONSE) == oracles.rendered(
        replayed, gemini.RESPONSE
    )
    expected = [
        {k: v for k, v in response.items() if k not in SDK_DROPS}
        for response in gemini.responses(replayed)
    ]
    assert_same(gemini.responses(engine.nodes()), expected)
