"""The context's rules C1-C7 (docs/context.md), one section of tests (or a few) per rule;
each fails if its rule breaks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import pytest

from engine import (
    AreaError,
    AreaFlowState,
    AreaLifeState,
    Context,
    CoopContext,
    Message,
    RegistrationError,
    RenderRecord,
    Role,
)

from ._areas import Scripted, text, user

EXCL = AreaFlowState.exclusive


def texts(context: Sequence[Any]) -> list[str]:
    return [text(item) for item in context]


class Doubling:
    """A gateway that makes two native items of every message."""

    def items(self, message: Message) -> Sequence[Any]:
        return [("a", message.content), ("b", message.content)]


# -- rule C1: the context ------------------------------------------------------


def test_context_is_a_sequence_of_the_messages_without_gateway() -> None:
    context = Context()
    assert context.emplace_message(user("x")) == 1
    context.emplace_message(user("y"))
    assert len(context) == 2
    assert context[0] == user("x")
    assert context[-1] == user("y")
    assert list(context) == [user("x"), user("y")]
    assert context[0:1] == (user("x"),)


def test_context_converts_through_its_gateway() -> None:
    context = Context(Doubling())
    assert context.emplace_message(user("x")) == 2
    assert list(context) == [("a", "x"), ("b", "x")]
    assert context.messages == (user("x"),)


def test_context_has_no_public_way_to_remove_items() -> None:
    public = {n for n in dir(Context) if not n.startswith("_")}
    assert public == {"apply", "count", "emplace_message", "gateway", "index", "messages"}


# -- rule C2: the unfold pass --------------------------------------------------


def test_pass_visits_each_area_once_in_registration_order() -> None:
    log: list[str] = []
    coop = CoopContext(Context())
    for name in "abc":
        coop.register(Scripted(name, [1], log=log))
    assert texts(coop.render()) == ["a0", "b0", "c0"]
    assert log == ["a.render", "b.render", "c.render"]


def test_yielded_areas_are_asked_again_on_every_call() -> None:
    log: list[str] = []
    coop = CoopContext(Context())
    a = Scripted("a", [1, 0, 0], log=log)
    coop.register(a)
    coop.render()
    coop.render()
    coop.render()
    assert a.renders == 3
    assert texts(coop.context) == ["a0"]


def test_exclusive_area_keeps_the_cursor_and_ends_the_pass() -> None:
    log: list[str] = []
    coop = CoopContext(Context())
    a = Scripted("a", [1, 1, 1], log=log)
    b = Scripted("b", [1, 1, 1], flow=EXCL, log=log)
    c = Scripted("c", [1, 1, 1], log=log)
    for area in (a, b, c):
        coop.register(area)
    coop.render()
    assert log == ["a.render", "b.render"]
    log.clear()
    coop.render()  # the pass starts at b again; b has a range now
    assert log == ["b.observe", "b.render"]
    b.flow = AreaFlowState.yielded
    log.clear()
    coop.render()  # from b: b yields, then c, then a
    assert log == ["b.observe", "b.render", "c.render", "a.observe", "a.render"]


def test_retired_area_is_skipped_and_retiring_in_observe_skips_render() -> None:
    log: list[str] = []
    coop = CoopContext(Context())
    a = Scripted("a", [1, 1], log=log)
    b = Scripted("b", [1, 1], log=log)
    blocker = Scripted("z", [0], log=log)
    coop.register(a)
    coop.register(b)
    coop.register(blocker)
    coop.render()
    a.retire_on_observe = True
    b.life = AreaLifeState.retired
    log.clear()
    coop.render()
    assert [entry for entry in log if "promote" not in entry and "gc" not in entry] == [
        "a.observe",
        "z.render",
    ]


def test_area_registered_later_joins_at_the_end_of_the_ring() -> None:
    log: list[str] = []
    coop = CoopContext(Context())
    coop.register(Scripted("a", [1, 1], flow=EXCL, log=log))
    coop.render()
    coop.register(Scripted("b", [1], log=log))
    log.clear()
    coop.render()
    assert log == ["a.observe", "a.render"]
    assert len(coop.areas) == 2


def test_render_returns_the_same_context_and_calls_nothing_else() -> None:
    context = Context()
    coop = CoopContext(context)
    assert coop.render() is context
    assert len(context) == 0


# -- rule C3: effect ranges ----------------------------------------------------


def test_observe_sees_exactly_the_areas_range() -> None:
    coop = CoopContext(Context())
    a = Scripted("a", [2, 0, 1, 0])
    b = Scripted("b", [1, 1, 0, 0])
    coop.register(a)
    coop.register(b)
    coop.extend([user("u0")])
    coop.render()  # u0 a0 a1 b0
    coop.render()  # a: [] ; b1
    coop.render()  # a2 ; b: []
    coop.render()
    # a's range: a0..a1, unchanged by the empty render, then extended to a2
    assert a.snapshots == [["a0", "a1"], ["a0", "a1"], ["a0", "a1", "b0", "b1", "a2"]]
    assert b.snapshots == [["b0"], ["b0", "b1"], ["b0", "b1"]]


def test_an_area_with_only_empty_renders_is_never_observed() -> None:
    coop = CoopContext(Context())
    a = Scripted("a", [0, 0, 0])
    coop.register(a)
    for _ in range(3):
        coop.render()
    assert a.snapshots == []
    assert a.renders == 3


def test_snapshot_is_read_only() -> None:
    seen: list[Sequence[Any]] = []

    class Keep(Scripted):
        def observe(self, context: Sequence[Any]) -> None:
            seen.append(context)

    coop = CoopContext(Context())
    coop.register(Keep("k", [1, 0]))
    coop.render()
    coop.render()
    (snapshot,) = seen
    assert not hasattr(snapshot, "append")
    with pytest.raises(TypeError):
        snapshot[0] = user("x")  # type: ignore[index]


# -- rule C4: conversation items -----------------------------------------------


def test_conversation_is_appended_in_log_order_before_the_pass() -> None:
    coop = CoopContext(Context())
    coop.register(Scripted("a", [1, 1]))
    coop.extend([user("u0")])
    coop.render()
    coop.extend([Message(role=Role.assistant, content="m0"), user("u1")])
    coop.render()
    assert texts(coop.context) == ["u0", "a0", "m0", "u1", "a1"]


# -- rule C5: collection at a safepoint ----------------------------------------


def subtask_run() -> tuple[CoopContext, Scripted, Scripted, list[str]]:
    log: list[str] = []
    coop = CoopContext(Context())
    system = Scripted("s", [1], log=log)
    sub = Scripted("t", [1, 1], flow=EXCL, retire_after=2, promote=["result"], log=log)
    coop.register(system)
    coop.register(sub)
    coop.extend([user("u0")])
    coop.render()  # s0 u0? no: u0 is conversation -> u0 s0 t0
    coop.extend([Message(role=Role.assistant, content="m0")])
    coop.render()  # m0 t1 (t retires)
    return coop, system, sub, log


def test_retired_tail_component_is_collected_into_its_promotion() -> None:
    coop, _, sub, log = subtask_run()
    assert texts(coop.context) == ["u0", "s0", "t0", "m0", "t1"]
    log.clear()
    coop.extend([Message(role=Role.assistant, content="m1")])
    coop.render()
    assert texts(coop.context) == ["u0", "s0", "result", "m1"]
    assert log == ["t.promote", "t.gc_prologue", "s.observe", "s.render"]
    assert sub not in coop.areas


def test_retained_area_in_the_component_blocks_collection() -> None:
    coop = CoopContext(Context())
    outer = Scripted("o", [1, 0, 1, 0, 0])
    inner = Scripted("i", [0, 1, 0, 0, 0], retire_after=4, promote=["p"])
    coop.register(outer)
    coop.register(inner)
    coop.render()  # o0
    coop.render()  # i0
    coop.render()  # o1: outer's range o0..o1 now covers i0
    coop.render()  # inner retires
    coop.render()  # the tail component {outer, inner} holds a retained area
    assert texts(coop.context) == ["o0", "i0", "o1"]
    assert inner in coop.areas  # retired, still registered
    outer.life = AreaLifeState.retired
    coop.render()
    assert texts(coop.context) == ["p"]
    assert coop.areas == ()


def test_only_the_tail_component_is_collected_and_the_prefix_is_kept() -> None:
    coop = CoopContext(Context())
    early = Scripted("e", [1, 0, 0], retire_after=1, promote=["pe"])
    late = Scripted("l", [1, 0, 0], promote=["pl"])
    coop.register(early)
    coop.register(late)
    coop.render()  # e0 l0; e retires
    coop.render()  # the tail component is {l}, retained: e waits behind it
    assert texts(coop.context) == ["e0", "l0"]
    assert early in coop.areas
    late.life = AreaLifeState.retired
    coop.render()  # {l} collected; e0 stays, e is not the tail yet
    assert texts(coop.context) == ["e0", "pl"]
    assert coop.areas == (early,)
    coop.render()  # now e is the tail (the promoted item belongs to nobody)
    assert texts(coop.context) == ["pe"]


def test_retired_area_without_range_is_removed_at_the_next_safepoint() -> None:
    log: list[str] = []
    coop = CoopContext(Context())
    idle = Scripted("x", [0], retire_after=1, promote=["px"], log=log)
    coop.register(Scripted("a", [1, 0]))
    coop.register(idle)
    coop.render()
    assert idle in coop.areas
    log.clear()
    coop.render()
    assert idle not in coop.areas
    assert log == ["x.promote", "x.gc_prologue"]
    assert texts(coop.context) == ["a0", "px"]


def test_promote_all_then_gc_prologue_all_in_registration_order() -> None:
    log: list[str] = []
    coop = CoopContext(Context())
    a = Scripted("a", [0], log=log, retire_after=1)  # no range
    b = Scripted("b", [1, 0], log=log, retire_after=1)
    coop.register(a)
    coop.register(b)
    coop.render()
    log.clear()
    coop.render()
    assert log == ["a.promote", "b.promote", "a.gc_prologue", "b.gc_prologue"]


def test_cursor_on_a_removed_area_moves_to_the_next_remaining() -> None:
    log: list[str] = []
    coop = CoopContext(Context())
    a = Scripted("a", [1, 1, 1], log=log)
    b = Scripted("b", [1, 1], flow=EXCL, retire_after=1, log=log)
    c = Scripted("c", [1, 1, 1], log=log)
    for area in (a, b, c):
        coop.register(area)
    coop.render()  # a0 b0 (b exclusive, retires; cursor on b)
    log.clear()
    coop.render()  # b collected; cursor moves to c
    assert log[:3] == ["b.promote", "b.gc_prologue", "c.render"]
    assert log[3:] == ["a.observe", "a.render"]


# -- rule C6: callbacks cannot change a plan ------------------------------------


class Meddling(Scripted):
    def __init__(self, name: str, other: Scripted, **kw: Any) -> None:
        super().__init__(name, **kw)
        self.other = other

    def promote(self) -> tuple[Message, ...]:
        self.other.life = AreaLifeState.retired
        return super().promote()

    def gc_prologue(self) -> None:
        self.life = AreaLifeState.retain
        super().gc_prologue()


def test_state_changed_in_callbacks_does_not_alter_the_collection() -> None:
    coop = CoopContext(Context())
    keep = Scripted("k", [1, 0, 0])
    meddler = Meddling("m", keep, script=[0, 1, 0], retire_after=2)
    coop.register(keep)
    coop.register(meddler)
    coop.render()  # k0
    coop.render()  # m0 (retires)
    coop.render()  # m collected; its promote retires k, which is not collected now
    assert texts(coop.context) == ["k0"]
    assert coop.areas == (keep,)


class Raising(Scripted):
    def __init__(self, name: str, member: str, **kw: Any) -> None:
        super().__init__(name, **kw)
        self.member = member

    def promote(self) -> tuple[Message, ...]:
        super().promote()
        if self.member == "promote":
            raise RuntimeError("boom")
        return ()

    def gc_prologue(self) -> None:
        super().gc_prologue()
        if self.member == "gc_prologue":
            raise RuntimeError(f"boom {self.name}")


def test_a_raising_promote_collects_nothing() -> None:
    coop = CoopContext(Context())
    bad = Raising("r", "promote", script=[1], retire_after=1)
    coop.register(bad)
    coop.render()
    with pytest.raises(AreaError, match=r"Raising#0\.promote\(\)") as info:
        coop.render()
    assert (info.value.area, info.value.member) == ("Raising#0", "promote")
    assert isinstance(info.value.__cause__, RuntimeError)
    assert texts(coop.context) == ["r0"]
    assert coop.areas == (bad,)


def test_a_raising_gc_prologue_still_completes_the_collection() -> None:
    log: list[str] = []
    coop = CoopContext(Context())
    first = Raising("p", "gc_prologue", script=[0], retire_after=1, log=log)
    second = Raising("q", "gc_prologue", script=[1], retire_after=1, log=log)
    coop.register(first)
    coop.register(second)
    coop.render()
    log.clear()
    with pytest.raises(AreaError, match="boom p") as info:
        coop.render()
    assert info.value.member == "gc_prologue"
    assert log == ["p.promote", "q.promote", "p.gc_prologue", "q.gc_prologue"]
    assert coop.areas == ()
    assert len(coop.context) == 0
    assert coop.records[-1].collection is not None


def test_a_raising_render_leaves_nothing_of_the_pass() -> None:
    class Bad(Scripted):
        def render(self) -> list[Message]:
            raise ValueError("no")

    coop = CoopContext(Context())
    coop.register(Scripted("a", [1]))
    coop.register(Bad("b"))
    with pytest.raises(AreaError, match=r"Bad#1\.render\(\)"):
        coop.render()
    assert len(coop.context) == 0


def test_retirement_is_final() -> None:
    coop = CoopContext(Context())
    a = Scripted("a", [1])
    blocker = Scripted("z", [1, 1, 1])
    coop.register(a)
    coop.register(blocker)
    coop.render()  # a0 z0
    a.life = AreaLifeState.retired
    coop.render()  # the tail component {z} is retained; a waits
    assert a in coop.areas
    a.life = AreaLifeState.retain
    with pytest.raises(AreaError, match="retirement is final"):
        coop.render()


def test_render_must_return_a_list_of_messages() -> None:
    class Wrong(Scripted):
        def render(self) -> list[Message]:
            return ("x",)  # type: ignore[return-value]

    coop = CoopContext(Context())
    coop.register(Wrong("w"))
    with pytest.raises(AreaError, match="return a list of Messages"):
        coop.render()


# -- registration ---------------------------------------------------------------


def test_registration_names_the_missing_members() -> None:
    class Half:
        life_state = AreaLifeState.retain

        def render(self) -> list[Message]:
            return []

    coop = CoopContext(Context())
    with pytest.raises(RegistrationError, match="lacks flow_state, observe, promote, gc_prologue"):
        coop.register(Half())  # type: ignore[arg-type]


def test_registration_rejects_the_same_instance_twice() -> None:
    coop = CoopContext(Context())
    area = Scripted("a")
    assert coop.register(area) == "Scripted#0"
    with pytest.raises(RegistrationError, match="register a new instance"):
        coop.register(area)
    assert coop.register(Scripted("a")) == "Scripted#1"


# -- rule C7: prompt replay --------------------------------------------------------


def test_records_rebuild_every_call_without_the_areas() -> None:
    coop, _, _, _ = subtask_run()
    coop.extend([Message(role=Role.assistant, content="m1")])
    coop.render()
    assert coop.last_record == coop.records[-1]
    assert CoopContext(Context()).last_record is None
    records = msgspec.json.decode(msgspec.json.encode(coop.records), type=tuple[RenderRecord, ...])
    conversation = [[user("u0")], [Message(role=Role.assistant, content="m0")]]
    conversation.append([Message(role=Role.assistant, content="m1")])
    rebuilt = Context()
    for record, messages in zip(records, conversation, strict=True):
        rebuilt.apply(record, messages)
    assert list(rebuilt) == list(coop.context)
    assert records[-1].collection is not None
    assert records[-1].collection.promoted == (user("result"),)
    assert records[-1].collection.areas == ("Scripted#1",)


def test_a_record_that_does_not_fit_is_refused() -> None:
    coop = CoopContext(Context())
    coop.register(Scripted("a"))
    coop.render()
    (record,) = coop.records
    with pytest.raises(ValueError, match="conversation messages"):
        Context().apply(record, [user("x")])


def test_every_rule_of_the_page_has_its_section_here() -> None:
    # The page numbers the context's rules apart from the fold's: C1-C7, each tested here.
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    page = (root / "docs" / "context.md").read_text(encoding="utf-8")
    numbered = re.findall(r"^- \*\*(C\d)\. ", page, flags=re.M)
    assert numbered == [f"C{n}" for n in range(1, 8)]
    here = Path(__file__).read_text(encoding="utf-8")
    assert re.findall(r"^# -- rule (C\d):", here, flags=re.M) == numbered
