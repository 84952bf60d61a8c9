"""The mutation fuzzer over every shared recording and session format: any field of any
line (or of the whole document) is given another JSON value, and the file is read the
way a user reads it (``convo replay`` to text and to HTML, in-process): either it
renders, or the command exits 2 with one line naming the file and where (a line, an
event's position), after any warnings. A traceback, a crash, or an exit without a word fails.

Bounded: fixed seeds (derandomized), a capped number of examples, each file cut to its
first lines; the whole suite runs in about a minute on one core. Prints what it tried
and what held.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import functools
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from definitions.gateways import GATEWAYS
from replay import LogError
from replay.cli import main
from replay.recording import RecordingError
from replay.recording._player import read_calls
from tests._shared import SHARED, require
from tests.conformance.test_mutations import _paths

pytestmark = pytest.mark.slow  # 400 reads through the CLI: about 40 s on one core

ROOT = Path(__file__).resolve().parents[2]
LINES = 40  # each line-based file is cut to its first lines: a few kinds, fast to fold
SKIP = ("cassette",)  # the cassette reader is bounded and fuzzed by its own suite

# What a field becomes: each JSON type, empty and not, and the ones that broke readers.
VALUES: tuple[Any, ...] = (
    None,
    0,
    -1,
    7,
    1.5,
    1e308,
    True,
    "",
    "x",
    [],
    [1],
    [1, 2],
    {},
    {"a": 1},
    {"type": [1]},
    [[[[]]]],
)


@functools.cache
def corpus() -> tuple[tuple[str, str, tuple[Any, ...]], ...]:
    """(name, form, values): every shared file of a JSON-based format, decoded; form is
    ``lines`` (one value per line), ``document`` (one value) or ``sse`` (one value per
    ``data:`` line)."""
    paths = sorted(ROOT.joinpath("tests", "recorded").glob("*.jsonl"))
    paths += sorted(ROOT.joinpath("tests", "recording", "recordings").rglob("*.jsonl"))
    paths.append(ROOT / "replay" / "examples" / "agent_session.jsonl")
    if SHARED is not None:
        fixtures = Path(SHARED) / "fixtures"
        paths += sorted(
            p
            for p in fixtures.rglob("*")
            if p.suffix in (".jsonl", ".json", ".sse", ".traj")
            and not any(word in p.name for word in SKIP)
        )
    found: list[tuple[str, str, tuple[Any, ...]]] = []
    for path in paths:
        name = str(path.relative_to(path.parents[2]))
        data = path.read_bytes()
        try:
            if path.suffix in (".json", ".traj"):
                if len(data) > 400_000:
                    continue
                found.append((name, "document", (json.loads(data),)))
            elif path.suffix == ".sse":
                found.append((name, "sse", (data.decode(),)))
            else:
                lines = [line for line in data.split(b"\n")[:LINES] if line.strip()]
                if sum(map(len, lines)) > 400_000:
                    lines = lines[:3]
                found.append((name, "lines", tuple(json.loads(line) for line in lines)))
        except ValueError:
            continue  # not JSON at all: the hostile-lines suite covers those
    require("recordings", "no recording found to mutate", found=bool(found))
    return tuple(found)


def retype(draw: st.DrawFn, value: Any) -> tuple[Any, str]:
    """``value`` (copied) with one field, or itself, given another JSON value."""
    out = copy.deepcopy(value)
    paths = _paths(out)
    new = draw(st.sampled_from(VALUES))
    if not paths or draw(st.integers(0, 9)) == 0:
        return new, f"$ = {new!r}"
    *parents, key = draw(st.sampled_from(paths))
    holder = out
    for step in parents:
        holder = holder[step]
    holder[key] = new
    return out, f"$.{'.'.join(map(str, (*parents, key)))} = {new!r}"


def _sse(draw: st.DrawFn, text: str) -> tuple[str, str]:
    lines = text.split("\n")
    data = [n for n, line in enumerate(lines) if line.startswith("data: {")]
    if not data:
        return text, "unchanged"
    n = draw(st.sampled_from(data))
    value, how = retype(draw, json.loads(lines[n][6:]))
    lines[n] = "data: " + json.dumps(value)
    return "\n".join(lines), f"frame at line {n + 1}: {how}"


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, bytes, str]:
    name, form, values = draw(st.sampled_from(corpus()))
    if form == "document":
        value, how = retype(draw, values[0])
        return name, json.dumps(value).encode(), how
    if form == "sse":
        text, how = _sse(draw, values[0])
        return name, text.encode(), how
    at = draw(st.integers(0, len(values) - 1))
    changed = list(values)
    changed[at], how = retype(draw, values[at])
    return name, b"".join(json.dumps(v).encode() + b"\n" for v in changed), f"line {at + 1}: {how}"


TRIED: collections.Counter[str] = collections.Counter()
# How a user reads a file: rendered as text and as a page, and projected to the request
# a model would get through each gateway (the Chat gateway reads every message field).
COMMANDS = [
    ("replay", "--format", "text"),
    ("replay", "--format", "html"),
    *(("context", "--provider", name) for name in sorted(GATEWAYS)),
]


def played(path: Path) -> str:
    """A recording of model calls is also read for playback (``replay.playback`` reads it
    so): every call's bytes are produced (``""``), or a library error says where."""
    try:
        for call in read_calls(path):
            for _ in call.chunks(None):
                pass
    except (LogError, RecordingError) as exc:
        TRIED["playback refused"] += 1
        return str(exc)
    TRIED["played back"] += 1
    return ""


def convo(*args: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(list(args))
    return status, err.getvalue()


@settings(
    max_examples=400,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=mutated(), command=st.sampled_from(COMMANDS))
def test_a_retyped_field_renders_or_is_one_line_naming_where(
    tmp_path_factory: pytest.TempPathFactory, case: tuple[str, bytes, str], command: tuple[str, ...]
) -> None:
    name, data, how = case
    note(f"{name}: {how}")
    directory = tmp_path_factory.mktemp("retyped")
    path = directory / Path(name).name
    path.write_bytes(data)
    status, err = convo(command[0], str(path), *command[1:])
    TRIED["renders" if status == 0 else "refused"] += 1
    if b"recording/" in data:
        refused = played(path)
        assert not refused or "line" in refused or "position" in refused, refused
    assert status in (0, 2), err
    if status == 2:
        # Warnings may come first; the error is the last line, and no traceback.
        last = err.strip().splitlines()[-1]
        assert "Traceback" not in err, err
        assert last.startswith("convo: error: "), err
        assert str(path) in last or path.name in last, err
        lines = [last]
        if command[0] == "replay":  # reading and rendering say where
            assert any(word in lines[0] for word in ("line", "event #", "node")), err
        else:  # the projection to a request: a message, rebuilt whole, may be refused
            TRIED["projection refused"] += 1


def test_zz_report() -> None:
    """What the fuzzer tried (run after it: the name sorts last)."""
    print(
        f"retyped fields: {len(corpus())} files, {TRIED['renders'] + TRIED['refused']} "
        "mutated reads: "
        f"{TRIED['renders']} read, {TRIED['refused']} refused with one line naming where, "
        f"({TRIED['projection refused']} of them by `convo context`, naming the file and "
        "what, not always the position), 0 tracebacks; of the recordings of model calls, "
        f"{TRIED['played back']} played back and {TRIED['playback refused']} refused "
        "naming the line or record"
    )
