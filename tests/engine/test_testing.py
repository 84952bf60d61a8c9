"""engine.testing.check_definition: the contract checks shipped to third parties."""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

import pytest

from engine import Claim, DefinitionError
from engine.testing import ConformanceError, check_definition

from .harness import Tally, TallyState, ev

LOG = [ev("a", "start", "1"), ev("a", "update", "1", v=2), ev("a", "start", "2")]


class TestConformingDefinitions:
    """A pure definition passes and its nodes come back."""

    def test_tally_conforms(self) -> None:
        nodes = check_definition(Tally("a"), LOG)
        assert [(n.key, n.state.total) for n in nodes] == [("a:1", 3), ("a:2", 1)]

    def test_builtin_kinds_conform(self) -> None:
        import replay
        from definitions import builtin, event_type

        example = Path(replay.__file__).parent / "examples" / "agent_session.jsonl"
        events = replay.load_events(example).events
        for definition in builtin.DEFINITIONS:
            others = [d for d in builtin.DEFINITIONS if d is not definition]
            check_definition(definition, events, event_type=event_type, others=others)


class TestBrokenDefinitions:
    """Each broken rule is reported with the rule and the position."""

    def test_mutating_update(self) -> None:
        class Mutating(Tally):
            def start(self, event: dict[str, Any], reader: Any) -> Any:
                return {"total": event["v"]}

            def update(self, state: Any, event: dict[str, Any]) -> Any:
                state["total"] += event["v"]
                return state

        with pytest.raises(ConformanceError, match="#1, key a:1: update\\(\\) changed the state"):
            check_definition(Mutating("a"), LOG)

    def test_impure_match(self) -> None:
        flip = itertools.cycle([True, False])

        class Flaky(Tally):
            def match(self, event: dict[str, Any]) -> Claim | None:
                return super().match(event) if next(flip) else None

        with pytest.raises(ConformanceError, match="match\\(\\) answered"):
            check_definition(Flaky("a"), LOG)

    def test_claim_outside_declared_event_types(self) -> None:
        class Undeclared(Tally):
            event_types = frozenset({"start"})

        with pytest.raises(ConformanceError, match="type 'update', which is not in event_types"):
            check_definition(Undeclared("a"), LOG, event_type=lambda event: event["op"])

    def test_bad_publication_value(self) -> None:
        class Loud(Tally):
            def publication(self, event: dict[str, Any]) -> str:
                return "now"

        with pytest.raises(ConformanceError, match="publication\\(\\) returned 'now'"):
            check_definition(Loud("a"), LOG)

    def test_nondeterministic_start(self) -> None:
        rng = random.Random(7)

        class Random(Tally):
            def start(self, event: dict[str, Any], reader: Any) -> TallyState:
                return TallyState(rng.randrange(1000), ())

        with pytest.raises(ConformanceError, match="gave different nodes"):
            check_definition(Random("a"), LOG)

    def test_raising_definition_surfaces_as_definition_error(self) -> None:
        with pytest.raises(DefinitionError):
            check_definition(Tally("a"), [*LOG, ev("a", "update", "1", v=13)])
