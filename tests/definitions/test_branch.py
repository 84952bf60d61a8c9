"""Branches: every branch of a random tree is held to the one rule (its view is the
view of the linear log of its path), against a naive model that copies a list of
events per branch; switching in any order, with random batch splits and frame timing.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from definitions import branch, builtin
from engine import DefinitionError, ManualScheduler, create_conversation_engine
from tests.engine.harness import as_tuples, model_fold, route_to, routed_tallies, tallies

LOOSE = settings(max_examples=80, deadline=None)


def starts(event: dict[str, Any]) -> list[str]:
    """The model's reading of which Tally nodes an event starts."""
    if event.get("op") != "start":
        return []
    kinds = ("a", "b", "c") if event["to"] == "*" else (event["to"],)
    return [f"{kind}:{event['id']}" for kind in kinds]


# A step of a random log: a Tally event, or an edit/regeneration of a node started on
# the current path (picked by index among them), or a choice of a known branch.
steps = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {
                "to": st.sampled_from(["a", "b", "c", "*"]),
                "op": st.sampled_from(["start", "start", "update", "update", "noise"]),
                "id": st.sampled_from(["1", "2", "3"]),
                "v": st.sampled_from([0, 1, 2, 5]),
                "pub": st.sampled_from(["none", "animation-frame", "immediate"]),
            }
        ),
        st.tuples(st.sampled_from(["branch.edit", "branch.regenerate"]), st.integers(0, 50)),
        st.tuples(st.just("branch.choose"), st.integers(0, 50)),
    ),
    max_size=40,
)


def build(plan: list[Any]) -> tuple[list[Any], dict[str, list[Any]], str]:
    """The log a plan makes, and the model: each branch's own copy of its path."""
    log: list[Any] = []
    paths: dict[str, list[Any]] = {branch.MAIN: []}
    current = branch.MAIN
    for step in plan:
        if isinstance(step, dict):
            log.append(step)
            paths[current].append(step)
            continue
        tag, pick = step
        if tag == "branch.choose":
            current = sorted(paths)[pick % len(paths)]
            log.append({"type": tag, "id": current})
            continue
        path = paths[current]
        started = [key for event in path for key in starts(event)]
        if not started:
            continue
        key = started[pick % len(started)]
        # The latest start of that node on the path: the new version replaces it.
        at = max(i for i, event in enumerate(path) if key in starts(event))
        new = f"b{len(paths)}"
        log.append({"type": tag, "id": new, "of": key})
        paths[new] = path[:at]
        current = new
    return log, paths, current


class TestTheRule:
    """The view of a branch is the view of the linear log made of its path."""

    @LOOSE
    @given(steps, st.randoms(use_true_random=False))
    def test_every_branch_is_its_path_folded(self, plan: list[Any], rng: random.Random) -> None:
        log, paths, current = build(plan)
        shown = branch.Branches(log, tallies())
        assert shown.tree.active == current
        names = list(paths) * 2
        rng.shuffle(names)  # switch in any order, each branch more than once
        for name in names:
            assert branch.path_events(log, shown.tree, name) == paths[name]
            assert as_tuples(shown.show(name)) == model_fold(tallies(), paths[name])
        assert as_tuples(shown.show()) == model_fold(tallies(), paths[current])

    @LOOSE
    @given(steps, st.randoms(use_true_random=False))
    def test_batches_and_frames_give_each_branch_the_same_view(
        self, plan: list[Any], rng: random.Random
    ) -> None:
        """Each path folded by a routed engine in random batches, frames firing at
        random, ends on the view ``show`` gives (so does its last notification)."""
        log, paths, _ = build(plan)
        shown = branch.Branches(log, routed_tallies(), event_type=route_to)
        for name, path in paths.items():
            scheduler = ManualScheduler()
            engine = create_conversation_engine(
                routed_tallies(), scheduler=scheduler, event_type=route_to
            )
            seen: list[Any] = []
            engine.subscribe(seen.append)
            at = 0
            while at < len(path):
                size = rng.randint(1, 4)
                engine.push_many(path[at : at + size])
                at += size
                if rng.random() < 0.5:
                    scheduler.fire()
            engine.flush()
            view = shown.show(name)
            assert as_tuples(view) == as_tuples(engine.nodes())
            if path and seen:
                assert as_tuples(seen[-1]) == as_tuples(view)

    @LOOSE
    @given(steps, st.randoms(use_true_random=False))
    def test_a_growing_log_shows_what_the_whole_one_shows(
        self, plan: list[Any], rng: random.Random
    ) -> None:
        """Extended in random pieces, following the active branch or another, each
        view is the fold of the path as the log stands."""
        log, _, _ = build(plan)
        live = branch.Branches([], tallies())
        at = 0
        while at < len(log):
            size = rng.randint(1, 5)
            piece = log[at : at + size]
            at += size
            leaf = rng.choice([None, *live.tree.tips]) if rng.random() < 0.3 else None
            view = live.extend(piece, leaf)
            whole = branch.Tree(log[:at], branch.starts_of(tallies()))
            expected = branch.path_events(log[:at], whole, leaf)
            assert as_tuples(view) == model_fold(tallies(), expected)
            assert live.tree.active == whole.active
            assert live.tree.leaves() == whole.leaves()

    def test_a_refused_branch_event_leaves_the_tree_as_it_was(self) -> None:
        live = branch.Branches(chat(), builtin.DEFINITIONS)
        with pytest.raises(branch.BranchError):
            live.extend([{"type": "branch.choose", "id": "nope"}])
        assert len(live.tree.events) == len(chat())
        assert texts(live.extend([{"type": "branch.choose", "id": "r1"}])) == ["2+2?", "4"]

    @LOOSE
    @given(steps)
    def test_every_leaf_is_a_branch_nothing_continues(self, plan: list[Any]) -> None:
        log, paths, _ = build(plan)
        tree = branch.Branches(log, tallies()).tree
        leaves = tree.leaves()
        assert len({leaf.tip for leaf in leaves}) == len(leaves)
        for leaf in leaves:
            assert leaf.depth == len(paths[leaf.id])
            assert not tree.children(leaf.tip) if leaf.tip >= 0 else not tree.children(-1)
        # Every event of the tree is on some leaf's path.
        on_paths = {at for leaf in leaves for at in tree.path(leaf.id)}
        assert on_paths == {at for at in range(len(log)) if tree.parent(at) != -2}

    def test_a_log_with_no_branch_event_is_its_own_path(self) -> None:
        log = [{"to": "a", "op": "start", "id": "1", "v": 1, "pub": "none"}] * 3
        tree = branch.Tree(log, branch.starts_of(tallies()))
        assert tree.path() == [0, 1, 2]
        assert [leaf.id for leaf in tree.leaves()] == [branch.MAIN]
        assert tree.versions() == {}


def chat() -> list[dict[str, Any]]:
    """A conversation whose answer was regenerated, then whose question was edited."""
    return [
        {"type": "message.start", "id": "u1", "role": "user", "text": "2+2?"},
        {"type": "message.start", "id": "a1", "role": "assistant", "text": "5"},
        {"type": "branch.regenerate", "id": "r1", "of": "message:a1"},
        {"type": "message.start", "id": "a1", "role": "assistant", "text": "4"},
        {"type": "branch.edit", "id": "e1", "of": "message:u1"},
        {"type": "message.start", "id": "u1", "role": "user", "text": "3+3?"},
        {"type": "message.start", "id": "a2", "role": "assistant", "text": "6"},
    ]


def texts(nodes: Any) -> list[str]:
    return [str(node.state.text) for node in nodes]


class TestBuiltIn:
    def test_versions_mark_the_first_node_of_each_sibling(self) -> None:
        shown = branch.Branches(chat(), builtin.DEFINITIONS)
        assert shown.tree.active == "e1"
        assert texts(shown.show()) == ["3+3?", "6"]
        assert shown.markers() == {"message:u1": branch.Version(2, 2, ("r1", "e1"))}
        assert texts(shown.show("r1")) == ["2+2?", "4"]
        assert shown.markers("r1") == {
            "message:u1": branch.Version(1, 2, ("r1", "e1")),
            "message:a1": branch.Version(2, 2, ("main", "r1")),
        }
        assert texts(shown.show("main")) == ["2+2?", "5"]

    def test_choose_shows_and_continues_a_branch(self) -> None:
        log = [
            *chat(),
            {"type": "branch.choose", "id": "r1"},
            {"type": "message.start", "id": "u3", "role": "user", "text": "thanks"},
        ]
        shown = branch.Branches(log, builtin.DEFINITIONS)
        assert shown.tree.active == "r1"
        assert texts(shown.show()) == ["2+2?", "4", "thanks"]

    def test_typed_events_are_branch_events_too(self) -> None:
        log: list[Any] = chat()
        log[2] = branch.Regenerate(id="r1", of="message:a1")
        log[4] = branch.Edit(id="e1", of="message:u1")
        assert texts(branch.Branches(log, builtin.DEFINITIONS).show("r1")) == ["2+2?", "4"]

    @pytest.mark.parametrize(
        ("event", "error"),
        [
            ({"type": "branch.edit", "id": "e2", "of": "message:nope"}, "no event on branch"),
            ({"type": "branch.edit", "id": "r1", "of": "message:u1"}, "already exists"),
            ({"type": "branch.choose", "id": "nope"}, "names branch 'nope'"),
            ({"type": "branch.edit", "of": "message:u1"}, "needs a non-empty str 'id'"),
        ],
    )
    def test_a_misplaced_branch_event_is_named(self, event: Any, error: str) -> None:
        with pytest.raises(branch.BranchError, match=error) as caught:
            branch.Branches([*chat(), event], builtin.DEFINITIONS)
        assert caught.value.position == len(chat())
        assert f"#{len(chat())}" in str(caught.value)

    def test_an_unknown_branch_is_named(self) -> None:
        with pytest.raises(branch.BranchError, match="no branch 'x'"):
            branch.Branches(chat(), builtin.DEFINITIONS).show("x")


class TestJoinPaths:
    """``join_paths``: the log it makes has each given path as a branch's path."""

    @LOOSE
    @given(st.lists(st.integers(0, 30), max_size=25), st.data())
    def test_each_path_is_a_branch(self, parents: list[int], data: st.DataObject) -> None:
        # A random tree of whole messages: node i + 1 hangs under an earlier node (or
        # the root); each leaf's path is one version of the conversation.
        under: list[int] = [p % (i + 1) - 1 for i, p in enumerate(parents)]
        roles = data.draw(
            st.lists(
                st.sampled_from(["user", "assistant"]), min_size=len(under), max_size=len(under)
            )
        )

        def events(node: int) -> list[dict[str, Any]]:
            chain = []
            while node >= 0:
                chain.append(node)
                node = under[node]
            out: list[dict[str, Any]] = []
            for n in reversed(chain):
                out.append(
                    {"type": "message.start", "id": f"n{n}", "role": roles[n], "text": f"t{n}"}
                )
                out.append({"type": "message.end", "id": f"n{n}"})
            return out

        leaves = [n for n in range(len(under)) if n not in under]
        if not leaves:
            return
        paths = [(f"leaf{n}", events(n)) for n in leaves]
        active = data.draw(st.sampled_from([name for name, _ in paths]))
        log = branch.join_paths(paths, branch.starts_of(builtin.DEFINITIONS), active=active)
        tree = branch.Tree(log, branch.starts_of(builtin.DEFINITIONS))
        names = {name: (branch.MAIN if i == 0 else name) for i, (name, _) in enumerate(paths)}
        for name, expected in paths:
            assert branch.path_events(log, tree, names[name]) == expected
        assert tree.active == names[active]
        # Nothing is stored twice: each event of the tree is one event of some path.
        assert sum(1 for e in log if not branch.is_branch_event(e)) == len(
            {(e["type"], e["id"]) for _, path in paths for e in path}
        )

    def test_an_edit_and_a_regeneration_are_named_so(self) -> None:
        starts = branch.starts_of(builtin.DEFINITIONS)
        q = {"type": "message.start", "id": "q", "role": "user", "text": "?"}
        q2 = {"type": "message.start", "id": "q2", "role": "user", "text": "??"}
        a = {"type": "message.start", "id": "a", "role": "assistant", "text": "!"}
        a2 = {"type": "message.start", "id": "a2", "role": "assistant", "text": "!!"}
        log = branch.join_paths([("x", [q, a]), ("y", [q, a2]), ("z", [q2])], starts)
        assert [e for e in log if branch.is_branch_event(e)] == [
            {"type": "branch.regenerate", "id": "y", "of": "message:a"},
            {"type": "branch.edit", "id": "z", "of": "message:q"},
        ]


def test_a_failing_event_is_named_by_its_log_position() -> None:
    log = [
        *chat(),
        {"type": "branch.choose", "id": "r1"},
        {"type": "message.end", "id": "a1"},
        {"type": "message.delta", "id": "a1", "text": "x"},  # after a1's end: refused
    ]
    shown = branch.Branches(log, builtin.DEFINITIONS)
    with pytest.raises(DefinitionError, match=r"at event #9 \(event #3 of branch 'r1'"):
        shown.show("r1")
    assert texts(shown.show("main")) == ["2+2?", "5"]  # still usable, from where it stood
