"""Tool-argument validation: the golden agent runs of pi-agent-core 1.6.0 and what the validator
adds around pi's rules (copies, caching, schema errors). Coercion and error texts case by case are
replayed from pi 1.6 itself in ``test_validation_pi16.py``."""

from __future__ import annotations

import copy
import enum
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from pi_notebook.ai import Tool, ToolArgumentsError, ToolCall, validate_tool_arguments
from pi_notebook.ai.js_json import js_number
from pi_notebook.ai.validation import (
    SchemaValidator,
    arguments_error_for,
    format_arguments,
    schema_validator,
)
from tests.paths import GOLDEN, read_jsonl

# The tools of pi's golden scenarios: Type.Object({text: Type.String()}) and
# Type.Object({n: Type.Integer({minimum: 1})}).
ECHO = Tool(
    name="echo",
    parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
)
COUNT = Tool(
    name="count",
    parameters={
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 1}},
        "required": ["n"],
    },
)
GOLDEN_TOOLS = {"echo": ECHO, "count": COUNT}


def _scenario(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The raw arguments of the scenario's tool call and its final tool-result text."""
    golden = GOLDEN / "pi-1.6" / "agent" / "agent-events.jsonl"
    records = [r for r in read_jsonl(golden) if r["scenario"] == name]
    start = next(r for r in records if r.get("type") == "tool_execution_start")
    final = next(r for r in records if r["kind"] == "final")
    return start, final["toolResultTexts"][0]


@pytest.mark.parametrize("scenario", ["invalid-args", "invalid-args-range"])
def test_golden_invalid_arguments_give_pi_text_exactly(scenario: str) -> None:
    start, result = _scenario(scenario)
    assert result["isError"] is True
    with pytest.raises(ToolArgumentsError) as caught:
        validate_tool_arguments(GOLDEN_TOOLS[start["toolName"]], start["args"])
    assert str(caught.value) == result["text"]


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [("coerced-args", {"text": "42"}), ("coerced-null", {"text": "null"})],
)
def test_golden_coerced_strings(scenario: str, expected: dict[str, Any]) -> None:
    start, result = _scenario(scenario)
    args = validate_tool_arguments(ECHO, start["args"])
    assert args == expected
    assert f"echo:{args['text']}" == result["text"]  # the golden echo tool's own output


def test_golden_coerced_integer() -> None:
    start, result = _scenario("coerced-integer")
    raw = copy.deepcopy(start["args"])
    args = validate_tool_arguments(COUNT, start["args"])
    assert args == {"n": 7} and type(args["n"]) is int
    assert result["text"] == "counted to 7 (number)"
    assert start["args"] == raw  # the raw arguments are left alone: events keep them


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


def test_extra_properties_are_allowed_by_default_and_kept() -> None:
    assert validate_tool_arguments(ECHO, {"text": "hi", "extra": [1]}) == {
        "text": "hi",
        "extra": [1],
    }


def test_received_arguments_are_the_original_ones_printed_like_json_stringify() -> None:
    raw = {"n": "0", "note": "café", "ratio": 2.0, "nested": {"list": [1.5, None, True]}}
    with pytest.raises(ToolArgumentsError) as caught:
        validate_tool_arguments(COUNT, raw)
    text = str(caught.value)
    assert text.startswith('Validation failed for tool "count":\n  - n: expected >= 1\n\n')
    assert text.endswith(
        "Received arguments:\n"
        '{\n  "n": "0",\n  "note": "café",\n  "ratio": 2,\n'
        '  "nested": {\n    "list": [\n      1.5,\n      null,\n      true\n    ]\n  }\n}'
    )
    assert caught.value.arguments is raw
    assert format_arguments({}) == "{}"


# --- schemas as pydantic emits them ------------------------------------------------------------


class Color(enum.StrEnum):
    RED = "red"
    GREEN = "green"


class Point(BaseModel):
    x: int
    y: int = 0


class Tree(BaseModel):
    value: int
    children: list[Tree] = []


class Drawing(BaseModel):
    color: Color
    origin: Point = Field(description="where to start")
    points: list[Point] = []
    tree: Tree | None = None
    mode: Literal["fill", "stroke"] = "fill"
    scale: float = Field(default=1.0, gt=0)
    tags: set[str] = set()
    meta: dict[str, int] = {}


def test_pydantic_schema_with_refs_enums_arrays_and_recursion() -> None:
    tool = Tool(name="draw", parameters=Drawing.model_json_schema())
    raw = {
        "color": "red",
        "origin": {"x": "1", "y": 2.0},
        "points": [{"x": "3"}, {"x": 4, "y": "5"}],
        "tree": {"value": "1", "children": [{"value": "2", "children": [{"value": 3.0}]}]},
        "scale": "2",
        "meta": {"a": "1"},
    }
    args = validate_tool_arguments(tool, raw)
    assert args["origin"] == {"x": 1, "y": 2}
    assert args["points"] == [{"x": 3}, {"x": 4, "y": 5}]
    assert args["tree"] == {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]}
    assert args["scale"] == 2 and args["meta"] == {"a": 1}
    assert Drawing.model_validate(args).tree is not None

    # pi 1.6's errors for a wrong drawing: case pydantic-drawing-1 of test_validation_pi16.py
    with pytest.raises(ToolArgumentsError) as caught:
        validate_tool_arguments(tool, {"color": "blue", "origin": {}})
    assert [f"{i.location}: {i.message}" for i in caught.value.issues] == [
        'color: expected one of ["red","green"]',
        "origin.x: missing",
    ]


def test_optional_none_survives_and_definitions_refs_resolve() -> None:
    schema = {
        "type": "object",
        "properties": {
            "p": {"$ref": "#/definitions/P"},
            "q": {"anyOf": [{"$ref": "#/definitions/P"}, {"type": "null"}]},
        },
        "definitions": {"P": {"type": "object", "properties": {"v": {"type": "number"}}}},
    }
    tool = Tool(name="t", parameters=schema)
    assert validate_tool_arguments(tool, {"p": {"v": "1"}, "q": None}) == {"p": {"v": 1}, "q": None}
    assert validate_tool_arguments(tool, {"q": {"v": "2"}}) == {"q": {"v": 2}}


def test_a_ref_that_names_nothing_rejects_only_the_values_at_its_place() -> None:
    """As pi compiles tool schemas (``unresolvedRefs: "reject"``): an MCP server's dangling
    definition does not make every call of the tool fail; nothing is ever fetched."""
    schema = _object({"a": {"$ref": "#/$defs/Missing"}, "b": {"type": "integer"}})
    tool = Tool(name="t", parameters=schema)
    assert validate_tool_arguments(tool, {"b": "1"}) == {"b": 1}
    with pytest.raises(ToolArgumentsError, match="a: unresolved reference #/\\$defs/Missing"):
        validate_tool_arguments(tool, {"a": 1})
    remote = Tool(name="t", parameters=_object({"a": {"$ref": "https://example.com/s.json"}}))
    assert validate_tool_arguments(remote, {}) == {}
    with pytest.raises(
        ToolArgumentsError, match=r"unresolved reference https://example\.com/s\.json"
    ):
        validate_tool_arguments(remote, {"a": 1})


def test_validators_are_cached_per_schema_object() -> None:
    schema = _object({"a": {"type": "integer"}})
    first = schema_validator(schema)
    assert schema_validator(schema) is first
    assert schema_validator(copy.deepcopy(schema)) is not first
    tool = Tool(name="t", parameters=schema)
    tool_validator = schema_validator(tool.parameters)
    validate_tool_arguments(tool, {"a": "1"})
    assert schema_validator(tool.parameters) is tool_validator


def test_boolean_schemas_and_unknown_keywords() -> None:
    assert SchemaValidator(True).errors({"anything": 1}) == []
    assert [i.message for i in SchemaValidator(False).errors(1)] == ["no value is allowed here"]
    assert SchemaValidator({"type": "string", "format": "colour", "x-custom": 1}).is_valid("x")
    assert not SchemaValidator({"type": "string", "format": "email"}).is_valid("nope")
    # a JavaScript-only named group is translated; a pattern Python cannot read is ignored
    assert SchemaValidator({"pattern": "^(?<y>\\d{4})$"}).is_valid("2024")
    assert SchemaValidator({"pattern": "(?<y>\\d"}).is_valid("x")


def test_js_number() -> None:
    cases = {1.0: "1", 0.5: "0.5", 1e21: "1e+21", 1.5e-7: "1.5e-7", 1e-6: "0.000001", -0.0: "0"}
    for value, text in cases.items():
        assert js_number(value) == text
    assert js_number(10**20) == "100000000000000000000"
    assert js_number(float("inf")) == "Infinity"


def test_arguments_error_for_unparseable_tool_calls() -> None:
    assert arguments_error_for(ToolCall(id="c", name="echo", arguments={"text": "x"})) is None
    broken = ToolCall(
        id="c",
        name="echo",
        arguments={"text": "x"},
        parse_error="invalid JSON: EOF while parsing a string at line 1 column 10",
        raw_arguments='{"text": "x',
    )
    assert arguments_error_for(broken) == (
        'Invalid arguments for tool "echo": invalid JSON: EOF while parsing a string at line 1'
        ' column 10\n\nReceived arguments:\n{"text": "x'
    )
    huge = broken.model_copy(update={"raw_arguments": "x" * 5000})
    message = arguments_error_for(huge)
    assert message is not None and message.endswith("[... 3000 more characters not shown]")


def test_malformed_limits_are_ignored_and_unknown_types_are_a_clear_schema_error() -> None:
    lenient = SchemaValidator(
        {"type": "string", "minLength": "2", "maxItems": None, "multipleOf": 0}
    )
    assert lenient.is_valid("a")
    assert SchemaValidator({"multipleOf": 0.1}).is_valid(0.3)  # float tolerance, as before
    tool = Tool(name="t", parameters=_object({"a": {"type": "any"}}))
    with pytest.raises(ValueError, match="Unknown type 'any' in the parameter schema"):
        validate_tool_arguments(tool, {"a": 1})


def test_ids_and_anchors_resolve_within_the_schema_and_nothing_is_fetched() -> None:
    schema = {
        "$id": "https://example.com/root.json",
        "type": "object",
        "properties": {"a": {"$ref": "#num"}, "b": {"$ref": "item.json"}},
        "$defs": {
            "n": {"$anchor": "num", "type": "integer"},
            "item": {"$id": "item.json", "type": "string"},
        },
    }
    tool = Tool(name="t", parameters=schema)
    assert validate_tool_arguments(tool, {"a": "3", "b": 4}) == {"a": 3, "b": "4"}
    with pytest.raises(ToolArgumentsError) as caught:
        validate_tool_arguments(tool, {"a": "x", "b": {}})
    assert [f"{i.location}: {i.message}" for i in caught.value.issues] == [
        "a: expected integer, got string",
        "b: expected string, got object",
    ]
