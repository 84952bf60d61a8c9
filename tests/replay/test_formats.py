"""load_events: format detection, SSE framing, arrays, raw JSON Lines, the recorded fixtures."""

from __future__ import annotations

import importlib.util
import io
import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from replay import LogError, load_events, write_log
from tests._shared import shared_files, shared_path

# The one recorded file that is not valid JSON Lines as published upstream: its first
# and last lines (response.created/completed) each lack their final "}".
BROKEN = "vercel-openai-responses-parallel-tool-call-wrapper.1.chunks.txt"


def load(data: bytes, **kw: Any) -> Any:
    return load_events(io.BytesIO(data), **kw)


def sse(text: str) -> bytes:
    return text.encode()


class TestDetection:
    """The format is told from the first bytes; a BOM is ignored."""

    @pytest.mark.parametrize(
        ("data", "fmt"),
        [
            (b'[{"type":"a"}]', "json"),
            (b'\xef\xbb\xbf  \n[{"type":"a"}]', "json"),
            (b'event: a\ndata: {"type":"a"}\n\n', "sse"),
            (b'data: {"type":"a"}\n\n', "sse"),
            (b': comment first\ndata: {"type":"a"}\n\n', "sse"),
            (b'{"type":"a"}\n', "jsonl"),
            (b'{"position":0,"event":{"type":"a"}}\n', "log"),
            (b'\xef\xbb\xbf{"type":"a"}\n', "jsonl"),
        ],
    )
    def test_detects(self, data: bytes, fmt: str) -> None:
        loaded = load(data)
        assert (loaded.format, loaded.events) == (fmt, [{"type": "a"}])

    def test_a_cut_first_line_does_not_hide_the_format(self) -> None:
        data = b'{"position":0,"event":{"ty\n{"position":1,"event":{"type":"a"}}\n'
        loaded = load(data, lenient=True)
        assert (loaded.format, loaded.events) == ("log", [{"type": "a"}])
        assert [p.line for p in loaded.problems] == [1]

    def test_our_log_is_read_with_its_path_in_messages(self, tmp_path: Path) -> None:
        path = tmp_path / "ours.jsonl"
        write_log(path, [{"type": "ping"}, {"type": "x"}])
        loaded = load_events(path)
        # Our log keeps what was recorded: keep-alives are dropped from provider formats only.
        assert (loaded.path, loaded.events) == (str(path), [{"type": "ping"}, {"type": "x"}])
        path.write_bytes(path.read_bytes() + b'{"position":2,"event":{]}\n')
        with pytest.raises(LogError, match=rf"^{path}, line 3, column 24: "):
            load_events(path)


class TestSSE:
    """SSE frames are read the way the provider SDKs read them."""

    def test_frames_comments_ping_done_and_empty_data(self) -> None:
        data = sse(
            ": keep-alive comment\n"
            'event: ping\ndata: {"type": "ping"}\n\n'
            'event: message_start\ndata: {"type":"message_start"}\n\n'
            'id: 7\nretry: 100\ndata: {"n":1}\n\n'
            "event: empty\n\n"
            "data:\n\n"
            "data: [DONE]\n\n"
        )
        loaded = load(data)
        assert loaded.events == [{"type": "message_start"}, {"n": 1}]

    def test_multi_line_data_is_joined_with_newlines(self) -> None:
        data = sse('data: {"a":\ndata:   [1,\ndata:2]}\n\n')
        assert load(data).events == [{"a": [1, 2]}]

    @pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
    def test_any_line_break(self, newline: str) -> None:
        text = 'event: a\ndata: {"x":1}\n\nevent: b\ndata: {"x":2}\n\n'
        loaded = load(sse(text.replace("\n", newline)))
        assert loaded.events == [{"x": 1, "type": "a"}, {"x": 2, "type": "b"}]

    def test_frame_name_fills_a_missing_type_only(self) -> None:
        data = sse('event: e1\ndata: {"type":"own"}\n\nevent: e2\ndata: [1]\n\n')
        assert load(data).events == [{"type": "own"}, [1]]

    def test_unterminated_last_frame_is_kept_when_complete(self) -> None:
        data = sse('data: {"n":1}\n\nevent: message_stop\ndata: {"type":"message_stop"}')
        loaded = load(data)
        assert (loaded.events, loaded.problems) == ([{"n": 1}, {"type": "message_stop"}], ())

    def test_unterminated_cut_last_frame_is_reported_not_fatal(self) -> None:
        loaded = load(sse('data: {"n":1}\n\ndata: {"n":'))
        assert loaded.events == [{"n": 1}]
        [problem] = loaded.problems
        assert (problem.line, problem.column, problem.truncated) == (3, 12, True)

    def test_bad_frame_in_the_middle_names_line_and_column(self) -> None:
        data = sse('data: {"n":1}\n\nevent: x\ndata: {"n" 2}\n\ndata: {"n":3}\n\n')
        with pytest.raises(LogError) as info:
            load(data)
        assert (info.value.line, info.value.column, info.value.truncated) == (4, 12, False)
        assert "<stream>, line 4, column 12: invalid SSE frame data" in str(info.value)
        loaded = load(data, lenient=True)
        assert loaded.events == [{"n": 1}, {"n": 3}]
        assert [p.line for p in loaded.problems] == [4]


class TestArraysAndJsonLines:
    """JSON arrays and JSON Lines of raw provider events."""

    def test_bad_array_names_line_and_column(self) -> None:
        data = b'\xef\xbb\xbf[\n  {"type": "a"},\n  {"type" "b"}\n]'
        with pytest.raises(LogError) as info:
            load(data)
        assert (info.value.line, info.value.column) == (3, 11)
        assert "invalid JSON array recording: JSON is malformed: expected ':'" in str(info.value)

    def test_cut_array_points_at_its_end(self) -> None:
        with pytest.raises(LogError) as info:
            load(b'[\n  {"type": "a"},\n  {"ty')
        assert (info.value.line, info.value.column) == (3, 7)

    def test_jsonl_drops_ping_keepalives(self) -> None:
        data = b'{"type":"a"}\n{"type":"ping"}\n{"type":"b","ping":1}\n'
        assert load(data).events == [{"type": "a"}, {"type": "b", "ping": 1}]

    def test_jsonl_bad_line_strict_and_lenient(self) -> None:
        data = b'{"type":"a"}\n{"type":\n{"type":"c"}\n'
        with pytest.raises(LogError, match=r"line 2, column 9: invalid JSON event"):
            load(data)
        assert load(data, lenient=True).events == [{"type": "a"}, {"type": "c"}]


# --- the recorded fixtures and the oracles' own readers ------------------------------------


class TestRecordedFixtures:
    """Every recorded file loads."""

    @pytest.mark.parametrize("path", shared_files("fixtures", "recorded"))
    def test_loads(self, path: Path) -> None:
        suffix_format = {".json": "json", ".sse": "sse", ".bin": "sse"}
        if path.name == BROKEN:
            with pytest.raises(LogError) as info:
                load_events(path)
            assert (info.value.line, info.value.column) == (1, 508)
            loaded = load_events(path, lenient=True)
            assert [p.line for p in loaded.problems] == [1, 6]
            assert len(loaded.events) == 4
            return
        loaded = load_events(path)
        assert loaded.problems == ()
        assert loaded.events
        assert all(isinstance(e, dict) for e in loaded.events)
        expected = suffix_format.get(
            path.suffix, "sse" if path.name.startswith("anthropic-sdk") else "jsonl"
        )
        assert loaded.format == expected


def _oracle(name: str) -> ModuleType:
    pytest.importorskip("anthropic" if "anthropic" in name else "openai")
    file = shared_path("oracles", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_oracle_{name}", file)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _js_reader(text: str) -> list[Any]:
    # A line-for-line port of the readers in oracles/oracle_aisdk.mjs and
    # oracle_agui.mjs (identical for arrays and JSON Lines, the formats used here).
    text = text.removeprefix("\ufeff")
    if text.lstrip().startswith("["):
        events: list[Any] = json.loads(text)
        return events
    return [json.loads(line) for line in text.split("\n") if line.strip()]


def _reader_for(path: Path) -> Callable[[str], list[Any]]:
    if "anthropic" in path.name:
        return _oracle("oracle_anthropic").read_events  # type: ignore[no-any-return]
    if "openai" in path.name:
        return _oracle("oracle_openai").read_events  # type: ignore[no-any-return]
    return _js_reader


def _last_frame_unterminated(path: Path) -> bool:
    text = path.read_text(encoding="utf-8")
    return text.lstrip().startswith(("event:", "data:")) and not text.endswith(("\n\n", "\r\n\r\n"))


FIXTURES = [
    *shared_files("fixtures", "recorded"),
    *shared_files("fixtures", "synthetic", pattern="*.*"),
    *shared_files("fixtures", "synthetic", "agui_edges"),
]


UNTERMINATED = [
    param
    for param in FIXTURES
    if isinstance(path := param.values[0], Path)  # type: ignore[attr-defined]
    and _last_frame_unterminated(path)
]


class TestSameEventsAsTheOracles:
    """load_events yields the lists the reference scripts' own readers fold."""

    @pytest.mark.parametrize("path", FIXTURES)
    def test_same_events(self, path: Path) -> None:
        read = _reader_for(path)
        text = path.read_text(encoding="utf-8")
        if path.name == BROKEN:
            with pytest.raises(json.JSONDecodeError):
                read(text)
            return
        expected = read(text)
        ours = load_events(path).events
        if _last_frame_unterminated(path):
            # The SDKs' SSE decoder discards a last frame with no blank line after it;
            # we keep it when its JSON is complete (see replay/_formats.py).
            assert ours[:-1] == expected
            assert ours[-1] == json.loads(text.rsplit("data:", 1)[1])
        else:
            assert ours == expected

    @pytest.mark.parametrize("path", UNTERMINATED)
    def test_the_kept_last_frame_does_not_change_the_sdk_fold(self, path: Path) -> None:
        oracle = _oracle("oracle_anthropic")
        from anthropic.lib.streaming._messages import accumulate_event

        def fold(events: list[Any]) -> Any:
            snapshot = None
            json_bufs: dict[int, bytes] = {}
            for event in events:
                if snapshot is None and event.get("type") != "message_start":
                    continue
                snapshot = accumulate_event(
                    event=event, current_snapshot=snapshot, json_bufs=json_bufs
                )
            assert snapshot is not None
            return snapshot.to_dict(mode="json", warnings=False)

        text = path.read_text(encoding="utf-8")
        assert fold(load_events(path).events) == fold(oracle.read_events(text))
