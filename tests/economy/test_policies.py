"""Each economy policy, its defaults, and pairing under every combination of them."""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given, settings

from definitions.harness import glance
from engine import (
    INTERRUPTED,
    Economist,
    Economy,
    Marks,
    Message,
    Native,
    Reasoning,
    Role,
    Text,
    ToolCall,
    ToolResult,
    economize,
    spill_name,
)
from tests.economy._sessions import (
    assistant,
    call,
    economies,
    pairing_problems,
    result,
    sessions,
    user,
)

BIG = "".join(f"line {n}\n" for n in range(1000))  # 8,890 chars


def one_call(
    content: str | tuple[Text, ...], command: str = "pytest -q", **flags: bool
) -> list[Message]:
    answer = ToolResult(call_id="c1", content=content, **flags)
    return [
        user("go"),
        assistant(call("c1", command)),
        Message(role=Role.user, content=(answer,)),
        assistant("done"),
    ]


def result_of(messages: tuple[Message, ...], call_id: str) -> ToolResult:
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolResult) and part.call_id == call_id:
                return part
    raise AssertionError(f"no result for {call_id}")


class TestDefaults:
    def test_the_three_sets(self) -> None:
        assert Economy().spill_threshold == 4000
        assert Economy().spill_preview == 400
        assert Economy().keep_recent == 6
        assert Economy().keep_denials == 1
        assert Economy().trim is False
        assert (Economy().trim_min_chars, Economy().trim_keep_recent) == (2000, 20)
        assert Economy.none().spill_threshold == 0
        assert not Economy.none().load_time
        assert Economy.live().spill_threshold == 4000
        assert not Economy.live().load_time
        assert Economy.resume(glance=glance).load_time


class TestSpill:
    def test_over_the_threshold_becomes_a_pointer_and_its_head(self) -> None:
        out = economize(one_call(BIG), Economy.live())
        content = result_of(out.messages, "c1").content
        assert isinstance(content, str)
        pointer, _, preview = content.partition("\n")
        name = spill_name(BIG)
        assert f".workbench/spill/{name}" in pointer
        assert "read that file if you need it all" in pointer
        assert preview == BIG[:400]
        assert [(s.name, s.content) for s in out.spills] == [(name, BIG)]

    def test_at_the_threshold_stays(self) -> None:
        text = "x" * 4000
        out = economize(one_call(text), Economy.live())
        assert result_of(out.messages, "c1").content == text
        assert not out.spills

    def test_names_are_content_addressed(self) -> None:
        assert spill_name(BIG) == spill_name(str(BIG))
        assert spill_name(BIG) != spill_name(BIG + "!")
        a = economize(one_call(BIG), Economy.live())
        b = economize(one_call(BIG, command="make"), Economy.live())
        assert a.spills == b.spills

    def test_lists_are_never_touched(self) -> None:
        parts = (Text(BIG),)
        out = economize(one_call(parts), Economy.live())
        assert result_of(out.messages, "c1").content == parts

    def test_reading_a_spill_file_back_is_never_spilled_again(self) -> None:
        name = spill_name(BIG)
        read = ToolCall(
            id="c2", name="Read", arguments=json.dumps({"file_path": f".workbench/spill/{name}"})
        )
        messages = [*one_call(BIG), user("all of it"), assistant(read), user(result("c2", BIG))]
        messages.append(assistant("read"))
        out = economize(messages, Economy.live())
        assert result_of(out.messages, "c2").content == BIG
        assert result_of(out.messages, "c1").content != BIG

    def test_spill_is_prefix_stable(self) -> None:
        messages = one_call(BIG)
        first = economize(messages, Economy.live()).messages
        later = economize([*messages, user("more"), assistant("ok")], Economy.live()).messages
        assert later[: len(first) - 1] == first[:-1]


class TestExpiry:
    def session(self, count: int) -> list[Message]:
        messages = [user("go")]
        for n in range(count):
            messages += [assistant(call(f"c{n}", "git status")), user(result(f"c{n}", "clean"))]
            messages += [assistant(call(f"w{n}", "make")), user(result(f"w{n}", "built"))]
        return [*messages, assistant("done")]

    def test_older_than_the_six_latest_expire(self) -> None:
        out = economize(self.session(9), Economy.resume(glance=glance))
        assert out.expired == {"c0", "c1", "c2"}
        sentence = result_of(out.messages, "c0").content
        assert isinstance(sentence, str)
        assert "`git status` (tool call 1) expired" in sentence
        assert "run it again" in sentence
        assert result_of(out.messages, "c3").content == "clean"
        assert all(result_of(out.messages, f"w{n}").content == "built" for n in range(9))

    def test_expired_content_is_not_spilled(self) -> None:
        messages = [user("go"), assistant(call("d", "git diff")), user(result("d", BIG))]
        for n in range(6):
            messages += [assistant(call(f"c{n}", "ls")), user(result(f"c{n}", "a b"))]
        out = economize([*messages, assistant("ok")], Economy.resume(glance=glance))
        assert "d" in out.expired
        assert "expired" in str(result_of(out.messages, "d").content)

    def test_live_expires_nothing(self) -> None:
        assert not economize(self.session(9), Economy.live()).expired


class TestDenials:
    def session(self) -> list[Message]:
        messages = [user("go")]
        for n in range(3):
            messages.append(assistant("trying", call(f"d{n}", "rm x"), call(f"s{n}", "ls")))
            messages.append(
                user(result(f"d{n}", "refused", denied=True, is_error=True), result(f"s{n}", "a"))
            )
        return [*messages, assistant("ok")]

    def test_the_latest_stays_and_siblings_stay(self) -> None:
        out = economize(self.session(), Economy.resume(glance=glance))
        assert out.pruned == {"d0", "d1"}
        ids = {p.id for m in out.messages for p in m.parts if isinstance(p, ToolCall)}
        assert ids == {"d2", "s0", "s1", "s2"}
        assert not pairing_problems(out.messages)

    def test_empty_turns_go_and_roles_merge(self) -> None:
        messages = [
            user("go"),
            assistant(Reasoning(text="r", provider="anthropic", signature="s"), call("d", "rm x")),
            user(result("d", "no", denied=True)),
            assistant(call("e", "rm y")),
            user(result("e", "no", denied=True)),
            assistant("ok"),
        ]
        out = economize(messages, Economy.resume(glance=glance))
        assert out.pruned == {"d"}
        # the reasoning went with its tool turn; the user turns around it merged
        assert [m.role for m in out.messages] == [
            Role.user,
            Role.assistant,
            Role.user,
            Role.assistant,
        ]
        assert not any(isinstance(p, Reasoning) for m in out.messages for p in m.parts)
        assert not pairing_problems(out.messages)

    def test_keep_every_denial(self) -> None:
        assert not economize(self.session(), Economy(glance=glance, keep_denials=None)).pruned


class TestInterruptionsAndDebris:
    def test_an_interrupted_call_keeps_its_entry_with_the_neutral_sentence(self) -> None:
        messages = one_call("partial output")
        out = economize(
            messages, Economy.resume(glance=glance), Marks(interrupted=frozenset({"c1"}))
        )
        answer = result_of(out.messages, "c1")
        assert answer.content == INTERRUPTED
        assert any(isinstance(p, ToolCall) for m in out.messages for p in m.parts)
        assert out.repaired == {"c1"}

    def test_retry_debris_is_dropped(self) -> None:
        messages = [user("go"), assistant("API Error: overloaded"), assistant("hello")]
        marks = Marks(debris=frozenset({1}))
        out = economize(messages, Economy.resume(glance=glance), marks)
        assert [m.parts for m in out.messages] == [(Text("go"),), (Text("hello"),)]
        assert economize(messages, Economy.none(), marks).messages == tuple(messages)


class TestTrim:
    def session(self, count: int) -> list[Message]:
        messages = [user("go")]
        for n in range(count):
            messages += [assistant(call(f"c{n}", "make")), user(result(f"c{n}", "y" * 2500))]
        return [*messages, assistant("ok")]

    def test_off_by_default(self) -> None:
        assert not economize(self.session(25), Economy.resume(glance=glance)).trimmed

    def test_all_but_the_twenty_latest(self) -> None:
        out = economize(self.session(25), Economy(glance=glance, trim=True))
        assert out.trimmed == {f"c{n}" for n in range(5)}
        assert {s.content for s in out.spills} == {"y" * 2500}
        assert str(result_of(out.messages, "c0").content).startswith("[output spilled: 2,500")


class TestSafepoint:
    def test_decisions_stand_until_a_collection_frees_enough(self) -> None:
        economist = Economist(Economy(glance=glance, clear_at_least=500))
        messages = [user("go")]
        for n in range(7):
            messages += [assistant(call(f"c{n}", "ls")), user(result(f"c{n}", "f" * 300))]
        first = economist.request([*messages, assistant("ok")])
        assert first.expired == {"c0"}
        # one more listing: expiring c1 would free about 190 chars < 500: nothing moves
        messages += [assistant("ok"), user("again")]
        messages += [assistant(call("c7", "ls")), user(result("c7", "f" * 300))]
        second = economist.request([*messages, assistant("ok")])
        assert second.expired == {"c0"}
        assert second.messages[: len(first.messages) - 1] == first.messages[:-1]
        for n in range(8, 14):
            messages += [assistant(call(f"c{n}", "ls")), user(result(f"c{n}", "f" * 300))]
        third = economist.request([*messages, assistant("ok")])
        assert len(third.expired) == 8
        assert economist.collections == 2


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(sessions(), economies())
def test_pairing_holds_under_every_policy(
    session: tuple[list[Message], Marks], economy: Economy
) -> None:
    messages, marks = session
    assert not pairing_problems(economize(messages, Economy.none(), marks).messages)
    out = economize(messages, economy, marks)
    assert not pairing_problems(out.messages), out.messages
    # nothing is lost: every string cut is in a spill file, expired results aside
    spilled = {s.content for s in out.spills}
    for message in messages:
        for part in message.parts:
            if not isinstance(part, ToolResult) or not isinstance(part.content, str):
                continue
            if part.call_id in out.expired | out.pruned | out.repaired:
                continue
            kept = [
                p.content
                for m in out.messages
                for p in m.parts
                if isinstance(p, ToolResult) and p.call_id == part.call_id
            ]
            assert kept == [part.content] or part.content in spilled


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(sessions(), economies())
def test_economist_requests_stay_valid_call_after_call(
    session: tuple[list[Message], Marks], economy: Economy
) -> None:
    messages, marks = session
    economist = Economist(economy)
    for end in range(1, len(messages) + 1):
        if messages[end - 1].role != Role.user:
            continue  # a model call follows a user turn
        debris = frozenset(i for i in marks.debris if i < end)
        out = economist.request(messages[:end], Marks(marks.interrupted, debris))
        assert not pairing_problems(out.messages)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(sessions(), economies())
def test_entry_only_work_is_incremental_and_equal_to_a_full_pass(
    session: tuple[list[Message], Marks], economy: Economy
) -> None:
    messages, _ = session
    live = msgspec.structs.replace(economy, load_time=False)
    economist = Economist(live)
    before: tuple[Message, ...] = ()
    written: set[str] = set()
    for end in range(1, len(messages) + 1):
        if messages[end - 1].role != Role.user:
            continue
        out = economist.request(messages[:end])
        assert out.messages == economize(messages[:end], live).messages
        assert out.messages[: out.stable] == before[: out.stable]
        # only what arrived since the previous call was economized
        assert out.stable == len(before) or before[-1].role == out.messages[len(before) - 1].role
        written |= {s.name for s in out.spills}
        before = out.messages
    last_user = max(i for i, m in enumerate(messages) if m.role == Role.user)
    assert written == {s.name for s in economize(messages[: last_user + 1], live).spills}


def test_a_call_inside_a_native_block_leaves_with_its_result() -> None:
    native = Native(provider="anthropic", data="{}", call=call("d0", "rm x"))
    messages = [
        user("go"),
        assistant("trying", native, call("s0")),
        user(result("d0", "no", denied=True), result("s0")),
        assistant(call("d1", "rm y")),
        user(result("d1", "no", denied=True)),
        assistant("ok"),
    ]
    out = economize(messages, Economy.resume(glance=glance))
    assert out.pruned == {"d0"}
    assert not any(isinstance(p, Native) for m in out.messages for p in m.parts)
    assert not pairing_problems(out.messages)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("keep_recent", -1),
        ("spill_threshold", 4000.5),
        ("keep_denials", -2),
        ("trim_min_chars", "2k"),
    ],
)
def test_a_bad_option_names_itself(option: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"Economy.{option} must be an int >= 0"):
        Economy(**{option: value})  # type: ignore[arg-type]
