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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_stale_recording_fails_the_test_that_no_longer_makes_its_calls(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A passing test that made fewer calls than its recording holds fails at teardown,
    naming the first call it did not make; the marker allows it; a failing test reports
    its own failure, not this one."""
    with _server.serving() as server:
        base = server.root(_server.anthropic_message())
        pytester.makepyfile(
            test_agent=f"""
            import os

            import anthropic
            import pytest

            def ask(convo_recorder, times):
                client = convo_recorder.wrap(
                    anthropic.Anthropic(api_key="k", base_url="{base}", max_retries=0)
                )
                for _ in range(times):
                    client.messages.create(
                        model="m", max_tokens=8, messages=[{{"role": "user", "content": "hi"}}]
                    )

            def test_hello(convo_recorder):
                ask(convo_recorder, int(os.environ["CALLS"]))

            @pytest.mark.convo_recording(allow_unused=True)
            def test_allowed(convo_recorder):
                ask(convo_recorder, int(os.environ["CALLS"]))

            def test_failing(convo_recorder):
                ask(convo_recorder, int(os.environ["CALLS"]))
                assert os.environ["CALLS"] == "2", "the test's own failure"
            """
        )
        args = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")
        monkeypatch.setenv("CALLS", "2")
        pytester.runpytest_inprocess(*args, "--convo-record-mode=once").assert_outcomes(passed=3)
    monkeypatch.setenv("CALLS", "2")
    pytester.runpytest_inprocess(*args).assert_outcomes(passed=3)  # every call made
    monkeypatch.setenv("CALLS", "1")
    result = pytester.runpytest_inprocess(*args)
    result.assert_outcomes(passed=2, failed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*test_hello.jsonl: 1 recorded call(s) were not made by the test, the first call 1 "
            "(anthropic.messages, model 'm'); the recording is stale*",
            "*the test's own failure*",
        ]
    )
    assert "test_allowed.jsonl" not in result.stdout.str()
    assert "test_failing.jsonl: 1 recorded" not in result.stdout.str()


def test_playback_outside_pytest_says_which_calls_were_not_made(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with _server.serving() as server:
        base = server.base(_server.anthropic_message())
        run(path, "once", base, 3)
    client = replay.playback(_sdks.client("anthropic", base, False), path)  # server gone
    client.messages.create(**_sdks.ARGS)
    player = replay.recording.recorder_of(client)
    assert isinstance(player, replay.recording.Player)
    assert (player.remaining, [call.n for call in player.unused]) == (2, [1, 2])
