"""The default analyst prompt adapts to what the request offers: tools, a frontend, images."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_notebook.notebook.analyst_prompt import ANALYST_OPENING, analyst_prompt, is_analyst_prompt
from pi_notebook.notebook.instructions import desired_instructions

CELL_TOOLS = ["insert_cell", "edit_cell", "delete_cell", "run_cell", "list_cells", "read_cell"]


def test_headless_with_the_code_tool() -> None:
    text = analyst_prompt(["run_python", "list_variables"], frontend=False, images=False)
    assert text.startswith(ANALYST_OPENING)
    assert "Run code with run_python" in text
    assert "your first reply is a run_python call" in text
    assert "insert_cell" not in text and "browser" not in text
    assert "Look at the data before computing" in text
    assert "list_variables shows Python variables" in text and "describe_variable" not in text
    assert "Never make up, simulate or hard-code data" in text
    assert "You cannot see plots" in text
    assert "in exactly the form the user asked for" in text


def test_with_a_frontend_the_cell_tools_are_the_way_to_run_code() -> None:
    text = analyst_prompt(CELL_TOOLS, frontend=True, images=True)
    assert "open in the user's browser" in text
    assert "insert_cell" in text and "top-down order" in text and "edit_cell" in text
    assert "run_python" not in text and "your first reply is an insert_cell call" in text
    assert "list_cells / read_cell" in text
    assert "Plots come back to you as images." in text
    assert "You cannot see plots" not in text


def test_read_tools_only_get_no_code_guidance() -> None:
    text = analyst_prompt(["list_variables", "describe_variable"], frontend=False, images=False)
    assert "Run code" not in text and "Look at the data before computing" not in text
    assert "first reply" not in text
    assert "You cannot see plots" not in text  # nothing it runs makes plots
    assert text.count("list_variables") == 1  # the pair is described once


def test_answers_only_model_gets_no_tool_guidance() -> None:
    text = analyst_prompt([], frontend=True, images=False)
    assert text.startswith(ANALYST_OPENING)
    assert "You cannot run code" in text
    for name in ("run_python", "insert_cell", "list_cells", "How to work"):
        assert name not in text
    assert "Never present a number you have not seen" in text


def test_short_enough_for_a_small_window() -> None:
    longest = analyst_prompt(
        [*CELL_TOOLS, "run_python", "list_variables", "read_history", "read_last_error"],
        frontend=True,
        images=False,
    )
    assert len(longest) // 4 < 500  # about 4 characters a token


def test_a_default_base_prompt_is_rebuilt_a_users_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    old = analyst_prompt(["list_variables"], frontend=False, images=False)
    new = analyst_prompt(["run_python"], frontend=False, images=False)
    assert is_analyst_prompt(old) and not is_analyst_prompt("Be terse.")
    rebuilt = desired_instructions({"preamble": old}, new, cwd=str(tmp_path))
    assert rebuilt.sections["preamble"] == new
    kept = desired_instructions({"preamble": "Be terse."}, new, cwd=str(tmp_path))
    assert kept.sections["preamble"] == "Be terse."
    assert desired_instructions({}, new, cwd=str(tmp_path)).only_default
