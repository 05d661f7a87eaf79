"""JavaScript numbers and ``JSON.stringify`` (``pi_notebook.ai.js_json``): the one place that
decides when a float is written as an integer, used by session files, token estimates and
validation messages alike."""

from __future__ import annotations

import json

import pytest

from pi_notebook.ai.js_json import js_number, js_value, stringify, stringify_owned

NUMBERS = [
    (0.0, "0"),
    (-0.0, "0"),
    (1240.0, "1240"),
    (0.0036, "0.0036"),
    (0.0006000000000000001, "0.0006000000000000001"),
    (1.5e-5, "0.000015"),
    (1e-6, "0.000001"),
    (-2.5e-6, "-0.0000025"),
    (1e-7, "1e-7"),
    (-1.25e-12, "-1.25e-12"),
    (1e21, "1e+21"),
    (float("nan"), "null"),
    (float("inf"), "null"),
    (12345678901234567890, "12345678901234567890"),
]


@pytest.mark.parametrize(("value", "text"), NUMBERS)
def test_numbers_are_written_as_javascript_writes_them(value: float, text: str) -> None:
    assert stringify({"n": value}) == '{"n":' + text + "}"
    assert stringify([value]) == "[" + text + "]"
    assert stringify_owned([value]) == "[" + text + "]"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (-0.0, "0"),
        (0.5, "0.5"),
        (1e20, "100000000000000000000"),  # integral below 1e21: no exponent (Python: 1e+20)
        (1e21, "1e+21"),
        (2.0**53 + 2, "9007199254740994"),
        (1e-6, "0.000001"),
        (1.5e-7, "1.5e-7"),
        (10**20, "100000000000000000000"),
        (float("nan"), "NaN"),
        (float("-inf"), "-Infinity"),
    ],
)
def test_js_number_is_string_of_n(value: float, text: str) -> None:
    assert js_number(value) == text


def test_every_entry_point_agrees_on_when_a_float_is_an_integer() -> None:
    """The copies this module replaced disagreed (one wrote 1e20 as ``1e+20``, one wrote 1e21 as
    22 digits); here the rule is one: integral and below 1e21."""
    for value in (3.0, 1e20, 2.0**60, 1e21, 1e22, -7.0):
        expected = js_number(value)
        assert stringify(value) == expected
        assert json.dumps(js_value(value)) == expected
        assert stringify({"v": [value]}, indent=2) == '{\n  "v": [\n    ' + expected + "\n  ]\n}"


def test_strings_are_written_as_javascript_writes_them() -> None:
    value = {"s": 'é "q" \\ \n\t\x1f\x7f \u2028\u2029 😀 </script>', "b": [True, None]}
    assert stringify(value) == (
        '{"s":"é \\"q\\" \\\\ \\n\\t\\u001f\x7f \u2028\u2029 😀 </script>","b":[true,null]}'
    )


def test_stringify_copies_and_stringify_owned_rewrites_in_place() -> None:
    mine = {"a": [1.0, 2.5]}
    assert stringify(mine) == '{"a":[1,2.5]}' and mine == {"a": [1.0, 2.5]}
    assert type(mine["a"][0]) is float
    owned = {"a": [1.0, 2.5]}
    assert stringify_owned(owned) == '{"a":[1,2.5]}'
    assert type(owned["a"][0]) is int  # rewritten in place: the session writer owns its dump


def test_values_json_cannot_hold_go_through_default() -> None:
    with pytest.raises(TypeError):
        stringify({"x": object()})
    assert stringify([b"x"], default=str) == "[\"b'x'\"]"
