"""Concurrent pushes are serialized: no lost events, gapless seq, consistent views."""

from __future__ import annotations

import threading
from typing import Any

from engine import Node, create_conversation_engine

from .harness import ev, tallies


class TestConcurrentPushes:
    """Threads pushing at once lose nothing and never duplicate a seq."""

    def test_starts_and_updates_from_many_threads(self) -> None:
        engine = create_conversation_engine(tallies())
        views: list[tuple[Node, ...]] = []
        engine.subscribe(views.append)
        barrier = threading.Barrier(4)

        def worker(name: str) -> None:
            barrier.wait()
            for i in range(200):
                engine.push(ev("a", "start", f"{name}-{i}"))
                engine.push_many([ev("a", "update", f"{name}-{i}", v=2)] * 3)

        threads = [threading.Thread(target=worker, args=(str(n),)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        nodes = engine.nodes()
        assert [n.seq for n in nodes] == list(range(800))
        assert {n.state.total for n in nodes} == {7}
        assert engine.statistics().events_pushed == 4 * 200 * 4
        # Every notification carried a consistent view: seq gapless at that moment.
        for view in views:
            assert [n.seq for n in view] == list(range(len(view)))

    def test_listener_pushing_while_other_threads_push(self) -> None:
        engine = create_conversation_engine(tallies())
        echoed: set[str] = set()

        def echo(nodes: tuple[Node, ...]) -> Any:
            for node in nodes:
                if node.kind == "a" and node.id not in echoed:
                    echoed.add(node.id)
                    engine.push(ev("b", "start", node.id))

        engine.subscribe(echo)
        threads = [
            threading.Thread(
                target=lambda n=n: [engine.push(ev("a", "start", f"{n}-{i}")) for i in range(50)]
            )
            for n in range(3)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        kinds = [n.kind for n in engine.nodes()]
        assert kinds.count("a") == kinds.count("b") == 150
