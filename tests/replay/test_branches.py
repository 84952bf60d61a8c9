"""Branches on the command line and in the renderers: every version shown, listed,
proven and continued; the static page's switcher; untrusted ids escaped."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

from definitions import builtin
from definitions.branch import BranchError, Branches
from replay import replay
from replay._branches import BranchedLog
from replay.protocols._detect import protocol_definitions
from replay.render._branches import BranchPage, render_branches_html
from replay.render._text import render_text
from tests.definitions.test_branch import build, steps
from tests.engine.harness import model_fold, tallies

from .test_cli import assert_one_line_error, run

CHAT: list[dict[str, Any]] = [
    {"type": "message.start", "id": "u1", "role": "user", "text": "What is 2+2?"},
    {"type": "message.end", "id": "u1"},
    {"type": "message.start", "id": "a1", "role": "assistant", "text": "5"},
    {"type": "message.end", "id": "a1"},
    {"type": "branch.regenerate", "id": "r1", "of": "message:a1"},
    {"type": "message.start", "id": "a1", "role": "assistant", "text": "4"},
    {"type": "message.end", "id": "a1"},
    {"type": "branch.edit", "id": "e1", "of": "message:u1"},
    {"type": "message.start", "id": "u1", "role": "user", "text": "What is 3+3?"},
    {"type": "message.end", "id": "u1"},
    {"type": "message.start", "id": "a2", "role": "assistant", "text": "6"},
    {"type": "message.end", "id": "a2"},
]


@pytest.fixture
def chat(tmp_path: Path) -> Path:
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(event) + "\n" for event in CHAT))
    return path


class TestReplay:
    def test_the_active_path_is_shown_with_its_marker(
        self, capsys: pytest.CaptureFixture[str], chat: Path
    ) -> None:
        status, out, _ = run(capsys, "replay", chat)
        assert status == 0
        assert "What is 3+3?\n(version 2 of 2)" in out
        assert "2+2" not in out

    def test_leaf_renders_one_path(self, capsys: pytest.CaptureFixture[str], chat: Path) -> None:
        status, out, _ = run(capsys, "replay", chat, "--leaf", "r1")
        assert status == 0
        assert "2+2?\n(version 1 of 2)" in out
        assert "assistant: 4\n(version 2 of 2)" in out
        _, out, _ = run(capsys, "replay", chat, "--leaf", "main", "-f", "nodes")
        assert [node["state"]["text"] for node in json.loads(out)] == ["What is 2+2?", "5"]

    def test_branches_lists_every_leaf(
        self, capsys: pytest.CaptureFixture[str], chat: Path
    ) -> None:
        status, out, _ = run(capsys, "replay", chat, "--branches")
        assert status == 0
        assert out.splitlines() == [
            "  main\t4\tassistant: 5",
            "  r1\t4\tassistant: 4",
            "* e1\t4\tassistant: 6",
        ]

    def test_an_unknown_leaf_is_one_line(
        self, capsys: pytest.CaptureFixture[str], chat: Path
    ) -> None:
        status, _, err = run(capsys, "replay", chat, "--leaf", "nope")
        assert status == 2
        assert_one_line_error(err, "chat.jsonl", "no branch 'nope'", "main, r1, e1")

    def test_a_misplaced_branch_event_is_one_line(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        path = tmp_path / "bad.jsonl"
        path.write_text(
            json.dumps(CHAT[0]) + "\n" + '{"type": "branch.edit", "id": "b", "of": "message:x"}\n'
        )
        status, _, err = run(capsys, "replay", path)
        assert status == 2
        assert_one_line_error(err, "bad.jsonl", "event #1", "message:x")

    def test_a_log_without_branches_is_unchanged(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        path = tmp_path / "plain.jsonl"
        path.write_text("".join(json.dumps(e) + "\n" for e in CHAT[:4]))
        _, out, _ = run(capsys, "replay", path)
        assert out == "user: What is 2+2?\n\nassistant: 5\n"


class TestCheckAndContext:
    def test_check_proves_every_branch(
        self, capsys: pytest.CaptureFixture[str], chat: Path
    ) -> None:
        status, out, _ = run(capsys, "check", chat, "--rounds", "1")
        assert status == 0
        assert [line.split(":")[0] for line in out.splitlines()] == [
            f"{chat} (branch {leaf})" for leaf in ("main", "r1", "e1")
        ]

    @pytest.mark.parametrize(("leaf", "answer"), [("main", "5"), ("r1", "4"), (None, "6")])
    def test_context_continues_any_branch(
        self, capsys: pytest.CaptureFixture[str], chat: Path, leaf: str | None, answer: str
    ) -> None:
        options = [] if leaf is None else ["--leaf", leaf]
        status, out, _ = run(
            capsys, "context", chat, "--provider", "openai-chat", "--model", "m", *options
        )
        assert status == 0
        messages = json.loads(out)["messages"]
        assert messages[-1]["content"] in (answer, [{"type": "text", "text": answer}])


class _Ids(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.append(str(found["id"]))
        if tag == "a" and found.get("href"):
            self.links.append(str(found["href"]))


class TestHtml:
    def page(self, events: list[Any]) -> str:
        branched = BranchedLog(events, protocol_definitions("builtin"))
        pages = [BranchPage(v.leaf, v.nodes, v.markers) for v in branched.views()]
        return render_branches_html(
            pages, builtin.DEFINITIONS, active=branched.tree.active, title="t"
        )

    def test_every_leaf_is_a_section_and_every_switch_a_link(self) -> None:
        page = self.page(CHAT)
        parser = _Ids()
        parser.feed(page)
        assert len(parser.ids) == len(set(parser.ids)), "ids are unique"
        leaves = {"leaf-main", "leaf-r1", "leaf-e1"}
        assert leaves <= set(parser.ids)
        # Each switch lands on a section of the page (a link: keyboard reachable).
        assert parser.links
        assert {link.lstrip("#") for link in parser.links} <= leaves
        assert '<section class="branch active" id="leaf-e1"' in page
        assert "<script" not in page

    def test_untrusted_branch_ids_are_escaped(self) -> None:
        events = [dict(e) for e in CHAT]
        events[4]["id"] = '"><img src=x onerror=alert(1)>'
        page = self.page(events)
        assert "<img" not in page
        assert re.search(r"&quot;&gt;&lt;img", page)


def test_text_notes_are_stripped_of_controls() -> None:
    shown = Branches(CHAT, builtin.DEFINITIONS)
    text = render_text(
        shown.show(), builtin.DEFINITIONS, color=False, notes={"message:u1": "v\x1b[31m2"}
    )
    assert "\x1b" not in text


def test_stats_report_what_each_version_shares_with_its_sibling(
    capsys: pytest.CaptureFixture[str], chat: Path
) -> None:
    """A regeneration's request is its sibling's whole (all cached); an edit's shares
    what precedes the edited question."""
    status, out, _ = run(capsys, "context", chat, "-p", "anthropic", "--model", "m", "--stats")
    assert status == 0
    siblings = {s["at"]: s for s in json.loads(out)["siblings"]}
    regenerated, edited = siblings[5], siblings[8]  # the log positions of the versions
    assert (regenerated["version"], regenerated["of"], regenerated["shared"]) == (2, 2, 1.0)
    assert 0 < edited["shared_bytes"] < edited["bytes"]
    # What the request opens with (the model, the token limit) is shared; the question is not.
    assert edited["shared"] < 1.0


class TestReplayFunction:
    """``replay()`` keeps the one rule: a list with branch events folds one path."""

    def test_a_list_folds_the_active_path_or_the_leaf_named(self) -> None:
        assert [str(n.state.text) for n in replay(CHAT, builtin.DEFINITIONS)] == [
            "What is 3+3?",
            "6",
        ]
        shown = replay(CHAT, builtin.DEFINITIONS, leaf="r1", batch=2)
        assert [str(n.state.text) for n in shown] == ["What is 2+2?", "4"]

    def test_versions_that_fail_in_a_line_still_fold_as_paths(self) -> None:
        # In a line, the regenerated answer's delta would follow the old one's end.
        log = [
            {"type": "message.start", "id": "a", "role": "assistant", "text": ""},
            {"type": "message.end", "id": "a"},
            {"type": "branch.regenerate", "id": "r", "of": "message:a"},
            {"type": "message.delta", "id": "a", "text": "late"},
        ]
        assert [n.state.status for n in replay(log, builtin.DEFINITIONS)] == []

    def test_an_iterator_with_a_branch_event_is_refused(self) -> None:
        with pytest.raises(ValueError, match="pass it as a list"):
            replay(iter(CHAT), builtin.DEFINITIONS)
        plain = CHAT[:4]
        assert replay(iter(plain), builtin.DEFINITIONS) == replay(plain, builtin.DEFINITIONS)


class _Sections(HTMLParser):
    """Each section's leaf and the keys of its articles, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: dict[str, list[str]] = {}
        self._leaf = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "section":
            self._leaf = str(found["data-leaf"])
            self.sections[self._leaf] = []
        elif tag == "article":
            self.sections[self._leaf].append(str(found["data-key"]))


@settings(max_examples=40, deadline=None)
@given(steps)
def test_each_section_of_the_page_is_its_leafs_view(plan: list[Any]) -> None:
    """Random trees (tests/definitions/test_branch.py): each leaf's section holds
    exactly the nodes of its path's fold, in seq order."""
    log, paths, _ = build(plan)
    shown = Branches(log, tallies())
    pages = [
        BranchPage(leaf.id, shown.show(leaf.id), shown.markers(leaf.id))
        for leaf in shown.tree.leaves()
    ]
    parser = _Sections()
    parser.feed(render_branches_html(pages, tallies(), active=shown.tree.active))
    assert parser.sections == {
        leaf.id: [row[0] for row in model_fold(tallies(), paths[leaf.id])]
        for leaf in shown.tree.leaves()
    }


def test_check_determinism_proves_a_branch_along_its_path() -> None:
    from replay import assert_deterministic, check_determinism

    report = check_determinism(CHAT, builtin.DEFINITIONS, rounds=1)
    assert report.ok
    assert (report.events, len(CHAT)) == (4, 12)  # the active path's events, not the log's
    assert assert_deterministic(CHAT, builtin.DEFINITIONS, rounds=1, leaf="main").ok
    with pytest.raises(BranchError, match="no branch 'nope'"):
        check_determinism(CHAT, builtin.DEFINITIONS, rounds=1, leaf="nope")
