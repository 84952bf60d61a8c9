"""The pytest plugin, run in throwaway projects through pytester."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from tests._shared import shared_path

pytest_plugins = ["pytester"]

# Until the pytest11 entry point is installed, load the plugin by module name.
_INSTALLED = any(ep.value == "replay._plugin" for ep in entry_points(group="pytest11"))
# hypothesis is not needed in the throwaway projects and costs ~1 s per run.
PLUGIN = ("-p", "no:hypothesispytest", *(() if _INSTALLED else ("-p", "replay._plugin")))

KINDS = """
import msgspec
from engine import Claim


class Message(msgspec.Struct, frozen=True):
    text: str


class MessageKind:
    kind = "message"

    def match(self, event):
        if event["type"] == "start":
            return Claim(event["id"], "start")
        if event["type"] == "delta":
            return Claim(event["id"], "update")
        return None

    def start(self, event, reader):
        return Message("")

    def update(self, state, event):
        return Message(state.text + event["delta"])


class Clock:
    kind = "clock"

    def match(self, event):
        return Claim(event["id"], "start") if event["type"] == "start" else None

    def start(self, event, reader):
        import time
        return time.perf_counter_ns()

    def update(self, state, event):
        return state
"""

LOG = (
    '{"type": "start", "id": "m1"}\n'
    '{"type": "delta", "id": "m1", "delta": "Hello"}\n'
    '{"type": "delta", "id": "m1", "delta": ", world"}\n'
)

TEST = """
from kinds import MessageKind

def test_view(convo_snapshot):
    nodes = convo_snapshot("conversation.jsonl", [MessageKind()])
    assert nodes[0].state.text == "Hello, world"
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(kinds=KINDS, test_view=TEST)
    pytester.path.joinpath("conversation.jsonl").write_text(LOG)
    pytester.syspathinsert()
    return pytester


def snapshot(pytester: pytest.Pytester) -> str:
    return (pytester.path / "__snapshots__" / "test_view" / "test_view.json").read_text()


class TestConvoSnapshot:
    """convo_snapshot: replay a log, compare with a stored view."""

    def test_first_run_writes_the_snapshot(self, project: pytest.Pytester) -> None:
        result = project.runpytest(*PLUGIN)
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(["*convo snapshots*", "wrote *test_view.json"])
        assert '"text": "Hello, world"' in snapshot(project)

    def test_second_run_compares(self, project: pytest.Pytester) -> None:
        project.runpytest(*PLUGIN).assert_outcomes(passed=1)
        result = project.runpytest(*PLUGIN)
        result.assert_outcomes(passed=1)
        assert "wrote" not in result.stdout.str()

    def test_mismatch_fails_with_a_diff(self, project: pytest.Pytester) -> None:
        project.runpytest(*PLUGIN).assert_outcomes(passed=1)
        project.path.joinpath("conversation.jsonl").write_text(
            LOG + '{"type": "delta", "id": "m1", "delta": "!"}\n'
        )
        project.makepyfile(test_view=TEST.replace('"Hello, world"', '"Hello, world!"'))
        result = project.runpytest(*PLUGIN)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(
            [
                "*the replayed view differs from the snapshot*test_view.json*",
                '*-*"text": "Hello, world"*',
                '*+*"text": "Hello, world!"*',
                "*--convo-update-snapshots*",
            ]
        )
        assert "Hello, world!" not in snapshot(project)  # a failure never rewrites

    def test_update_flag_rewrites(self, project: pytest.Pytester) -> None:
        project.runpytest(*PLUGIN).assert_outcomes(passed=1)
        project.path.joinpath("conversation.jsonl").write_text(
            LOG + '{"type": "delta", "id": "m1", "delta": "!"}\n'
        )
        project.makepyfile(test_view=TEST.replace('"Hello, world"', '"Hello, world!"'))
        project.runpytest(*PLUGIN, "--convo-update-snapshots").assert_outcomes(passed=1)
        assert '"text": "Hello, world!"' in snapshot(project)
        project.runpytest(*PLUGIN).assert_outcomes(passed=1)

    def test_events_and_named_views(self, pytester: pytest.Pytester) -> None:
        pytester.makepyfile(kinds=KINDS)
        pytester.makepyfile(
            test_named="""
            import pytest
            from kinds import MessageKind

            START = {"type": "start", "id": "a"}

            @pytest.mark.parametrize("delta", ["x", "y/z"])
            def test_views(convo_snapshot, delta):
                convo_snapshot([START], [MessageKind()], name="before")
                convo_snapshot([START, {"type": "delta", "id": "a", "delta": delta}],
                               [MessageKind()], name="after")
                convo_snapshot([START], [MessageKind()])
                convo_snapshot([START], [MessageKind()])
            """
        )
        pytester.syspathinsert()
        pytester.runpytest(*PLUGIN).assert_outcomes(passed=2)
        names = sorted(p.name for p in (pytester.path / "__snapshots__" / "test_named").iterdir())
        assert names == [
            "test_views_x.2.json",
            "test_views_x.after.json",
            "test_views_x.before.json",
            "test_views_x.json",
            "test_views_y_z.2.json",
            "test_views_y_z.after.json",
            "test_views_y_z.before.json",
            "test_views_y_z.json",
        ]


class TestConvoAssertDeterministic:
    """convo_assert_deterministic: the checker as a fixture."""

    def test_passes_and_fails(self, pytester: pytest.Pytester) -> None:
        pytester.makepyfile(kinds=KINDS)
        pytester.path.joinpath("conversation.jsonl").write_text(LOG)
        pytester.makepyfile(
            test_det="""
            from kinds import Clock, MessageKind

            def test_deterministic(convo_assert_deterministic):
                report = convo_assert_deterministic("conversation.jsonl", [MessageKind()])
                assert report.ok and report.seed == 5

            def test_clock(convo_assert_deterministic):
                convo_assert_deterministic("conversation.jsonl", [MessageKind(), Clock()])
            """
        )
        pytester.syspathinsert()
        result = pytester.runpytest(*PLUGIN, "--convo-seed", "5")
        result.assert_outcomes(passed=1, failed=1)
        result.stdout.fnmatch_lines(
            ["*DeterminismError*NOT deterministic*seed=5*", "*node clock:m1*the states differ*"]
        )


def test_help_lists_the_options(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*PLUGIN, "--help")
    result.stdout.fnmatch_lines(["*--convo-update-snapshots*", "*--convo-seed*"])


def test_assert_deterministic_fixture_takes_a_pre_pass(pytester: pytest.Pytester) -> None:
    """A protocol set's raw events and its pre-pass go through the fixture."""
    pytester.makepyfile(
        test_anthropic="""
from definitions import anthropic

EVENTS = [
    {"type": "message_start", "message": {"id": "m1", "type": "message", "role": "assistant",
     "content": [], "model": "x", "stop_reason": None, "stop_sequence": None,
     "usage": {"input_tokens": 1, "output_tokens": 1}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "message_stop"},
]

def test_raw_events(convo_assert_deterministic):
    report = convo_assert_deterministic(
        EVENTS, anthropic.DEFINITIONS, prepare=anthropic.prepare, event_type=anthropic.event_type
    )
    assert report.ok
"""
    )
    pytester.runpytest_inprocess("-p", "no:hypothesispytest").assert_outcomes(passed=1)


class TestScratchProject:
    """The README's example, and provider recordings, in a project outside the clone:
    ``pytest`` in a subprocess whose working directory is a fresh temporary folder."""

    @staticmethod
    def _run(project: Path) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *PLUGIN],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )

    @pytest.mark.slow
    def test_the_docs_example_passes_twice(self, tmp_path: Path) -> None:
        """docs/testing.md's example, in a project of its own outside this checkout."""
        page = (Path(__file__).parents[2] / "docs" / "testing.md").read_text(encoding="utf-8")
        blocks = re.findall(r"```python\n(.*?)```", page, flags=re.S)
        example = next(code for code in blocks if "convo_snapshot" in code)
        project = tmp_path / "scratch"
        project.mkdir()
        (project / "test_session.py").write_text(example)
        for _ in range(2):  # the first run writes the snapshot, the second compares
            result = self._run(project)
            assert result.returncode == 0, result.stdout + result.stderr
            assert "2 passed" in result.stdout
        assert (project / "__snapshots__" / "test_session" / "test_session_view.json").exists()

    @pytest.mark.slow
    @pytest.mark.parametrize(
        "name",
        [
            "anthropic_sdk_tool_use_response.sse",
            "openai_chat_parallel_tools.sse",
            "openai_responses_reasoning_function_calls.chunks.jsonl",
            "agui_parallel_tool_calls.json",
            "aisdk_ui_chunks_react_agent_tool_calling.json",
            "vercel-anthropic-anthropic-web-search-tool.1.chunks.txt",
        ],
    )
    def test_every_protocol_and_format(self, tmp_path: Path, name: str) -> None:
        source = shared_path("fixtures", "recorded", name)
        project = tmp_path / "scratch"
        (project / "recordings").mkdir(parents=True)
        shutil.copyfile(source, project / "recordings" / name)
        (project / "test_recording.py").write_text(
            f"LOG = 'recordings/{name}'\n\n"
            "def test_view(convo_snapshot):\n"
            "    assert convo_snapshot(LOG)\n\n"
            "def test_deterministic(convo_assert_deterministic):\n"
            "    convo_assert_deterministic(LOG, rounds=1)\n"
        )
        for _ in range(2):
            result = self._run(project)
            assert result.returncode == 0, result.stdout + result.stderr
            assert "2 passed" in result.stdout
