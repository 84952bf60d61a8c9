"""check_determinism: many ways of replaying one log, and what makes them disagree."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from definitions import event_type
from engine import Claim, DefinitionError, Reader
from replay._determinism import (
    WAYS,
    DeterminismError,
    assert_deterministic,
    check_determinism,
)

from ._kinds import (
    LOGS,
    ClockKind,
    GlobalCounterKind,
    MutatingKind,
    RandomKind,
    conversation,
    kinds,
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
