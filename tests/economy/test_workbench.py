"""The workbench: spill files hold what was cut, the pointer's instruction works, and
its index area renders again exactly when the workbench changes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from definitions.gateways import ANTHROPIC
from engine import (
    Context,
    CoopContext,
    Economy,
    Marks,
    Message,
    Role,
    ToolCall,
    ToolResult,
    economize,
)
from replay.context._economy import Conversation, requests
from replay.context._workbench import Workbench, WorkbenchIndex
from tests.economy._sessions import assistant, call, result, user

BIG = "".join(f"row {n}: {'x' * n}\n" for n in range(200))


def spilled_session() -> list[Message]:
    return [user("go"), assistant(call("c1", "pytest")), user(result("c1", BIG)), assistant("ok")]


class TestSpillFiles:
    def test_the_pointer_names_a_file_holding_everything(self, tmp_path: Path) -> None:
        bench = Workbench(tmp_path / "wb")
        out = economize(spilled_session(), bench.economy(Economy.live()))
        assert bench.write(out.spills) == 1
        assert bench.write(out.spills) == 0  # content-addressed: written once
        pointer = str(out.messages[2].parts[0].content)  # type: ignore[union-attr]
        found = re.search(r" in (\S+); read that file", pointer)
        assert found is not None
        assert Path(found.group(1)).read_text() == BIG

    def test_reading_it_back_returns_it_whole(self, tmp_path: Path) -> None:
        # the model follows the pointer's instruction: its read is not spilled again
        bench = Workbench(tmp_path / "wb")
        economy = bench.economy(Economy.live())
        first = economize(spilled_session(), economy)
        bench.write(first.spills)
        path = str(bench.spill_dir / first.spills[0].name)
        read = ToolCall(id="r", name="Read", arguments=json.dumps({"file_path": path}))
        answer = ToolResult(call_id="r", content=Path(path).read_text())
        messages = [*spilled_session(), user("all"), assistant(read)]
        messages += [Message(role=Role.user, content=(answer,)), assistant("seen")]
        out = economize(messages, economy)
        assert out.messages[-2].parts[0] == answer

    def test_a_file_with_other_content_is_refused(self, tmp_path: Path) -> None:
        bench = Workbench(tmp_path)
        out = economize(spilled_session(), bench.economy(Economy.live()))
        bench.spill_dir.mkdir(parents=True)
        (bench.spill_dir / out.spills[0].name).write_text("damaged")
        with pytest.raises(OSError, match="other content"):
            bench.write(out.spills)


class TestIndexArea:
    def test_renders_when_the_workbench_changes(self, tmp_path: Path) -> None:
        bench = Workbench(tmp_path)
        area = WorkbenchIndex(bench)
        coop = CoopContext(Context())
        coop.register(area)
        first = list(coop.render())
        assert len(first) == 1
        assert "(empty)" in str(first[0].content)
        assert len(coop.render()) == 1  # unchanged: nothing appended
        (tmp_path / "scripts").mkdir()
        (tmp_path / "scripts" / "audit.py").write_text("print(1)\n")
        context = coop.render()
        assert len(context) == 2
        assert context[1].role == Role.system
        assert "- scripts/audit.py (9 bytes)" in str(context[1].content)

    def test_at_most_forty_entries_scripts_first(self, tmp_path: Path) -> None:
        for folder, count in (("artifacts", 30), ("scripts", 30)):
            (tmp_path / folder).mkdir()
            for n in range(count):
                (tmp_path / folder / f"{n:02}.txt").write_text("x")
        entries = Workbench(tmp_path).entries()
        assert len(entries) == 40
        assert entries[0][0] == "scripts/00.txt"
        assert entries[-1][0] == "artifacts/09.txt"
        text = WorkbenchIndex(Workbench(tmp_path)).text()
        assert text.count("\n- ") == 40


def test_the_index_leads_each_request_and_follows_the_workbench(tmp_path: Path) -> None:
    messages = [*spilled_session(), user("again"), assistant("ok")]
    talk = Conversation(messages=tuple(messages), marks=Marks(), calls=(1, 3, 5))
    bench = Workbench(tmp_path)
    calls = requests(talk, ANTHROPIC, Economy.live(), workbench=bench)
    first = next(calls)
    assert "(empty)" in first.payload["system"][0]["text"]
    (tmp_path / "artifacts").mkdir()
    (tmp_path / "artifacts" / "report.md").write_text("# done\n")
    second = next(calls)
    assert "- artifacts/report.md (7 bytes)" in second.payload["system"][0]["text"]
    assert second.problems == ()
