"""definitions.gemini against the AI SDK's Google provider: the set's own checks.

Every recording against ``@ai-sdk/google`` and the AI SDK's test snapshots, and random
streams, are checked for Gemini and Bedrock alike in ``test_ai_sdk_providers.py``; here
are the inline expectations of the AI SDK's tests, whole responses, where the provider
is wrong, and the official client.
"""

from __future__ import annotations

import json

import pytest

from definitions import gemini
from tests._shared import shared_path

from . import _provider_oracles as oracles
from ._compare import assert_same

NAMES = oracles.recording_names("google")


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


class TestWhereTheProviderIsWrong:
    """Streams on which @ai-sdk/google loses what the protocol sent; ours keeps it."""

    @pytest.mark.slow
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

    @pytest.mark.slow
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


@pytest.mark.slow
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
