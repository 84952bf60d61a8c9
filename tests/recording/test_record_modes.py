"""The ``convo_recorder`` fixture's record modes (pytest-recording's): which calls are
played back from ``recordings/<module>/<test>.jsonl`` and which go to the server and
are recorded; and the fixture and ``--convo-record-mode`` wired into pytest."""

from __future__ import annotations

from pathlib import Path

import pytest

import replay
from replay.recording._pytest import ConvoRecorder

from . import _sdks, _server

pytest_plugins = ["pytester"]


def requests_in(path: Path) -> int:
    return sum(r["type"] == "recording/request" for r in replay.read_log(path).events())


def run(path: Path, mode: str, base: str, calls: int) -> ConvoRecorder:
    recorder = ConvoRecorder(path, mode)
    client = recorder.wrap(_sdks.client("anthropic", base, False))
    try:
        for _ in range(calls):
            client.messages.create(**_sdks.ARGS)
    finally:
        recorder.close()
    return recorder


def test_none_only_plays_back_and_names_the_mode_that_records(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with _server.serving() as server:
        base = server.base(_server.anthropic_message())
        with pytest.raises(replay.PlaybackMismatchError, match="--convo-record-mode=once"):
            run(path, "none", base, 1)
        assert server.requests == []
    assert not path.exists()


def test_once_records_a_missing_recording_then_plays_it_back(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with _server.serving() as server:
        base = server.base(_server.anthropic_message())
        assert run(path, "once", base, 2).recording
        assert len(server.requests) == 2
    assert requests_in(path) == 2
    assert not ConvoRecorder(path, "once").recording
    run(path, "once", base, 2)  # the server is gone
    with pytest.raises(replay.PlaybackMismatchError, match="beyond the recording"):
        run(path, "once", base, 3)


def test_new_episodes_plays_back_the_recorded_calls_and_records_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with _server.serving() as server:
        base = server.base(_server.anthropic_message())
        run(path, "once", base, 1)
        run(path, "new_episodes", base, 3)
        assert len(server.requests) == 3  # one recorded first, two new episodes
    assert requests_in(path) == 3
    run(path, "none", base, 3)


def test_all_records_every_call_and_rewrite_starts_afresh(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with _server.serving() as server:
        base = server.base(_server.anthropic_message())
        run(path, "once", base, 1)
        run(path, "all", base, 1)
        assert len(server.requests) == 2
        assert requests_in(path) == 2  # kept, and appended to
        run(path, "rewrite", base, 1)
        assert len(server.requests) == 3
    assert requests_in(path) == 1


def test_an_unknown_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(replay.RecordingError, match="new_episodes"):
        ConvoRecorder(tmp_path / "t.jsonl", "sometimes")


def test_the_fixture_records_beside_the_test_and_plays_back(pytester: pytest.Pytester) -> None:
    with _server.serving() as server:
        base = server.root(_server.anthropic_message())
        pytester.makepyfile(
            test_agent=f"""
            import anthropic

            def test_hello(convo_recorder):
                client = convo_recorder.wrap(
                    anthropic.Anthropic(api_key="k", base_url="{base}", max_retries=0)
                )
                message = client.messages.create(
                    model="m", max_tokens=8, messages=[{{"role": "user", "content": "hi"}}]
                )
                assert message.content[0].text == "Hello there."
            """
        )
        args = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")
        pytester.runpytest_inprocess(*args).assert_outcomes(failed=1)  # none: nothing recorded
        recorded = pytester.runpytest_inprocess(*args, "--convo-record-mode=once")
        recorded.assert_outcomes(passed=1)
        assert len(server.requests) == 1
    recording = pytester.path / "recordings" / "test_agent" / "test_hello.jsonl"
    assert requests_in(recording) == 1
    pytester.runpytest_inprocess(*args).assert_outcomes(passed=1)  # offline
