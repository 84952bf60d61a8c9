"""The README's set-up commands are the ones CI runs, and the examples of the README
and the docs print what their text says (tests/test_docs.py runs every one of them;
these check their output)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = [README, *(p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").rglob("*.md")))]
BLOCKS = [block for page in PAGES for block in re.findall(r"```(\w+)\n(.*?)```", page, flags=re.S)]

pytest_plugins = ["pytester"]


def test_readme_opens_with_the_two_setup_commands() -> None:
    shell = [
        code.strip()
        for lang, code in re.findall(r"```(\w+)\n(.*?)```", README, flags=re.S)
        if lang == "sh"
    ]
    main_job, tests = shell[0], shell[1]
    assert "pip install -e ." in main_job
    assert "convo replay replay/examples/" in main_job
    assert tests.endswith("pip install -e '.[test]' && pytest")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -e '.[test]' && pytest" in ci.splitlines()[-1]


def test_the_example_runs_and_prints_two_notifications(
    capsys: pytest.CaptureFixture[str],
) -> None:
    example = next(code for lang, code in BLOCKS if lang == "python" and "class Message" in code)
    exec(compile(example, "README.md", "exec"), {})
    assert capsys.readouterr().out.splitlines() == ["['']", "['Hello']"]


def test_the_model_context_example_collects_the_sub_task(
    capsys: pytest.CaptureFixture[str],
) -> None:
    example = next(code for lang, code in BLOCKS if lang == "python" and "CoopContext" in code)
    exec(compile(example, "README.md", "exec"), {})
    assert capsys.readouterr().out == (
        "You are a careful coding agent. ['Fix the failing test.', "
        "'Sub-task result: a UTC offset bug.', 'It is the UTC offset.']\n"
    )


def test_the_starlette_example_streams_a_live_conversation_and_ends() -> None:
    """The asyncio example: at most 15 lines, and a client reading /live gets the
    conversation as it grows, pushed from another thread, until the producer closes."""
    import asyncio
    import json
    import threading

    pytest.importorskip("sse_starlette", reason="the serve extra is not installed")
    example = next(code for lang, code in BLOCKS if lang == "python" and "SnapshotStream" in code)
    assert len([line for line in example.splitlines() if line.strip()]) <= 15
    namespace: dict[str, object] = {}
    exec(compile(example, "README.md", "exec"), namespace)
    engine, stream, app = namespace["engine"], namespace["stream"], namespace["app"]
    events = [
        json.loads(line)
        for line in (ROOT / "replay" / "examples" / "agent_session.jsonl").read_text().splitlines()
        if line.strip()
    ]

    def produce() -> None:  # an agent on its own thread
        for event in events:
            engine.push(event)  # type: ignore[attr-defined]
        stream.close()  # type: ignore[attr-defined]

    async def scenario() -> str:
        # The ASGI app driven directly: the agent starts once the client has its
        # first frame, so the rest arrive live.
        chunks: list[bytes] = []
        producer = threading.Thread(target=produce)
        scope = {"type": "http", "method": "GET", "path": "/live", "raw_path": b"/live"}
        scope |= {"query_string": b"", "headers": [], "root_path": "", "scheme": "http"}
        scope |= {"http_version": "1.1", "asgi": {"version": "3.0"}}
        scope |= {"client": ("127.0.0.1", 1), "server": ("test", 80)}
        done = asyncio.Event()

        async def receive() -> dict[str, object]:
            await done.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, object]) -> None:
            if message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))  # type: ignore[arg-type]
                if producer.ident is None and b"data:" in chunks[-1]:
                    producer.start()
                if not message.get("more_body"):
                    done.set()

        await asyncio.wait_for(app(scope, receive, send), 60)  # type: ignore[operator]
        producer.join()
        return b"".join(chunks).decode()

    body = asyncio.run(scenario())
    frames = [frame for frame in body.split("\r\n\r\n") if "data:" in frame]
    assert len(frames) >= 2  # the view when the client came, then at least the final one
    assert "The change is one line in" in frames[-1]
    assert 'data-key="message:msg-1"' in frames[-1]
