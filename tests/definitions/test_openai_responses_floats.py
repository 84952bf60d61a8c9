"""openai_responses coerces the numbers the SDK types as float, and nothing else.

The rebuild walks the response by hand (one function per shape); here it is checked
against a generic walk of the module's schema of the float paths, on responses whose
values at and around those paths are of every JSON type, including ints a float does
not equal. Neither may change the dicts it was given, only the response's own copy.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from definitions import openai_responses

# The float paths as a schema (checked against the SDK's models in the conformance
# tests), which the walk below reads generically.
F = "float"
RESPONSE = openai_responses._RESPONSE_FLOATS


def floats(value: Any, schema: Any) -> Any:
    """``value`` with the numbers at ``schema``'s float paths as floats (copy on write)."""
    if schema is F:
        if type(value) is int:
            coerced = float(value)
            return coerced if coerced == value else value
        return value
    if type(schema) is list:
        if type(value) is not list:
            return value
        new = [floats(old, schema[0]) for old in value]
        return value if all(a is b for a, b in zip(new, value, strict=True)) else new
    if type(value) is not dict:
        return value
    out = dict(value)
    for key, sub in schema.items():
        if key in value:
            out[key] = floats(value[key], sub)
    return value if all(out[k] is value[k] for k in value) else out


scalars = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([2**53 + 1, -(2**63), True, False, None, 0.5, "1", 1.0]),
)


def shaped(schema: Any) -> st.SearchStrategy[Any]:
    """Values of ``schema``'s shape (mostly: now and then of another type, a scalar or
    a list where a dict goes), with keys of the schema left out and other keys added."""
    if schema is F:
        return scalars
    if type(schema) is list:
        items = st.lists(shaped(schema[0]), min_size=1, max_size=3)
        return st.one_of(items, items, items, scalars, st.just([]), st.just({}))
    fields = {key: shaped(sub) for key, sub in schema.items()}
    whole = st.fixed_dictionaries({**fields, "id": st.just("x")})
    some = st.fixed_dictionaries({}, optional={**fields, "other": scalars})
    return st.one_of(whole, whole, some, scalars, st.lists(scalars, max_size=2))


responses = st.fixed_dictionaries(
    {key: shaped(sub) for key, sub in RESPONSE.items()},
    optional={"id": st.just("r"), "usage": st.fixed_dictionaries({"input_tokens": scalars})},
)

pytestmark = pytest.mark.slow  # 2,000 generated responses


@settings(max_examples=2000)
@given(response=responses)
def test_floats_are_coerced_where_the_sdk_types_them(response: dict[str, Any]) -> None:
    before = copy.deepcopy(response)
    expected = floats(response, RESPONSE)
    got = openai_responses._response_floats(dict(response))
    assert response == before  # the given dicts are not changed, only the copy
    assert repr(got) == repr(expected)  # 1.0 == 1: repr tells a float from an int
