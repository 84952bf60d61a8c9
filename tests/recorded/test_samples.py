"""Real cassettes of another project's suite read as a person saw them.

The samples (``tests/recorded/samples``, see its README for origin and licence) were
recorded by pydantic-ai against the real APIs and stored with ``parsed_body``. Each
answer must show, headed by its model; each tool call (a server tool's too) must be
one card carrying its result; calls that are not model calls (a download, a file
upload) must leave the answers around them whole.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from definitions import recorded
from replay.logs._formats import load_events
from replay.render._html import render_html
from replay.render._text import render_text

SAMPLES = Path(__file__).parent / "samples"

pytest.importorskip("yaml", reason="reading a YAML cassette needs PyYAML (the test extra)")


def view(name: str) -> tuple[str, str]:
    events = load_events(SAMPLES / f"pydantic-ai-{name}.yaml").events
    nodes = recorded.PROTOCOL.replay(events)
    text = render_text(nodes, recorded.DEFINITIONS, color=False)
    return text, render_html(nodes, recorded.DEFINITIONS)


def test_anthropic_server_tool_and_its_result_are_one_card() -> None:
    text, page = view("test_anthropic_code_execution_tool")
    assert text.count("assistant (claude-sonnet-4-6) [end_turn]") == 2
    first = text.index("tool bash_code_execution [srvtoolu_01Y5A969cu9rsnDkHF6brfKF] done")
    assert text.index("output: 37170", first) < text.index("3 \u00d7 12,390 = 37,170")
    assert "bash_code_execution_tool_result" not in text
    assert page.count('<details class="tool" data-status="done"') == 2


def test_non_model_calls_leave_the_answer_whole() -> None:
    text, _ = view("test_anthropic_code_execution_files")
    assert "/v1/files" not in text
    assert "assistant (claude-sonnet-4-6) [end_turn]" in text
    assert "output: Sum of value column: 100.0" in text
    assert "The sum of the `value` column in **data.csv** is **100.0**." in text


def test_a_download_before_the_model_call_is_left_out() -> None:
    text, _ = view("test_google_url_input_force_download")
    assert "tiny_video.mp4" not in text
    assert text.startswith("user: What is the main content of this URL?")
    assert "assistant (gemini-2.0-flash) [STOP]" in text
    assert "Greek island town" in text


def test_bedrock_code_interpreter_result_joins_its_call() -> None:
    text, _ = view("test_bedrock_model_with_code_execution_tool")
    call = text.index("tool nova_code_interpreter [tooluse_dV5ehBNfl1hUE-UTM9cIww] done")
    assert text.index('"stdOut": "7006652"', call) < text.index("tool final_result", call)
    assert "[toolResult]" not in text


def test_chat_tool_call_and_the_result_sent_back_are_one_card() -> None:
    text, page = view("test_image_url_tool_response")
    assert "tool get_image [call_4hrT4QP9jfojtK69vGiFCFjG] done\n  output: See file bd38f5" in text
    assert "tool result" not in text
    assert "assistant (gpt-4o-2024-08-06) [stop]\n\nThe image shows a potato." in text
    assert page.count('<details class="tool"') == 1
