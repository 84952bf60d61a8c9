"""The protocol sets the checks over every set walk: each set with a pre-pass (all of
``replay.PROTOCOLS`` but the built-in kinds), its module by its name."""

from __future__ import annotations

from types import ModuleType

from definitions import (
    ag_ui,
    ai_sdk,
    anthropic,
    bedrock,
    gemini,
    openai_chat,
    openai_responses,
    recorded,
)

MODULES: dict[str, ModuleType] = {
    module.PROTOCOL.name: module
    for module in (
        anthropic,
        openai_chat,
        openai_responses,
        gemini,
        bedrock,
        ag_ui,
        ai_sdk,
        recorded,
    )
}
"""Every set with a pre-pass: its module, by the set's name."""

WIRE: dict[str, ModuleType] = {name: m for name, m in MODULES.items() if name != "recorded"}
"""The sets of one wire protocol each (``recorded`` folds the calls of the others)."""
