"""Tool-argument validation replayed against pi 1.6: every case of
``tests/golden/pi-1.6/agent/validation-cases.jsonl`` (pi-ai 1.6.0's ``validateToolArguments`` over
pi-schema 1.6.0, recorded by ``validation.mjs`` there) must give pi's coerced arguments or pi's
error text, byte for byte."""

from __future__ import annotations

import math
from typing import Any

import pytest

from pi_notebook.ai import Tool, ToolArgumentsError, validate_tool_arguments
from tests.paths import GOLDEN, read_jsonl

CASES = read_jsonl(GOLDEN / "pi-1.6" / "agent" / "validation-cases.jsonl")


def test_the_golden_set_covers_what_pi_16_reports() -> None:
    errors = "\n".join(case["error"] for case in CASES if not case["ok"])
    for text in (
        ": missing",
        "expected integer, got string",
        "expected >= 1",
        "expected <= 10",
        "expected one of",
        "expected to match",
        "unknown field",
        "expected at least 2 items",
        "no value is allowed here",
        "unresolved reference",
        "matches more than one alternative",
    ):
        assert text in errors
    assert sum(case["ok"] for case in CASES) >= 15  # coercion cases


def _validate(schema: dict[str, Any], arguments: Any) -> Any:
    return validate_tool_arguments(Tool(name="tool", parameters=schema), arguments)


@pytest.mark.parametrize("case", CASES, ids=[case["case"] for case in CASES])
def test_validation_gives_what_pi_16_gives(case: dict[str, Any]) -> None:
    if case["ok"]:
        value = _validate(case["schema"], case["arguments"])
        assert value == case["value"]
        assert _json_types(value) == _json_types(case["value"])
    else:
        with pytest.raises(ToolArgumentsError) as raised:
            _validate(case["schema"], case["arguments"])
        assert str(raised.value) == case["error"]


def _json_types(value: Any) -> Any:
    """The JSON shape of a value: JavaScript has one number type, so ``3`` and ``3.0`` are the
    same; a string is not a number and ``true`` is not ``1``."""
    if isinstance(value, dict):
        return {key: _json_types(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_types(item) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return "number" if math.isfinite(value) else str(value)
    return type(value).__name__
