"""definitions.gemini and definitions.bedrock against the AI SDK's providers, on every
recording of each: the checks the two sets share, one test each, run for both.

Two references per set: the provider (``@ai-sdk/google``, ``@ai-sdk/amazon-bedrock``)
run in node on each recorded body (``_oracle_providers.mjs``; Bedrock's JSON Lines
recordings framed as ``application/vnd.amazon.eventstream``, a cassette's real
binary body as recorded), and the snapshots the AI SDK's own tests assert for the same
recordings (``ai-sdk-expected/``). Both are compared through the projection in
``_provider_oracles`` (text, reasoning, signatures, calls, finish reason, usage).
Each set's own checks (inline expectations, whole bodies, where the provider is
wrong) are in ``test_gemini.py`` and ``test_bedrock.py``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from definitions import ProtocolSet, bedrock, gemini
from tests._shared import shared_path

from . import _provider_oracles as oracles
from ._compare import assert_same
from ._provider_strategies import bedrock_stream, gemini_stream


class Provider(NamedTuple):
    """One set beside its AI SDK provider."""

    protocol: ProtocolSet
    view: Callable[[dict[str, Any]], dict[str, Any]]
    """Our one final object of a stream, projected."""
    sdk_view: Callable[[list[dict[str, Any]]], dict[str, Any]]
    """The provider's stream parts, projected alike."""
    stream: st.SearchStrategy[list[dict[str, Any]]]
    """One random message's events."""
    snapshots: tuple[str, str]
    """The folder of the AI SDK's test snapshots and their file."""
    unchecked: frozenset[str]
    """The doStream snapshots that hold no stream parts (the raw chunks only)."""

    def assert_shows(self, events: Any, parts: list[dict[str, Any]]) -> None:
        """The one object we rebuild from ``events`` shows what the provider's parts do."""
        [final] = self.protocol.accumulate(events)
        assert_same(self.view(final), self.sdk_view(parts))


PROVIDERS = {
    "google": Provider(
        gemini.PROTOCOL,
        oracles.gemini_view,
        oracles.gemini_sdk_view,
        gemini_stream(),
        ("gemini", "google-language-model.test.ts.snap"),
        frozenset(
            {"doStream > text > should include raw chunks when includeRawChunks is enabled 1"}
        ),
    ),
    "bedrock": Provider(
        bedrock.PROTOCOL,
        oracles.bedrock_view,
        oracles.bedrock_sdk_view,
        bedrock_stream(),
        ("bedrock", "amazon-bedrock-chat-language-model.test.ts.snap"),
        frozenset(),
    ),
}

# The doStream snapshots of each provider's language-model tests, by the recording each
# test prepares (prepareChunksFixtureResponse in its describe block).
SNAPSHOTS: dict[str, dict[str, str]] = {
    "google": {
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
    },
    "bedrock": {
        "doStream > text > should stream text deltas 1": "amazon-bedrock-text",
        "doStream > reasoning > should stream reasoning and text parts 1": (
            "amazon-bedrock-reasoning"
        ),
    },
}

NAMES = {provider: oracles.recording_names(provider) for provider in PROVIDERS}
RECORDINGS = [
    pytest.param(provider, *param.values, id=f"{provider}:{param.id}", marks=param.marks)
    for provider, params in NAMES.items()
    for param in params
]


@pytest.fixture(scope="module")
def provider() -> Callable[[str], dict[str, dict[str, Any]]]:
    """The provider's stream parts per recording, one node process per provider."""
    return functools.cache(lambda name: oracles.provider_results(name, NAMES[name]))


@pytest.mark.slow
@pytest.mark.parametrize(("name", "recording"), RECORDINGS)
def test_recording_matches_the_ai_sdk_provider(
    name: str, recording: str, provider: Callable[[str], dict[str, Any]]
) -> None:
    """What an application reads from our rebuilt object is what the provider yields."""
    result = provider(name)[recording]
    assert "error" not in result, result["error"]
    PROVIDERS[name].assert_shows(oracles.recording(name, recording), result["parts"])


@functools.cache
def snapshots(name: str) -> dict[str, Any]:
    folder, file = PROVIDERS[name].snapshots
    return oracles.parse_snapshots(
        shared_path("fixtures", "recorded", folder, "ai-sdk-expected") / file
    )


@pytest.mark.parametrize(
    ("name", "snapshot", "fixture"),
    [(name, *row) for name, table in SNAPSHOTS.items() for row in table.items()],
    ids=[fixture for table in SNAPSHOTS.values() for fixture in table.values()],
)
def test_recording_matches_the_ai_sdk_test_snapshot(name: str, snapshot: str, fixture: str) -> None:
    """The stream the AI SDK's own tests expect from the recording shows what we rebuild."""
    events = oracles.recording(name, f"{fixture}.chunks.txt")
    PROVIDERS[name].assert_shows(events, snapshots(name)[snapshot])


@pytest.mark.parametrize("name", PROVIDERS)
def test_every_stream_snapshot_is_checked(name: str) -> None:
    """No doStream snapshot of the stream parts is left out of ``SNAPSHOTS``."""
    streamed = {snapshot for snapshot in snapshots(name) if snapshot.startswith("doStream")}
    assert streamed - set(SNAPSHOTS[name]) == PROVIDERS[name].unchecked
    assert set(SNAPSHOTS[name]) <= streamed


@pytest.mark.slow
@pytest.mark.parametrize("name", PROVIDERS)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_generated_streams_match_the_ai_sdk_provider(name: str, data: st.DataObject) -> None:
    """Random messages (text and reasoning in pieces, signatures, tool input cut
    anywhere, calls streamed as partial arguments, ...; see ``_provider_strategies``)
    show what the provider shows, one node run for each example's streams."""
    oracles.oracles_or_skip()
    spec = PROVIDERS[name]
    streams = data.draw(st.lists(spec.stream, min_size=10, max_size=15), label="streams")
    results = oracles.run_providers([oracles.job(name, stream) for stream in streams])
    for stream, result in zip(streams, results, strict=True):
        assert "error" not in result, result["error"]
        spec.assert_shows(stream, result["parts"])
