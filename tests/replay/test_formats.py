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
from hypothesis import given, settings
from hypothesis import strategies as st

from replay import LogError, load_events, write_log
from replay.logs._formats import Recording, parse_piece
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
        data = sse('event: e1\ndata: {"type":"own"}\n\nevent: e2\ndata: {"n":1}\n\n')
        assert load(data).events == [{"type": "own"}, {"n": 1, "type": "e2"}]

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


# -- hostile input: every format, the same rules ---------------------------------------

DEEP = b'{"type":"deep","v":' + b"[" * 100_000 + b"]" * 100_000 + b"}"

NOT_OBJECTS: dict[str, tuple[bytes, int]] = {
    # format: (a recording whose second event is the JSON value 42, that event's line)
    "jsonl": (b'{"type":"a"}\n42\n{"type":"b"}\n', 2),
    "log": (
        b'{"position":0,"event":{"type":"a"}}\n{"position":1,"event":42}\n'
        b'{"position":2,"event":{"type":"b"}}\n',
        2,
    ),
    "sse": (b'data: {"type":"a"}\n\ndata: 42\n\ndata: {"type":"b"}\n\n', 3),
    "json": (b'[{"type":"a"},\n42,\n{"type":"b"}]', 2),
}


class TestHostileInput:
    """A value that is not an object, nesting past the recursion limit, a cut array:
    a LogError naming the file and line (skipped with lenient), never another error."""

    @pytest.mark.parametrize("fmt", sorted(NOT_OBJECTS))
    @pytest.mark.parametrize("types", [None, "builtin"])
    def test_an_event_that_is_not_an_object(self, fmt: str, types: str | None) -> None:
        from definitions import builtin

        vocabulary = builtin.Event if types else None
        data, line = NOT_OBJECTS[fmt]
        with pytest.raises(LogError, match="Expected `object`, got `int`") as info:
            load_events(io.BytesIO(data), types=vocabulary)
        assert info.value.path is None
        if fmt != "json":
            assert info.value.line == line
        loaded = load_events(io.BytesIO(data), lenient=True, types=vocabulary)
        assert (loaded.format, loaded.events) == (fmt, [{"type": "a"}, {"type": "b"}])
        [problem] = loaded.problems
        assert problem.line == line
        assert "an event is a JSON object" in str(problem)

    @pytest.mark.parametrize(
        ("data", "line"),
        [
            (b'{"type":"a"}\n' + DEEP + b"\n", 2),
            (b'{"position":0,"event":{"type":"a"}}\n{"position":1,"event":' + DEEP + b"}\n", 2),
            (b'data: {"type":"a"}\n\ndata: ' + DEEP + b"\n\n", 3),
            (b'[{"type":"a"},' + DEEP + b"]", 1),
        ],
        ids=["jsonl", "log", "sse", "json"],
    )
    def test_nesting_past_the_recursion_limit(self, data: bytes, line: int, tmp_path: Path) -> None:
        path = tmp_path / "deep.txt"
        path.write_bytes(data)
        with pytest.raises(LogError, match="nested deeper than the decoder follows") as info:
            load_events(path)
        assert str(info.value).startswith(f"{path}, line {line}, column ")
        loaded = load_events(path, lenient=True)
        assert loaded.events == [{"type": "a"}]
        assert [p.line for p in loaded.problems] == [line]

    def test_a_cut_array_keeps_the_complete_elements_when_lenient(self) -> None:
        data = b'[\n{"type":"a"},\n{"type":"b","n":[1,2]},\n{"type":"c","text":"cut he'
        with pytest.raises(LogError, match="truncated"):
            load(data)
        loaded = load(data, lenient=True)
        assert loaded.events == [{"type": "a"}, {"type": "b", "n": [1, 2]}]
        [problem] = loaded.problems
        assert (problem.line, problem.column) == (4, 27)  # where the input ends
        assert "event 2" in str(problem)

    def test_a_lenient_array_skips_bad_elements_only(self) -> None:
        from definitions import builtin

        data = b'[{"type":"a"}, 7, {"type":"message.start","id":1}, {"type":"b"}]'
        loaded = load(data, lenient=True, types=builtin.Event)
        assert loaded.events == [{"type": "a"}, {"type": "b"}]
        assert ["event 1" in str(p) for p in loaded.problems] == [True, False]
        assert "event 2" in str(loaded.problems[1])
        loaded = load(b'[{"type":"a"} {"type":"b"}]', lenient=True)
        assert loaded.events == [{"type": "a"}]
        assert "after event 0" in str(loaded.problems[0])


# -- reading in pieces -------------------------------------------------------------------

_event = st.fixed_dictionaries(
    {"type": st.sampled_from(["message.delta", "x", "ping"]), "text": st.text(max_size=8)}
)


def _as(fmt: str, events: list[Any], bad: list[bool]) -> bytes:
    parts = []
    for index, (event, broken) in enumerate(zip(events, bad, strict=True)):
        text = json.dumps(event)
        if broken:
            text = text[:-1]
        if fmt == "log":
            parts.append(f'{{"position":{index},"event":{text}}}\n')
        elif fmt == "sse":
            parts.append(f"event: e\ndata: {text}\n\n")
        else:
            parts.append(text + "\n")
    return "".join(parts).encode()


class TestPieces:
    """A recording read in pieces gives exactly the events and problems of one read,
    with the same line numbers, whatever the piece size."""

    @settings(max_examples=60, deadline=None)
    @given(
        fmt=st.sampled_from(["log", "sse", "jsonl"]),
        events=st.lists(_event, min_size=1, max_size=30),
        data=st.data(),
        chunk=st.integers(1, 200),
    )
    def test_pieces_agree_with_one_read(
        self, fmt: str, events: list[Any], data: st.DataObject, chunk: int
    ) -> None:
        bad = data.draw(st.lists(st.booleans(), min_size=len(events), max_size=len(events)))
        if bad[0]:
            bad[0] = False  # the format is told from the first good line
        raw = _as(fmt, events, bad)
        if data.draw(st.booleans()):
            raw = raw.rstrip(b"\n")  # no newline at the end: a torn last line
        whole = load(raw, lenient=True)
        got: list[Any] = []
        problems: list[tuple[int, int, bool]] = []
        with Recording(io.BytesIO(raw), chunk=chunk) as recording:
            assert recording.format == whole.format
            for piece, line, final in recording.pieces():
                evs, probs = parse_piece(
                    piece, recording.format, path=None, lenient=True, first_line=line, final=final
                )
                got += evs
                problems += [(p.line, p.column, p.truncated) for p in probs]
        assert got == whole.events
        assert problems == [(p.line, p.column, p.truncated) for p in whole.problems]

    def test_strict_pieces_raise_at_the_first_bad_line(self, tmp_path: Path) -> None:
        path = tmp_path / "log.jsonl"
        path.write_bytes(b'{"type":"a"}\n' * 50 + b'{"type":\n' + b'{"type":"b"}\n')

        def read_all() -> None:
            with Recording(path, chunk=64) as recording:
                for piece, line, final in recording.pieces():
                    parse_piece(
                        piece, "jsonl", path=str(path), lenient=False, first_line=line, final=final
                    )

        with pytest.raises(LogError) as info:
            read_all()
        assert info.value.line == 51
        assert str(info.value).startswith(f"{path}, line 51, ")
