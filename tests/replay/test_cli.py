"""The ``convo`` command line, run in-process through ``main([...])`` (and twice for real)."""

from __future__ import annotations

import importlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import replay._progress as progress
import replay.cli._bench as bench_command
import replay.cli._check as check_command
import replay.cli._store as store_command
from definitions import builtin, event_type
from engine import Claim, Node, Reader
from replay import load_events, read_log, render_json, replay
from replay._determinism import check_determinism
from replay.cli import Exit, main
from replay.cli._serve import SERVE_HINT

from ._kinds import GlobalCounterKind
from .test_detect import BROKEN, FIXTURES, expected_protocol

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "replay" / "examples" / "agent_session.jsonl"


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    """``convo argv...`` in-process: (exit status, stdout, stderr)."""
    status = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return status, out, err


def assert_one_line_error(err: str, *parts: str) -> None:
    """A bad input gives one ``convo: error:`` line naming what is wrong, no traceback."""
    assert err.startswith("convo: error: "), err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    for part in parts:
        assert part in err, err


# -- a plug-in kind, loaded by --definitions with no change to the project ----------------


class StickyNote:
    """A kind the project does not know: ``{"type": "sticky", "id": ..., "text": ...}``."""

    kind = "sticky"
    event_types = frozenset({"sticky"})

    def match(self, event: dict[str, Any]) -> Claim | None:
        return Claim(event["id"], "start") if event.get("type") == "sticky" else None

    def start(self, event: dict[str, Any], reader: Reader) -> str:
        return str(event["text"])

    def update(self, state: str, event: dict[str, Any]) -> str:
        return state

    def render_text(self, node: Node) -> str:
        return f"sticky note: {node.state}"


class Exploding(StickyNote):
    """Raises on its second event: a definition failing in the middle of a log."""

    kind = "exploding"

    def start(self, event: dict[str, Any], reader: Reader) -> str:
        if event["id"] == "boom":
            raise ValueError("cannot take this note")
        return "ok"


PLUGIN = (StickyNote(),)
EXPLODING = (Exploding(),)
NOT_DETERMINISTIC = (GlobalCounterKind(),)
NOTES = [
    {"type": "sticky", "id": "a", "text": "first"},
    {"type": "sticky", "id": "boom", "text": "second"},
]


def fixture(predicate: Any) -> Path:
    """The first shared fixture for which ``predicate(path)`` holds, or skip."""
    for param in FIXTURES:
        path = param.values[0]  # type: ignore[attr-defined]
        if isinstance(path, Path) and predicate(path):
            return path
    pytest.skip("no such fixture in ../shared")


def write_jsonl(path: Path, events: list[Any]) -> Path:
    path.write_bytes(b"".join(json.dumps(event).encode() + b"\n" for event in events))
    return path


def example_events() -> list[Any]:
    return load_events(EXAMPLE).events


# -- replay ------------------------------------------------------------------------------


class _Html(HTMLParser):
    """Collects what a page is made of: tags, attributes, text, and unclosed elements."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(attrs)
        if tag not in ("meta", "br", "hr", "img", "input", "link", "wbr"):
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.open, f"</{tag}> closes nothing"
        assert self.open[-1] == tag, f"</{tag}> closes <{self.open[-1]}>"
        self.open.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse_html(page: str) -> _Html:
    parser = _Html()
    parser.feed(page)
    parser.close()
    return parser


class TestReplay:
    """convo replay LOG"""

    def test_text(self, capsys: pytest.CaptureFixture[str]) -> None:
        status, out, err = run(capsys, "replay", EXAMPLE, "--keys")
        assert (status, err) == (0, "")
        nodes = replay(example_events(), builtin.DEFINITIONS, event_type=event_type)
        headers = [line for line in out.splitlines() if line.startswith("#")]
        assert headers == [f"#{node.seq} {node.key}" for node in nodes]
        assert "\x1b[" not in out  # capsys is no terminal: plain text
        assert "approved (by maria" in out
        # Without --keys: what a person reads, no key anywhere, a blank line between.
        status, out, _ = run(capsys, "replay", EXAMPLE)
        assert out.startswith("user: CI started failing")
        assert "\n\nreasoning: The failure began" in out
        assert not any(node.key in out for node in nodes)

    def test_json(self, capsys: pytest.CaptureFixture[str]) -> None:
        status, out, _ = run(capsys, "replay", EXAMPLE, "--format", "json")
        assert status == 0
        nodes = replay(example_events(), builtin.DEFINITIONS, event_type=event_type)
        assert json.loads(out) == json.loads(render_json(nodes, builtin.DEFINITIONS))

    def test_html_is_complete(self, capsys: pytest.CaptureFixture[str]) -> None:
        status, out, _ = run(capsys, "replay", EXAMPLE, "--format", "html")
        assert status == 0
        assert out.startswith("<!DOCTYPE html>")
        page = parse_html(out)
        assert page.open == []  # every element closed
        nodes = replay(example_events(), builtin.DEFINITIONS, event_type=event_type)
        keys = [value for name, value in page.attrs if name == "data-key"]
        assert keys == [node.key for node in nodes]
        assert "script" not in page.tags
        assert "agent_session.jsonl" in "".join(page.text)  # the title

    def test_html_escapes_hostile_content(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        hostile = '<script>alert("x")</script><img src=x onerror=alert(1)>'
        log = write_jsonl(
            tmp_path / "hostile.jsonl",
            [
                {"type": "message.start", "id": hostile, "role": "user", "text": hostile},
                {"type": "sticky", "id": hostile, "text": hostile},
            ],
        )
        status, out, _ = run(
            capsys,
            "replay",
            log,
            "--format",
            "html",
            "-d",
            "definitions.builtin",
            "-d",
            f"{__name__}:PLUGIN",
        )
        assert status == 0
        page = parse_html(out)
        assert page.open == []
        assert not {"script", "img"} & set(page.tags)
        assert not any(name.startswith("on") for name, _ in page.attrs)
        assert hostile in "".join(page.text)  # shown, as text

    @pytest.mark.parametrize("at", [0, 1, 7, 200, 431])
    def test_at(self, at: int, capsys: pytest.CaptureFixture[str]) -> None:
        """--at N is the view after the first N events."""
        status, out, _ = run(capsys, "replay", EXAMPLE, "--at", str(at), "-f", "json")
        assert status == 0
        nodes = replay(example_events()[:at], builtin.DEFINITIONS, event_type=event_type)
        assert json.loads(out) == json.loads(render_json(nodes, builtin.DEFINITIONS))

    def test_at_zero_says_the_view_is_empty(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert run(capsys, "replay", EXAMPLE, "--at", "0") == (
            0,
            "(no nodes after 0 events)\n",
            "",
        )

    def test_at_past_the_end(self, capsys: pytest.CaptureFixture[str]) -> None:
        status, out, err = run(capsys, "replay", EXAMPLE, "--at", "432")
        assert (status, out) == (2, "")
        assert_one_line_error(err, "--at 432: the log has only 431 events")

    def test_at_negative_is_a_usage_error(self, capsys: pytest.CaptureFixture[str]) -> None:
        status, _, err = run(capsys, "replay", EXAMPLE, "--at", "-1")
        assert status == 2
        assert "expected a number >= 0" in err

    def test_output_file(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        target = tmp_path / "view.html"
        assert run(capsys, "replay", EXAMPLE, "-f", "html", "-o", target) == (0, "", "")
        assert target.read_text(encoding="utf-8").rstrip().endswith("</html>")

    def test_plugin_definitions(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A kind from any importable module, with no change to the project."""
        log = write_jsonl(tmp_path / "notes.jsonl", NOTES[:1])
        status, out, _ = run(capsys, "replay", log, "--definitions", f"{__name__}:PLUGIN")
        assert (status, out) == (0, "sticky note: first\n")

    def test_stdin(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(EXAMPLE.read_bytes())))
        status, out, _ = run(capsys, "replay", "-", "-f", "json")
        assert status == 0
        nodes = replay(example_events(), builtin.DEFINITIONS, event_type=event_type)
        assert [item["key"] for item in json.loads(out)] == [node.key for node in nodes]

    def test_detection_doubt_is_said_on_stderr(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        log = write_jsonl(tmp_path / "mixed.jsonl", [*example_events()[:5], {"type": "text-delta"}])
        status, out, err = run(capsys, "replay", log, "--keys")
        assert status == 0
        assert out.startswith("#0 message:msg-1")
        assert err.startswith(f"convo: warning: {log}: ambiguous recording, chose built-in kinds")

    @pytest.mark.parametrize(
        ("flag", "coloured"), [("always", True), ("never", False), ("auto", False)]
    )
    def test_color(self, flag: str, coloured: bool, capsys: pytest.CaptureFixture[str]) -> None:
        pytest.importorskip("rich")
        status, out, _ = run(capsys, "replay", EXAMPLE, "--color", flag)
        assert status == 0
        assert ("\x1b[" in out) is coloured


class TestEveryFixture:
    """convo replay renders each recorded and synthetic fixture readably."""

    @pytest.mark.slow
    @pytest.mark.parametrize("path", FIXTURES)
    def test_renders(self, path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        if expected_protocol(path) == "openai_responses":
            pytest.importorskip("definitions.openai_responses", reason="not written yet")
        lenient = ["--lenient"] if path.name == BROKEN else []
        status, text, err = run(capsys, "replay", path, "--keys", *lenient)
        assert status == 0, err
        if path.name == BROKEN:
            # Its response.created line is cut (upstream), so no response starts and the
            # deltas after it are dropped, as for a window that cut a start (DESIGN rule 3).
            assert text == "(no nodes after 4 events)\n"
            assert err.count("convo: warning: skipped: ") == 2
            return
        headers = [line for line in text.splitlines() if line.startswith("#")]
        assert headers, text
        # Readable: every node has a body line under its header, and no opaque token
        # (base64 search results, images, signatures) runs on for a page.
        assert len(text.splitlines()) > len(headers), text
        assert not re.search(r"[A-Za-z0-9+/=]{120,}", text), text
        status, page, _ = run(capsys, "replay", path, "-f", "html", *lenient)
        assert status == 0
        assert parse_html(page).open == []

    @pytest.mark.slow
    @pytest.mark.parametrize("path", FIXTURES)
    def test_renders_json(self, path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        protocol = expected_protocol(path)
        if protocol == "openai_responses":
            pytest.importorskip("definitions.openai_responses", reason="not written yet")
        lenient = ["--lenient"] if path.name == BROKEN else []
        status, data, err = run(capsys, "replay", path, "-f", "nodes", *lenient)
        assert status == 0, err
        if path.name == BROKEN:
            assert json.loads(data) == []
            return
        if protocol != "builtin":
            # json is the protocol's own: what its fold() returns.
            status, final, _ = run(capsys, "replay", path, "-f", "json", *lenient)
            module = importlib.import_module(f"definitions.{protocol}")
            expected = module.PROTOCOL.accumulate(load_events(path, lenient=bool(lenient)).events)
            assert json.loads(final) == json.loads(json.dumps(expected, default=str))
        status, text, _ = run(capsys, "replay", path, "--keys", *lenient)
        headers = [line.split(" ", 1)[1] for line in text.splitlines() if line.startswith("#")]
        assert [item["key"] for item in json.loads(data)] == headers

    def test_the_broken_fixture_is_refused_strictly_and_skipped_leniently(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = fixture(lambda p: p.name == BROKEN)
        status, out, err = run(capsys, "replay", path)
        assert (status, out) == (2, "")
        assert_one_line_error(err, f"{path}, line 1, column 508: invalid JSON event")


# -- bad input ---------------------------------------------------------------------------


class TestBadInput:
    """One line on stderr naming file, line and position; exit 2; never a traceback."""

    def test_malformed_line(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        log = tmp_path / "bad.jsonl"
        log.write_bytes(EXAMPLE.read_bytes().replace(b'"id":"msg-2"', b'"id":msg-2"', 1))
        status, out, err = run(capsys, "replay", log)
        assert (status, out) == (2, "")
        line = (
            EXAMPLE.read_bytes()
            .split(b"\n")
            .index(next(x for x in EXAMPLE.read_bytes().split(b"\n") if b'"id":"msg-2"' in x))
        )
        assert_one_line_error(err, f"{log}, line {line + 1}, column ", "invalid JSON event")

    def test_lenient_skips_and_reports(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        log = tmp_path / "bad.jsonl"
        log.write_bytes(b'{"type":"sticky","id":"a","text":"x"}\n{nope\n')
        log.write_bytes(log.read_bytes() + b'{"type":"sticky","id":"b","text":"y"}\n')
        status, out, err = run(
            capsys, "replay", log, "--lenient", "--keys", "-d", f"{__name__}:PLUGIN"
        )
        assert status == 0
        assert "sticky:a" in out
        assert "sticky:b" in out
        assert err.startswith(f"convo: warning: skipped: {log}, line 2, column 2: ")

    def test_missing_file(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        missing = tmp_path / "missing.jsonl"
        status, _, err = run(capsys, "replay", missing)
        assert status == 2
        assert_one_line_error(err, f"{missing}: No such file or directory")

    @pytest.mark.parametrize(
        ("spec", "reason"),
        [
            ("x.y:Z", "cannot import 'x.y:Z': ModuleNotFoundError: No module named 'x'"),
            (f"{__name__}:NOPE", f"cannot import '{__name__}:NOPE': AttributeError: "),
            (f"{__name__}:ROOT", f"cannot import '{__name__}:ROOT': expected a definition"),
        ],
    )
    def test_bad_definitions_spec(
        self, spec: str, reason: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        status, _, err = run(capsys, "replay", EXAMPLE, "--definitions", spec)
        assert status == 2
        assert_one_line_error(err, reason)

    def test_rejected_definition(self, capsys: pytest.CaptureFixture[str]) -> None:
        """A value that is not a definition is refused when registered, with the fix."""
        status, _, err = run(capsys, "replay", EXAMPLE, "-d", f"{__name__}:NOTES")
        assert status == 2
        assert_one_line_error(err, f"{EXAMPLE}: ")

    def test_definition_failing_mid_log(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        log = write_jsonl(tmp_path / "notes.jsonl", NOTES)
        status, out, err = run(capsys, "replay", log, "-d", f"{__name__}:EXPLODING")
        assert (status, out) == (2, "")
        assert_one_line_error(
            err, f"{log}: definition 'exploding'", "cannot take this note", "event #1"
        )

    @settings(max_examples=60, deadline=None)
    @given(st.binary(max_size=60))
    def test_garbage_never_tracebacks(self, data: bytes) -> None:
        """Whatever the bytes, the result is a view or a one-line error."""
        # No fixtures here: hypothesis runs the body many times per test.
        path = Path(tempfile.gettempdir()) / f"convo-garbage-{os.getpid()}.jsonl"
        path.write_bytes(data)
        try:
            err = io.StringIO()
            out = io.StringIO()
            saved = sys.stdout, sys.stderr
            sys.stdout, sys.stderr = out, err
            try:
                status = main(["replay", str(path)])
            finally:
                sys.stdout, sys.stderr = saved
        finally:
            path.unlink()
        assert status in (0, 2)
        if status == 2:
            assert_one_line_error(err.getvalue())
        else:
            assert out.getvalue()


class TestHostileLines:
    """Every bad line is one clean error naming file and line, and says --lenient."""

    @pytest.mark.parametrize(
        ("line", "cause"),
        [
            (b"42", "an event is a JSON object"),
            (b'"hello"', "an event is a JSON object"),
            (b'{"type":"x","v":' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested deeper"),
            (b'{"type":', "invalid JSON event"),
        ],
        ids=["number", "string", "deep", "syntax"],
    )
    @pytest.mark.parametrize("protocol", ["builtin", "anthropic"])
    def test_a_bad_line(
        self,
        line: bytes,
        cause: str,
        protocol: str,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        first = {
            "builtin": b'{"type":"message.start","id":"m","role":"user","text":"hi"}',
            "anthropic": b'{"type":"message_start","message":{"id":"m","role":"assistant",'
            b'"content":[],"model":"x"}}',
        }[protocol]
        log = tmp_path / "bad.jsonl"
        log.write_bytes(first + b"\n" + line + b"\n" + first.replace(b'"m"', b'"n"') + b"\n")
        status, _, err = run(capsys, "replay", log)
        assert status == 2
        assert_one_line_error(err, f"{log}, line 2, column ", cause, "--lenient skips")
        status, _out, err = run(capsys, "replay", log, "--lenient")
        assert status == 0, err
        assert f"skipped: {log}, line 2, column " in err
        assert "Traceback" not in err

    def test_lenient_is_not_suggested_when_given(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        log = tmp_path / "bad.json"
        log.write_bytes(b"[1, 2")  # an array: lenient keeps what it can, here nothing
        _, _, err = run(capsys, "replay", log)
        assert "--lenient" in err
        _, _, err = run(capsys, "replay", log, "--lenient")
        assert "--lenient" not in err


# -- progress ----------------------------------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class TestProgress:
    """A bar on stderr for long commands once DELAY has passed, when stderr is a
    terminal; never on stdout, never when piped, cleared at the end."""

    @pytest.fixture
    def plain(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The plain bar (rich hidden), shown from the first update."""
        monkeypatch.setitem(sys.modules, "rich.progress", None)
        monkeypatch.setattr(progress, "DELAY", 0.0)

    @pytest.mark.usefixtures("plain")
    def test_bar_on_a_terminal(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        _, before, _ = run(capsys, "replay", EXAMPLE, "-f", "json")
        terminal = _Terminal()
        monkeypatch.setattr(sys, "stderr", terminal)
        status = main(["replay", str(EXAMPLE), "-f", "json"])
        out, _ = capsys.readouterr()
        assert (status, out) == (0, before)  # same view, told in slices or not
        bar = terminal.getvalue()
        size = EXAMPLE.stat().st_size
        assert f"100% {size:,}/{size:,} bytes" in bar  # the bytes read and folded
        assert bar.endswith("\r\x1b[K")  # the line is cleared

    @pytest.mark.slow
    @pytest.mark.usefixtures("plain")
    @pytest.mark.parametrize(
        ("argv", "label"),
        [
            (["check", EXAMPLE, "--rounds", "1"], "checking"),
            (
                ["context", EXAMPLE, "-p", "anthropic", "--calls", "--model", "m"],
                "building requests",
            ),
            (
                [
                    "context",
                    EXAMPLE,
                    "-p",
                    "anthropic",
                    "--calls",
                    "--model",
                    "m",
                    "--policy",
                    "live",
                ],
                "building",
            ),
            (["bench", EXAMPLE, "--repeat", "1"], "timing decode"),
            (["store", "import", EXAMPLE], "importing"),
        ],
        ids=["check", "context", "context-economy", "bench", "store-import"],
    )
    def test_every_long_command(
        self,
        argv: list[Any],
        label: str,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        if argv[0] == "store":
            argv = ["store", "import", tmp_path / "s.sqlite3", *argv[2:]]
        terminal = _Terminal()
        monkeypatch.setattr(sys, "stderr", terminal)
        assert main([str(arg) for arg in argv]) == 0
        bar = terminal.getvalue()
        assert bar.startswith(f"\r{label}"), bar[:80]
        assert bar.endswith("\r\x1b[K")
        assert label not in capsys.readouterr().out

    def test_nothing_when_piped_or_quick(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        monkeypatch.setattr(progress, "DELAY", 0.0)
        assert run(capsys, "check", EXAMPLE, "--rounds", "1")[2] == ""  # piped: nothing
        terminal = _Terminal()
        monkeypatch.setattr(sys, "stderr", terminal)
        monkeypatch.setattr(progress, "DELAY", 3600.0)  # a run shorter than the delay
        assert main(["check", str(EXAMPLE), "--rounds", "1"]) == 0
        assert terminal.getvalue() == ""

    def test_rich_bar_is_removed_at_the_end(self, monkeypatch: pytest.MonkeyPatch) -> None:
        pytest.importorskip("rich.progress")
        terminal = _Terminal()
        with progress.Progress("folding", 10, unit="bytes", stream=terminal, delay=0) as bar:
            for done in range(11):
                bar.update(done)
        assert "folding" in terminal.getvalue()

    def test_unknown_total_counts(self, plain: None) -> None:
        terminal = _Terminal()
        with progress.Progress("building", None, unit="requests", stream=terminal) as bar:
            bar.advance()
            bar.advance(2)
        assert "\rbuilding 3 requests" in terminal.getvalue()


# -- check -------------------------------------------------------------------------------


class TestCheck:
    """convo check LOG"""

    def test_deterministic(self, capsys: pytest.CaptureFixture[str]) -> None:
        status, out, _ = run(capsys, "check", EXAMPLE, "--seed", "7", "--rounds", "1")
        assert status == 0
        assert re.fullmatch(
            rf"{re.escape(str(EXAMPLE))}: deterministic: 431 events replayed \d+ ways \(seed=7\)\n",
            out,
        )

    @pytest.mark.parametrize("protocol", ["anthropic", "openai_chat", "ag_ui", "ai_sdk"])
    def test_a_fixture_of_each_protocol(
        self, protocol: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = fixture(lambda p: expected_protocol(p) == protocol)
        status, out, _ = run(capsys, "check", path, "--rounds", "1")
        assert status == 0, out
        assert out.startswith(f"{path}: deterministic: ")

    @pytest.mark.parametrize("protocol", ["anthropic", "ai_sdk"])
    def test_raw_events_and_the_pre_pass(
        self, protocol: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The checker gets the raw events and the set's pre-pass (so windows are cut
        from the raw log and wrapped afresh), not the wrapped events."""
        path = fixture(lambda p: expected_protocol(p) == protocol)
        seen: dict[str, Any] = {}

        def spy(events: Any, definitions: Any, **options: Any) -> Any:
            seen["events"] = list(events)
            seen.update(options)
            return check_determinism(seen["events"], definitions, **options)

        monkeypatch.setattr(check_command, "check_determinism", spy)
        status, out, _ = run(capsys, "check", path, "--rounds", "1")
        assert status == 0, out
        assert seen["events"] == load_events(path).events
        assert seen["prepare"] is not None
        wrapped = list(seen["prepare"](seen["events"]))
        assert type(wrapped[0]) is not dict

    def test_divergence(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        log = write_jsonl(tmp_path / "notes.jsonl", [{"type": "note", "id": "n"}])
        status, out, _ = run(capsys, "check", log, "-d", f"{__name__}:NOT_DETERMINISTIC")
        assert status is Exit.DIVERGED
        head, first, *states = out.splitlines()
        assert head.startswith(f"{log}: NOT deterministic: 1 events replayed ")
        assert "disagree after event #0, node stamped:n" in first
        assert len(states) == 2


# -- bench -------------------------------------------------------------------------------


def test_bench(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """decode, fold and both, in events/s (one call per run: no timing in tests)."""
    monkeypatch.setattr(bench_command, "BENCH_RUN", 0.0)
    status, out, _ = run(capsys, "bench", EXAMPLE, "--repeat", "2")
    assert status == 0
    head, *rows = out.splitlines()
    assert head.startswith(f"{EXAMPLE}: 431 events, ")
    assert [row.split()[0] for row in rows] == ["decode", "fold", "decode+fold"]
    for row in rows:
        assert row.split()[2] == "events/s"
        assert float(row.split()[1].replace(",", "")) > 0


def test_bench_refuses_an_empty_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    status, _, err = run(capsys, "bench", empty)
    assert status == 2
    assert_one_line_error(err, f"{empty}: no events to measure")


# -- store -------------------------------------------------------------------------------


class TestStore:
    """convo store import|export|ls|append"""

    def test_round_trip(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        db = tmp_path / "events.sqlite"
        assert run(capsys, "store", "import", db, EXAMPLE) == (
            0,
            "imported 431 events into 'agent_session' (431 in all)\n",
            "",
        )
        assert run(capsys, "store", "ls", db) == (0, "agent_session\t431\n", "")
        exported = tmp_path / "out.jsonl"
        assert run(capsys, "store", "export", db, "agent_session", "-o", exported)[0] == 0
        log = read_log(exported)
        assert [entry.event for entry in log.entries] == example_events()
        assert [entry.position for entry in log.entries] == list(range(431))
        assert {entry.conversation for entry in log.entries} == {"agent_session"}
        # The exported log replays to the same view as the original.
        assert run(capsys, "replay", exported)[1] == run(capsys, "replay", EXAMPLE)[1]

    def test_export_to_stdout(
        self, tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes]
    ) -> None:
        db = tmp_path / "events.sqlite"
        assert main(["store", "import", str(db), str(EXAMPLE), "-c", "s"]) == 0
        capfdbinary.readouterr()
        assert main(["store", "export", str(db), "s"]) == 0
        out = capfdbinary.readouterr().out
        assert load_events(io.BytesIO(out)).events == example_events()

    def test_import_twice_needs_append(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        db = tmp_path / "events.sqlite"
        run(capsys, "store", "import", db, EXAMPLE, "--conversation", "c")
        status, _, err = run(capsys, "store", "import", db, EXAMPLE, "--conversation", "c")
        assert status == 2
        # No other writer: the message says what happened, not that one appended first.
        assert_one_line_error(
            err, f"{db}: conversation 'c' already has 431 events; nothing was imported", "--append"
        )
        assert "another writer" not in err
        status, out, _ = run(capsys, "store", "import", db, EXAMPLE, "-c", "c", "--append")
        assert (status, out) == (0, "imported 431 events into 'c' (862 in all)\n")

    def test_append_from_stdin(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        db = tmp_path / "events.sqlite"
        lines = b'{"type":"sticky","id":"a","text":"x"}\n{"type":"sticky","id":"b","text":"y"}\n'
        for expected in ("2\n", "4\n"):
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(lines)))
            assert run(capsys, "store", "append", db, "live") == (0, expected, "")
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(lines)))
        status, _, err = run(capsys, "store", "append", db, "live", "--expected-position", "3")
        assert status == 2
        assert_one_line_error(err, "expected to append at position 3, but it has 4 events")
        assert run(capsys, "store", "ls", db)[1] == "live\t4\n"

    @pytest.mark.parametrize("action", [["ls"], ["export", "c"]])
    def test_reading_a_missing_store_creates_nothing(
        self, action: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        db = tmp_path / "nope.sqlite"
        status, _, err = run(capsys, "store", action[0], db, *action[1:])
        assert status == 2
        assert_one_line_error(err, f"{db}: no such event store")
        assert not db.exists()

    @pytest.mark.parametrize("action", [["ls"], ["export", "c"]])
    def test_reading_another_database_changes_nothing(
        self, action: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        import sqlite3

        other = tmp_path / "other.db"
        db = sqlite3.connect(other)
        db.execute("CREATE TABLE people (name TEXT)")
        db.commit()
        db.close()
        empty = tmp_path / "empty.db"
        empty.touch()
        for path, cause in ((other, "not a convo event store"), (empty, "an empty file")):
            before = path.read_bytes()
            status, _, err = run(capsys, "store", action[0], path, *action[1:])
            assert status == 2
            assert_one_line_error(err, f"{path}: ", cause)
            assert path.read_bytes() == before
            assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db", "other.db"]

    @pytest.mark.parametrize(
        "action", [["ls"], ["export", "c"], ["import", "LOG"], ["append", "c"]]
    )
    def test_a_file_that_is_not_sqlite(
        self,
        action: list[str],
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        path = tmp_path / "notes.txt"
        path.write_bytes(b"not a database at all, but long enough to look at " * 40)
        before = path.read_bytes()
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"type":"x"}\n')))
        argv = [str(EXAMPLE) if a == "LOG" else a for a in action[1:]]
        status, _, err = run(capsys, "store", action[0], path, *argv)
        assert status == 2
        assert_one_line_error(err, f"{path}: ", "not an SQLite database")
        assert path.read_bytes() == before

    def test_a_store_in_a_missing_directory(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        db = tmp_path / "missing" / "events.sqlite"
        status, _, err = run(capsys, "store", "import", db, EXAMPLE)
        assert status == 2
        assert_one_line_error(err, f"{db}: no such directory")

    def test_import_and_export_in_pieces_round_trip(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        # Small pieces and pages: the streaming paths, on a log that spans many.
        import replay.logs._formats

        monkeypatch.setattr(replay.logs._formats, "_CHUNK", 512)
        monkeypatch.setattr(store_command, "_EXPORT_PAGE", 7)
        db = tmp_path / "events.sqlite"
        assert run(capsys, "store", "import", db, EXAMPLE, "-c", "c")[0] == 0
        out = tmp_path / "out.jsonl"
        assert run(capsys, "store", "export", db, "c", "-o", out)[0] == 0
        assert [e.event for e in read_log(out).entries] == load_events(EXAMPLE).events
        assert [e.position for e in read_log(out).entries] == list(range(431))

    def test_a_bad_line_imports_nothing(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        log = tmp_path / "log.jsonl"
        log.write_bytes(b'{"type":"sticky","id":"a","text":"x"}\n42\n{"type":"x"}\n')
        db = tmp_path / "events.sqlite"
        status, _, err = run(capsys, "store", "import", db, log)
        assert status == 2
        assert_one_line_error(err, f"{log}, line 2, column 1: ", "an event is a JSON object")
        assert run(capsys, "store", "ls", db)[1] == ""
        status, out, err = run(capsys, "store", "import", db, log, "--lenient")
        assert (status, out) == (0, "imported 2 events into 'log' (2 in all)\n")
        assert "skipped: " in err

    def test_export_unknown_conversation(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        db = tmp_path / "events.sqlite"
        run(capsys, "store", "import", db, EXAMPLE)
        status, _, err = run(capsys, "store", "export", db, "other")
        assert status == 2
        assert_one_line_error(err, f"{db}: no conversation 'other'")


# -- serve -------------------------------------------------------------------------------


class TestServe:
    """convo serve delegates to replay.serve._command, an optional extra."""

    def test_missing_module(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        monkeypatch.setitem(sys.modules, "replay.serve._command", None)
        assert run(capsys, "serve", "--port", "1") == (2, "", SERVE_HINT + "\n")

    def fake(self, monkeypatch: pytest.MonkeyPatch, run_: Any) -> list[Any]:
        calls: list[Any] = []
        module = ModuleType("replay.serve._command")

        def add_arguments(parser: Any) -> None:
            parser.add_argument("--port", type=int, default=8000)

        def run_serve(args: Any) -> int:
            calls.append(args.port)
            return int(run_(args))

        module.add_arguments = add_arguments  # type: ignore[attr-defined]
        module.run = run_serve  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "replay.serve._command", module)
        return calls

    def test_delegates(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        calls = self.fake(monkeypatch, lambda args: 0)
        assert run(capsys, "serve", "--port", "8123") == (0, "", "")
        assert calls == [8123]

    def test_missing_extra(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        def needs_starlette(args: Any) -> int:
            raise ModuleNotFoundError("No module named 'starlette'", name="starlette")

        self.fake(monkeypatch, needs_starlette)
        assert run(capsys, "serve") == (2, "", SERVE_HINT + "\n")


# -- exit status -------------------------------------------------------------------------


class TestExitStatus:
    """The statuses are a contract with scripts: named in ``Exit``, each number fixed."""

    def test_each_name_keeps_its_number(self) -> None:
        assert {name: int(status) for name, status in Exit.__members__.items()} == {
            "OK": 0,
            "DIVERGED": 1,
            "DATABASE_LOST": 1,
            "SERVER_FAILED": 1,
            "BAD_INPUT": 2,
            "INTERRUPTED": 130,
            "BROKEN_PIPE": 141,
        }

    def test_the_help_and_the_page_say_them(self, capsys: pytest.CaptureFixture[str]) -> None:
        from tests.make_cli_docs import PAGE, statuses

        assert (
            run(capsys, "--help")[1]
            .rstrip()
            .endswith("Exit status: 0 ok, 1 check found a divergence, 2 bad input or usage.")
        )
        # The page's table is the one written from Exit now (else run make_cli_docs).
        assert statuses() in PAGE.read_text(encoding="utf-8")
        assert statuses().count("\n") == len(Exit.__members__) - 1

    def test_a_usage_error_is_bad_input(self, capsys: pytest.CaptureFixture[str]) -> None:
        status, _, err = run(capsys, "replay", EXAMPLE, "--at", "x")
        assert status is Exit.BAD_INPUT
        assert "argument --at: expected a number >= 0, got x" in err
        assert run(capsys, "replay", EXAMPLE, "--at", "-1")[2] == err.replace("got x", "got -1")

    @pytest.mark.parametrize("option", ["--at", "--max-tokens"])
    def test_every_command_reads_a_count_alike(
        self, capsys: pytest.CaptureFixture[str], option: str
    ) -> None:
        # convo context's options live in the context room, with the same count rule.
        status, _, err = run(capsys, "context", EXAMPLE, "-p", "anthropic", option, "x")
        assert status is Exit.BAD_INPUT
        assert f"argument {option}: expected a number >= 0, got x" in err

    def test_success_is_ok(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert run(capsys, "replay", EXAMPLE, "--at", "0")[0] is Exit.OK


# -- real processes ----------------------------------------------------------------------


@pytest.mark.slow
def test_python_dash_m(tmp_path: Path) -> None:
    """``python -m replay`` in a real process: exit status, stdout, stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "replay", "replay", str(EXAMPLE), "--at", "2", "--keys"],
        capture_output=True,
        cwd=tmp_path,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, b"")
    assert done.stdout.decode().startswith("#0 message:msg-1\n  user: CI started failing")
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"{]\n")
    done = subprocess.run(
        [sys.executable, "-m", "replay", "replay", str(bad)], capture_output=True, check=False
    )
    assert done.returncode == 2
    assert_one_line_error(done.stderr.decode(), f"{bad}, line 1, column 2")


@pytest.mark.slow
def test_console_script(tmp_path: Path) -> None:
    """The installed ``convo`` script, loading a plug-in from the current directory."""
    script = Path(sys.executable).parent / "convo"
    if not script.exists():
        script = Path(shutil.which("convo") or script)
    if not script.exists():
        pytest.skip("the convo script is not installed (pip install -e .)")
    (tmp_path / "my_kinds.py").write_text(
        "from tests.replay.test_cli import StickyNote\nKINDS = [StickyNote()]\n"
    )
    log = write_jsonl(tmp_path / "notes.jsonl", NOTES[:1])
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [str(script), "replay", str(log), "--definitions", "my_kinds:KINDS", "-f", "json"],
        capture_output=True,
        cwd=tmp_path,
        env=env,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, b"")
    assert json.loads(done.stdout)[0]["state"] == "first"


class TestClosedPipe:
    """A reader that stops early (``convo replay LOG | head``) ends convo quietly."""

    def test_no_error_when_the_reader_goes_away(self, tmp_path: Path) -> None:
        log = tmp_path / "long.jsonl"
        lines = []
        for n in range(3000):  # far more text than a pipe's buffer holds
            lines.append(json.dumps({"type": "message.start", "id": f"m{n}", "role": "user"}))
            lines.append(json.dumps({"type": "message.delta", "id": f"m{n}", "text": "x" * 80}))
        log.write_text("\n".join(lines) + "\n")
        process = subprocess.Popen(
            [sys.executable, "-m", "replay", "replay", str(log)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert process.stdout is not None
        assert process.stderr is not None
        assert process.stdout.read(100)
        process.stdout.close()
        error = process.stderr.read()
        assert process.wait(timeout=60) == 141
        assert error == b""
