"""Every Python example in the README and the docs runs, and the docs build.

A ```python block runs as it is, in a fresh namespace, in a scratch directory, with
the repository's ``replay/examples`` and ``tests/recording/recordings`` reachable by
their relative paths. A block right after an HTML comment marker (invisible on the
rendered page) runs another way:

- ``<!-- test: pytest -->``: it is a test module of a user's project; pytester runs
  it twice (the first run may write snapshots), and both runs pass;
- ``<!-- test: by NAME -->``: a named test of this suite runs it with what it needs
  (a server, a thread); the marker is checked to name a test that exists;
- ``<!-- test: excerpt of PATH -->``: it is a piece of a test module of this suite,
  line for line (checked here), so it runs where it comes from.

Nothing else is exempt: an example a user may copy is an example that runs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests._shared import require

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_BLOCK = re.compile(
    r"(?:^<!--\s*test:\s*([^>]*?)\s*-->\n)?^```python[^\n]*\n(.*?)^```", re.S | re.M
)

pytest_plugins = ["pytester"]


Block = tuple[str, int, str, str]  # page, line, marker ("" for none), code


def blocks() -> list[Block]:
    """Every ```python block of the README and the docs."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in _BLOCK.finditer(text):
            line = text.count("\n", 0, match.start(2)) + 1
            found.append((str(page.relative_to(ROOT)), line, match.group(1) or "", match.group(2)))
    return found


BLOCKS = blocks()
PLAIN = [(page, line, code) for page, line, mark, code in BLOCKS if not mark]
PYTEST = [(page, line, code) for page, line, mark, code in BLOCKS if mark == "pytest"]
NAMED = [(page, line, mark) for page, line, mark, _ in BLOCKS if mark.startswith("by ")]
EXCERPTS = [
    (page, line, mark, code) for page, line, mark, code in BLOCKS if mark.startswith("excerpt of ")
]
UNKNOWN = [(page, line, mark) for page, line, mark, _ in BLOCKS if mark]


def ids(found: list[tuple[str, int, str]]) -> list[str]:
    return [f"{page}:{line}" for page, line, _ in found]


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch directory holding what the examples name by relative path."""
    for relative in ("replay/examples", "tests/recording/recordings"):
        source = ROOT / relative
        if source.exists():
            shutil.copytree(source, tmp_path / relative)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(("page", "line", "code"), PLAIN, ids=ids(PLAIN))
@pytest.mark.usefixtures("scratch")
def test_example_runs(page: str, line: int, code: str) -> None:
    exec(compile(code, f"{page}:{line}", "exec"), {"__name__": "__doc_example__"})


@pytest.mark.slow
@pytest.mark.parametrize(("page", "line", "code"), PYTEST, ids=ids(PYTEST))
def test_pytest_example_passes(page: str, line: int, code: str, pytester: pytest.Pytester) -> None:
    for relative in ("replay/examples", "tests/recording/recordings"):
        if (ROOT / relative).exists():
            shutil.copytree(ROOT / relative, pytester.path / relative)
    pytester.makepyfile(test_example=code)
    for _ in range(2):  # the first run may write snapshots or recordings; both pass
        result = pytester.runpytest_inprocess("-p", "no:hypothesispytest", "-q")
        outcomes = result.parseoutcomes()
        assert outcomes.get("passed", 0) >= 1, result.stdout.str()
        assert not outcomes.get("failed"), result.stdout.str()


def test_every_marker_is_known_and_names_a_test() -> None:
    """A marker is ``pytest`` or ``by NAME``, NAME a test function of this suite."""
    sources = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests").rglob("test_*.py"))
    for page, line, mark in UNKNOWN:
        known = mark == "pytest" or mark.startswith(("by ", "excerpt of "))
        assert known, f"{page}:{line}: marker {mark!r}"
    for page, line, mark in NAMED:
        name = mark.removeprefix("by ").strip()
        assert f"def {name}(" in sources, f"{page}:{line} names {name}, which is no test"


@pytest.mark.slow
def test_the_docs_build_strictly(tmp_path: Path) -> None:
    """``mkdocs build --strict``: every link, nav entry and API name resolves."""
    found = shutil.which("mkdocs") or (Path(sys.executable).parent / "mkdocs")
    require(
        "mkdocs",
        "the docs extra is not installed: pip install -e '.[docs]'",
        found=Path(found).exists(),
    )
    result = subprocess.run(
        [str(found), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]


def test_the_cli_page_names_every_command_and_option() -> None:
    """docs/cli.md is the parser's help: a new command or option fails here until
    ``python -m tests.make_cli_docs`` writes the page again."""
    from replay.cli import build_parser
    from tests.make_cli_docs import PAGE, commands

    text = PAGE.read_text(encoding="utf-8")
    for name, parser in commands(build_parser()):
        assert f"`{name}`" in text, f"{name} is not on docs/cli.md"
        for action in parser._actions:
            for option in action.option_strings:
                assert option in text, f"{name} {option} is not on docs/cli.md"


@pytest.mark.parametrize(
    ("page", "line", "mark", "code"), EXCERPTS, ids=[f"{p}:{n}" for p, n, _, _ in EXCERPTS]
)
def test_an_excerpt_is_the_test_it_names(page: str, line: int, mark: str, code: str) -> None:
    """Every line of the block stands in the named test module, in the same order."""
    source = (ROOT / mark.removeprefix("excerpt of ").strip()).read_text(encoding="utf-8")
    lines = iter(source.splitlines())
    for wanted in (text for text in code.splitlines() if text.strip()):
        assert any(text == wanted for text in lines), f"{page}:{line}: {wanted!r} is not there"
