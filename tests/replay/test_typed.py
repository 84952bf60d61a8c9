"""Typed decoding: events of a definition set's vocabulary come out as its Structs,
every other event as plain objects; replays fold both forms to the same view."""

from __future__ import annotations

import io
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import attrs
import msgspec
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import replay.cli._bench as bench_command
import replay.cli._check as check_command
import replay.cli._common as common
from definitions import ProtocolSet, builtin, event_type, message, tool_call
from engine import ConversationError, create_conversation_engine
from replay import (
    PROTOCOLS,
    LogError,
    load_definitions,
    load_events,
    protocol_definitions,
    render_json,
    write_log,
)
from replay.cli import main
from replay.logs._jsonl import EventTypes

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "replay" / "examples" / "agent_session.jsonl"
BUILTIN_EXAMPLES = sorted((ROOT / "definitions" / "examples").glob("*.jsonl"))
EXAMPLES = [EXAMPLE, *BUILTIN_EXAMPLES]


def jsonl(events: list[Any]) -> bytes:
    return b"".join(json.dumps(event).encode() + b"\n" for event in events)


def envelopes(events: list[Any]) -> bytes:
    return jsonl([{"position": i, "event": event} for i, event in enumerate(events)])


def load(data: bytes, **kw: Any) -> Any:
    return load_events(io.BytesIO(data), **kw)


def typed(data: bytes, **kw: Any) -> Any:
    return load(data, types=builtin.Event, **kw)


def is_struct(event: Any) -> bool:
    return isinstance(event, msgspec.Struct)


# -- generated logs: the built-in events, with plug-in events and odd values among them ---

IDS = st.sampled_from(["a", "b"])
TEXT = st.text(alphabet="ab <&\n", max_size=4)
NAME = st.sampled_from(["read", "grep"])


def event(tag: str, **fields: Any) -> st.SearchStrategy[dict[str, Any]]:
    optional = fields.pop("optional", {})
    return st.fixed_dictionaries({"type": st.just(tag), "id": IDS, **fields}, optional=optional)


BUILTIN_EVENTS = st.one_of(
    event(
        "message.start",
        optional={"role": st.sampled_from(["user", "assistant"]), "text": TEXT},
    ),
    event("message.delta", text=TEXT),
    event("message.end"),
    event("message.abort", optional={"reason": TEXT}),
    event("reasoning.start"),
    event("reasoning.delta", text=TEXT),
    event(
        "reasoning.redacted",
        optional={"variant": st.sampled_from(["redacted", "encrypted"]), "data": TEXT},
    ),
    event("reasoning.end"),
    event("tool_call.start", name=NAME),
    event("tool_call.arguments_delta", text=st.sampled_from(['{"q"', ': "x"}', "", "{}"])),
    event("tool_call.arguments_end"),
    event("tool_call.result", optional={"output": st.one_of(TEXT, st.integers(), st.none())}),
    event("tool_call.error", message=TEXT),
    event("tool_call.denied", optional={"reason": TEXT}),
    event("approval.request", action=TEXT, optional={"tool_call_id": st.one_of(IDS, st.none())}),
    event(
        "approval.decision",
        decision=st.sampled_from(["approved", "denied"]),
        optional={"by": st.one_of(TEXT, st.none()), "reason": st.one_of(TEXT, st.none())},
    ),
    event(
        "status.update",
        optional={
            "status": st.sampled_from(["running", "done", "failed"]),
            "label": TEXT,
            # An int where the Struct holds a float: 1 and 1.0 must render alike.
            "progress": st.one_of(st.sampled_from([0, 1]), st.floats(0, 1)),
            "completed": st.integers(0, 5),
            "total": st.integers(0, 5),
        },
    ),
)
# An extra field the Struct does not know is dropped by the typed decode, kept in a dict.
WITH_EXTRAS = st.builds(lambda e, x: {**e, **x}, BUILTIN_EVENTS, st.sampled_from([{}, {"x": 1}]))
OTHER_EVENTS = st.one_of(
    st.builds(lambda i, t: {"type": "sticky", "id": i, "text": t}, IDS, TEXT),
    st.just({"type": "ping"}),
    st.just({"no": "type"}),
    st.just({"type": ["message.start"]}),  # an unhashable tag value
    st.just({"type": 7}),
)
# Mostly built-in events (one_of picks each branch alike: three of four are built-in).
LOGS = st.lists(st.one_of(WITH_EXTRAS, WITH_EXTRAS, WITH_EXTRAS, OTHER_EVENTS), max_size=30)
ALL_BUILTIN_LOGS = st.lists(BUILTIN_EVENTS, min_size=1, max_size=30)


def fold_each(events: list[Any]) -> tuple[Any, list[int]]:
    """The view's JSON after pushing ``events`` one at a time, and the positions whose
    push failed (a definition may reject a random event; the rest still fold)."""
    engine = create_conversation_engine(builtin.DEFINITIONS, event_type=event_type)
    failed = []
    for position, item in enumerate(events):
        try:
            engine.push(item)
        except ConversationError:
            failed.append(position)
    return render_json(engine.nodes(), builtin.DEFINITIONS), failed


# -- load_events(types=...) -------------------------------------------------------------


class TestTypedLoad:
    """load_events(types=...) decodes the vocabulary's events to Structs, others plain."""

    @pytest.mark.parametrize("wrap", [jsonl, envelopes], ids=["jsonl", "log"])
    def test_structs_for_known_tags_dicts_for_the_rest(self, wrap: Any) -> None:
        events = [
            {"type": "message.start", "id": "m", "role": "user"},
            {"type": "sticky", "id": "s", "text": "plug-in kinds pass through"},
            {"type": "message.delta", "id": "m", "text": "hi", "extra": True},
            {"type": "message.end", "id": "m"},
        ]
        loaded = typed(wrap(events))
        assert loaded.events == [
            message.Start(id="m", role="user"),
            events[1],
            message.Delta(id="m", text="hi"),
            message.End(id="m"),
        ]
        assert [type(e) for e in loaded.events] == [
            message.Start,
            dict,
            message.Delta,
            message.End,
        ]
        assert loaded.problems == ()

    def test_without_types_every_event_stays_plain(self) -> None:
        loaded = load(EXAMPLE.read_bytes())
        assert {type(e) for e in loaded.events} == {dict}

    def test_a_log_of_the_vocabulary_only_takes_the_one_call_fast_path(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        def slow_path(self: EventTypes, line: bytes) -> Any:
            raise AssertionError("decoded line by line")

        monkeypatch.setattr(EventTypes, "decode_event", slow_path)
        monkeypatch.setattr(EventTypes, "decode_entry", slow_path)
        events = load(EXAMPLE.read_bytes()).events
        assert typed(EXAMPLE.read_bytes()).events == [builtin.decode(jsonl([e])) for e in events]
        assert all(map(is_struct, typed(envelopes(events)).events))

    def test_keepalives_are_still_dropped(self) -> None:
        data = jsonl([{"type": "ping"}, {"type": "message.end", "id": "m"}, {"type": "ping"}])
        assert typed(data).events == [message.End(id="m")]

    @pytest.mark.parametrize(
        ("wrap", "where"),
        [(jsonl, "$.text"), (envelopes, "$.event.text")],
        ids=["jsonl", "log"],
    )
    def test_a_known_tag_with_bad_fields_is_a_bad_line(self, wrap: Any, where: str) -> None:
        data = wrap(
            [
                {"type": "message.start", "id": "m"},
                {"type": "message.delta", "id": "m", "text": 5},
                {"type": "message.end", "id": "m"},
            ]
        )
        with pytest.raises(LogError) as caught:
            typed(data)
        error = caught.value
        assert (error.line, error.column, error.truncated) == (2, 1, False)
        assert str(error).startswith("<stream>, line 2, column 1: invalid ")
        assert str(error).endswith(f"Expected `str`, got `int` - at `{where}`")
        # Plain decoding knows no schema: the same line is fine there.
        assert len(load(data).events) == 3

    @pytest.mark.parametrize("wrap", [jsonl, envelopes], ids=["jsonl", "log"])
    def test_lenient_skips_and_reports_the_bad_line_only(self, wrap: Any) -> None:
        events = [
            {"type": "message.start", "id": "m"},
            {"type": "sticky", "id": "s", "text": "x"},
            {"type": "message.delta", "id": "m"},  # no text
            {"type": "message.delta", "id": "m", "text": "ok"},
            {"type": "tool_call.start", "id": "t", "name": 3},
            {"type": "message.end", "id": "m"},
        ]
        loaded = typed(wrap(events), lenient=True)
        assert loaded.events == [
            message.Start(id="m"),
            events[1],
            message.Delta(id="m", text="ok"),
            message.End(id="m"),
        ]
        assert [(p.line, p.column, p.truncated) for p in loaded.problems] == [
            (3, 1, False),
            (5, 1, False),
        ]
        assert "missing required field `text`" in str(loaded.problems[0])
        assert str(loaded.problems[1]).endswith(".name`")

    def test_bad_json_after_a_bad_field_is_reported_where_the_json_breaks(self) -> None:
        # The typed decoder stops at the field; the plain one then finds the real fault.
        line = b'{"type":"message.delta","id":5,"text":"x" oops}'
        with pytest.raises(LogError) as caught:
            typed(jsonl([{"type": "message.end", "id": "m"}]) + line + b"\n")
        assert (caught.value.line, caught.value.column) == (2, line.index(b"oops") + 1)
        assert "Expected `str`" not in str(caught.value)

    @pytest.mark.parametrize("wrap", [jsonl, envelopes], ids=["jsonl", "log"])
    @pytest.mark.parametrize("lenient", [False, True])
    def test_a_truncated_last_line_is_recovered(self, wrap: Any, lenient: bool) -> None:
        events = [
            {"type": "message.start", "id": "m"},
            {"type": "sticky", "id": "s", "text": "x"},
            {"type": "message.delta", "id": "m", "text": "cut here"},
        ]
        data = wrap(events)
        loaded = typed(data[: data.rindex(b"cut") + 2], lenient=lenient)
        assert loaded.events == [message.Start(id="m"), events[1]]
        assert [(p.line, p.truncated) for p in loaded.problems] == [(3, True)]

    def test_odd_events_stay_plain(self) -> None:
        odd = [{"type": ["message.start"]}, {"type": 7}, {"no": "type"}]
        assert typed(jsonl(odd)).events == odd

    def test_an_event_that_is_not_an_object_is_a_bad_line(self) -> None:
        loaded = typed(jsonl([{"no": "type"}, [1, 2], "text", None, {"x": 1}]), lenient=True)
        assert loaded.events == [{"no": "type"}, {"x": 1}]
        assert [p.line for p in loaded.problems] == [2, 3, 4]

    def test_sse_frames_are_converted(self) -> None:
        data = (
            b'data: {"type":"message.start","id":"m"}\n\n'
            b'event: message.delta\ndata: {"id":"m","text":"named by the frame"}\n\n'
            b'data: {"type":"sticky","id":"s"}\n\n'
            b'data: {"type":"message.delta",\ndata: "id":"m","text":1}\n\n'
            b'data: {"type":"message.end","id":"m"}\n\n'
        )
        loaded = typed(data, lenient=True)
        assert loaded.events == [
            message.Start(id="m"),
            message.Delta(id="m", text="named by the frame"),
            {"type": "sticky", "id": "s"},
            message.End(id="m"),
        ]
        [problem] = loaded.problems
        assert (problem.line, problem.column) == (8, 7)
        assert str(problem).endswith("Expected `str`, got `int` - at `$.text`")
        with pytest.raises(LogError, match="line 8, column 7"):
            typed(data)

    def test_json_arrays_are_converted(self) -> None:
        events = [{"type": "message.start", "id": "m"}, {"type": "sticky", "id": "s"}]
        assert typed(json.dumps(events).encode()).events == [message.Start(id="m"), events[1]]
        bad = json.dumps([*events, {"type": "message.end"}]).encode()
        with pytest.raises(LogError, match=r"\(event 2\).*missing required field `id`"):
            typed(bad)

    @pytest.mark.parametrize("types", [dict[str, Any], int, message.Start | None])
    def test_types_must_be_a_vocabulary(self, types: Any) -> None:
        with pytest.raises(TypeError, match="tagged msgspec Struct"):
            load(b"{}\n", types=types)

    @given(LOGS)
    def test_structs_exactly_for_known_tags(self, events: list[Any]) -> None:
        plain = load(jsonl(events)).events
        loaded = typed(jsonl(events))
        assert loaded.problems == ()
        assert len(loaded.events) == len(plain)
        for typed_event, plain_event in zip(loaded.events, plain, strict=True):
            tag = plain_event.get("type") if type(plain_event) is dict else None
            if isinstance(tag, str) and tag in builtin.TAGS:
                assert typed_event == msgspec.convert(plain_event, builtin.Event)
            else:
                assert typed_event == plain_event
                assert type(typed_event) is type(plain_event)

    @pytest.mark.slow
    @given(ALL_BUILTIN_LOGS, st.data())
    def test_one_bad_known_line_loses_exactly_that_line(
        self, events: list[dict[str, Any]], data: st.DataObject
    ) -> None:
        bad = data.draw(st.integers(0, len(events) - 1), label="bad line index")
        broken = [*events]
        broken[bad] = {**events[bad], "id": data.draw(st.sampled_from([1, None, ["a"]]))}
        loaded = typed(jsonl(broken), lenient=True)
        expected = [msgspec.convert(e, builtin.Event) for i, e in enumerate(events) if i != bad]
        assert loaded.events == expected
        assert [(p.line, p.column) for p in loaded.problems] == [(bad + 1, 1)]
        assert "- at `$.id`" in str(loaded.problems[0])


class TestSameView:
    """Typed and plain events fold to the same nodes and render the same bytes."""

    @pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
    def test_examples(self, path: Path) -> None:
        chosen = protocol_definitions("builtin")
        plain = load_events(path).events
        structs = load_events(path, types=chosen.vocabulary).events
        assert all(map(is_struct, structs))
        assert chosen.replay(structs) == chosen.replay(plain)
        assert render_json(chosen.replay(structs), chosen.definitions) == render_json(
            chosen.replay(plain), chosen.definitions
        )

    @pytest.mark.slow
    @given(LOGS)
    @settings(max_examples=150)
    def test_generated_logs(self, events: list[Any]) -> None:
        plain = load(jsonl(events)).events
        structs = typed(jsonl(events)).events
        assume(any(map(is_struct, structs)))
        view, failed = fold_each(structs)
        assert (view, failed) == fold_each(plain)
        if not failed:  # the batch fold replays use stops at the first failing event
            chosen = protocol_definitions("builtin")
            for form in (structs, plain):
                assert render_json(chosen.replay(form), chosen.definitions) == view


# -- the definition set's vocabulary ----------------------------------------------------


class TestVocabulary:
    """ProtocolSet.vocabulary: a module's ``Event`` when it is a tagged vocabulary."""

    def test_builtin_set_declares_the_builtin_events(self) -> None:
        assert protocol_definitions("builtin").vocabulary is builtin.Event

    @pytest.mark.parametrize("protocol", [p for p in PROTOCOLS if p != "builtin"])
    def test_protocol_sets_keep_plain_events(self, protocol: str) -> None:
        try:
            chosen = protocol_definitions(protocol)
        except Exception:  # a set still being written
            pytest.skip(f"{protocol} not available")
        assert chosen.vocabulary is None

    @pytest.mark.parametrize(
        ("specs", "tags"),
        [
            (["definitions.builtin"], builtin.TAGS),
            (["definitions.message:DEFINITION"], message.DEFINITION.event_types),
            (
                ["definitions.message:DEFINITION", "definitions.tool_call:DEFINITION"],
                message.DEFINITION.event_types | tool_call.DEFINITION.event_types,
            ),
            (["definitions.builtin", "definitions.message:DEFINITION"], builtin.TAGS),
        ],
    )
    def test_specs_of_modules_that_declare_one(self, specs: list[str], tags: Any) -> None:
        vocabulary = load_definitions(specs).vocabulary
        assert EventTypes(vocabulary).tags == tags

    @pytest.mark.parametrize(
        "specs",
        [
            ["tests.replay.test_cli:PLUGIN"],  # no Event at all
            ["tests.replay._kinds:MessageKind"],  # Event = dict[str, Any]: not a vocabulary
            # A plug-in written for plain events sees every event: so all stay plain.
            ["definitions.builtin", "tests.replay.test_cli:PLUGIN"],
            ["definitions.anthropic"],
        ],
    )
    def test_specs_without_one(self, specs: list[str]) -> None:
        assert load_definitions(specs).vocabulary is None

    def test_a_plugin_module_declaring_its_own(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        (tmp_path / "typed_notes.py").write_text(
            textwrap.dedent(
                """
                import msgspec
                from engine import Claim

                class Note(msgspec.Struct, tag_field="type", tag="note"):
                    id: str

                class Clash(msgspec.Struct, tag_field="type", tag="message.start"):
                    who: str

                Event = Note
                CLASHING = Note | Clash

                class NoteKind:
                    kind = "note"
                    def match(self, event):
                        return Claim(event.id, "start") if type(event) is Note else None
                    def start(self, event, reader):
                        return event.id
                    def update(self, state, event):
                        return state

                DEFINITIONS = (NoteKind(),)
                """
            )
        )
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.delitem(sys.modules, "typed_notes", raising=False)
        import typed_notes  # type: ignore[import-not-found]

        assert load_definitions(["typed_notes"]).vocabulary is typed_notes.Note
        both = load_definitions(["definitions.builtin", "typed_notes"]).vocabulary
        assert EventTypes(both).tags == builtin.TAGS | {"note"}
        # Two vocabularies claiming one tag differently make no union: plain events.
        monkeypatch.setattr(typed_notes, "Event", typed_notes.CLASHING)
        assert load_definitions(["definitions.builtin", "typed_notes"]).vocabulary is None


# -- the command line -------------------------------------------------------------------


def convo(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    status = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def folded(monkeypatch: pytest.MonkeyPatch) -> list[list[Any]]:
    """The events each replay folded (spied on the set's fold, which the CLI calls)."""
    seen: list[list[Any]] = []
    folded = ProtocolSet.folded

    def spy(chosen: ProtocolSet, events: Any) -> Any:
        events = list(events)  # read once: the CLI's events are decoded as iterated
        seen.append(events)
        return folded(chosen, events)

    monkeypatch.setattr(ProtocolSet, "folded", spy)
    return seen


def untyped(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the CLI choose its sets without a vocabulary, as it did before typing."""
    chosen = common.protocol_definitions

    def plain(protocol: str) -> Any:
        return attrs.evolve(chosen(protocol), vocabulary=None)

    monkeypatch.setattr(common, "protocol_definitions", plain)


class TestCommandLine:
    """replay, check and bench decode with the chosen set's vocabulary."""

    @pytest.mark.slow
    @pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
    @pytest.mark.parametrize(
        "options",
        [("-f", "text"), ("-f", "json"), ("-f", "html"), ("--at", "5", "-f", "json")],
        ids=["text", "json", "html", "at"],
    )
    def test_replay_output_is_unchanged(
        self,
        path: Path,
        options: tuple[str, ...],
        folded: list[list[Any]],
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        now = convo(capsys, "replay", path, *options)
        assert all(map(is_struct, folded[-1]))
        untyped(monkeypatch)
        before = convo(capsys, "replay", path, *options)
        assert not any(map(is_struct, folded[-1]))
        assert now == before
        assert (now[0], now[2]) == (0, "")

    def test_named_sets_decode_typed_too(
        self, folded: list[list[Any]], capsys: pytest.CaptureFixture[str]
    ) -> None:
        status, out, _ = convo(capsys, "replay", EXAMPLE, "-d", "definitions.builtin")
        assert status == 0
        assert all(map(is_struct, folded[-1]))
        assert out == convo(capsys, "replay", EXAMPLE)[1]

    def test_a_plugin_beside_the_builtin_set_gets_plain_events(
        self, tmp_path: Path, folded: list[list[Any]], capsys: pytest.CaptureFixture[str]
    ) -> None:
        log = tmp_path / "mixed.jsonl"
        log.write_bytes(
            jsonl(
                [
                    {"type": "message.start", "id": "m", "role": "user", "text": "hi"},
                    {"type": "sticky", "id": "s", "text": "note"},
                ]
            )
        )
        specs = ("-d", "definitions.builtin", "-d", "tests.replay.test_cli:PLUGIN")
        status, out, err = convo(capsys, "replay", log, *specs)
        assert (status, err) == (0, "")
        assert "sticky note: note" in out
        assert {type(e) for e in folded[-1]} == {dict}

    def test_a_recording_without_vocabulary_is_decoded_once(
        self,
        tmp_path: Path,
        folded: list[list[Any]],
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        decodes: list[Any] = []
        parse = common.parse_piece

        def spy(data: bytes, fmt: Any, **kw: Any) -> Any:
            decodes.append(kw.get("types"))
            return parse(data, fmt, **kw)

        monkeypatch.setattr(common, "parse_piece", spy)
        log = tmp_path / "anthropic.jsonl"
        log.write_bytes(
            jsonl(
                [
                    {"type": "message_start", "message": {"id": "x", "role": "assistant"}},
                    {"type": "message_stop"},
                ]
            )
        )
        assert convo(capsys, "replay", log, "-f", "json")[0] == 0
        assert decodes == [None]  # the detection's decode is the replay's
        assert {type(e) for e in folded[-1]} == {dict}
        # A built-in log is decoded twice: plain to detect, typed to replay.
        assert convo(capsys, "replay", EXAMPLE, "-f", "json")[0] == 0
        assert decodes[1:] == [None, builtin.Event]

    def test_check_folds_typed_events(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        seen: list[Any] = []
        check = check_command.check_determinism

        def spy(events: Any, *args: Any, **kw: Any) -> Any:
            seen.extend(events)
            return check(events, *args, **kw)

        monkeypatch.setattr(check_command, "check_determinism", spy)
        status, out, _ = convo(capsys, "check", EXAMPLE, "--rounds", "1")
        assert (status, out) == (
            0,
            f"{EXAMPLE}: deterministic: 431 events replayed 13 ways (seed=0)\n",
        )
        assert len(seen) == 431
        assert all(map(is_struct, seen))

    def test_bench_times_the_typed_decode(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        monkeypatch.setattr(bench_command, "BENCH_RUN", 0.001)
        calls: list[Any] = []
        load = bench_command.load_events

        def spy(source: Any, **kw: Any) -> Any:
            loaded = load(source, **kw)
            calls.append((kw.get("types"), loaded.events))
            return loaded

        monkeypatch.setattr(bench_command, "load_events", spy)
        status, out, _ = convo(capsys, "bench", EXAMPLE, "--repeat", "1")
        assert status == 0
        assert "decode+fold" in out
        assert calls
        for types, events in calls:
            assert types is builtin.Event
            assert len(events) == 431
            assert all(map(is_struct, events))

    def test_a_bad_known_line_is_one_error_naming_where(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        events = load_events(EXAMPLE).events[:6]
        assert events[3]["type"] == "reasoning.delta"
        events[3] = {**events[3], "text": ["not", "text"]}
        events[4] = "}{"  # bad JSON too, later: the first bad line is the one named
        log = tmp_path / "bad.jsonl"
        log.write_bytes(jsonl(events).replace(b'"}{"', b"}{"))
        status, out, err = convo(capsys, "replay", log)
        assert (status, out) == (2, "")
        assert err == (
            f"convo: error: {log}, line 4, column 1: invalid JSON event: "
            "Expected `str`, got `array` - at `$.text`"
            " (--lenient skips each bad line, reporting it, and reads on)\n"
        )

    def test_lenient_replay_skips_the_bad_known_line(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        events = load_events(EXAMPLE).events
        good = tmp_path / "good.jsonl"
        write_log(good, [*events[:3], *events[4:]])
        bad = tmp_path / "bad.jsonl"
        write_log(bad, [*events[:3], {**events[3], "id": 1}, *events[4:]])
        status, out, err = convo(capsys, "replay", bad, "--lenient", "-f", "json")
        assert status == 0
        assert err == (
            f"convo: warning: skipped: {bad}, line 4, column 1: invalid log entry: "
            "Expected `str`, got `int` - at `$.event.id`\n"
        )
        assert out == convo(capsys, "replay", good, "-f", "json")[1]
