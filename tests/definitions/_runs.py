"""What the ``update_many`` tests of every definition share."""

from __future__ import annotations

from typing import Any

import pytest


def check_run(definition: Any, state: Any, run: list[Any], *, may_raise: bool = False) -> Any:
    """``definition.update_many`` against ``update`` on each event of ``run`` in turn.

    It must raise whenever ``update`` would and otherwise return an equal state, the
    state itself exactly when no update changed it. Raising where ``update`` would not
    is allowed only with ``may_raise`` (the engine then folds the run one at a time).
    Returns the state both agree on, or None when the run fails.
    """
    try:
        expected = state
        for event in run:
            expected = definition.update(expected, event)
    except Exception:
        with pytest.raises(Exception):  # noqa: B017, PT011
            definition.update_many(state, run)
        return None
    if may_raise:
        try:
            got = definition.update_many(state, run)
        except Exception:
            return None
    else:
        got = definition.update_many(state, run)
    assert got == expected
    assert (got is state) == (expected is state)
    return got


class Counting:
    """``definition`` as the engine sees it, recording the length of every run its
    ``update_many`` folded (counted after the call: a run it raised on is folded
    again one event at a time, and is not one)."""

    def __init__(self, definition: Any) -> None:
        self.runs: list[int] = []
        self._definition = definition
        self.kind = definition.kind
        self.event_types = definition.event_types
        self.publication = definition.publication
        self.match = definition.match
        self.start = definition.start
        self.update = definition.update

    def update_many(self, state: Any, events: list[Any]) -> Any:
        new = self._definition.update_many(state, events)
        self.runs.append(len(events))
        return new
