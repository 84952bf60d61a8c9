"""definitions= takes definitions of any state side by side, each typed where written."""

from __future__ import annotations

from pathlib import Path

import pytest

api = pytest.importorskip("mypy.api", reason="mypy is in the test extra")

SNIPPET = """
from typing import Any
from engine import Claim, Reader, create_conversation_engine

class Counter:
    kind = "counter"
    def match(self, event: dict[str, Any]) -> Claim | None:
        return Claim(event["id"], "update")
    def start(self, event: dict[str, Any], reader: Reader) -> int:
        return 0
    def update(self, state: int, event: dict[str, Any]) -> int:
        return state + "1"  # line 12: the state is typed where the definition is written

class Notes:
    kind = "notes"
    def match(self, event: dict[str, Any]) -> Claim | None:
        return None
    def start(self, event: dict[str, Any], reader: Reader) -> list[str]:
        return []
    def update(self, state: list[str], event: dict[str, Any]) -> list[str]:
        return [*state, event["text"]]

class Broken:
    kind = "broken"
    def match(self, event: dict[str, Any]) -> Claim | None:
        return None
    def start(self, event: dict[str, Any], reader: Reader) -> int:
        return 0

engine = create_conversation_engine(definitions=[Counter(), Notes()])  # no cast needed
broken = create_conversation_engine(definitions=[Broken()])  # line 31: no update()
"""


@pytest.mark.slow
def test_definitions_of_different_states_register_and_stay_typed(tmp_path: Path) -> None:
    source = tmp_path / "snippet.py"
    source.write_text(SNIPPET, encoding="utf-8")
    out, err, status = api.run(
        ["--strict", "--no-error-summary", "--cache-dir", str(tmp_path / "cache"), str(source)]
    )
    lines = sorted({int(line.split(":")[1]) for line in out.splitlines() if ": error:" in line})
    assert lines == [12, 31], out + err
    assert status == 1
