"""check_determinism: many ways of replaying one log, and what makes them disagree."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import replay._determinism as determinism
from definitions import event_type
from engine import Claim, DefinitionError, Reader
from replay import load_events
from replay._determinism import (
    SAMPLES,
    WAYS,
    DeterminismError,
    assert_deterministic,
    check_determinism,
    steps,
)
from replay.protocols._detect import protocol_definitions

from .._shared import shared_files
from ._kinds import (
    LOGS,
    ClockKind,
    GlobalCounterKind,
    MutatingKind,
    NoteKind,
    RandomKind,
    conversation,
    kinds,
    long_conversation,
)

FIRST_NOTE = next(i for i, e in enumerate(conversation()) if e["type"] == "note")


class TestDeterministicLogs:
    """Deterministic definitions pass every way."""

    def test_conversation(self) -> None:
        report = check_determinism(conversation(), kinds(), event_type=event_type)
        assert report.ok, report.describe()
        assert report.divergence is None
        assert report.events == len(conversation())
        tried = set(report.ways)
        for way in ("whole", "one", "twice", "batches#2", "frames#2"):
            assert way in tried
        half = len(conversation()) // 2
        assert f"window[{half}:{len(conversation())}]/frames" in tried

    @settings(max_examples=40, deadline=None)
    @given(LOGS, st.integers(0, 2**32), st.booleans())
    def test_random_logs(self, events: list[dict[str, Any]], seed: int, routed: bool) -> None:
        report = check_determinism(
            events, kinds(), seed=seed, rounds=1, event_type=event_type if routed else None
        )
        assert report.ok, report.describe()

    def test_same_seed_same_ways(self) -> None:
        """The random choices come from the seed alone."""
        a = check_determinism(conversation(), kinds(), seed=7)
        b = check_determinism(conversation(), kinds(), seed=7)
        assert a == b

    def test_empty_log(self) -> None:
        report = check_determinism([], kinds())
        assert report.ok
        assert report.events == 0

    def test_selected_ways_only(self) -> None:
        report = check_determinism(conversation(), kinds(), ways=["one"], rounds=0)
        assert report.ways == ("whole", "one")

    def test_unknown_way(self) -> None:
        with pytest.raises(ValueError, match=r"unknown ways.*'sideways'"):
            check_determinism([], kinds(), ways=["sideways"])

    def test_whole_replay_error_propagates(self) -> None:
        """A log that cannot be replayed at all is not a divergence: the error says why."""
        with pytest.raises(DefinitionError):
            check_determinism([{"type": "message.start"}], kinds())


STAMPED = [ClockKind, GlobalCounterKind, RandomKind]


class TestNondeterministicDefinitions:
    """The checker catches a definition that reads a clock, a global counter, random."""

    @pytest.mark.parametrize("make", STAMPED, ids=lambda k: k.__name__)
    def test_caught_at_the_first_start(self, make: type[Any]) -> None:
        report = check_determinism(conversation(), [*kinds(), make()])
        assert not report.ok
        divergence = report.divergence
        assert divergence is not None
        assert divergence.key == "stamped:n1"
        assert divergence.position == FIRST_NOTE  # localized, not only seen at the end
        assert divergence.left != divergence.right
        assert {divergence.left_way, divergence.right_way} == {"one", "whole"}

    @pytest.mark.parametrize("make", STAMPED, ids=lambda k: k.__name__)
    @pytest.mark.parametrize("way", [w for w in WAYS if w != "whole"])
    def test_caught_by_each_way_alone(self, make: type[Any], way: str) -> None:
        report = check_determinism(conversation(), [*kinds(), make()], ways=[way], rounds=1)
        assert not report.ok, way

    def test_an_update_many_unlike_update_is_caught(self) -> None:
        """A run folded by update_many must equal its updates one by one: batches and
        one-at-a-time replays disagree when it does not."""
        from definitions import message

        class DropsLast(message.MessageDefinition):
            def update_many(self, state: Any, events: list[Any]) -> Any:
                return super().update_many(state, events[:-1])

        events = [
            {"type": "message.start", "id": "m", "role": "assistant"},
            *({"type": "message.delta", "id": "m", "text": t} for t in ("a", "b", "c")),
            {"type": "message.end", "id": "m"},
        ]
        assert check_determinism(events, [message.DEFINITION], event_type=event_type).ok
        report = check_determinism(events, [DropsLast()], event_type=event_type)
        assert report.divergence is not None
        assert report.divergence.key == "message:m"

    def test_global_counter_across_replays(self) -> None:
        """Replaying twice in one process shows a counter that outlives an engine."""
        report = check_determinism(conversation(), [*kinds(), GlobalCounterKind()], ways=["twice"])
        assert report.divergence is not None
        assert (report.divergence.left_way, report.divergence.right_way) == ("twice", "whole")

    def test_state_mutated_in_place(self) -> None:
        """A state changed after delivery breaks views that hold old nodes."""
        report = check_determinism(conversation(), [*kinds(), MutatingKind()])
        assert report.divergence is not None
        assert report.divergence.key == "mutating:m1"
        assert "mutated" in report.divergence.reason

    def test_impure_match_caught_by_windows(self) -> None:
        """The window rules are checked against match(): one that answers differently
        each call shows up, even with windows as the only way."""
        calls = itertools.count()

        class Flaky:
            kind = "flaky"

            def match(self, event: Any) -> Claim | None:
                return Claim(event["id"], "start" if next(calls) % 2 else "update")

            def start(self, event: Any, reader: Reader) -> int:
                return 0

            def update(self, state: int, event: Any) -> int:
                return state + 1

        events = [{"type": "x", "id": str(i % 3)} for i in range(12)]
        report = check_determinism(events, [Flaky()], ways=["windows"])
        assert not report.ok
        assert report.divergence is not None
        assert "window[" in report.divergence.left_way


class TestAssertDeterministic:
    """assert_deterministic: the checker as an assertion."""

    def test_passes_and_returns_the_report(self) -> None:
        assert assert_deterministic(conversation(), kinds()).ok

    def test_readable_failure(self) -> None:
        with pytest.raises(AssertionError) as info:
            assert_deterministic(conversation(), [*kinds(), RandomKind()], seed=3)
        assert isinstance(info.value, DeterminismError)
        message = str(info.value)
        assert "NOT deterministic" in message
        assert "seed=3" in message
        assert f"after event #{FIRST_NOTE}, node stamped:n1" in message
        assert info.value.report.divergence is not None


EXAMPLES = Path(__file__).resolve().parents[2] / "replay" / "examples"


def example_events() -> tuple[Any, list[Any]]:
    """The bundled example log, decoded by the built-in set (skips until both exist)."""
    builtin = pytest.importorskip("definitions.builtin")
    paths = sorted(EXAMPLES.glob("*.jsonl"))
    if not paths:
        pytest.skip(f"no example log in {EXAMPLES} yet")
    lines = paths[0].read_bytes().splitlines()
    return builtin, [builtin.decode(line) for line in lines if line.strip()]


def test_bundled_example_log_is_deterministic() -> None:
    """The example log shipped with replay/ replays the same every way."""
    builtin, events = example_events()
    report = check_determinism(events, builtin.DEFINITIONS, rounds=1, event_type=event_type)
    assert report.ok, report.describe()


class TestLargeLogs:
    """On a long log the event-by-event way compares at sampled points, then narrows a
    divergence back to the first event where the views differ."""

    @pytest.mark.parametrize("make", STAMPED, ids=lambda k: k.__name__)
    def test_late_divergence_named_exactly(self, make: type[Any]) -> None:
        late = 5_557
        events = long_conversation(6_000, late)
        assert len(events) > SAMPLES  # sampled, not compared after every event
        report = check_determinism(events, [*kinds(), make()], rounds=1, event_type=event_type)
        divergence = report.divergence
        assert divergence is not None
        assert divergence.key == "stamped:late"
        assert divergence.position == late
        assert {divergence.left_way, divergence.right_way} == {"one", "whole"}

    def test_long_deterministic_log(self) -> None:
        report = check_determinism(long_conversation(6_000, 5_557), kinds(), rounds=1)
        assert report.ok, report.describe()

    def test_comparisons_bounded_by_samples(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The event-by-event way compares ``samples`` times and at the end, not once
        per event."""
        calls = 0
        compare = determinism._Pair.__call__

        def counted(self: Any, left: Any, right: Any) -> Any:
            nonlocal calls
            calls += 1
            return compare(self, left, right)

        monkeypatch.setattr(determinism._Pair, "__call__", counted)
        report = check_determinism(
            long_conversation(3_000, 2_999), kinds(), ways=["one"], samples=16
        )
        assert report.ok
        assert calls <= 16 + 2  # the samples, the last event, the final view

    @settings(max_examples=60, deadline=None)
    @given(LOGS, st.integers(1, 4), st.sampled_from(STAMPED), st.integers(0, 2**32))
    def test_narrowing_finds_what_every_event_finds(
        self, events: list[dict[str, Any]], samples: int, make: type[Any], seed: int
    ) -> None:
        """Sampled comparison then narrowing names the same first divergence as a
        comparison after every event."""
        dense = check_determinism(events, [*kinds(), make()], ways=["one"], seed=seed)
        sparse = check_determinism(
            events, [*kinds(), make()], ways=["one"], seed=seed, samples=samples
        )
        assert sparse.ok == dense.ok
        if dense.divergence is not None:
            assert sparse.divergence is not None
            assert (sparse.divergence.position, sparse.divergence.key) == (
                dense.divergence.position,
                dense.divergence.key,
            )

    def test_names_the_seq_where_keys_differ(self) -> None:
        """A claim id drawn at random: the report names the right seq, late in a view."""

        class RandomId(NoteKind):
            kind = "random_id"

            def match(self, event: Any) -> Claim | None:
                if event.get("type") != "note":
                    return None
                return Claim(str(random.random()), "start")

        report = check_determinism(conversation(), [*kinds(), RandomId()], ways=["one"])
        assert report.divergence is not None
        assert report.divergence.position == FIRST_NOTE
        assert "seq 4 is random_id:" in report.divergence.reason

    def test_bad_samples(self) -> None:
        with pytest.raises(ValueError, match="samples must be >= 1"):
            check_determinism([], kinds(), samples=0)


# -- a protocol's pre-pass ---------------------------------------------------------------


def _anthropic_message(ident: str, deltas: int) -> list[dict[str, Any]]:
    return [
        {
            "type": "message_start",
            "message": {
                "id": ident,
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "m",
                "stop_reason": None,
                "usage": {"input_tokens": 1, "output_tokens": 0},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        *(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": f"w{i} "},
            }
            for i in range(deltas)
        ),
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 1},
        },
        {"type": "message_stop"},
    ]


# Message A's deltas straddle the middle: the newest page, [17:34], cuts its start off.
CUT = [*_anthropic_message("msg_A", 20), *_anthropic_message("msg_B", 4)]


def _fragile_scope(events: Iterable[Any]) -> Iterator[Any]:
    """``anthropic.prepare`` that cannot take a stream starting inside a message."""
    anthropic = pytest.importorskip("definitions.anthropic")
    seen_start = False
    for event in events:
        seen_start = seen_start or event.get("type") == "message_start"
        if not seen_start:
            raise ValueError(f"{event.get('type')} before any message_start")
        yield from anthropic.prepare([event])


class TestPrepare:
    """With ``prepare``, every way feeds the raw events through a fresh pre-pass, and a
    window is cut from the raw log, not from the wrapped events."""

    def test_windows_are_cut_from_raw_events(self) -> None:
        raw = conversation()
        inputs: list[list[Any]] = []

        def prepare(events: Iterable[Any]) -> Iterator[Any]:
            seen = list(events)
            inputs.append(seen)
            return iter(seen)

        report = check_determinism(raw, kinds(), prepare=prepare)
        assert report.ok, report.describe()
        windows = {way.split("/")[0] for way in report.ways if way.startswith("window[")}
        assert windows
        for window in windows:
            start, end = map(int, window.removeprefix("window[").removesuffix("]").split(":"))
            assert raw[start:end] in inputs, window
        assert all(
            raw == seen or any(raw[i : i + len(seen)] == seen for i in range(len(raw)))
            for seen in inputs
        )

    def test_positions_are_raw_positions(self) -> None:
        """A pre-pass that drops events (pings) does not shift the reported position."""
        raw: list[dict[str, Any]] = []
        for event in conversation():
            raw += [{"type": "ping"}, event]

        def drop_pings(events: Iterable[Any]) -> Iterator[Any]:
            return (event for event in events if event["type"] != "ping")

        report = check_determinism(raw, [*kinds(), ClockKind()], prepare=drop_pings)
        assert report.divergence is not None
        assert raw[report.divergence.position] == {"type": "note", "id": "n1"}

    def test_window_cutting_a_message_start(self) -> None:
        chosen = protocol_definitions("anthropic")
        report = check_determinism(
            CUT, chosen.definitions, prepare=chosen.prepare, event_type=chosen.event_type
        )
        assert report.ok, report.describe()
        half = len(CUT) // 2
        assert f"window[{half}:{len(CUT)}]/frames" in report.ways
        keys = [node.key for node in chosen.replay(CUT[half:])]
        assert keys
        assert not [key for key in keys if "msg_A" in key]

    def test_pre_pass_failing_on_a_cut_window_is_caught(self) -> None:
        """Slicing the wrapped events would hide a pre-pass that cannot start inside a
        message; wrapping each raw window afresh shows it."""
        chosen = protocol_definitions("anthropic")
        sliced = check_determinism(
            list(_fragile_scope(CUT)), chosen.definitions, event_type=chosen.event_type
        )
        assert sliced.ok, sliced.describe()
        report = check_determinism(
            CUT, chosen.definitions, prepare=_fragile_scope, event_type=chosen.event_type
        )
        divergence = report.divergence
        assert divergence is not None
        assert divergence.left_way.startswith("window[")
        assert "the pre-pass raised on the window" in divergence.reason
        start = int(divergence.left_way.removeprefix("window[").split(":")[0])
        assert divergence.position == start

    @pytest.mark.parametrize(
        "path",
        [
            *shared_files("fixtures", "recorded", pattern="anthropic*"),
            *shared_files("fixtures", "recorded", pattern="aisdk*"),
            *shared_files("fixtures", "recorded", pattern="vercel-langchain*.jsonl"),
            *shared_files("fixtures", "synthetic", pattern="a[in]*_synth.jsonl"),
            *shared_files("fixtures", "synthetic", pattern="aisdk_*.jsonl"),
        ],
    )
    def test_fixture(self, path: Path) -> None:
        """Recorded Anthropic and AI SDK streams, windows wrapped afresh."""
        protocol = "anthropic" if "anthropic" in path.name else "ai_sdk"
        chosen = protocol_definitions(protocol)
        events = load_events(path).events
        report = check_determinism(
            events,
            chosen.definitions,
            rounds=2,
            prepare=chosen.prepare,
            event_type=chosen.event_type,
        )
        assert report.ok, report.describe()
        assert report.events == len(events)


@given(
    ways=st.sets(st.sampled_from(WAYS)),
    rounds=st.integers(0, 3),
)
@settings(max_examples=30, deadline=None)
def test_progress_is_called_once_per_step(ways: set[str], rounds: int) -> None:
    """``steps`` (the bar's total in ``convo check``) counts exactly the calls made."""
    calls: list[None] = []
    report = check_determinism(
        conversation()[:30], kinds(), ways=ways, rounds=rounds, progress=lambda: calls.append(None)
    )
    assert report.ok
    assert len(calls) == steps(ways, rounds)
