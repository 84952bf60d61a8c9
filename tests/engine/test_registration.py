"""Definitions are validated when the engine is made, with messages naming the fix."""

from __future__ import annotations

import types
from typing import Any

import pytest

from engine import Claim, Registration, RegistrationError, create_conversation_engine

from .harness import Tally, ev


def _module_definition() -> types.ModuleType:
    module = types.ModuleType("note")
    module.kind = "note"  # type: ignore[attr-defined]
    module.match = lambda event: Claim(event["id"], event["op"])  # type: ignore[attr-defined]
    module.start = lambda event, reader: 0  # type: ignore[attr-defined]
    module.update = lambda state, event: state + 1  # type: ignore[attr-defined]
    return module


class TestValidDefinitions:
    """Any object with the members registers: instances, modules, classes."""

    def test_a_module_is_a_definition(self) -> None:
        engine = create_conversation_engine([_module_definition(), Tally("a")])
        engine.push({"id": "1", "op": "start", "to": "a", "v": 1})
        assert [n.key for n in engine.nodes()] == ["note:1", "a:1"]

    def test_no_definitions_is_an_empty_view(self) -> None:
        engine = create_conversation_engine([])
        engine.push(ev("a", "start", "1"))
        assert engine.nodes() == ()


class TestInvalidDefinitions:
    """Each misuse is rejected before any event, naming the fix."""

    def test_duplicate_kind(self) -> None:
        with pytest.raises(RegistrationError, match=r"#0 and #2 both have kind .a.*rename"):
            create_conversation_engine([Tally("a"), Tally("b"), Tally("a")])

    def test_missing_member_suggests_a_close_name(self) -> None:
        class Typo:
            kind = "t"

            def match(self, event: Any) -> None:
                return None

            def start(self, event: Any, reader: Any) -> int:
                return 0

            def updates(self, state: int, event: Any) -> int:
                return state

        with pytest.raises(RegistrationError, match=r"has no .update.*.updates."):
            create_conversation_engine([Typo()])

    @pytest.mark.parametrize(
        ("kind", "message"),
        [("", "non-empty str"), (3, "non-empty str"), ("a:b", "contains ':'")],
    )
    def test_bad_kind(self, kind: Any, message: str) -> None:
        definition = Tally("x")
        definition.kind = kind
        with pytest.raises(RegistrationError, match=message):
            create_conversation_engine([definition])

    def test_a_class_instead_of_an_instance_names_the_fix(self) -> None:
        with pytest.raises(RegistrationError, match=r"is a class.*register an instance: Tally\(\)"):
            create_conversation_engine([Tally])

    def test_a_class_of_static_members_is_a_definition(self) -> None:
        class Static:
            kind = "s"
            match = staticmethod(lambda event: Claim(event["id"], "start"))
            start = staticmethod(lambda event, reader: 0)
            update = staticmethod(lambda state, event: state)

        engine = create_conversation_engine([Static])
        engine.push(ev("s", "start", "1"))
        assert [n.key for n in engine.nodes()] == ["s:1"]

    def test_member_that_is_not_callable(self) -> None:
        module = _module_definition()
        module.start = "start"  # type: ignore[attr-defined]
        with pytest.raises(RegistrationError, match="start is 'start', not a callable"):
            create_conversation_engine([module])

    @pytest.mark.parametrize("publication", ["soon", 3])
    def test_bad_constant_publication(self, publication: Any) -> None:
        module = _module_definition()
        module.publication = publication  # type: ignore[attr-defined]
        with pytest.raises(RegistrationError, match="'animation-frame', 'immediate'"):
            create_conversation_engine([module])

    @pytest.mark.parametrize("event_types", ["message.delta", 5, [["unhashable"]]])
    def test_bad_event_types(self, event_types: Any) -> None:
        module = _module_definition()
        module.event_types = event_types  # type: ignore[attr-defined]
        with pytest.raises(RegistrationError, match="event_types"):
            create_conversation_engine([module])

    def test_definitions_must_be_an_iterable(self) -> None:
        with pytest.raises(RegistrationError, match="iterable of definitions"):
            create_conversation_engine(Tally("a"))

    def test_scheduler_without_request_frame(self) -> None:
        with pytest.raises(RegistrationError, match="request_frame"):
            create_conversation_engine([Tally("a")], scheduler=object())  # type: ignore[arg-type]

    def test_event_type_must_be_callable(self) -> None:
        with pytest.raises(RegistrationError, match="event_type"):
            create_conversation_engine([Tally("a")], event_type="type")  # type: ignore[arg-type]


class TestRouting:
    """event_types with event_type= skips match calls that could not claim."""

    def test_only_declared_types_reach_match(self) -> None:
        calls: list[str] = []

        class Routed(Tally):
            event_types = frozenset({"start"})

            def match(self, event: dict[str, Any]) -> Claim | None:
                calls.append(event["op"])
                return super().match(event)

        engine = create_conversation_engine(
            [Routed("a"), Tally("b")], event_type=lambda event: event["op"]
        )
        engine.push_many([ev("*", "start", "1"), ev("*", "update", "1"), ev("*", "noise", "1")])
        assert calls == ["start"]
        assert [(n.key, n.state.total) for n in engine.nodes()] == [("a:1", 1), ("b:1", 2)]

    @pytest.mark.parametrize(
        ("router", "cause"),
        [
            (lambda event: event["op"], KeyError),  # raised where a new type would be
            (lambda event: event["op"] if event else [], TypeError),  # unhashable
            (lambda event: event["op"] if event else 1 / 0, ZeroDivisionError),
        ],
    )
    def test_a_failing_event_type_is_an_event_error_that_keeps_the_batch_before_it(
        self, router: Any, cause: type[Exception]
    ) -> None:
        from engine import EventError

        engine = create_conversation_engine([Tally("a")], event_type=router)
        with pytest.raises(EventError, match="event #2") as info:
            engine.push_many([ev("a", "start", "1"), ev("a", "update", "1"), {}])
        assert isinstance(info.value.__cause__, cause)
        assert [(n.key, n.state.total) for n in engine.nodes()] == [("a:1", 2)]

    def test_a_raising_event_type_names_the_position(self) -> None:
        from engine import EventError

        engine = create_conversation_engine([Tally("a")], event_type=lambda event: event["op"])
        engine.push(ev("a", "start", "1"))
        with pytest.raises(EventError, match="event #1"):
            engine.push({})
        assert len(engine.nodes()) == 1


class TestRegistration:
    """A Registration validates once and routes once for any number of engines."""

    def test_it_validates_when_made_naming_the_fix(self) -> None:
        with pytest.raises(RegistrationError, match="both have kind 'a'"):
            Registration([Tally("a"), Tally("a")])
        with pytest.raises(RegistrationError, match="needs the engine's event_type"):
            Registration([types.SimpleNamespace(**vars(_module_definition()), publication={})])

    def test_engines_made_from_it_fold_like_engines_made_from_the_definitions(self) -> None:
        log = [ev("a", "start", "1"), ev("b", "start", "2"), ev("a", "update", "1", 5)]
        registration = Registration([Tally("a"), Tally("b")], event_type=lambda e: e["to"])
        plain = create_conversation_engine(
            list(registration.definitions), event_type=registration.event_type
        )
        plain.push_many(log)
        create_conversation_engine(registration).push_many(log)  # makes the routes
        shared = create_conversation_engine(registration)  # takes them as they are
        shared.push_many(log)
        assert shared.nodes() == plain.nodes()
        assert shared.statistics() == plain.statistics()

    def test_its_engines_keep_their_own_nodes(self) -> None:
        registration = Registration([Tally("a")], event_type=lambda e: e["op"])
        first, second = (create_conversation_engine(registration) for _ in range(2))
        first.push(ev("a", "start", "1"))
        second.push(ev("a", "update", "1"))  # no node 1 here: dropped
        assert second.nodes() == ()
        assert second.statistics().updates_dropped == 1
        second.push_many([ev("a", "start", "1", 7), ev("a", "update", "1")])
        first.push(ev("a", "update", "1", 2))
        assert [n.state.total for n in first.nodes()] == [3]
        assert [n.state.total for n in second.nodes()] == [8]

    def test_an_engine_routes_with_its_registrations_event_type(self) -> None:
        route = lambda event: event["op"]  # noqa: E731
        registration = Registration([Tally("a")], event_type=route)
        create_conversation_engine(registration, event_type=route)  # the same: fine
        with pytest.raises(RegistrationError, match="pass event_type to Registration only"):
            create_conversation_engine(registration, event_type=lambda event: event["to"])

    def test_routes_are_bounded_for_an_event_type_of_many_values(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from engine import _registration

        monkeypatch.setattr(_registration, "_ROUTES_MAX", 3)
        registration = Registration([Tally("a")], event_type=lambda event: event["v"])
        engine = create_conversation_engine(registration)
        engine.push_many(
            [ev("a", "start", "1", 1)] + [ev("a", "update", "1", v) for v in range(2, 9)]
        )
        assert [n.state.total for n in engine.nodes()] == [sum(range(1, 9))]
        assert len(registration._routes) <= 3

    def test_repr_names_the_kinds(self) -> None:
        assert repr(Registration([Tally("a"), Tally("b")])) == "<Registration of a, b>"
        assert repr(Registration([])) == "<Registration of no definitions>"
