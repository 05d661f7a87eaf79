"""What the model reads when its ``run_python`` code fails: a syntax error with the failing
line and a caret (not ``invalid syntax (<unknown>, line 2)``), and a traceback with every frame
of its own code, the innermost library frames, and the ones between counted."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pi_notebook.notebook.notebook_tools import _run_code


def test_a_syntax_error_names_the_line_with_a_caret() -> None:
    out = _run_code("x = 1\ny = (2,\nprint(y)", {})
    assert (
        out
        == "  File \"<agent>\", line 2\n    y = (2,\n        ^\nSyntaxError: '(' was never closed"
    )


def test_the_traceback_keeps_the_models_frames_and_quotes_its_lines() -> None:
    pd = pytest.importorskip("pandas")
    namespace: dict[str, Any] = {"df": pd.DataFrame({"city": ["a"], "sales": [1]})}
    code = "def total(frame):\n    return frame['revenue'].sum()\n\nprint('start')\ntotal(df)"
    out = _run_code(code, namespace)
    assert out.startswith("start\nTraceback (most recent call last):\n")
    assert '  File "<agent>", line 5, in <module>\n    total(df)\n' in out
    assert "  File \"<agent>\", line 2, in total\n    return frame['revenue'].sum()\n" in out
    assert '  File "pandas/' in out and "site-packages" not in out  # the same on every machine
    assert out.rstrip().endswith("KeyError: 'revenue'")


def test_library_frames_between_are_counted() -> None:
    code = "import json\njson.loads('{\"a\": }')"
    out = _run_code(code, {"json": json})
    lines = out.splitlines()
    assert lines[1:3] == ['  File "<agent>", line 2, in <module>', "    json.loads('{\"a\": }')"]
    assert any(line.startswith("  [... ") and "more frame" in line for line in lines)
    assert lines[-1].startswith("json.decoder.JSONDecodeError: Expecting value")
    assert sum(line.startswith('  File "') for line in lines) == 3  # own frame + two innermost
