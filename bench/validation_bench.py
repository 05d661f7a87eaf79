"""Tool-argument validation per tool call: the jsonschema-backed module against the hand-made
validator it replaced, side by side in one run.

The old module is ``pi_notebook/agent/validation.py`` as it is on ``main`` before the replacement
(``git show <rev>:pi_notebook/agent/validation.py``, written to a temporary file and imported as a
sibling module), or a file given with ``--old``. Each case times ``validate_tool_arguments`` on a
cached validator (what a tool call costs), and the compile of a fresh validator (the first call of
a tool). Both modules must agree on every case's result; a disagreement is printed.

    python3 -m bench.validation_bench                  # old from the commit before the switch
    python3 -m bench.validation_bench --rev main --reps 7
    python3 -m bench.validation_bench --old /tmp/old_validation.py
"""

from __future__ import annotations

import argparse
import contextlib
import enum
import importlib.util
import subprocess
import sys
import tempfile
import timeit
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal

from pydantic import BaseModel, Field

from bench.common import BENCH_DIR, describe_environment, fmt_us, print_table, stats
from pi_notebook.ai import Tool
from pi_notebook.ai import validation as new

OLD_REV = "18beca0"
"""The last commit whose validation.py is the hand-made validator."""


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


class ReadFile(BaseModel):
    path: str
    offset: int = 0
    limit: int | None = None
    encoding: Literal["utf-8", "latin-1"] = "utf-8"


@dataclass(frozen=True)
class Case:
    name: str
    tool: Tool
    arguments: dict[str, Any]


ECHO = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
CASES = [
    Case("echo: 1 string, valid", Tool(name="echo", parameters=ECHO), {"text": "hello"}),
    Case("echo: number coerced to string", Tool(name="echo", parameters=ECHO), {"text": 42}),
    Case(
        "read_file: 4 params, 2 coerced",
        Tool(name="read_file", parameters=ReadFile.model_json_schema()),
        {"path": "notes.txt", "offset": "10", "limit": None, "encoding": "utf-8"},
    ),
    Case(
        "drawing: $refs, arrays, union, recursion",
        Tool(name="draw", parameters=Drawing.model_json_schema()),
        {
            "color": "red",
            "origin": {"x": "1", "y": 2},
            "points": [{"x": 3}, {"x": "4", "y": 5}],
            "tree": {"value": 1, "children": [{"value": "2"}]},
            "scale": "2",
        },
    ),
    Case(
        "read_file: invalid (3 errors, message built)",
        Tool(name="read_file", parameters=ReadFile.model_json_schema()),
        {"offset": "x", "encoding": "utf-16"},
    ),
]


def load_old(rev: str, path: str | None) -> ModuleType:
    """The old validation module, imported beside the new one so its relative imports work."""
    if path is None:
        source = subprocess.run(
            ["git", "show", f"{rev}:pi_notebook/agent/validation.py"],
            capture_output=True,
            text=True,
            check=True,
            cwd=BENCH_DIR.parent,
        ).stdout
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as handle:
            handle.write(source)
        path = handle.name
    spec = importlib.util.spec_from_file_location("pi_notebook.agent._validation_old", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def outcome(module: ModuleType, case: Case) -> str:
    """What one validation gives: the coerced arguments or the error text."""
    try:
        return repr(module.validate_tool_arguments(case.tool, case.arguments))
    except ValueError as error:
        return str(error)


def per_call(module: ModuleType, case: Case, reps: int) -> float:
    """Seconds of one ``validate_tool_arguments`` call (validator cached)."""

    def call() -> None:
        with contextlib.suppress(ValueError):
            module.validate_tool_arguments(case.tool, case.arguments)

    return per_run(call, reps)


def compile_cost(module: ModuleType, case: Case, reps: int) -> float:
    """Seconds to compile a validator for the case's schema (a tool's first call)."""
    return per_run(lambda: module.SchemaValidator(case.tool.parameters), reps)


def per_run(fn: Callable[[], None], reps: int) -> float:
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    return stats([t / number for t in timer.repeat(repeat=reps, number=number)]).best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", default=OLD_REV, help="git revision of the old module")
    parser.add_argument("--old", help="path of the old module instead of --rev")
    parser.add_argument("--reps", type=int, default=5)
    options = parser.parse_args()
    old = load_old(options.rev, options.old)
    print(describe_environment(["jsonschema", "pydantic"]))
    rows = []
    for case in CASES:
        if outcome(old, case) != outcome(new, case):
            print(f"\n{case.name}: results differ\n old: {outcome(old, case)}")
            print(f" new: {outcome(new, case)}")
        before, after = per_call(old, case, options.reps), per_call(new, case, options.reps)
        rows.append([case.name, fmt_us(before), fmt_us(after), f"{after / before:.1f}×"])
    for case in CASES[::2]:
        before = compile_cost(old, case, options.reps)
        after = compile_cost(new, case, options.reps)
        rows.append(
            [f"compile: {case.name}", fmt_us(before), fmt_us(after), f"{after / before:.1f}×"]
        )
    print_table(
        f"validate_tool_arguments, µs per call (best of {options.reps} runs)",
        ["case", "hand-made (old)", "jsonschema (new)", "new / old"],
        rows,
        note="A tool call pays one validate_tool_arguments on a cached validator; a tool's first "
        "call also pays the compile.",
    )


if __name__ == "__main__":
    main()
