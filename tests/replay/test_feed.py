"""``ProtocolSet.pre_pass()``: a set's pre-pass one event at a time gives the view the
batch gives."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from definitions import ProtocolSet
from engine import create_conversation_engine
from replay import load_events, render_json
from replay.protocols._detect import detect_protocol, protocol_definitions
from tests._shared import shared_files


@pytest.mark.parametrize("path", shared_files("fixtures", "recorded"))
def test_one_event_at_a_time_folds_as_the_whole_recording(path: Path) -> None:
    try:
        events = load_events(path).events
    except Exception:
        pytest.skip("not a recording load_events reads strictly")
    chosen = protocol_definitions(detect_protocol(events).protocol)
    feed = chosen.pre_pass()
    if feed is None:
        pytest.skip("events go in as they are")
    engine = create_conversation_engine(chosen.definitions, event_type=chosen.event_type)
    for event in events:
        engine.push(feed(event))
    expected = chosen.replay(events)
    assert render_json(engine.nodes(), chosen.definitions) == render_json(
        expected, chosen.definitions
    )


def test_a_generator_pre_pass_that_skips_an_event_is_refused() -> None:
    def every_other(events: Iterable[Any]) -> Iterator[Any]:
        for n, event in enumerate(events):
            if n % 2 == 0:
                yield event

    chosen = ProtocolSet(name="skipping", definitions=(), prepare=every_other)
    feed = chosen.pre_pass()
    assert feed is not None
    assert feed({"n": 0}) == {"n": 0}
    with pytest.raises(ValueError, match="one envelope per event"):
        feed({"n": 1})
