"""Faults: a stream cut mid-way, an error status with its JSON body, a timeout, a log that
cannot be written. The SDK raises (or returns) what it does unrecorded; the log keeps
what arrived, marked incomplete, and reads without a traceback; playback raises the
same kind of error; a lost record is warned about and counted, never silent.
"""

from __future__ import annotations

import errno
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

import replay
from replay.recording import recorder_of

from . import _sdks, _server


def outcome(case: tuple[str, bool, bool], base: str, wrap: Any = lambda c: c, **kw: Any) -> Any:
    """What the SDK gave: its result, or the type and message of what it raised."""
    try:
        return ("returned", _sdks.call(case, base, wrap, **kw))
    except Exception as exc:
        return ("raised", type(exc).__name__, str(exc))


CUT = [
    ("anthropic", True, False),
    ("anthropic", True, True),
    ("openai_chat", True, False),
    ("openai_responses", True, True),
    ("gemini", True, False),
    ("bedrock", True, False),
]


@pytest.mark.slow
@pytest.mark.parametrize("case", CUT, ids=lambda c: f"{c[0]}-{'async' if c[2] else 'sync'}")
def test_a_stream_cut_mid_way(tmp_path: Path, case: tuple[str, bool, bool]) -> None:
    full = _sdks.ANSWERS[case[0], case[1]]()
    answer = _server.Answer(full.chunks, full.content_type, cut_after=2)
    log = tmp_path / "cut.jsonl"
    with _server.serving() as server:
        base = server.base(answer)
        unrecorded = outcome(case, base)
        recorded = outcome(case, base, lambda c: replay.record(c, log))
    # boto3 ends a cut event stream silently (urllib3 does not check the length); the
    # others raise.
    assert unrecorded[0] == ("returned" if case[0] == "bedrock" else "raised")
    assert recorded == unrecorded
    written = replay.read_log(log).events()
    events = [r for r in written if r["type"] == "recording/event"]
    assert len(events) == 2
    end = written[-1]
    assert end["type"] == "recording/end"
    assert end["complete"] is False
    assert end["error"]
    played = outcome(case, base, lambda c: replay.playback(c, log))
    assert played[:2] == unrecorded[:2]  # the same exception type, from the recording
    if case[0] == "bedrock":
        assert played == unrecorded


ERROR_BODIES = {
    "anthropic": {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}},
    "openai_chat": {"error": {"message": "bad", "type": "invalid_request_error", "code": None}},
    "gemini": {"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}},
    "bedrock": {"message": "bad"},
}


@pytest.mark.slow
@pytest.mark.parametrize("provider", list(ERROR_BODIES))
def test_an_error_status_with_its_json_body(tmp_path: Path, provider: str) -> None:
    case = (provider, False, False)
    headers: tuple[tuple[str, str], ...] = (("request-id", "req_1"),)
    if provider == "bedrock":
        headers += (("x-amzn-errortype", "ValidationException"),)
    answer = _server.Answer(
        (json.dumps(ERROR_BODIES[provider]).encode(),), status=400, headers=headers
    )
    log = tmp_path / "error.jsonl"
    with _server.serving() as server:
        base = server.base(answer)
        unrecorded = outcome(case, base)
        recorded = outcome(case, base, lambda c: replay.record(c, log))
    assert unrecorded[0] == "raised"
    assert recorded == unrecorded
    written = replay.read_log(log).events()
    assert [r["type"] for r in written] == [
        "recording/request",
        "recording/response",
        "recording/body",
        "recording/end",
    ]
    assert written[1]["status"] == 400
    assert written[2]["body"] == ERROR_BODIES[provider]
    assert written[3]["complete"] is True
    played = outcome(case, base, lambda c: replay.playback(c, log))
    assert played == unrecorded


@pytest.mark.slow
@pytest.mark.parametrize("provider", ["anthropic", "openai_chat", "gemini", "bedrock"])
def test_a_timeout(tmp_path: Path, provider: str) -> None:
    case = (provider, True, False)
    full = _sdks.ANSWERS[provider, True]()
    answer = _server.Answer(full.chunks, full.content_type, delay=1.5)
    log = tmp_path / "timeout.jsonl"
    with _server.serving() as server:
        base = server.base(answer)
        unrecorded = outcome(case, base, timeout=0.3)
        recorded = outcome(case, base, lambda c: replay.record(c, log), timeout=0.3)
    assert unrecorded[0] == "raised"
    assert recorded[:2] == unrecorded[:2]
    written = replay.read_log(log).events()
    assert [r["type"] for r in written] == ["recording/request", "recording/end"]
    assert written[-1]["complete"] is False
    assert "Timeout" in written[-1]["error"]
    played = outcome(case, base, lambda c: replay.playback(c, log))
    assert played[:2] == unrecorded[:2]


class _FullDisk:
    """A file whose writes fail as on a full disk."""

    def write(self, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.mark.parametrize("medium", ["log", "store"])
def test_a_recorder_that_cannot_write_changes_nothing_and_says_so(
    tmp_path: Path, medium: str
) -> None:
    case = ("anthropic", True, False)
    with _server.serving() as server:
        base = server.base(_server.anthropic_stream())
        unrecorded = _sdks.call(case, base)
        client = _sdks.client("anthropic", base, False)
        if medium == "log":
            replay.record(client, tmp_path / "full.jsonl")
            recorder = recorder_of(client)
            recorder._sink._writer._file = _FullDisk()  # type: ignore[union-attr]
        else:
            store = replay.open_store(tmp_path / "events.db")
            replay.record(client, store, conversation="c")
            store.close()  # the store goes down
            recorder = recorder_of(client)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            recorded = _sdks._sync_call("anthropic", True, client)
    assert recorded == unrecorded
    lost = [w for w in caught if issubclass(w.category, replay.RecordingLostWarning)]
    assert lost, "a lost record must be warned about"
    assert "could not be written" in str(lost[0].message)
    assert isinstance(recorder, replay.recording.Recorder)
    assert recorder.lost > 0
