"""Our JSON Lines log: round trips, bad lines, torn tails, the appending writer."""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from engine import ConversationError
from replay import Entry, LogError, LogWriter, ReplayError, read_log, write_log

# JSON values msgspec round-trips exactly (ints within 64 bits, finite floats).
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
events = st.dictionaries(st.text(), json_values, max_size=5)
logs = st.lists(events, max_size=20)

tmp_settings = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


def lines(*texts: str) -> bytes:
    return "".join(t + "\n" for t in texts).encode()


def entry(position: int, event: Any) -> str:
    return msgspec.json.encode({"position": position, "event": event}).decode()


class TestErrorTree:
    """LogError sits under the replay root, under the engine's root."""

    def test_hierarchy(self) -> None:
        assert issubclass(LogError, ReplayError)
        assert issubclass(ReplayError, ConversationError)
        assert issubclass(LogError, ValueError)


class TestReadLog:
    """read_log decodes envelopes, keeps payloads raw, and locates bad lines."""

    def test_reads_entries_in_order(self, tmp_path: Path) -> None:
        path = tmp_path / "log.jsonl"
        path.write_bytes(
            lines(
                '{"position":0,"event":{"type":"a"},"conversation":"c","time":1.5}',
                '{"position":1,"event":{"type":"b"}}',
            )
        )
        log = read_log(path)
        assert log.entries == [Entry(0, {"type": "a"}, "c", 1.5), Entry(1, {"type": "b"})]
        assert log.events() == [{"type": "a"}, {"type": "b"}]
        assert log.problems == ()
        assert log.path == str(path)

    def test_unknown_event_payloads_pass_through_byte_for_byte(self, tmp_path: Path) -> None:
        payload = '{"type":"plugin.kind/v9","x":[1,{"y":null}],"z":"\\u2600"}'
        path = tmp_path / "log.jsonl"
        path.write_bytes(lines(f'{{"position":0,"event":{payload}}}'))
        [only] = read_log(path).entries
        assert only.event == {"type": "plugin.kind/v9", "x": [1, {"y": None}], "z": "\u2600"}
        [raw] = read_log(path, lazy=True).entries
        assert bytes(raw.event) == payload.encode()

    def test_lazy_entries_decode_to_the_same_events(self) -> None:
        data = lines(entry(0, {"a": [1]}), '{"position":1,"event":"x","time":2.5}')
        lazy = read_log(io.BytesIO(data), lazy=True)
        assert [type(e.event) for e in lazy.entries] == [msgspec.Raw, msgspec.Raw]
        assert [(e.position, e.time) for e in lazy.entries] == [(0, None), (1, 2.5)]
        assert lazy.events() == read_log(io.BytesIO(data)).events() == [{"a": [1]}, "x"]

    def test_blank_lines_and_crlf_are_ignored(self) -> None:
        data = b'\r\n{"position":0,"event":1}\r\n   \n{"position":1,"event":2}\r\n\n'
        assert read_log(io.BytesIO(data)).events() == [1, 2]

    def test_empty_file_is_an_empty_log(self) -> None:
        log = read_log(io.BytesIO(b""))
        assert (log.entries, log.problems) == ([], ())

    def test_bad_line_in_the_middle_is_fatal_with_file_line_and_column(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "log.jsonl"
        path.write_bytes(lines(entry(0, 1), '{"position":1,"event":{"a" 1}}', entry(2, 3)))
        with pytest.raises(LogError) as info:
            read_log(path)
        error = info.value
        assert (error.path, error.line, error.column, error.truncated) == (str(path), 2, 28, False)
        assert str(error).startswith(f"{path}, line 2, column 28: invalid log entry: ")
        assert "expected ':'" in str(error)

    def test_column_counts_characters_not_bytes(self) -> None:
        data = lines(entry(0, 1), '{"position":1,"event":"\u2600\u2600" x}')
        with pytest.raises(LogError) as info:
            read_log(io.BytesIO(data))
        assert (info.value.line, info.value.column) == (2, 28)  # bytes would say 32

    def test_wrong_envelope_type_keeps_msgspecs_location(self) -> None:
        data = lines(entry(0, 1), '{"position":"one","event":2}', entry(2, 3))
        with pytest.raises(LogError) as info:
            read_log(io.BytesIO(data))
        assert info.value.line == 2
        assert str(info.value).endswith("Expected `int`, got `str` - at `$.position`")
        assert str(info.value).startswith("<stream>, line 2, column 1: ")

    def test_missing_event_is_a_bad_line(self) -> None:
        with pytest.raises(LogError, match=r"line 1, .*missing required field `event`"):
            read_log(io.BytesIO(lines('{"position":0}')))

    def test_two_values_on_one_line_are_a_bad_line(self) -> None:
        data = lines(entry(0, 1), entry(1, 2) + entry(2, 3), entry(3, 4))
        with pytest.raises(LogError) as info:
            read_log(io.BytesIO(data))
        assert info.value.line == 2

    def test_lenient_skips_and_reports_every_bad_line(self) -> None:
        data = lines(entry(0, 1), "{oops", entry(2, 3), "[1,", entry(4, 5))
        log = read_log(io.BytesIO(data), lenient=True)
        assert log.events() == [1, 3, 5]
        assert [(p.line, p.truncated) for p in log.problems] == [(2, False), (4, False)]

    def test_truncated_last_line_is_recovered_in_strict_mode(self) -> None:
        data = lines(entry(0, 1), entry(1, 2)) + entry(2, {"text": "cut"})[:-7].encode()
        log = read_log(io.BytesIO(data))
        assert log.events() == [1, 2]
        [problem] = log.problems
        assert (problem.line, problem.truncated) == (3, True)
        assert "crash while writing" in str(problem)

    def test_bad_last_line_with_a_newline_is_not_a_torn_write(self) -> None:
        data = lines(entry(0, 1), entry(1, 2)[:-3])
        with pytest.raises(LogError) as info:
            read_log(io.BytesIO(data))
        assert (info.value.line, info.value.truncated) == (2, False)

    def test_good_last_line_without_newline_is_kept(self) -> None:
        data = lines(entry(0, 1)) + entry(1, 2).encode()
        log = read_log(io.BytesIO(data))
        assert (log.events(), log.problems) == ([1, 2], ())

    def test_invalid_utf8_is_a_bad_line(self) -> None:
        data = lines(entry(0, 1)) + b'{"position":1,"event":"\xff"}\n' + lines(entry(2, 3))
        assert read_log(io.BytesIO(data), lenient=True).events() == [1, 3]
        with pytest.raises(LogError, match="line 2"):
            read_log(io.BytesIO(data))

    @pytest.mark.slow
    @given(logs)
    @tmp_settings
    def test_random_logs_round_trip(self, tmp_path: Path, evs: list[dict[str, Any]]) -> None:
        path = tmp_path / "round.jsonl"
        assert write_log(path, evs, conversation="c") == len(evs)
        log = read_log(path)
        assert log.events() == evs
        assert [e.position for e in log.entries] == list(range(len(evs)))
        assert {e.conversation for e in log.entries} <= {"c"}

    @pytest.mark.slow
    @given(st.lists(events, min_size=1, max_size=20), st.data())
    def test_one_corrupt_line_loses_exactly_that_line(
        self, evs: list[dict[str, Any]], data: st.DataObject
    ) -> None:
        raw = io.BytesIO()
        for i, ev in enumerate(evs):
            raw.write(entry(i, ev).encode() + b"\n")
        texts = raw.getvalue().split(b"\n")[:-1]
        bad = data.draw(st.integers(0, len(texts) - 1), label="bad line index")
        line = texts[bad]
        how = data.draw(st.sampled_from(["cut", "insert"]), label="corruption")
        at = data.draw(st.integers(1, len(line) - 1), label="at")
        if how == "cut":
            corrupt = line[:at]
        else:
            corrupt = (
                line[:at] + data.draw(st.sampled_from([b"\x00", b"}", b"{", b'"'])) + line[at:]
            )
        try:
            msgspec.json.decode(corrupt, type=Entry)
        except msgspec.DecodeError:
            pass
        else:
            assume(False)  # the corruption happened to stay a valid entry
        texts[bad] = corrupt
        log = read_log(io.BytesIO(b"\n".join(texts) + b"\n"), lenient=True)
        assert log.events() == evs[:bad] + evs[bad + 1 :]
        assert [p.line for p in log.problems] == [bad + 1]


class TestWriteLog:
    """write_log replaces the file with positions 0.. and optional stamps."""

    def test_writes_positions_conversation_and_time(self, tmp_path: Path) -> None:
        path = tmp_path / "log.jsonl"
        path.write_bytes(b"old content\n")
        stamps = iter([10.0, 11.5])
        assert write_log(path, [{"a": 1}, {"b": 2}], conversation="c1", time=lambda: next(stamps))
        assert path.read_bytes() == lines(
            '{"position":0,"event":{"a":1},"conversation":"c1","time":10.0}',
            '{"position":1,"event":{"b":2},"conversation":"c1","time":11.5}',
        )

    def test_omits_absent_conversation_and_time(self, tmp_path: Path) -> None:
        path = tmp_path / "log.jsonl"
        write_log(path, ["x"])
        assert path.read_bytes() == lines('{"position":0,"event":"x"}')

    def test_structs_and_raw_payloads_are_written_as_json(self, tmp_path: Path) -> None:
        class Delta(msgspec.Struct, tag="delta"):
            text: str

        path = tmp_path / "log.jsonl"
        write_log(path, [Delta("hi"), msgspec.Raw(b'{"k":[1]}')])
        assert read_log(path).events() == [{"type": "delta", "text": "hi"}, {"k": [1]}]

    def test_unencodable_event_writes_nothing(self, tmp_path: Path) -> None:
        path = tmp_path / "log.jsonl"
        with pytest.raises(TypeError):
            write_log(path, [{"ok": 1}, {"bad": object()}])
        assert not path.exists()


ROUNDS = 2000


class TestLogWriter:
    """LogWriter appends line by line and heals a torn tail."""

    def test_each_append_is_on_disk_before_the_next(self, tmp_path: Path) -> None:
        path = tmp_path / "log.jsonl"
        with LogWriter(path, conversation="c") as writer:
            written = writer.append({"n": 0})
            assert read_log(path).events() == [{"n": 0}]
            writer.append({"n": 1})
            assert read_log(path).events() == [{"n": 0}, {"n": 1}]
        assert written == Entry(0, {"n": 0}, "c")

    @pytest.mark.slow
    @given(
        st.lists(
            st.tuples(st.none() | st.floats(0, 2e9), st.lists(st.integers() | st.text(max_size=4))),
            max_size=5,
        ),
        st.booleans(),
    )
    def test_extend_writes_what_one_append_per_event_writes(
        self, runs: list[tuple[float | None, list[Any]]], first: bool
    ) -> None:
        """``extend``'s runs are the lines appending their events one by one would give,
        each stamped with its run's time, positions continuing."""
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "log.jsonl"
            with LogWriter(path, conversation="c") as writer:
                if first:
                    writer.append("before")
                writer.extend(runs)
                writer.append("after")
            want = [Entry(0, "before", "c")] if first else []
            for at, events in runs:
                want += [Entry(n, event, "c", at) for n, event in enumerate(events, len(want))]
            want.append(Entry(len(want), "after", "c"))
            assert read_log(path).entries == want

    @pytest.mark.slow
    def test_processes_appending_at_once_keep_positions_unique_and_gapless(
        self, tmp_path: Path
    ) -> None:
        """Several processes' writers on one log: each write holds the file and first
        reads what the others appended, so no two lines share a position."""
        path = tmp_path / "log.jsonl"
        program = textwrap.dedent(
            """
            import sys, time
            from replay import LogWriter

            path, name, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
            with LogWriter(path) as writer:
                time.sleep(max(0.0, start - time.time()))  # all at once
                for i in range(ROUNDS):
                    writer.append({"writer": name, "i": i})
                    run = [{"writer": name, "i": i} for _ in range(2)]
                    writer.extend([(None, run)])
            """
        ).replace("ROUNDS", str(ROUNDS))
        start = time.time() + 1.5
        workers = [
            subprocess.Popen(
                [sys.executable, "-c", program, str(path), str(n), str(start)],
                env={**os.environ, "PYTHONPATH": os.getcwd()},
            )
            for n in range(4)
        ]
        assert [worker.wait(timeout=120) for worker in workers] == [0] * 4
        entries = read_log(path).entries
        assert [entry.position for entry in entries] == list(range(4 * ROUNDS * 3))
        for n in range(4):
            mine = [e.event["i"] for e in entries if e.event["writer"] == str(n)]
            assert mine == sorted(mine)
            assert len(mine) == ROUNDS * 3

    def test_a_file_system_without_locks_still_takes_writes(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Where flock says the file system has no locks (ENOLCK: some network
        mounts), a writer writes unlocked, one writer per log, as before locks; any
        other failure of the lock is raised."""
        from replay.logs import _jsonl

        def no_locks(fd: int, operation: int) -> None:
            raise OSError(errno.ENOLCK, "No locks available")

        monkeypatch.setattr(_jsonl.fcntl, "flock", no_locks)
        path = tmp_path / "log.jsonl"
        with LogWriter(path) as writer:
            writer.append("a")
            writer.extend([(1.0, ["b", "c"])])
        assert [(e.position, e.event) for e in read_log(path).entries] == [
            (0, "a"),
            (1, "b"),
            (2, "c"),
        ]

        def broken(fd: int, operation: int) -> None:
            raise OSError(errno.EBADF, "Bad file descriptor")

        monkeypatch.setattr(_jsonl.fcntl, "flock", broken)
        with pytest.raises(OSError, match="Bad file descriptor"):
            LogWriter(path)

    def test_continues_positions_of_an_existing_log(self, tmp_path: Path) -> None:
        path = tmp_path / "log.jsonl"
        write_log(path, ["a", "b"])
        with LogWriter(path) as writer:
            assert writer.append("c").position == 2
        assert [e.position for e in read_log(path).entries] == [0, 1, 2]

    def test_cuts_a_torn_last_line_and_reports_it(self, tmp_path: Path) -> None:
        path = tmp_path / "log.jsonl"
        path.write_bytes(lines(entry(0, "a")) + b'{"position":1,"ev')
        with LogWriter(path) as writer:
            assert [p.line for p in writer.recovered] == [2]
            writer.append("b")
        log = read_log(path)
        assert (log.events(), log.problems) == (["a", "b"], ())
        assert [e.position for e in log.entries] == [0, 1]

    def test_terminates_a_good_last_line_missing_its_newline(self, tmp_path: Path) -> None:
        path = tmp_path / "log.jsonl"
        path.write_bytes(entry(0, "a").encode())
        with LogWriter(path, time=lambda: 2.0) as writer:
            assert writer.recovered == ()
            writer.append("b")
        assert read_log(path).entries[1] == Entry(1, "b", None, 2.0)

    def test_refuses_a_log_with_a_bad_line_inside(self, tmp_path: Path) -> None:
        path = tmp_path / "log.jsonl"
        path.write_bytes(lines(entry(0, "a"), "{bad", entry(2, "c")))
        with pytest.raises(LogError, match="line 2"):
            LogWriter(path)
