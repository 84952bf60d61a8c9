"""The README's examples run, and its set-up commands are the ones CI runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", README, flags=re.S)

pytest_plugins = ["pytester"]


def test_readme_opens_with_the_two_setup_commands() -> None:
    shell = [code.strip() for lang, code in BLOCKS if lang == "sh"]
    main_job, tests = shell[0], shell[1]
    assert "pip install -e ." in main_job
    assert "convo replay replay/examples/" in main_job
    assert tests.endswith("pip install -e '.[test]' && pytest")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -e '.[test]' && pytest" in ci.splitlines()[-1]


def test_the_example_runs_and_prints_two_notifications(
    capsys: pytest.CaptureFixture[str],
) -> None:
    example = next(code for lang, code in BLOCKS if lang == "python" and "class Message" in code)
    exec(compile(example, "README.md", "exec"), {})
    assert capsys.readouterr().out.splitlines() == ["['']", "['Hello']"]


def test_the_model_context_example_collects_the_sub_task(
    capsys: pytest.CaptureFixture[str],
) -> None:
    example = next(code for lang, code in BLOCKS if lang == "python" and "CoopContext" in code)
    exec(compile(example, "README.md", "exec"), {})
    assert capsys.readouterr().out == (
        "You are a careful coding agent. ['Fix the failing test.', "
        "'Sub-task result: a UTC offset bug.', 'It is the UTC offset.']\n"
    )


def test_the_plugin_example_passes(pytester: pytest.Pytester) -> None:
    example = next(code for lang, code in BLOCKS if lang == "python" and "convo_snapshot" in code)
    example = example.replace('"replay/examples/', f'"{ROOT}/replay/examples/')
    pytester.makepyfile(test_session=example)
    # Twice: the first run writes the snapshot, the second compares with it.
    pytester.runpytest_inprocess("-p", "no:hypothesispytest").assert_outcomes(passed=2)
    pytester.runpytest_inprocess("-p", "no:hypothesispytest").assert_outcomes(passed=2)
