"""Generic messages: frozen values that encode to JSON and back unchanged."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import File, Image, Message, Native, Reasoning, Role, Text, ToolCall, ToolResult

_text = st.text(max_size=20)
_opt = st.none() | _text
_media = st.builds(Image, media_type=_text, data=_opt, url=_opt) | st.builds(
    File, media_type=_text, data=_opt, url=_opt, name=_opt
)
_parts = st.one_of(
    st.builds(Text, text=_text, id=_opt),
    st.builds(Reasoning, text=_text, provider=_text, signature=_opt, encrypted=_opt, id=_opt),
    st.builds(ToolCall, id=_text, name=_text, arguments=_text, item_id=_opt),
    st.builds(
        ToolResult,
        call_id=_text,
        content=_text | st.tuples(st.builds(Text, text=_text) | _media),
        is_error=st.booleans(),
        denied=st.booleans(),
        name=_opt,
    ),
    _media,
    st.builds(Native, provider=_text, data=_text, text=_text),
)
messages = st.builds(
    Message,
    role=st.sampled_from(Role),
    content=_text | st.lists(_parts, max_size=4).map(tuple),
)


@given(messages)
def test_a_message_round_trips_through_json(message: Message) -> None:
    encoded = msgspec.json.encode(message)
    assert msgspec.json.decode(encoded, type=Message) == message


def test_roles_are_the_three_message_roles() -> None:
    assert [r.value for r in Role] == ["system", "user", "assistant"]


def test_messages_are_frozen_and_hashable() -> None:
    m = Message(role=Role.user, content=(Text("hi"), ToolResult(call_id="c", content="ok")))
    with pytest.raises(AttributeError):
        m.role = Role.assistant  # type: ignore[misc]
    assert hash(m) == hash(Message(role=Role.user, content=(Text("hi"), ToolResult("c", "ok"))))


def test_bad_content_is_rejected_naming_the_fix() -> None:
    with pytest.raises(TypeError, match=r"tuple\(parts\)"):
        Message(role=Role.user, content=[Text("x")])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Role\.user"):
        Message(role="user", content="x")  # type: ignore[arg-type]


def test_parts_of_plain_text() -> None:
    assert Message(role=Role.user, content="hi").parts == (Text("hi"),)
    assert Message(role=Role.user, content="").parts == ()


@given(
    st.integers(0, 12),
    st.integers(0, 12),
    st.one_of(
        st.integers(-15, 15),
        st.builds(
            slice,
            st.none() | st.integers(-15, 15),
            st.none() | st.integers(-15, 15),
            st.none() | st.integers(-3, 3).filter(bool),
        ),
    ),
)
def test_an_effect_range_view_indexes_as_its_slice_of_the_items(
    start: int, length: int, index: int | slice
) -> None:
    # What an area's observe() is handed: a window on the context's items, made in O(1).
    from engine.context._context import _RangeView

    items = [f"item {i}" for i in range(30)]  # the window always lies within them
    view, window = _RangeView(items, start, start + length), items[start : start + length]
    assert len(view) == len(window)
    assert list(view) == window
    if isinstance(index, slice):
        assert view[index] == tuple(window[index])
    elif -len(window) <= index < len(window):
        assert view[index] == window[index]
    else:
        with pytest.raises(IndexError):
            view[index]
