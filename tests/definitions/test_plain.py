"""``ProtocolSet.plain`` on pydantic models: the dict the model's JSON decodes to.

The SDKs' own events are checked on every recording in
``tests/conformance/test_sdk_objects.py``; these check each rule of the conversion on
small models of every shape: wire names (aliases), fields the wire left out, extra
fields (in ``__pydantic_fields_set__`` or not, as the SDKs differ), nested models in
lists, dicts and unions, and values JSON has another form for.
"""

from __future__ import annotations

import datetime
import enum
import importlib.util
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from definitions import ProtocolSet
from definitions.builtin import DEFINITIONS
from tests._shared import require

require(
    "pydantic",
    "pip install -e '.[test]' (the SDKs of the test extra bring it)",
    found=importlib.util.find_spec("pydantic") is not None,
)

import pydantic  # noqa: E402
from pydantic.alias_generators import to_camel  # noqa: E402

PROTOCOL = ProtocolSet(
    name="test",
    title="Test",
    detect=lambda event: event.get("type") != "other",
    definitions=DEFINITIONS,
    prepare=iter,
    pre_pass=lambda: lambda event: event,
    event_type=type,
    rebuild=lambda nodes: [],
    derived=frozenset({"derived"}),
)


class Colour(enum.Enum):
    RED = "red"


class Inner(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow", alias_generator=to_camel)

    text_value: str | None = None
    count: int | None = None


class Other(pydantic.BaseModel):
    kind: Literal["other"] = "other"
    items: list[Inner] = []


class Outer(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow", populate_by_name=True)

    type: str
    index: int | None = None
    inner: Inner | None = None
    either: Inner | Other | None = None
    inners: list[Inner] | None = None
    table: dict[str, Inner] | None = None
    data: dict[str, Any] | None = None
    renamed: str | None = pydantic.Field(default=None, alias="wireName")


class Flat(pydantic.BaseModel):
    """No wire names: a converter copies its ``__dict__`` when the wire gave every field,
    and the copy less the fields left out when it gave most (a Chat chunk's shape)."""

    model_config = pydantic.ConfigDict(extra="allow")

    type: str
    index: int | None = None
    name: str | None = None
    inner: Inner | None = None
    inners: list[Inner] | None = None
    others: list[Inner | Other] | None = None
    numbers: list[int] = []


def plain(model: object) -> Any:
    return PROTOCOL.plain(model)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=4,
)
INNER = st.fixed_dictionaries(
    {},
    optional={
        "textValue": st.none() | st.text(max_size=3),
        "count": st.none() | st.integers(),
        "x-extra": JSON,
    },
)
OUTER = st.fixed_dictionaries(
    {"type": st.sampled_from(["a", "b"])},
    optional={
        "index": st.none() | st.integers(),
        "inner": st.none() | INNER,
        "either": st.none() | INNER | st.fixed_dictionaries({"kind": st.just("other")}),
        "inners": st.none() | st.lists(INNER, max_size=2),
        "table": st.none() | st.dictionaries(st.text(max_size=2), INNER, max_size=2),
        "data": st.none() | st.dictionaries(st.text(max_size=2), JSON, max_size=2),
        "wireName": st.none() | st.text(max_size=2),
        "extraField": JSON,
    },
)


FLAT = st.fixed_dictionaries(
    {"type": st.sampled_from(["a", "b"])},
    optional={
        "index": st.none() | st.integers(),
        "name": st.none() | st.text(max_size=2),
        "inner": st.none() | INNER,
        "inners": st.none() | st.lists(INNER, max_size=2),
        "others": st.none()
        | st.lists(INNER | st.fixed_dictionaries({"kind": st.just("other")}), max_size=2),
        "numbers": st.lists(st.integers(), max_size=2),
        "extraField": JSON,
    },
)


class TestValidatedModels:
    @pytest.mark.slow
    @given(OUTER)
    def test_a_model_validated_from_a_dict_gives_that_dict(self, wire: dict[str, Any]) -> None:
        model = Outer.model_validate(wire)
        assert plain(model) == wire
        assert plain(model) == wire  # the second of a class and type: the same

    @given(FLAT)
    def test_a_model_without_wire_names_gives_its_dict(self, wire: dict[str, Any]) -> None:
        """Every field, most of them or a few: each way the converter builds it."""
        model = Flat.model_validate(wire)
        assert plain(model) == wire
        assert plain(model) == wire

    def test_wire_names_extras_and_only_the_fields_given(self) -> None:
        model = Outer.model_validate(
            {"type": "a", "wireName": "w", "inner": {"textValue": "t", "more": [1]}, "z": 2}
        )
        assert plain(model) == {
            "type": "a",
            "wireName": "w",
            "inner": {"textValue": "t", "more": [1]},
            "z": 2,
        }

    def test_an_explicit_null_is_kept_a_field_left_out_is_not(self) -> None:
        assert plain(Outer.model_validate({"type": "a", "index": None})) == {
            "type": "a",
            "index": None,
        }

    def test_a_nested_model_in_a_union_list_and_dict(self) -> None:
        wire = {
            "type": "a",
            "either": {"kind": "other", "items": [{"count": 1}]},
            "inners": [{"count": 2}, {}],
            "table": {"k": {"textValue": "v"}},
        }
        assert plain(Outer.model_validate(wire)) == wire


class TestConstructedModels:
    """The SDKs build events unvalidated (``construct``): a field's value is what the
    wire gave, and extras may or may not be in ``__pydantic_fields_set__``."""

    def test_extras_counted_as_given_or_not(self) -> None:
        for fields_set in ({"type", "index"}, {"type", "index", "obfuscation"}):
            model = Outer.model_construct(
                _fields_set=fields_set, type="a", index=1, obfuscation="x"
            )
            assert plain(model) == {"type": "a", "index": 1, "obfuscation": "x"}

    def test_a_required_field_left_out_is_left_out(self) -> None:
        """``construct`` puts no value in ``__dict__`` for a required field the wire left
        out (most fields given: the copy of ``__dict__`` has no such key to drop)."""
        model = Flat.model_construct(index=1, name="n", inner=Inner(count=1), numbers=[2])
        assert "type" not in model.__dict__
        assert plain(model) == {"index": 1, "name": "n", "inner": {"count": 1}, "numbers": [2]}

    def test_a_list_of_one_item_of_another_shape_is_kept(self) -> None:
        model = Flat.model_construct(type="a", inners=[{"raw": 1}], others=[None], numbers=[3])
        assert plain(model) == {
            "type": "a",
            "inners": [{"raw": 1}],
            "others": [None],
            "numbers": [3],
        }

    def test_a_value_of_another_shape_than_annotated_is_kept(self) -> None:
        model = Outer.model_construct(type="a", inner={"raw": [1, 2]}, index="7")
        assert plain(model) == {"type": "a", "inner": {"raw": [1, 2]}, "index": "7"}


class TestNothingShared:
    def test_the_dict_holds_none_of_the_models_lists_or_dicts(self) -> None:
        """An SDK's stream helper may append to an event's list after the push (the
        OpenAI Responses helper puts an added item in its snapshot and appends parts)."""
        other = Other.model_validate({"kind": "other", "items": []})
        outer = Outer.model_validate({"type": "a", "inners": [], "data": {}})
        flat = Flat.model_validate({"type": "a", "inners": [{"count": 1}], "numbers": [1]})
        converted = plain(other), plain(outer), plain(flat)
        assert flat.inners is not None
        flat.inners.append(Inner(count=2))
        flat.numbers.append(2)
        other.items.append(Inner(count=1))
        assert outer.inners is not None
        assert outer.data is not None
        outer.inners.append(Inner(count=2))
        outer.data["k"] = 1
        assert converted == (
            {"kind": "other", "items": []},
            {"type": "a", "inners": [], "data": {}},
            {"type": "a", "inners": [{"count": 1}], "numbers": [1]},
        )


class TestValuesJSONWritesOtherwise:
    def test_an_enum_is_its_value_and_a_tuple_a_list(self) -> None:
        model = Outer.model_construct(type="a", data={"c": Colour.RED, "t": (1, 2)})
        assert plain(model) == {"type": "a", "data": {"c": "red", "t": [1, 2]}}

    def test_a_datetime_is_as_pydantic_writes_it_in_json(self) -> None:
        when = datetime.datetime(2025, 10, 20, 15, 14, tzinfo=datetime.UTC)
        model = Outer.model_construct(type="a", data={"at": when})
        assert plain(model) == {"type": "a", "data": {"at": "2025-10-20T15:14:00Z"}}


class TestChecks:
    def test_each_event_is_checked_by_its_type_not_only_its_class(self) -> None:
        assert plain(Outer(type="a")) == {"type": "a"}
        assert plain(Outer(type="derived")) is None  # a helper's event, skipped
        with pytest.raises(TypeError, match="is not an event of this protocol"):
            plain(Outer(type="other"))
        assert plain(Outer(type="a", index=1)) == {"type": "a", "index": 1}
        with pytest.raises(TypeError, match="is not an event of this protocol"):
            plain(Outer(type="other"))


def test_a_batch_pre_pass_reads_a_stream_of_dicts_as_it_is_and_converts_any_other() -> None:
    """``ProtocolSet.dicts``: a stream that starts with a dict goes through untouched
    (the pre-pass converts a later typed event itself); any other is converted first,
    every event, so the pre-pass never meets a typed event one at a time."""
    from types import MappingProxyType

    from definitions import anthropic

    events: list[Any] = [{"type": "ping"}, {"type": "message_stop"}]
    assert anthropic.PROTOCOL.dicts(events) is events
    assert list(anthropic.PROTOCOL.dicts(iter(events))) == events
    assert all(a is b for a, b in zip(anthropic.PROTOCOL.dicts(iter(events)), events, strict=True))
    mapped = [MappingProxyType(event) for event in events]
    converted = list(anthropic.PROTOCOL.dicts(mapped))
    assert converted == events
    assert all(type(event) is dict for event in converted)
    assert list(anthropic.PROTOCOL.dicts(iter(mapped))) == events
    assert list(anthropic.PROTOCOL.dicts([])) == []
    assert list(anthropic.PROTOCOL.dicts(iter(()))) == []
