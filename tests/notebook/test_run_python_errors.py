"""What the model reads when its ``run_python`` code fails: an error result (``isError``), a
syntax error with the failing line and a caret (not ``invalid syntax (<unknown>, line 2)``), and
a traceback with every frame of its own code, the innermost library frames, and the ones between
counted — never a frame of pi_notebook's own modules."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pi_notebook.notebook.error_hints import error_hint
from pi_notebook.notebook.notebook_tools import _run_code


def test_a_syntax_error_names_the_line_with_a_caret() -> None:
    out, failed = _run_code("x = 1\ny = (2,\nprint(y)", {})
    assert failed
    assert (
        out
        == "  File \"<agent>\", line 2\n    y = (2,\n        ^\nSyntaxError: '(' was never closed"
    )


def test_the_traceback_keeps_the_models_frames_and_quotes_its_lines() -> None:
    pd = pytest.importorskip("pandas")
    namespace: dict[str, Any] = {"df": pd.DataFrame({"city": ["a"], "sales": [1]})}
    code = "def total(frame):\n    return frame['revenue'].sum()\n\nprint('start')\ntotal(df)"
    out, failed = _run_code(code, namespace)
    assert failed
    assert "pi_notebook" not in out and "approved" not in out
    assert out.startswith("start\nTraceback (most recent call last):\n")
    assert '  File "<agent>", line 5, in <module>\n    total(df)\n' in out
    assert "  File \"<agent>\", line 2, in total\n    return frame['revenue'].sum()\n" in out
    assert '  File "pandas/' in out and "site-packages" not in out  # the same on every machine
    assert out.rstrip().endswith(
        "KeyError: 'revenue'\nHint: 'revenue' is not there. The keys are: 'city', 'sales'"
    )


def test_library_frames_between_are_counted() -> None:
    code = "import json\njson.loads('{\"a\": }')"
    out, failed = _run_code(code, {"json": json})
    assert failed
    lines = out.splitlines()
    assert lines[1:3] == ['  File "<agent>", line 2, in <module>', "    json.loads('{\"a\": }')"]
    assert any(line.startswith("  [... ") and "more frame" in line for line in lines)
    assert lines[-1].startswith("json.decoder.JSONDecodeError: Expecting value")
    assert sum(line.startswith('  File "') for line in lines) == 3  # own frame + two innermost


def test_code_that_prints_nothing_says_how_to_see_what_it_computed() -> None:
    assert _run_code("import math", {}) == ("(no output)", False)
    assert _run_code("x = 1\nlongest = round(x * 3.4, 1)", {}) == (
        "(no output: the code printed nothing. To see the value, print it: print(longest))",
        False,
    )
    assert _run_code("total: float = 2.5", {})[0].endswith("print(total))")
    assert _run_code("x = 2\nx", {}) == ("2\n", False)
    assert _run_code("x = 2\nNone", {}) == ("(no output)", False)  # not about x: it ended on None


def test_code_that_runs_is_not_an_error_and_sys_exit_does_not_escape() -> None:
    assert _run_code("x = 2\nx * 21", {}) == ("42\n", False)
    out, failed = _run_code("import sys\nprint('before')\nsys.exit(3)", {})
    assert failed and out.startswith("before\nTraceback (most recent call last):\n")
    assert out.rstrip().endswith("SystemExit: 3") and "pi_notebook" not in out


async def test_run_python_reports_a_failure_as_an_error_result() -> None:
    from pi_notebook.ai.types import TextContent
    from pi_notebook.notebook.notebook_tools import builtin_tools

    run_python = builtin_tools(dict)["run_python"]
    failed = await run_python.execute("c1", {"code": "1/0"}, None, lambda _update: None)
    assert failed.is_error
    text = failed.content[0]
    assert isinstance(text, TextContent) and text.text.rstrip().endswith("division by zero")
    ran = await run_python.execute("c2", {"code": "print(6 * 7)"}, None, lambda _update: None)
    assert not ran.is_error and ran.content == [TextContent(text="42\n")]


def _error(code: str, namespace: dict[str, Any]) -> BaseException:
    try:
        exec(code, namespace)
    except Exception as exc:
        return exc
    raise AssertionError("the code ran")


def test_a_pandas_key_error_names_the_closest_labels_and_the_keys_there() -> None:
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"age": [50], "sex": [1], "bmi": [26.0]})
    ns = {"df": df}
    assert error_hint(_error("df['BMI']", ns)) == (
        "Hint: 'BMI' is not there. Did you mean 'bmi'? The keys are: 'age', 'sex', 'bmi'"
    )
    assert error_hint(_error("df.groupby('sex')['BMI']", ns)) == (
        "Hint: 'BMI' is not there. Did you mean 'bmi'? The keys are: 'age', 'sex', 'bmi'"
    )
    assert error_hint(_error("df[['bmi', 'mpg']]", ns)) == (
        "Hint: not all of those labels are there. The keys are: 'age', 'sex', 'bmi'"
    )
    counts = _error("df['sex'].value_counts()['M']", ns)
    assert error_hint(counts) == "Hint: 'M' is not there. The keys are: 1"
    # a number written as a string: the hint says which type the label has
    codes = pd.DataFrame({"cultivar": [1, 0, 2, 1]})
    assert error_hint(_error("df['cultivar'].value_counts()['1']", {"df": codes})) == (
        "Hint: '1' is not there. Did you mean 1? The label is int 1, not str '1'."
        " The keys are: 1, 0, 2"
    )


def test_no_key_hint_for_long_indexes_plain_dicts_or_other_errors() -> None:
    pd = pytest.importorskip("pandas")
    long = pd.DataFrame({"x": range(500)})
    assert error_hint(_error("long.loc[900]", {"long": long})) is None
    assert error_hint(_error("{'a': 1}['b']", {})) is None
    assert error_hint(_error("1 / 0", {})) is None
    assert error_hint(_error("np.mean([1])", {})) == "Hint: import it first: import numpy as np"
    assert error_hint(_error("undefined_thing", {})) is None


def test_a_top_level_return_says_to_print_the_value() -> None:
    out, failed = _run_code("x = 6 * 7\nprint(x)\nreturn x", {})
    assert failed
    assert out.endswith(
        "SyntaxError: 'return' outside function\nHint: this code runs at the top level, not "
        "inside a function, so it cannot return: print the value instead.\n"
    )
    assert "Hint" not in _run_code("def f():\n    return 1\nprint(f())", {})[0]
