"""unclaimed_note: when events no definition claims are worth saying, and the hint."""

from __future__ import annotations

from replay.protocols._unclaimed import unclaimed_note

ANTHROPIC = [{"type": "message_start", "message": {"id": "m"}}, {"type": "ping"}]
BUILTIN_SET = "built-in kinds (definitions.builtin)"


def test_nothing_unclaimed_says_nothing() -> None:
    assert unclaimed_note(0, 2, ANTHROPIC, "definitions.builtin") is None


def test_another_set_than_detection_names_the_detected_one() -> None:
    note = unclaimed_note(2, 2, ANTHROPIC, "definitions.builtin")
    assert note == (
        "2 of 2 events claimed by no definition (definitions.builtin); try -d definitions.anthropic"
    )
    # Any unclaimed event counts with another set than detection's.
    assert unclaimed_note(1, 2, ANTHROPIC, "definitions.builtin") is not None


def test_the_detected_set_leaves_structural_events_unclaimed_quietly() -> None:
    chosen = "Anthropic Messages (definitions.anthropic)"
    assert unclaimed_note(1, 2, ANTHROPIC, chosen) is None
    assert unclaimed_note(2, 2, ANTHROPIC, chosen) == (
        f"2 of 2 events claimed by no definition ({chosen}); try another -d"
    )


def test_no_known_protocol_counts_only_when_nothing_was_claimed() -> None:
    unknown = [{"type": "mystery"}] * 3
    assert unclaimed_note(2, 3, unknown, "myapp.kinds") is None
    assert unclaimed_note(3, 3, unknown, "myapp.kinds") == (
        "3 of 3 events claimed by no definition (myapp.kinds); try another -d"
    )
