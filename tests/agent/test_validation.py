"""Tool-argument validation: pi's coercion and pi's (TypeBox's) error text, checked against the
golden runs of pi 0.73.1 and against schemas as pydantic emits them."""

from __future__ import annotations

import copy
import enum
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from pi_notebook.agent import ToolArgumentsError, validate_tool_arguments
from pi_notebook.agent.validation import (
    MAX_ERRORS,
    SchemaValidator,
    arguments_error_for,
    format_arguments,
    js_number,
    schema_validator,
)
from pi_notebook.ai import Tool, ToolCall
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
    records = [r for r in read_jsonl(GOLDEN / "agent-events.jsonl") if r["scenario"] == name]
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


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        ({"type": "number"}, "2.5", 2.5),
        ({"type": "number"}, " 12 ", 12),
        ({"type": "number"}, "1e3", 1000.0),
        ({"type": "number"}, "0x10", 16),
        ({"type": "number"}, None, 0),
        ({"type": "number"}, True, 1),
        ({"type": "number"}, "", ""),
        ({"type": "number"}, "abc", "abc"),
        ({"type": "number"}, "Infinity", "Infinity"),
        ({"type": "integer"}, "7", 7),
        ({"type": "integer"}, "7.5", "7.5"),
        ({"type": "integer"}, 7.0, 7),
        ({"type": "integer"}, None, 0),
        ({"type": "string"}, 42, "42"),
        ({"type": "string"}, 2.5, "2.5"),
        ({"type": "string"}, 3.0, "3"),
        ({"type": "string"}, True, "true"),
        ({"type": "string"}, None, "null"),
        ({"type": "string"}, [1], [1]),
        ({"type": "boolean"}, "true", True),
        ({"type": "boolean"}, "false", False),
        ({"type": "boolean"}, 1, True),
        ({"type": "boolean"}, 0, False),
        ({"type": "boolean"}, None, False),
        ({"type": "boolean"}, "yes", "yes"),
        ({"type": "boolean"}, 2, 2),
        ({"type": "null"}, "", None),
        ({"type": "null"}, 0, None),
        ({"type": "null"}, False, None),
        ({"type": "null"}, "x", "x"),
        ({"type": ["integer", "null"]}, None, None),
        ({"type": ["integer", "null"]}, "3", 3),
        ({"type": ["string", "number"]}, 5, 5),
        ({"type": ["number", "string"]}, True, 1),
        ({"type": "array", "items": {"type": "integer"}}, ["1", 2, "3"], [1, 2, 3]),
        (
            {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
            [1, "2", "x"],
            ["1", 2, "x"],
        ),
        (
            {"type": "object", "additionalProperties": {"type": "number"}},
            {"a": "1", "b": "2.5"},
            {"a": 1, "b": 2.5},
        ),
        (
            {"allOf": [_object({"a": {"type": "integer"}}), _object({"b": {"type": "string"}})]},
            {"a": "1", "b": 2},
            {"a": 1, "b": "2"},
        ),
    ],
)
def test_coercion(schema: dict[str, Any], value: Any, expected: Any) -> None:
    coerced = SchemaValidator(schema).coerce(copy.deepcopy(value))
    assert coerced == expected
    assert type(coerced) is type(expected)


def test_unions_keep_values_that_already_fit_and_otherwise_take_the_first_member_that_does() -> (
    None
):
    optional_int = {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    validator = SchemaValidator(_object({"n": optional_int}))
    assert validator.coerce({"n": None}) == {"n": None}  # pi itself would make this 0
    assert validator.coerce({"n": "5"}) == {"n": 5}
    assert validator.coerce({"n": 5}) == {"n": 5}
    either = SchemaValidator({"oneOf": [{"type": "boolean"}, {"type": "string"}]})
    assert either.coerce("true") == "true"  # a string is fine as it is
    assert either.coerce(1) is True  # the first member that validates after coercion
    assert SchemaValidator({"anyOf": [{"type": "integer"}]}).coerce("x") == "x"


@pytest.mark.parametrize(
    ("schema", "value", "lines"),
    [
        ({"type": "string"}, 1.5, ["root: must be string"]),
        ({"type": ["string", "null"]}, 1, ["root: must be either string or null"]),
        (
            _object({"a": {"type": "integer"}}, ("a", "b")),
            {},
            ["a: must have required properties a, b"],
        ),
        ({"type": "integer", "minimum": 1}, 0, ["root: must be >= 1"]),
        ({"type": "number", "maximum": 2.5}, 3, ["root: must be <= 2.5"]),
        ({"type": "number", "exclusiveMinimum": 0}, 0, ["root: must be > 0"]),
        ({"type": "number", "exclusiveMaximum": 10.0}, 10, ["root: must be < 10"]),
        ({"type": "number", "minimum": 0, "exclusiveMinimum": True}, 0, ["root: must be > 0"]),
        ({"type": "number", "multipleOf": 0.5}, 0.75, ["root: must be multiple of 0.5"]),
        ({"type": "integer", "multipleOf": 3}, 7, ["root: must be multiple of 3"]),
        ({"type": "string", "minLength": 2}, "a", ["root: must not have fewer than 2 characters"]),
        ({"type": "string", "maxLength": 1}, "ab", ["root: must not have more than 1 characters"]),
        ({"type": "string", "pattern": "^a+$"}, "b", ['root: must match pattern "^a+$"']),
        ({"type": "array", "minItems": 1}, [], ["root: must not have fewer than 1 items"]),
        ({"type": "array", "maxItems": 1}, [1, 2], ["root: must not have more than 1 items"]),
        ({"type": "array", "uniqueItems": True}, [1, 1.0], ["root: must not have duplicate items"]),
        ({"enum": ["a", "b"]}, "c", ["root: must be equal to one of the allowed values"]),
        ({"const": 1}, True, ["root: must be equal to constant"]),
        ({"not": {"type": "string"}}, "x", ["root: must not be valid"]),
        (
            {"type": "object", "minProperties": 1},
            {},
            ["root: must not have fewer than 1 properties"],
        ),
        (
            {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "x",
            ["root: must be integer", "root: must be null", "root: must match a schema in anyOf"],
        ),
        (
            {"oneOf": [{"type": "number"}, {"type": "integer"}]},
            1,
            ["root: must match exactly one schema in oneOf"],
        ),
        (
            {"allOf": [{"type": "number"}, {"minimum": 5}]},
            "7x",
            ["root: must be number"],
        ),
        (
            {"type": "object", "properties": {"a": {}}, "additionalProperties": False},
            {"a": 1, "x/y": 2},
            ["x~1y: schema is false", "root: must not have additional properties"],
        ),
        (
            {"type": "object", "patternProperties": {"^n_": {"type": "integer"}}},
            {"n_a": "x", "other": "x"},
            ["n_a: must be integer"],
        ),
        (
            {"type": "array", "items": [{"type": "string"}], "additionalItems": False},
            ["a", 1],
            ["1: schema is false"],
        ),
    ],
)
def test_error_messages_in_pi_words(schema: dict[str, Any], value: Any, lines: list[str]) -> None:
    issues = SchemaValidator(schema).errors(value)
    assert [f"{i.location}: {i.message}" for i in issues] == lines


def test_nested_paths_and_required_under_arrays() -> None:
    schema = _object(
        {
            "models": {
                "type": "array",
                "items": _object(
                    {"id": {"type": "string"}, "cost": _object({}, ("input", "output"))}, ("id",)
                ),
            }
        }
    )
    tool = Tool(name="cfg", parameters=schema)
    with pytest.raises(ToolArgumentsError) as caught:
        validate_tool_arguments(tool, {"models": [{"cost": {}}, {"id": "m", "cost": {"input": 1}}]})
    assert [f"{i.location}: {i.message}" for i in caught.value.issues] == [
        "models.0.id: must have required properties id",
        "models.0.cost.input: must have required properties input, output",
        "models.1.cost.output: must have required properties output",
    ]
    assert caught.value.tool_name == "cfg"


def test_extra_properties_are_allowed_by_default_and_kept() -> None:
    assert validate_tool_arguments(ECHO, {"text": "hi", "extra": [1]}) == {
        "text": "hi",
        "extra": [1],
    }


def test_errors_stop_at_max_errors() -> None:
    schema = {"type": "array", "items": {"type": "string"}}
    issues = SchemaValidator(schema).errors([{}] * 20)
    assert len(issues) == MAX_ERRORS == 8
    assert SchemaValidator(schema).errors([{}] * 20, limit=3)[2].location == "2"


def test_received_arguments_are_the_original_ones_printed_like_json_stringify() -> None:
    raw = {"n": "0", "note": "café", "ratio": 2.0, "nested": {"list": [1.5, None, True]}}
    with pytest.raises(ToolArgumentsError) as caught:
        validate_tool_arguments(COUNT, raw)
    text = str(caught.value)
    assert text.startswith('Validation failed for tool "count":\n  - n: must be >= 1\n\n')
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

    with pytest.raises(ToolArgumentsError) as caught:
        validate_tool_arguments(
            tool,
            {
                "color": "blue",
                "origin": {},
                "mode": "dotted",
                "scale": 0,
                "tags": ["a", "a"],
                "tree": {"value": 1, "children": [{"value": "x"}]},
            },
        )
    assert [f"{i.location}: {i.message}" for i in caught.value.issues] == [
        "color: must be equal to one of the allowed values",
        "origin.x: must have required properties x",
        "tree.children.0.value: must be integer",
        "tree: must be null",
        "tree: must match a schema in anyOf",
        "mode: must be equal to one of the allowed values",
        "scale: must be > 0",
        "tags: must not have duplicate items",
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


def test_unresolvable_ref_is_a_clear_schema_error() -> None:
    tool = Tool(name="t", parameters=_object({"a": {"$ref": "#/$defs/Missing"}}))
    with pytest.raises(ValueError, match=r'Cannot resolve "\$ref": "#/\$defs/Missing"'):
        validate_tool_arguments(tool, {"a": 1})
    remote = Tool(name="t", parameters=_object({"a": {"$ref": "https://example.com/s.json"}}))
    with pytest.raises(ValueError, match="only local references"):
        validate_tool_arguments(remote, {})


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
    assert [i.message for i in SchemaValidator(False).errors(1)] == ["schema is false"]
    assert SchemaValidator({"type": "string", "format": "email", "x-custom": 1}).is_valid("nope")
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


# --- what the jsonschema engine adds, and what the adapter keeps ---------------------------------


def test_keywords_the_hand_made_validator_ignored_are_checked_in_pi_words() -> None:
    cases: list[tuple[dict[str, Any], Any, list[str]]] = [
        (
            {"type": "array", "contains": {"type": "string"}},
            [1],
            ["root: must contain at least 1 valid item(s)"],
        ),
        (
            {"type": "object", "dependentRequired": {"a": ["b", "c"]}},
            {"a": 1},
            ["root: must have properties b, c when property a is present"],
        ),
        (
            {"if": {"type": "string"}, "then": {"minLength": 2}},
            "a",
            ["root: must not have fewer than 2 characters"],
        ),
        (
            {"type": "object", "properties": {"a": {}}, "unevaluatedProperties": False},
            {"a": 1, "b": 2},
            ["root: must not have unevaluated properties"],
        ),
    ]
    for schema, value, lines in cases:
        issues = SchemaValidator(schema).errors(value)
        assert [f"{i.location}: {i.message}" for i in issues] == lines


def test_a_false_schema_under_a_property_or_item_is_reported_where_it_is() -> None:
    schema = {"type": "object", "properties": {"a": False, "b": {"type": "array", "items": False}}}
    issues = SchemaValidator(schema).errors({"a": 1, "b": [1]})
    assert [f"{i.location}: {i.message}" for i in issues] == [
        "a: schema is false",
        "b.0: schema is false",
    ]


def test_malformed_limits_are_ignored_and_unknown_types_are_a_clear_schema_error() -> None:
    lenient = SchemaValidator(
        {"type": "string", "minLength": "2", "maxItems": None, "multipleOf": 0}
    )
    assert lenient.is_valid("a")
    assert SchemaValidator({"multipleOf": 0.1}).is_valid(0.3)  # float tolerance, as before
    tool = Tool(name="t", parameters=_object({"a": {"type": "any"}}))
    with pytest.raises(ValueError, match="Unknown type 'any' in the parameter schema"):
        validate_tool_arguments(tool, {"a": 1})


def test_keyword_order_follows_typebox_not_the_schema_dict() -> None:
    # pydantic writes "properties" before "required" and "type" last; TypeBox reports type,
    # then required, then the properties
    schema = {
        "properties": {"a": {"minimum": 1, "type": "integer"}},
        "required": ["b"],
        "type": "object",
    }
    issues = SchemaValidator(schema).errors({"a": 0})
    assert [f"{i.location}: {i.message}" for i in issues] == [
        "b: must have required properties b",
        "a: must be >= 1",
    ]
    assert [i.message for i in SchemaValidator(schema).errors([])] == ["must be object"]


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
    elsewhere = Tool(
        name="t", parameters=_object({"a": {"$ref": "https://example.com/other.json"}})
    )
    with pytest.raises(ValueError, match="only local references"):
        validate_tool_arguments(elsewhere, {"a": 1})
