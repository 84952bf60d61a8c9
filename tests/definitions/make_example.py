"""Generate replay/examples/agent_session.jsonl, the bundled example conversation.

Run ``python -m tests.definitions.make_example`` from the repository root to
regenerate it. The .jsonl is committed because the CLI ships it as package data;
it is the one generated artifact in the repository, and
``tests/definitions/test_builtin.py`` checks that it matches this script's output.

The split of text into deltas comes from a fixed linear congruential generator
(not ``random``), so the output is the same on every Python version.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

PATH = Path(__file__).resolve().parents[2] / "replay" / "examples" / "agent_session.jsonl"

Event = dict[str, Any]


class _Chunker:
    """Splits text into token-like pieces of 1 to ``largest`` characters."""

    def __init__(self, seed: int) -> None:
        self.state = seed

    def sizes(self, largest: int) -> Iterator[int]:
        while True:
            self.state = (self.state * 1103515245 + 12345) % 2**31
            yield 1 + (self.state >> 16) % largest

    def split(self, text: str, largest: int = 7) -> list[str]:
        pieces: list[str] = []
        start = 0
        for size in self.sizes(largest):
            if start >= len(text):
                return pieces
            pieces.append(text[start : start + size])
            start += size
        raise AssertionError("unreachable")


class _Session:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.chunker = _Chunker(seed=20240611)
        self.counts: dict[str, int] = {}

    def new_id(self, prefix: str) -> str:
        self.counts[prefix] = self.counts.get(prefix, 0) + 1
        return f"{prefix}-{self.counts[prefix]}"

    def emit(self, type: str, **fields: Any) -> None:
        self.events.append({"type": type, **fields})

    def user(self, text: str) -> None:
        id = self.new_id("msg")
        self.emit("message.start", id=id, role="user", text=text)
        self.emit("message.end", id=id)

    def assistant(self, text: str) -> None:
        id = self.new_id("msg")
        self.emit("message.start", id=id, role="assistant")
        for piece in self.chunker.split(text):
            self.emit("message.delta", id=id, text=piece)
        self.emit("message.end", id=id)

    def reasoning(self, text: str, encrypted: str | None = None) -> None:
        id = self.new_id("rsn")
        self.emit("reasoning.start", id=id)
        for piece in self.chunker.split(text):
            self.emit("reasoning.delta", id=id, text=piece)
        if encrypted is not None:
            self.emit("reasoning.redacted", id=id, variant="encrypted", data=encrypted)
        self.emit("reasoning.end", id=id)

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        id = self.new_id("call")
        self.emit("tool_call.start", id=id, name=name)
        # streamed the way models do: pieces that cut keys, strings and numbers
        for piece in self.chunker.split(json.dumps(arguments), largest=9):
            self.emit("tool_call.arguments_delta", id=id, text=piece)
        self.emit("tool_call.arguments_end", id=id)
        return id

    def status(self, id: str, **fields: Any) -> None:
        self.emit("status.update", id=id, **fields)


def agent_session_events() -> list[Event]:
    """The bundled example: three turns of a coding agent fixing a failing test."""
    s = _Session()

    # -- turn 1: investigate ---------------------------------------------------------
    s.user(
        "CI started failing on test_parse_dates after yesterday's merge. "
        "Can you find out why and fix it?"
    )
    s.reasoning(
        "The failure began after a merge, so a recent change to the date parser is the "
        "likely cause. I should read the failing test first, then run it to see the "
        "actual assertion error before touching any code."
    )
    s.assistant(
        "I'll start by reading the failing test and running it on its own to see the exact error."
    )
    read = s.call("read_file", {"path": "tests/test_dates.py", "start_line": 40, "end_line": 58})
    s.emit(
        "tool_call.result",
        id=read,
        output=(
            "def test_parse_dates():\n"
            '    assert parse_date("2024-02-29") == date(2024, 2, 29)\n'
            '    assert parse_date("29/02/2024", dayfirst=True) == date(2024, 2, 29)\n'
            '    assert parse_date("2024-13-01") is None\n'
        ),
    )
    run = s.call("run_tests", {"args": ["-k", "test_parse_dates", "-x"], "verbose": True})
    s.status("tests-1", status="running", label="Running tests", completed=0, total=148)
    for done in (21, 57, 96, 131, 148):
        s.status("tests-1", status="running", label="Running tests", completed=done, total=148)
    s.status("tests-1", status="failed", label="1 failed, 147 passed", completed=148, total=148)
    s.emit(
        "tool_call.result",
        id=run,
        output={
            "passed": 147,
            "failed": 1,
            "failures": [
                {
                    "test": "tests/test_dates.py::test_parse_dates",
                    "error": "AssertionError: assert date(2024, 29, 2) == date(2024, 2, 29)",
                }
            ],
        },
    )
    s.assistant(
        "Found it. `parse_date` now ignores `dayfirst=True`: yesterday's merge replaced "
        "the format table in `src/dates.py`, and the `%d/%m/%Y` entry became `%m/%d/%Y`. "
        "So `29/02/2024` is read month-first, and the test fails on the second assertion. "
        "The fix is a one-line change that restores the day-first format."
    )

    # -- turn 2: fix, with approval ------------------------------------------------------
    s.user("Good find. Please apply the fix and rerun the tests.")
    s.reasoning(
        "Editing a source file needs the user's approval in this workspace. I'll propose "
        "the single-line edit, then rerun the whole suite.",
        encrypted="gAAAAABmZ0c5QmVyeXB0ZWQtcmVhc29uaW5nLWJsb2I=",
    )
    edit = s.call(
        "edit_file",
        {
            "path": "src/dates.py",
            "old": '    ("%m/%d/%Y", True),',
            "new": '    ("%d/%m/%Y", True),',
            "note": "restore the day-first format (\u00e9t\u00e9 2024 \u2192 DD/MM/YYYY)",
        },
    )
    s.emit(
        "approval.request",
        id="approval-1",
        action="Edit src/dates.py: replace 1 line",
        tool_call_id=edit,
    )
    s.emit(
        "approval.decision",
        id="approval-1",
        decision="approved",
        by="maria",
        reason="one-line fix, matches the diff",
    )
    s.emit("tool_call.result", id=edit, output={"path": "src/dates.py", "lines_changed": 1})
    rerun = s.call("run_tests", {"args": [], "verbose": False})
    s.status("tests-2", status="running", label="Running tests", progress=0.0)
    for fraction in (0.12, 0.35, 0.5, 0.71, 0.9, 1.0):
        s.status("tests-2", status="running", label="Running tests", progress=fraction)
    s.status("tests-2", status="done", label="148 passed", completed=148, total=148)
    s.emit("tool_call.result", id=rerun, output={"passed": 148, "failed": 0})
    s.assistant(
        "Done: `src/dates.py` reads `DD/MM/YYYY` again when `dayfirst=True`, and all 148 "
        "tests pass locally."
    )

    # -- turn 3: a denied action -----------------------------------------------------------
    s.user("Thanks! Push it to main.")
    s.reasoning("Pushing to main directly needs approval; I'll ask before running git push.")
    push = s.call("shell", {"command": "git push origin HEAD:main", "timeout": 60})
    s.emit(
        "approval.request",
        id="approval-2",
        action="Run `git push origin HEAD:main`",
        tool_call_id=push,
    )
    s.emit(
        "approval.decision",
        id="approval-2",
        decision="denied",
        by="maria",
        reason="main is protected: open a pull request instead",
    )
    s.emit("tool_call.denied", id=push, reason="main is protected: open a pull request instead")
    s.assistant(
        "Understood, I didn't push. To get the fix into main, open a pull request from "
        "this branch:\n\n"
        "    git push origin HEAD:fix/parse-dates-dayfirst\n"
        "    gh pr create --fill\n\n"
        "The change is one line in `src/dates.py`, and the full suite passes (148 tests)."
    )
    return s.events


def render_jsonl(events: list[Event]) -> bytes:
    """One compact JSON object per line, in order."""
    return b"".join(msgspec.json.encode(event) + b"\n" for event in events)


def main() -> None:
    """Write the example next to the replay package."""
    PATH.parent.mkdir(parents=True, exist_ok=True)
    PATH.write_bytes(render_jsonl(agent_session_events()))
    print(f"wrote {PATH} ({len(agent_session_events())} events)")


if __name__ == "__main__":
    main()
