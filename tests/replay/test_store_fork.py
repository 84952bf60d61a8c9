"""Forks, in both stores: a conversation started from another's first P events, none
copied; reading it gives the source's prefix, then its own events."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay import PostgresStore, StoreError, open_store
from replay.stores._forks import windows

from . import test_store_contract as contract
from .test_cli import assert_one_line_error, run
from .test_store_contract import Backend

# The contract's fixtures: each test runs on SQLite and on a throwaway PostgreSQL.
backend = contract.backend
store = contract.store
pg = contract.pg
_names = itertools.count()


class TestFork:
    def test_a_fork_reads_the_prefix_then_its_own(self, store: Any) -> None:
        store.append("a", [0, 1, 2, 3])
        assert store.fork("a", "b", 2) == 2
        assert store.length("b") == 2
        assert store.read("b") == [0, 1]
        assert store.append("b", ["x"], expected_position=2) == 3
        store.append("a", [4])  # the source goes on: the fork does not see it
        assert store.read("b") == [0, 1, "x"]
        assert store.read("b", 1, 3) == [1, "x"]
        assert [(e.position, e.event, e.conversation) for e in store.read_entries("b")] == [
            (0, 0, "b"),
            (1, 1, "b"),
            (2, "x", "b"),
        ]
        assert store.conversations() == {"a": 5, "b": 3}

    def test_nothing_is_copied(self, store: Any, backend: Backend) -> None:
        store.append("a", list(range(100)))
        store.fork("a", "b", 100)
        if backend.kind == "sqlite":
            rows = store._db.execute(
                "SELECT count(*) FROM events WHERE conversation = 'b'"
            ).fetchone()[0]
        else:
            rows = store._query("SELECT count(*) FROM convo_events WHERE conversation = 'b'")[0][0]
        assert rows == 0

    def test_a_fork_of_a_fork_and_read_many(self, store: Any) -> None:
        store.append("a", [0, 1, 2])
        store.fork("a", "b", 2)
        store.append("b", ["b2", "b3"])
        store.fork("b", "c", 3)
        store.append("c", ["c3"])
        assert store.read("c") == [0, 1, "b2", "c3"]
        assert store.read_many({"c": 1, "a": 2, "b": 3}) == {
            "c": [1, "b2", "c3"],
            "a": [2],
            "b": ["b3"],
        }
        assert list(store.read_many({"c": 1, "a": 2}, limit=1).items()) == [("c", [1]), ("a", [2])]
        assert store.read_many({"c": 4, "b": 9}) == {}

    @pytest.mark.parametrize(
        ("source", "new", "prefix", "error"),
        [
            ("a", "a2", 3, "has 2 events, fewer than the 3"),
            ("a", "a", 1, "into itself"),
            ("a", "taken", 1, "already has 1 events"),
            ("nope", "n", 1, "has 0 events"),
        ],
    )
    def test_a_fork_that_cannot_be_made_writes_nothing(
        self, store: Any, source: str, new: str, prefix: int, error: str
    ) -> None:
        store.append("a", [0, 1])
        store.append("taken", ["t"])
        with pytest.raises(StoreError, match=error):
            store.fork(source, new, prefix)
        assert store.conversations() == {"a": 2, "taken": 1}

    def test_an_empty_fork_exists_and_cannot_be_forked_into_again(self, store: Any) -> None:
        store.append("a", [0])
        store.fork("a", "b", 0)
        assert store.conversations() == {"a": 1, "b": 0}
        with pytest.raises(StoreError, match="already has 0 events"):
            store.fork("a", "b", 1)

    @settings(
        max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        st.lists(st.integers(0, 5), min_size=1, max_size=4),
        st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), max_size=5),
        st.data(),
    )
    def test_windows_match_a_model_of_copies(
        self, store: Any, sizes: list[int], reads: list[tuple[int, int]], data: st.DataObject
    ) -> None:
        """A chain of forks, each read in any window, equals the copied lists."""
        prefix = f"m{next(_names)}-"  # one store serves every example
        model: dict[str, list[Any]] = {}
        previous = None
        for n, size in enumerate(sizes):
            name = f"{prefix}{n}"
            if previous is None:
                model[name] = []
            else:
                cut = data.draw(st.integers(0, len(model[previous])))
                store.fork(previous, name, cut)
                model[name] = model[previous][:cut]
            own = [f"{n}.{i}" for i in range(size)]
            if own:
                store.append(name, own)
            model[name] += own
            previous = name
        for name, events in model.items():
            assert store.read(name) == events
            assert store.length(name) == len(events)
            for start, stop in reads:
                assert store.read(name, start, stop) == events[start:stop]


def test_windows_resolve_down_the_chain() -> None:
    forks = {"c": ("b", 3), "b": ("a", 2)}
    assert windows("c", 0, None, forks.get) == [("a", 0, 2), ("b", 2, 3), ("c", 3, None)]
    assert windows("c", 4, None, forks.get) == [("c", 4, None)]
    assert windows("c", 1, 3, forks.get) == [("a", 1, 2), ("b", 2, 3)]


def test_cli_fork(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = str(tmp_path / "s.db")
    with open_store(path) as s:
        s.append("a", [{"type": "message.start", "id": "u", "role": "user", "text": "hi"}] * 3)
    status, out, _ = run(capsys, "store", "fork", path, "a", "b", "--at", "2")
    assert (status, out) == (0, "forked 'b' from the first 2 events of 'a'\n")
    status, out, _ = run(capsys, "store", "fork", path, "a", "c")
    assert (status, out) == (0, "forked 'c' from the first 3 events of 'a'\n")
    with open_store(path) as s:
        assert s.conversations() == {"a": 3, "b": 2, "c": 3}
    status, _, err = run(capsys, "store", "fork", path, "a", "b")
    assert status == 2
    assert_one_line_error(err, "already has 2 events")


def test_import_a_forked_log_shares_its_prefix(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lines = [
        {"type": "message.start", "id": f"m{n}", "role": "user", "text": str(n)} for n in range(4)
    ]
    source, forked = tmp_path / "source.jsonl", tmp_path / "forked.jsonl"
    source.write_text("".join(json.dumps(e) + "\n" for e in lines))
    forked.write_text(
        "".join(json.dumps(e) + "\n" for e in [*lines[:3], {**lines[3], "text": "new"}])
    )
    path = str(tmp_path / "s.db")
    assert run(capsys, "store", "import", path, source)[0] == 0
    status, out, _ = run(capsys, "store", "import", path, forked, "--fork-of", "source")
    assert (status, out) == (
        0,
        "imported 4 events into 'forked' (4 in all): the first 3 are 'source''s, not copied\n",
    )
    with open_store(path) as s:
        assert s.read("forked") == [*lines[:3], {**lines[3], "text": "new"}]
        own = s._db.execute("SELECT count(*) FROM events WHERE conversation = 'forked'")
        assert own.fetchall() == [(1,)]  # only its own event is stored


def test_a_codex_fork_is_stored_as_a_fork_of_its_source(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``session_meta.forked_from_id`` names the source session: found in the store by
    the id its rollout's file name ends with, the shared prefix is forked, not copied."""

    def rollout(session: str, forked_from: str | None, texts: list[str]) -> list[Any]:
        meta: dict[str, Any] = {"id": session, "cwd": "/w"}
        if forked_from is not None:
            meta["forked_from_id"] = forked_from
        items = [
            {
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": t}],
                },
            }
            for t in texts
        ]
        return [{"type": "session_meta", "payload": meta}, *items]

    source = tmp_path / "rollout-2025-01-01T00-00-00-aaaa.jsonl"
    fork = tmp_path / "rollout-2025-01-02T00-00-00-bbbb.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rollout("aaaa", None, ["one", "two"])))
    fork.write_text("".join(json.dumps(r) + "\n" for r in rollout("bbbb", "aaaa", ["one", "deux"])))
    path = str(tmp_path / "s.db")
    assert run(capsys, "store", "import", path, source)[0] == 0
    status, out, _ = run(capsys, "store", "import", path, fork)
    assert status == 0
    assert f"the first 2 are '{source.stem}''s, not copied" in out
    with open_store(path) as s:
        assert [e["text"] for e in s.read(fork.stem) if e["type"] == "message.start"] == [
            "one",
            "deux",
        ]


def test_a_fork_is_hinted_to_followers_like_an_append(pg: str) -> None:
    """A follower (the live page) hears of a fork as of any conversation's growth."""
    from replay import StoreChange

    async def scenario() -> list[Any]:
        with PostgresStore(pg) as reader, open_store(pg) as writer:
            hints = reader.follow(quiet=30)
            seen = [await anext(hints)]
            await asyncio.to_thread(writer.append, "a", ["x", "y"])
            await asyncio.to_thread(writer.fork, "a", "b", 1)
            seen += [await anext(hints), await anext(hints)]
            await hints.aclose()
            return seen

    assert asyncio.run(scenario()) == [StoreChange(None), StoreChange("a", 2), StoreChange("b", 1)]
