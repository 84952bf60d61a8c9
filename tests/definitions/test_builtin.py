"""The built-in set: registration, decoding, example logs, escaping, linear folding."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import msgspec
import pytest

from definitions import StreamedText, _json, builtin, event_type
from engine import ManualScheduler, Node, create_conversation_engine
from tests.definitions import make_example

EXAMPLES = Path(builtin.__file__).parent / "examples"
RENDERERS = {definition.kind: definition for definition in builtin.DEFINITIONS}


def fold(events: list[Any], one_at_a_time: bool = False) -> tuple[Node, ...]:
    engine = create_conversation_engine(
        builtin.DEFINITIONS, ManualScheduler(), event_type=event_type
    )
    if one_at_a_time:
        for event in events:
            engine.push(event)
    else:
        engine.push_many(events)
    return engine.nodes()


def read_log(path: Path) -> list[bytes]:
    return [line for line in path.read_bytes().splitlines() if line.strip()]


class TestSet:
    """The five definitions register side by side and route by tag."""

    def test_kinds_in_order(self) -> None:
        assert [d.kind for d in builtin.DEFINITIONS] == [
            "message",
            "reasoning",
            "tool_call",
            "approval",
            "status",
            "interruption",
            "compaction",
        ]

    def test_event_types_are_disjoint_and_match_the_structs(self) -> None:
        seen: set[str] = set()
        for definition in builtin.DEFINITIONS:
            assert not seen & definition.event_types
            seen |= definition.event_types
        assert seen == builtin.TAGS
        structs = builtin.Event.__args__
        assert {cls.__struct_config__.tag for cls in structs} == builtin.TAGS

    def test_every_definition_has_every_renderer(self) -> None:
        for definition in builtin.DEFINITIONS:
            for member in ("render_text", "render_html", "render_json", "publication"):
                assert hasattr(definition, member), (definition.kind, member)


class TestDecode:
    """``decode`` types built-in events and passes other types through."""

    def test_typed(self) -> None:
        event = builtin.decode(b'{"type": "tool_call.start", "id": "c", "name": "ls"}')
        assert type(event).__name__ == "Start"
        assert event_type(event) == "tool_call.start"

    def test_unknown_types_pass_through(self) -> None:
        assert builtin.decode('{"type": "custom.thing", "x": 1}') == {
            "type": "custom.thing",
            "x": 1,
        }

    @pytest.mark.parametrize("tag", ["[1]", "{}", "3", "null"])
    def test_a_type_that_is_no_tag_passes_through(self, tag: str) -> None:
        event = builtin.decode(f'{{"type": {tag}, "x": 1}}')
        assert event == {"type": msgspec.json.decode(tag), "x": 1}

    def test_bad_builtin_event_names_the_field(self) -> None:
        with pytest.raises(msgspec.ValidationError, match=r"\$\.text"):
            builtin.decode(b'{"type": "message.delta", "id": "m", "text": 1}')

    def test_malformed_json(self) -> None:
        with pytest.raises(msgspec.DecodeError):
            builtin.decode(b'{"type": ')


LOGS = sorted(EXAMPLES.glob("*.jsonl"))


class TestExampleLogs:
    """Each kind's example log folds and renders, as dicts and as typed events."""

    def test_one_log_per_kind(self) -> None:
        assert {path.stem for path in LOGS} == set(RENDERERS)

    @pytest.mark.parametrize("path", LOGS, ids=lambda p: p.stem)
    def test_folds_and_renders(self, path: Path) -> None:
        lines = read_log(path)
        plain = fold([msgspec.json.decode(line) for line in lines])
        typed = fold([builtin.decode(line) for line in lines], one_at_a_time=True)
        assert plain == typed
        assert plain
        assert {node.kind for node in plain} == {path.stem}
        for node in plain:
            render(node)


def render(node: Node) -> tuple[str, str, bytes]:
    definition = RENDERERS[node.kind]
    text = definition.render_text(node)
    assert "\x1b" not in text
    return text, definition.render_html(node), msgspec.json.encode(definition.render_json(node))


class TestAgentSession:
    """The bundled example is what the generator makes, and folds cleanly."""

    def test_matches_the_generator(self) -> None:
        events = make_example.agent_session_events()
        assert make_example.PATH.read_bytes() == make_example.render_jsonl(events), (
            "replay/examples/agent_session.jsonl is stale: run "
            "python -m tests.definitions.make_example"
        )

    def test_folds_cleanly_with_every_kind(self) -> None:
        lines = read_log(make_example.PATH)
        assert 300 <= len(lines) <= 2000
        nodes = fold([msgspec.json.decode(line) for line in lines])
        assert fold([builtin.decode(line) for line in lines], one_at_a_time=True) == nodes
        # every kind but interruptions: the example session runs to its end
        assert {node.kind for node in nodes} == set(RENDERERS) - {"interruption", "compaction"}
        for node in nodes:
            state = node.state
            assert getattr(state, "status", "done") in {"done", "failed", "denied", "approved"}
            render(node)
        user_turns = [n for n in nodes if n.kind == "message" and n.state.role == "user"]
        assert len(user_turns) == 3

    def test_arguments_are_split_mid_token(self) -> None:
        events = make_example.agent_session_events()
        deltas = [e["text"] for e in events if e["type"] == "tool_call.arguments_delta"]
        # some piece ends inside a string or a key, so the preview must cope with it
        assert any(piece.count('"') % 2 == 1 for piece in deltas)
        assert any(piece[-1].isalnum() and len(piece) > 1 for piece in deltas)


# -- escaping --------------------------------------------------------------------------

HOSTILE = [
    "<script>alert(1)</script>",
    '" onerror="x',
    "' onmouseover='x",
    "javascript:alert(1)",
    "[click](javascript:alert(1)) <img src=x onerror=alert(1)> <a href='javascript:x'>a</a>",
    "</div><script>alert(1)</script><div>",
]

_URL_ATTRIBUTES = {"href", "src", "action", "formaction", "poster", "srcset", "background"}


class _Audit(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self.problems.append("script element")
        for name, value in attrs:
            if name.startswith("on"):
                self.problems.append(f"handler attribute {name}")
            if name in _URL_ATTRIBUTES:
                self.problems.append(f"url attribute {name}={value!r}")
            if (value or "").strip().lower().startswith("javascript:") and name != "data-role":
                self.problems.append(f"javascript: in {name}")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def hostile_logs(payload: str) -> dict[str, list[dict[str, Any]]]:
    """For each kind, events that put ``payload`` in every content field."""
    return {
        "message": [
            {"type": "message.start", "id": "m", "role": payload, "text": payload},
            {"type": "message.delta", "id": "m", "text": payload},
            {"type": "message.abort", "id": "m", "reason": payload},
        ],
        "reasoning": [
            {"type": "reasoning.start", "id": "r"},
            {"type": "reasoning.delta", "id": "r", "text": payload},
            {"type": "reasoning.redacted", "id": "r", "variant": "encrypted", "data": payload},
        ],
        "tool_call": [
            {"type": "tool_call.start", "id": "c", "name": payload},
            {
                "type": "tool_call.arguments_delta",
                "id": "c",
                "text": msgspec.json.encode({payload: payload}).decode(),
            },
            {"type": "tool_call.arguments_end", "id": "c"},
            {"type": "tool_call.result", "id": "c", "output": payload},
            {"type": "tool_call.start", "id": "d", "name": "x"},
            {"type": "tool_call.arguments_delta", "id": "d", "text": payload},
            {"type": "tool_call.arguments_end", "id": "d"},
            {"type": "tool_call.error", "id": "d", "message": payload},
            {"type": "tool_call.start", "id": "e", "name": "x"},
            {"type": "tool_call.arguments_delta", "id": "e", "text": '{"a": "' + payload},
            {"type": "tool_call.denied", "id": "e", "reason": payload},
        ],
        "approval": [
            {"type": "approval.request", "id": "a", "action": payload, "tool_call_id": payload},
            {
                "type": "approval.decision",
                "id": "a",
                "decision": "denied",
                "by": payload,
                "reason": payload,
            },
        ],
        "status": [
            {"type": "status.update", "id": "s", "label": payload, "completed": 1, "total": 2},
        ],
        "interruption": [
            {"type": "interruption.mark", "id": "i", "cause": "cut", "tool_call_id": payload},
            {"type": "interruption.mark", "id": "j", "cause": "user", "text": payload},
        ],
        "compaction": [
            {"type": "compaction.mark", "id": "k", "summary": payload, "trigger": "auto"},
        ],
    }


class TestEscaping:
    """Hostile content through every kind's render_html yields no live markup."""

    @pytest.mark.parametrize("payload", HOSTILE)
    @pytest.mark.parametrize("kind", list(RENDERERS))
    def test_no_live_markup(self, kind: str, payload: str) -> None:
        nodes = fold(hostile_logs(payload)[kind])
        assert nodes
        for node in nodes:
            out = RENDERERS[kind].render_html(node)
            audit = _Audit()
            audit.feed(out)
            audit.close()
            assert audit.problems == [], out
            # the payload survives as text: escaped, not dropped (the reasoning data is
            # never shown at all)
            if kind != "reasoning":
                assert payload in "".join(audit.text) or payload in out, out


# -- linear folding -----------------------------------------------------------------


class TestLinearFolding:
    """Folding many small deltas never re-reads the text accumulated so far."""

    def test_no_materialization_while_streaming(self, monkeypatch: pytest.MonkeyPatch) -> None:
        joins = {"text": 0, "preview": 0}
        real_str = StreamedText.__str__
        real_preview = _json.PartialJson._build_preview

        def counting_str(self: StreamedText) -> str:
            joins["text"] += 1
            return real_str(self)

        def counting_preview(self: _json.PartialJson) -> Any:
            joins["preview"] += 1
            return real_preview(self)

        monkeypatch.setattr(StreamedText, "__str__", counting_str)
        monkeypatch.setattr(_json.PartialJson, "_build_preview", counting_preview)
        n = 20_000  # 160,000 characters in 8-character deltas per kind
        engine = create_conversation_engine(
            builtin.DEFINITIONS, ManualScheduler(), event_type=event_type
        )
        engine.push_many(
            [
                {"type": "message.start", "id": "m"},
                {"type": "reasoning.start", "id": "r"},
                {"type": "tool_call.start", "id": "c", "name": "write_file"},
                {"type": "tool_call.arguments_delta", "id": "c", "text": '{"content": "'},
            ]
        )
        for _ in range(n):
            engine.push({"type": "message.delta", "id": "m", "text": "abcdefgh"})
            engine.push({"type": "reasoning.delta", "id": "r", "text": "abcdefgh"})
            engine.push({"type": "tool_call.arguments_delta", "id": "c", "text": 'ab\\"def '})
        assert joins == {"text": 0, "preview": 0}
        engine.push({"type": "tool_call.arguments_delta", "id": "c", "text": '"}'})
        engine.push({"type": "tool_call.arguments_end", "id": "c"})
        assert joins == {"text": 1, "preview": 0}  # the string token, once, when it closed
        message, reasoning, call = engine.nodes()
        assert len(message.state.text) == len(reasoning.state.text) == 8 * n
        assert call.state.input == {"content": 'ab"def ' * n}


class TestClaimCache:
    """The shared cache of update claims never changes what a claim says."""

    def test_claims_stay_right_across_cache_clears(self) -> None:
        from definitions import _vocabulary
        from definitions.message import DEFINITION as message

        ids = [f"m{i}" for i in range(_vocabulary._CLAIM_CACHE_SIZE * 2 + 7)]
        for id in ids:  # more distinct ids than the cache holds: it is cleared twice
            claim = message.match({"type": "message.delta", "id": id, "text": "x"})
            assert (claim.id, claim.role) == (id, "update")
        again = message.match({"type": "message.delta", "id": ids[0], "text": "x"})
        assert (again.id, again.role) == (ids[0], "update")
        start = message.match({"type": "message.start", "id": ids[0]})
        assert (start.id, start.role) == (ids[0], "start")
