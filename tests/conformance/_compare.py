"""Field-by-field comparison of rebuilt protocol objects with an oracle's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def differences(ours: Any, reference: Any, path: str = "$") -> list[str]:
    """Every place where ``ours`` and ``reference`` differ, as ``path: ours != ref``."""
    if isinstance(ours, dict) and isinstance(reference, dict):
        out: list[str] = []
        for key in sorted(set(ours) | set(reference), key=str):
            where = f"{path}.{key}"
            if key not in ours:
                out.append(f"{where}: missing (reference {_short(reference[key])})")
            elif key not in reference:
                out.append(f"{where}: extra {_short(ours[key])} (absent in the reference)")
            else:
                out.extend(differences(ours[key], reference[key], where))
        return out
    if isinstance(ours, list) and isinstance(reference, list):
        out = []
        if len(ours) != len(reference):
            out.append(f"{path}: {len(ours)} items, reference has {len(reference)}")
        for index, (a, b) in enumerate(zip(ours, reference, strict=False)):
            out.extend(differences(a, b, f"{path}[{index}]"))
        return out
    if ours != reference or type(ours) is not type(reference):
        return [f"{path}: {_short(ours)} != reference {_short(reference)}"]
    return []


def assert_same(ours: Any, reference: Any) -> None:
    """Fail with a list of the differing fields when ``ours != reference``."""
    found = differences(ours, reference)
    assert not found, "rebuilt objects differ from the oracle's:\n  " + "\n  ".join(found[:40])


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 200 else text[:200] + "..."


def assert_same_events(path: Path, loaded: list[Any], reference: list[Any]) -> None:
    """``replay.load_events`` read the same events as the oracle's reader.

    One difference is allowed and checked: an SSE file whose last frame has no
    terminating blank line. The SDK's SSE decoder (and the SSE spec) drop such an
    unterminated frame; replay keeps it. It is reported, not hidden: the extra event
    must be exactly that last frame.
    """
    if len(loaded) == len(reference) + 1 and loaded[:-1] == reference:
        text = path.read_text(encoding="utf-8")
        assert not text.endswith(("\n\n", "\r\n\r\n")), "an extra event that was terminated"
        return
    assert loaded == reference
