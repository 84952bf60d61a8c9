"""Renamed public names: each old name still resolves, for one release, to the new
one, with a ``DeprecationWarning`` that names the new one; unknown names still fail."""

from __future__ import annotations

import importlib

import pytest

# module -> {old name: new name}; a dotted new name is an attribute path in the module.
# Every protocol set's batch entry points are read through its PROTOCOL now.
BATCH = {"fold": "PROTOCOL.accumulate", "accumulate": "PROTOCOL.accumulate"}
SCOPED = {**BATCH, "scope": "prepare", "Scoper": "Preparer", "Scoped": "Envelope"}
ROUTED = {
    **BATCH,
    "project": "PROTOCOL.replay",
    "route": "prepare",
    "Router": "Preparer",
    "Routed": "Envelope",
}
RENAMED: dict[str, dict[str, str]] = {
    "definitions.anthropic": SCOPED,
    "definitions.openai_chat": {
        **BATCH,
        "scope": "prepare",
        "Scoper": "Preparer",
        "ScopedChunk": "Envelope",
    },
    "definitions.openai_responses": SCOPED,
    "definitions.gemini": SCOPED,
    "definitions.bedrock": SCOPED,
    "definitions.ag_ui": {
        **ROUTED,
        "Message": "MessageState",
        "ToolCall": "ToolCallState",
        "Run": "RunState",
        "EventNode": "EventState",
    },
    "definitions.ai_sdk": {
        **ROUTED,
        "TextPart": "TextPartState",
        "ToolPart": "ToolPartState",
        "Part": "PartState",
        "Step": "StepState",
    },
    "definitions.recorded": {"Recorder": "Preparer"},
    "replay": {"EventStore": "SQLiteStore", "PostgresEventStore": "PostgresStore"},
    "replay.stores._sqlite": {"EventStore": "SQLiteStore"},
    "replay.stores._postgres": {"PostgresEventStore": "PostgresStore"},
}
PAIRS = [(module, old, new) for module, names in RENAMED.items() for old, new in names.items()]


@pytest.mark.parametrize(("module", "old", "new"), PAIRS)
def test_an_old_name_is_the_new_one_with_a_warning(module: str, old: str, new: str) -> None:
    imported = importlib.import_module(module)
    with pytest.warns(
        DeprecationWarning, match=rf"{module}\.{old} is deprecated.*{module}\.{new}$"
    ):
        value = getattr(imported, old)
    first, *path = new.split(".")
    expected = getattr(imported, first)
    for attribute in path:
        expected = getattr(expected, attribute)
    # A bound method is made anew on each read: equal (same function, same set), not identical.
    assert value == expected if path else value is expected
    assert first in imported.__all__
    assert old not in imported.__all__


def test_a_protocol_sets_fold_is_accumulate_with_a_warning() -> None:
    # A fold gives nodes; what the set's fold gave is its final objects: accumulate.
    from definitions import anthropic

    with pytest.warns(DeprecationWarning, match=r"ProtocolSet\.fold.*ProtocolSet\.accumulate"):
        assert anthropic.PROTOCOL.fold([]) == anthropic.PROTOCOL.accumulate([]) == []


def test_the_definition_set_is_the_protocol_set() -> None:
    import replay
    from definitions import ProtocolSet

    with pytest.warns(DeprecationWarning, match=r"replay\.DefinitionSet.*definitions\.ProtocolSet"):
        assert replay.DefinitionSet is ProtocolSet
    assert "DefinitionSet" not in replay.__all__


@pytest.mark.parametrize("module", sorted(RENAMED))
def test_any_other_missing_name_is_still_an_attribute_error(module: str) -> None:
    imported = importlib.import_module(module)
    with pytest.raises(AttributeError, match="no_such_name"):
        imported.no_such_name  # noqa: B018


def test_from_import_of_an_old_name_warns_too() -> None:
    with pytest.warns(DeprecationWarning, match="definitions.anthropic.scope"):
        from definitions.anthropic import scope
    from definitions.anthropic import prepare

    assert scope is prepare
