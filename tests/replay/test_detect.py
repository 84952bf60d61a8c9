"""Protocol detection and definition sets: every fixture is told apart and folded as its
own module folds it; ``--definitions`` specs load any importable attribute."""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import definitions
from definitions import ag_ui, ai_sdk, anthropic, builtin, message, openai_chat, openai_responses
from engine import RegistrationError
from replay import load_events
from replay.protocols._detect import (
    PROTOCOLS,
    SCAN,
    DefinitionSpecError,
    detect_protocol,
    load_definitions,
    module_set,
    protocol_definitions,
)
from tests._shared import shared_files

# The one recorded file that is not valid JSON Lines as published (its first and last
# lines lack their final "}"): it loads leniently.
BROKEN = "vercel-openai-responses-parallel-tool-call-wrapper.1.chunks.txt"

FIXTURES = [
    *shared_files("fixtures", "recorded"),
    *shared_files("fixtures", "synthetic"),
    *shared_files("fixtures", "synthetic", "agui_edges"),
]

# What each fixture is, by its name (the fixtures' README names their origin).
_BY_NAME: list[tuple[tuple[str, ...], str]] = [
    (("agui",), "ag_ui"),
    (("aisdk", "vercel-langchain"), "ai_sdk"),
    (("anthropic", "vercel-anthropic"), "anthropic"),
    (("openai-python", "openai_chat", "vercel-openai-chat"), "openai_chat"),
    (("openai_responses", "vercel-openai-responses"), "openai_responses"),
]


def expected_protocol(path: Path) -> str:
    if path.parent.name == "agui_edges":
        return "ag_ui"
    for prefixes, protocol in _BY_NAME:
        if path.name.startswith(prefixes):
            return protocol
    raise AssertionError(f"no expected protocol for fixture {path.name}")


def load_fixture(path: Path) -> list[Any]:
    return load_events(path, lenient=path.name == BROKEN).events


def rebuild(protocol: str) -> tuple[ModuleType, Callable[[Any], Any]]:
    """The protocol module and its function that rebuilds the final objects from nodes."""
    name = {
        "anthropic": "messages",
        "openai_chat": "completions",
        "openai_responses": "responses",
        "ag_ui": "messages",
        "ai_sdk": "ui_messages",
    }[protocol]
    module = importable(PROTOCOLS[protocol][1])
    return module, getattr(module, name)


def importable(module: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        pytest.skip(f"{module} is not written yet")


class TestFixtures:
    """Every recorded and synthetic fixture."""

    @pytest.mark.parametrize("path", FIXTURES)
    def test_detected_unambiguously(self, path: Path) -> None:
        """Each fixture is detected as the protocol it was recorded from, with no doubt."""
        detection = detect_protocol(load_fixture(path))
        assert detection.protocol == expected_protocol(path), detection.describe()
        assert detection.recognised
        assert not detection.ambiguous, detection.describe()

    @pytest.mark.parametrize("path", FIXTURES)
    def test_detected_set_folds_as_the_module_does(self, path: Path) -> None:
        """The detected set (pre-pass, routing, definitions) rebuilds exactly what the
        module's own fold() rebuilds: the wiring is the module's, not a copy."""
        protocol = expected_protocol(path)
        module, objects = rebuild(protocol)
        events = load_fixture(path)
        chosen = protocol_definitions(protocol)
        assert chosen.definitions == tuple(module.DEFINITIONS)
        assert objects(chosen.replay(events)) == module.PROTOCOL.accumulate(events)


# A few events of each protocol, for the noise property.
SAMPLES: dict[str, list[dict[str, Any]]] = {
    "anthropic": [{"type": "content_block_delta"}, {"type": "message_stop"}],
    "openai_chat": [{"id": "x", "choices": [{"delta": {}}]}],
    "openai_responses": [{"type": "response.completed"}],
    "ag_ui": [{"type": "RUN_STARTED"}, {"type": "TOOL_CALL_ARGS"}],
    "ai_sdk": [{"type": "start"}, {"type": "tool-input-delta"}],
    "gemini": [{"candidates": [{"content": {"parts": [{"text": "x"}]}}]}, {"usageMetadata": {}}],
    "bedrock": [{"messageStart": {"role": "assistant"}}, {"contentBlockStop": {}}],
    "recorded": [{"type": "recording/request", "call": 0}, {"type": "recording/end", "call": 0}],
}


class TestVotes:
    """detect_protocol on hand-made events."""

    @pytest.mark.parametrize(
        ("event", "protocol"),
        [
            ({"type": "message.start", "id": "m", "role": "user"}, "builtin"),
            ({"type": "tool_call.arguments_delta", "id": "c", "delta": "{"}, "builtin"),
            ({"type": "message_start", "message": {"id": "msg"}}, "anthropic"),
            ({"type": "content_block_delta", "index": 0}, "anthropic"),
            ({"id": "c", "object": "chat.completion.chunk", "choices": []}, "openai_chat"),
            ({"id": "", "choices": [], "prompt_filter_results": []}, "openai_chat"),
            ({"type": "response.output_text.delta", "delta": "x"}, "openai_responses"),
            ({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"}, "ag_ui"),
            ({"type": "text-delta", "id": "0", "delta": "x"}, "ai_sdk"),
            ({"type": "data-weather", "data": {}}, "ai_sdk"),
        ],
    )
    def test_one_event(self, event: dict[str, Any], protocol: str) -> None:
        detection = detect_protocol([event])
        assert (detection.protocol, detection.votes) == (protocol, {protocol: 1})

    @pytest.mark.parametrize(
        "event",
        [{"type": "error", "error": {}}, {"type": "ping"}, {"type": "mine"}, {}, [1], "text"],
    )
    def test_shared_and_unknown_types_do_not_vote(self, event: Any) -> None:
        detection = detect_protocol([event])
        assert (detection.protocol, detection.recognised) == ("builtin", False)
        assert "no event of a known protocol" in detection.describe()

    def test_empty_log_is_the_builtin_default(self) -> None:
        detection = detect_protocol([])
        assert (detection.protocol, detection.scanned, detection.recognised) == (
            "builtin",
            0,
            False,
        )

    def test_typed_builtin_events_vote_builtin(self) -> None:
        event = msgspec.json.decode(b'{"type":"message.start","id":"m"}', type=builtin.Event)
        assert detect_protocol([event]).protocol == "builtin"

    def test_most_votes_win_and_the_doubt_is_said(self) -> None:
        events = [{"type": "message_start"}, {"type": "text-delta"}, {"type": "text-end"}]
        detection = detect_protocol(events)
        assert detection.protocol == "ai_sdk"
        assert detection.ambiguous
        assert detection.describe().startswith("ambiguous recording, chose AI SDK")
        assert "Anthropic Messages: 1" in detection.describe()

    def test_a_tie_goes_to_the_earlier_protocol(self) -> None:
        events = [{"type": "text-delta"}, {"type": "message_start"}]
        assert detect_protocol(events).protocol == "anthropic"

    def test_only_the_first_events_are_scanned(self) -> None:
        events = (
            {"type": "message_start"} if i < SCAN else {"type": "text-delta"}
            for i in range(SCAN * 3)
        )
        detection = detect_protocol(events)
        assert (detection.protocol, detection.scanned, detection.ambiguous) == (
            "anthropic",
            SCAN,
            False,
        )

    @pytest.mark.slow
    @settings(max_examples=100, deadline=None)
    @given(
        st.sampled_from(sorted(set(PROTOCOLS) - {"builtin"})),
        st.data(),
    )
    def test_one_protocol_among_noise(self, protocol: str, data: st.DataObject) -> None:
        """Events of one protocol mixed with unknown types are that protocol, undoubted."""
        samples = SAMPLES[protocol]
        noise: st.SearchStrategy[dict[str, Any]] = st.sampled_from(
            [{"type": "ping"}, {"type": "error"}, {"type": "x-custom"}, {}]
        )
        events = data.draw(
            st.lists(st.sampled_from(samples), min_size=1)
            .flatmap(lambda own: st.lists(noise).map(lambda extra: own + extra))
            .flatmap(st.permutations)
        )
        detection = detect_protocol(events)
        assert (detection.protocol, detection.ambiguous) == (protocol, False)


class TestProtocolDefinitions:
    """protocol_definitions(name)"""

    def test_builtin_has_no_pre_pass(self) -> None:
        chosen = protocol_definitions("builtin")
        assert chosen.definitions == builtin.DEFINITIONS
        assert chosen.prepare is None
        assert chosen.event_type is definitions.event_type

    def test_protocols_are_read_off_their_declared_set(self) -> None:
        for module in (anthropic, openai_chat, openai_responses, ag_ui, ai_sdk):
            protocol = module.PROTOCOL
            chosen = protocol_definitions(protocol.name)
            assert chosen.definitions == protocol.definitions == module.DEFINITIONS
            assert chosen.prepare is protocol.prepare
            assert chosen.event_type is protocol.event_type
            assert chosen.vocabulary is protocol.vocabulary
            assert PROTOCOLS[protocol.name][0] == protocol.title

    def test_routed_protocols_use_a_fresh_router_per_log(self) -> None:
        chosen = protocol_definitions("ag_ui")
        assert chosen.event_type is ag_ui.event_type
        event = {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}
        first = list(chosen.feed([event]))
        second = list(chosen.feed([event]))
        # A router kept across logs would see "m" again and claim an update.
        assert isinstance(first[0], ag_ui.Envelope)
        assert first[0].message == second[0].message
        assert first[0].message is not None
        assert first[0].message.role == "start"

    def test_missing_module_is_a_spec_error(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setitem(sys.modules, "definitions.ai_sdk", None)
        with pytest.raises(DefinitionSpecError, match=r"^cannot import 'definitions\.ai_sdk': "):
            protocol_definitions("ai_sdk")


# -- definitions specs ------------------------------------------------------------------

ONE = message.DEFINITION
"""A single definition (not a sequence), for a MODULE:ATTR spec."""


class Holder:
    """A dotted attribute path: tests.replay.test_detect:Holder.KINDS."""

    KINDS = (message.DEFINITION,)


NOT_DEFINITIONS = "message"
NUMBER = 3


class TestLoadDefinitions:
    """load_definitions(specs)"""

    def test_a_module_means_its_definitions(self) -> None:
        chosen = load_definitions(["definitions.builtin"])
        assert chosen.definitions == builtin.DEFINITIONS
        assert (chosen.prepare, chosen.event_type) == (None, definitions.event_type)

    def test_a_protocol_module_brings_its_pre_pass(self) -> None:
        for spec in ("definitions.anthropic", "definitions.anthropic:DEFINITIONS"):
            chosen = load_definitions([spec])
            assert chosen.definitions == anthropic.DEFINITIONS
            assert (chosen.prepare, chosen.event_type) == (anthropic.prepare, anthropic.event_type)

    def test_an_attribute_naming_a_module(self) -> None:
        assert load_definitions(["definitions:ai_sdk"]).definitions == ai_sdk.DEFINITIONS

    def test_single_definition_and_dotted_attribute(self) -> None:
        here = __name__
        assert load_definitions([f"{here}:ONE"]).definitions == (message.DEFINITION,)
        assert load_definitions([f"{here}:Holder.KINDS"]).definitions == (message.DEFINITION,)

    def test_specs_concatenate_in_order(self) -> None:
        chosen = load_definitions([f"{__name__}:ONE", "definitions.builtin"])
        assert chosen.definitions == (message.DEFINITION, *builtin.DEFINITIONS)
        assert chosen.name == f"{__name__}:ONE definitions.builtin"
        # The message kind twice: refused when an engine would register them.
        with pytest.raises(RegistrationError, match="both have kind 'message'"):
            chosen.engine()

    def test_one_pre_pass_combines_with_plain_definitions(self) -> None:
        chosen = load_definitions([f"{__name__}:ONE", "definitions.openai_chat"])
        assert chosen.prepare is openai_chat.prepare

    @pytest.mark.parametrize(
        ("spec", "reason"),
        [
            (
                "no_such_module_xyz:KINDS",
                "ModuleNotFoundError: No module named 'no_such_module_xyz'",
            ),
            (
                "definitions.builtin:NOPE",
                "AttributeError: module 'definitions.builtin' has no attribute 'NOPE'",
            ),
            (
                f"{__name__}:Holder.NOPE",
                "AttributeError: type object 'Holder' has no attribute 'NOPE'",
            ),
            (
                f"{__name__}:NOT_DEFINITIONS",
                "expected a definition or a sequence of definitions, got str",
            ),
            (f"{__name__}:NUMBER", "expected a definition or a sequence of definitions, got int"),
            ("definitions", "module 'definitions' has no DEFINITIONS; name the attribute"),
            (":KINDS", "expected MODULE or MODULE:ATTR"),
        ],
    )
    def test_bad_specs(self, spec: str, reason: str) -> None:
        with pytest.raises(DefinitionSpecError) as info:
            load_definitions([spec])
        assert str(info.value).startswith(f"cannot import {spec!r}: {reason}")
        assert info.value.spec == spec

    def test_two_pre_passes_cannot_combine(self) -> None:
        with pytest.raises(
            DefinitionSpecError, match=r"feeds events differently from 'definitions\.anthropic'"
        ):
            load_definitions(["definitions.anthropic", "definitions.ag_ui"])

    def test_no_specs(self) -> None:
        with pytest.raises(ValueError, match="at least one spec"):
            load_definitions([])


def test_a_plain_module_is_a_set_with_no_pre_pass_routed_by_the_shared_key() -> None:
    plugin = types.ModuleType("plugin")
    plugin.DEFINITIONS = builtin.DEFINITIONS  # type: ignore[attr-defined]
    chosen = module_set(plugin)
    assert (chosen.name, chosen.prepare, chosen.event_type) == (
        "plugin",
        None,
        definitions.event_type,
    )
    assert chosen.pre_pass() is None
    assert not chosen.rebuilds
    events = [{"type": "message.start", "id": "m", "role": "user"}]
    assert [node.key for node in chosen.replay(events)] == ["message:m"]
    assert chosen.engine().push_many(events) is None  # no pre-pass hook: as they are


def test_the_built_in_kinds_are_a_set_like_any_protocol() -> None:
    assert module_set(builtin) is builtin.PROTOCOL is protocol_definitions("builtin")
    assert builtin.PROTOCOL.label == "built-in kinds (definitions.builtin)"
    assert builtin.PROTOCOL.pre_pass() is None
