"""One property for every protocol set: the batch fold is the live fold.

The batch path (``ProtocolSet.replay``: the pre-pass over the whole stream, then
``push_many``, where the definitions fold each run of deltas with ``update_many``)
and the live path (``ProtocolSet.engine()``: each raw event through the live
pre-pass as it is pushed, in batches of any size) give the same nodes for any
random valid stream of the protocol. This is the run rule (seed 002: a run folds as
its events one by one) held end to end, once for all sets; each set's own
``tests/definitions/test_<set>_runs.py`` only checks its ``update_many`` on runs a
stream rarely makes (bad payloads, mixed delta types).
"""

from __future__ import annotations

from itertools import chain, pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from definitions import ag_ui, ai_sdk, anthropic, bedrock, gemini, openai_chat, openai_responses
from definitions._protocol import ProtocolSet

from ._provider_strategies import bedrock_stream, gemini_stream
from ._strategies import anthropic_streams, openai_chat_streams
from .test_ag_ui import agui_stream
from .test_ai_sdk import aisdk_stream
from .test_openai_responses import responses_streams

STREAMS: dict[str, tuple[ProtocolSet, st.SearchStrategy[list[Any]]]] = {
    "anthropic": (anthropic.PROTOCOL, anthropic_streams()),
    "openai_chat": (openai_chat.PROTOCOL, openai_chat_streams().map(lambda s: [*chain(*s)])),
    "openai_responses": (openai_responses.PROTOCOL, responses_streams()),
    "gemini": (gemini.PROTOCOL, gemini_stream()),
    "bedrock": (bedrock.PROTOCOL, bedrock_stream()),
    "ag_ui": (ag_ui.PROTOCOL, agui_stream()),
    "ai_sdk": (ai_sdk.PROTOCOL, aisdk_stream()),
}


def fold_run(protocol: ProtocolSet, events: list[Any], cuts: list[int]) -> None:
    """The batch fold of ``events`` equals their live fold pushed in the batches that
    ``cuts`` mark (each cut a position; any number of them, in any order)."""
    batch = protocol.replay(events)
    live = protocol.engine()
    edges = sorted({0, len(events), *(cut % (len(events) + 1) for cut in cuts)})
    for start, end in pairwise(edges):
        live.push_many(events[start:end])
    assert live.nodes() == batch


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(STREAMS))
@settings(max_examples=60)
@given(data=st.data())
def test_the_batch_fold_is_the_live_fold_in_any_batches(name: str, data: st.DataObject) -> None:
    protocol, streams = STREAMS[name]
    events = data.draw(streams, label="events")
    cuts = data.draw(st.lists(st.integers(0, 10_000), max_size=6), label="cuts")
    fold_run(protocol, events, cuts)
