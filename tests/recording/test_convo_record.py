"""``convo record -o LOG -- COMMAND``: a program's SDK clients recorded with no change to
its code; its output and exit status unchanged. The program runs as a subprocess
against the loopback server."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import replay

from . import _server

PROGRAM = textwrap.dedent(
    """
    import os, sys
    import anthropic, boto3

    base = os.environ["LOOPBACK"]
    client = anthropic.Anthropic(api_key="sk-ant-SECRET", base_url=base, max_retries=0)
    ask = dict(model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    print(client.messages.create(**ask).content[0].text)
    # A copy shares the HTTP client: its call is recorded once, not twice.
    print(client.with_options(timeout=5).messages.create(**ask).content[0].text)
    bedrock = boto3.client(
        "bedrock-runtime", region_name="us-east-1", endpoint_url=base,
        aws_access_key_id="AKIASECRET", aws_secret_access_key="SECRET",
    )
    reply = bedrock.converse(modelId="x", messages=[{"role": "user", "content": [{"text": "hi"}]}])
    print(reply["output"]["message"]["content"][0]["text"][:20])
    print("to stderr", file=sys.stderr)
    sys.exit(3)
    """
)


def convo(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "replay", *args], env=env, capture_output=True, text=True
    )


@pytest.mark.slow
def test_convo_record_records_a_program_unchanged(tmp_path: Path) -> None:
    script = tmp_path / "app.py"
    script.write_text(PROGRAM)
    log = tmp_path / "calls.jsonl"
    with _server.serving() as server:
        env = {**os.environ, "LOOPBACK": ""}
        env["LOOPBACK"] = server.root(
            _server.anthropic_message(), _server.anthropic_message(), _server.bedrock_response()
        )
        plain = subprocess.run(
            [sys.executable, str(script)], env=env, capture_output=True, text=True
        )
        env["LOOPBACK"] = server.root(
            _server.anthropic_message(), _server.anthropic_message(), _server.bedrock_response()
        )
        recorded = convo("record", "-o", str(log), "--", sys.executable, str(script), env=env)
    assert plain.returncode == 3
    assert (recorded.returncode, recorded.stdout, recorded.stderr) == (
        plain.returncode,
        plain.stdout,
        plain.stderr,
    )
    requests = [r for r in replay.read_log(log).events() if r["type"] == "recording/request"]
    assert [(r["call"], r["api"]) for r in requests] == [
        (0, "anthropic.messages"),
        (1, "anthropic.messages"),
        (2, "bedrock.converse"),
    ]
    assert b"SECRET" not in log.read_bytes()


@pytest.mark.slow
def test_convo_record_into_a_store(tmp_path: Path) -> None:
    script = tmp_path / "app.py"
    script.write_text(PROGRAM)
    store = tmp_path / "events.db"
    with _server.serving() as server:
        env = dict(os.environ)
        env["LOOPBACK"] = server.root(
            _server.anthropic_message(), _server.anthropic_message(), _server.bedrock_response()
        )
        args = ("record", "--store", str(store), "--conversation", "run-1", "--")
        done = convo(*args, sys.executable, str(script), env=env)
    assert done.returncode == 3
    with replay.open_store(store) as opened:
        events = opened.read("run-1")
    assert sum(e["type"] == "recording/request" for e in events) == 3


@pytest.mark.slow
def test_convo_record_refuses_a_missing_command() -> None:
    done = convo("record", "-o", "x.jsonl", env=dict(os.environ))
    assert done.returncode == 2
    assert "no COMMAND" in done.stderr


@pytest.mark.slow
def test_convo_record_records_the_child_processes_into_the_same_log(tmp_path: Path) -> None:
    """A program that starts another Python program: both are recorded, into one log,
    their calls numbered in one sequence."""
    child = tmp_path / "child.py"
    child.write_text(
        textwrap.dedent(
            """
            import os
            import anthropic

            client = anthropic.Anthropic(api_key="k", base_url=os.environ["LOOPBACK"])
            ask = dict(model="child", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
            print(client.messages.create(**ask).content[0].text)
            """
        )
    )
    parent = tmp_path / "parent.py"
    parent.write_text(
        textwrap.dedent(
            f"""
            import os, subprocess, sys
            import anthropic

            client = anthropic.Anthropic(api_key="k", base_url=os.environ["LOOPBACK"])
            ask = dict(model="parent", max_tokens=8, messages=[{{"role": "user", "content": "hi"}}])
            print(client.messages.create(**ask).content[0].text)
            subprocess.run([sys.executable, {str(child)!r}], check=True)
            print(client.messages.create(**ask).content[0].text)
            """
        )
    )
    log = tmp_path / "calls.jsonl"
    with _server.serving() as server:
        env = {**os.environ, "LOOPBACK": server.root(_server.anthropic_message())}
        done = convo("record", "-o", str(log), "--", sys.executable, str(parent), env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Hello there."] * 3
    requests = [r for r in replay.read_log(log).events() if r["type"] == "recording/request"]
    assert [(r["call"], r["body"]["model"]) for r in requests] == [
        (0, "parent"),
        (1, "child"),
        (2, "parent"),
    ]


@pytest.mark.slow
def test_convo_record_says_why_nothing_was_recorded(tmp_path: Path) -> None:
    """A Python that ignores PYTHONPATH (``-I``) never loads the recorder; a program that
    makes no model call loads it for nothing: both runs end with one line saying so,
    and the program's exit status unchanged."""
    log = tmp_path / "calls.jsonl"
    env = dict(os.environ)
    python = sys.executable
    isolated = convo("record", "-o", str(log), "--", python, "-I", "-c", "print(1)", env=env)
    assert isolated.returncode == 0
    assert isolated.stdout == "1\n"
    assert "convo record: 0 calls recorded into" in isolated.stderr
    assert "never loaded the recorder" in isolated.stderr
    idle = convo("record", "-o", str(log), "--", sys.executable, "-c", "exit(4)", env=env)
    assert idle.returncode == 4
    assert "0 calls recorded" in idle.stderr
    assert "made no model call" in idle.stderr
    print(f"faults: convo record with python -I: {isolated.stderr.strip()!r}")
