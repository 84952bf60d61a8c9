"""Write docs/cli.md from the ``convo`` parser's own help (``python -m tests.make_cli_docs``).

tests/test_docs.py checks that every command and option is on the page, so a new one
fails the suite until this is run again.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "cli.md"

INTRO = """# Command line

`convo` replays, checks, measures, stores, serves and records conversations.
`python -m replay` is the same command. Bad input or usage gets one line on stderr
naming the file, line and position, never a traceback.

Long commands (`replay` of a large log, `check`, `context --calls`, `bench`, `store
import`) show a progress bar on a terminal once they have run for a second, and nothing
when their output is piped.

## Exit status

Each status is a member of `replay.cli.Exit` (a name may share a status with another);
`convo record` exits with the status of the program it ran.

| status | `Exit` | meaning |
|-------:|--------|---------|
{statuses}

This page is written from the commands' own help by `python -m tests.make_cli_docs`.
"""


def statuses() -> str:
    """One table row per name of ``Exit``, aliases included."""
    from replay._errors import EXIT_MEANINGS
    from replay.cli import Exit

    return "\n".join(
        f"| {int(status)} | `{name}` | {EXIT_MEANINGS[name]} |"
        for name, status in Exit.__members__.items()
    )


def commands(
    parser: argparse.ArgumentParser, name: str = "convo"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """(full name, parser) of every command and sub-command, depth first."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child_name, child in action.choices.items():
                full = f"{name} {child_name}"
                yield full, child
                yield from commands(child, full)


def page() -> str:
    from replay.cli import build_parser

    os.environ["COLUMNS"] = "88"  # argparse wraps help to the terminal's width
    parts = [INTRO.format(statuses=statuses())]
    for name, parser in commands(build_parser()):
        level = "##" if name.count(" ") == 1 else "###"
        parts.append(f"{level} `{name}`\n\n```text\n{parser.format_help().rstrip()}\n```\n")
    return "\n".join(parts)


if __name__ == "__main__":
    PAGE.write_text(page(), encoding="utf-8")
    print(f"wrote {PAGE}")
