"""``domain.records.read_json`` reads record lines with orjson when it can: its answer
must be ``json.loads``'s, value for value and type for type, and its refusals json's own
(the same exception and message), for any text."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.records import read_json


def typed(value):
    """A value with every type spelled out (1 == 1.0 == True, -0.0 == 0.0, nan != nan)."""
    if isinstance(value, dict):
        return ("dict", [(key, typed(item)) for key, item in value.items()])
    if isinstance(value, list):
        return ("list", [typed(item) for item in value])
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else repr(value))
    return (type(value).__name__, value)


def outcome(read, text):
    try:
        return "value", typed(read(text))
    except (ValueError, RecursionError) as error:
        return "error", type(error).__name__, str(error)


def same(text) -> None:
    assert outcome(read_json, text) == outcome(json.loads, text)


numbers = st.one_of(
    st.integers(),
    st.integers(min_value=2**62, max_value=2**66),
    st.integers(min_value=-(2**66), max_value=-(2**62)),
    st.floats(allow_nan=False, allow_infinity=False),
)
values = st.recursive(
    st.none() | st.booleans() | numbers | st.text(),
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=500, deadline=None)
@given(values, st.booleans())
def test_json_text_reads_as_json_loads_reads_it(value, ascii_only):
    same(json.dumps(value, ensure_ascii=ascii_only))


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet='[]{}",:0123456789.eE-+ \\tnulrsfaNIy\ud800\ufeff\x00\n', max_size=40))
def test_any_text_reads_or_is_refused_as_json_loads_does(text):
    same(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "a": 2}',
        "18446744073709551616",
        "-9223372036854775809",
        "9223372036854775807",
        "[1e400, -1e400, 1e-400]",
        "NaN",
        "[Infinity]",
        '"\\ud800"',
        '"\ud800"',
        '"\\ud83d\\ude00"',
        "\ufeff{}",
        "-0",
        "[-0.0, 0.1, 1.0000000000000000001, 2.5e-324]",
        "[" * 395 + "]" * 395,
        "[" * 960 + "]" * 960,
        "[" * 1_000 + "]" * 1_000,
        "[" * 1_020 + "]" * 1_020,
        "[" * 2_000 + "]" * 2_000,
        '{"x": ' * 1_200 + "1" + "}" * 1_200,
        "",
        "  ",
        '{"a": 1} x',
        '{"seat": 123456789012345678901234567890}',
    ],
)
def test_edges_read_as_json_loads_reads_them(text):
    same(text)


def test_a_deep_line_is_still_too_deep():
    line = "[" * 100_000 + "]" * 100_000
    with pytest.raises(RecursionError):
        read_json(line)
