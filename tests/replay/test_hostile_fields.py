"""Hostile values in the fields readers trust, each named case a reader once failed on
with a traceback: an event ``type`` that is not a string, in every format a user
reads; a node its definition cannot render, in the CLI's HTML page; a tool result
nested 900 levels deep. Each reads, or is refused with one line naming where."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from replay.cli import main
from replay.protocols._detect import detect_protocol
from tests._shared import shared_path

HOSTILE: dict[str, Any] = {"type": [1]}


def convo(*args: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(list(args))
    return status, err.getvalue()


def _lines(values: list[Any]) -> bytes:
    return b"".join(json.dumps(v).encode() + b"\n" for v in values)


def _session(*parts: str) -> list[Any]:
    text = shared_path("fixtures", "transcripts", *parts).read_text()
    return [json.loads(line) for line in text.splitlines()[:12] if line.strip()]


FORMATS = {
    "our log": lambda: _lines(
        [
            {"position": 0, "event": {"type": "message.start", "id": "m", "role": "user"}},
            {"position": 1, "event": HOSTILE},
        ]
    ),
    "raw events": lambda: _lines([{"type": "message_start", "message": {}}, HOSTILE]),
    "a JSON array": lambda: json.dumps([HOSTILE, {"type": "message_stop"}]).encode(),
    "Claude Code": lambda: _lines(
        [*_session("claude-code", "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl")[:6], HOSTILE]
    ),
    "Codex": lambda: _lines(
        [
            *_session(
                "codex",
                "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl",
            )[:6],
            HOSTILE,
        ]
    ),
}


@pytest.mark.parametrize("name", FORMATS)
@pytest.mark.parametrize("form", ["text", "html", "json"])
def test_a_type_that_is_not_a_string(tmp_path: Path, name: str, form: str) -> None:
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(FORMATS[name]())
    status, err = convo("replay", str(path), "--format", form, "-o", str(tmp_path / "out"))
    assert status in (0, 2), err
    if status == 2:
        assert len(err.strip().splitlines()) == 1, err
        assert str(path) in err
        assert "line" in err or "event #" in err, err
    print(f"hostile: {{'type': [1]}} in {name} ({form}): exit {status} {err.strip()[:120]}")


def test_detection_never_raises_for_an_odd_type() -> None:
    for odd in ([1], {"a": 1}, 1.5, None, True):
        assert detect_protocol([{"type": odd}]).protocol == "builtin"


def _tool_with(output: Any) -> list[dict[str, Any]]:
    return [
        {"type": "tool_call.start", "id": "c", "name": "f"},
        {"type": "tool_call.arguments_end", "id": "c"},
        {"type": "tool_call.result", "id": "c", "output": output},
    ]


def test_a_tool_result_nested_900_deep_renders(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text(
        "".join(json.dumps(e) + "\n" for e in _tool_with("x"))
        # json.dumps cannot write 900 levels: the line is built by hand.
        .replace('"output": "x"', '"output": ' + "[" * 900 + "1" + "]" * 900)
    )
    for form in ("html", "text"):
        out = tmp_path / f"deep.{form}"
        status, err = convo("replay", str(path), "--format", form, "-o", str(out))
        assert status == 0, err
    page = (tmp_path / "deep.html").read_text()
    assert "nested deeper than 64 levels" in page
    assert "render-error" not in page


def test_a_node_that_cannot_render_is_an_error_card_in_the_page(tmp_path: Path) -> None:
    """An Anthropic tool call whose input is not JSON: the SDK refuses to build its
    message, so the definition's renderer raises; the page shows the error in the
    node's place and every other node as usual."""
    events = [
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "Hi <b>"},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": "<script>"},
        },
        {"type": "content_block_stop", "index": 1},
        {"type": "message_stop"},
    ]
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    status, err = convo("replay", str(path), "--format", "html", "-o", str(tmp_path / "page.html"))
    page = (tmp_path / "page.html").read_text()
    if "render-error" not in page:
        pytest.skip("this definition renders a malformed tool input without failing")
    assert status == 0, err
    assert "Hi &lt;b&gt;" in page
    assert "<script>" not in page
    print("hostile: a node that cannot render: exit 0, an error card in its place")
