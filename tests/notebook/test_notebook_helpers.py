"""Pure helpers of the notebook layer: prompt interpolation, session location, --wait rewrite."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pi_notebook.notebook.locations import session_path_for
from pi_notebook.notebook.magics.input_rewrite import rewrite_input, rewrite_wait_cell
from pi_notebook.notebook.magics.interpolate import InterpolationError, interpolate


class Point:
    x = 3


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("Summarise {name}", "Summarise sales"),
        ("{n:.2f} and {n!r}", "3.14 and 3.14159"),
        ("{p.x} {items[1]}", "3 b"),
        ('JSON like {{"a": 1}} stays', 'JSON like {"a": 1} stays'),
        ("no placeholders", "no placeholders"),
    ],
)
def test_interpolation(template: str, expected: str) -> None:
    ns = {"name": "sales", "n": 3.14159, "p": Point(), "items": ["a", "b"]}
    assert interpolate(template, ns) == expected


@pytest.mark.parametrize(
    ("template", "needle"),
    [
        ("Use {missing}", "no variable named 'missing'"),
        ("Use {}", "Empty or positional"),
        ("Use {p.nope}", "Could not fill"),
        ("Unbalanced { brace", "malformed placeholder"),
        ("{0}", "positional"),
    ],
)
def test_interpolation_errors_say_how_to_fix(template: str, needle: str) -> None:
    with pytest.raises(InterpolationError, match=needle):
        interpolate(template, {"p": Point()})


def test_interpolation_never_evaluates_code() -> None:
    with pytest.raises(InterpolationError):
        interpolate("{__import__('os').getcwd()}", {})


def test_session_path(tmp_path: Path) -> None:
    assert session_path_for({}, tmp_path) == tmp_path / "notebook.pi.jsonl"
    rel = {"JPY_SESSION_NAME": "work/analysis.ipynb"}
    assert session_path_for(rel, tmp_path) == tmp_path / "analysis.pi.jsonl"
    absolute = {"JPY_SESSION_NAME": "/data/nb/report.ipynb"}
    assert session_path_for(absolute, tmp_path) == Path("/data/nb/report.pi.jsonl")
    moved = {"JPY_SESSION_NAME": "a.ipynb", "PI_NOTEBOOK_SESSION_DIR": str(tmp_path / "s")}
    assert session_path_for(moved, Path("/elsewhere")) == tmp_path / "s" / "a.pi.jsonl"


def test_wait_rewrite_produces_an_awaiting_cell() -> None:
    cell = ["%%agent --model faux/faux-1 --wait\n", "Write {topic}\n", "in one line\n"]
    out = rewrite_wait_cell(cell)
    assert out[0] == (
        "get_ipython().run_cell_magic('agent', '--model faux/faux-1', "
        "'Write {topic}\\nin one line\\n')\n"
    )
    assert out[1].startswith("await ") and out[1].rstrip().endswith(";")
    ast.parse("async def f():\n" + "".join("    " + line for line in out))


@pytest.mark.parametrize(
    "cell",
    [
        ["%%agent\n", "no wait here\n"],
        ["%%agentic --wait\n", "other magic\n"],
        ["print('--wait')\n"],
        [],
        ["%%agent 'unclosed --wait\n"],
    ],
)
def test_other_cells_are_untouched(cell: list[str]) -> None:
    assert rewrite_wait_cell(cell) == cell


def test_text_magics_keep_their_question_marks() -> None:
    cell = ["x = 1\n", "%steer why is it slow?\n", "  %follow_up and then?\n", "%fork?\n"]
    assert rewrite_input(cell) == [
        "x = 1\n",
        "get_ipython().run_line_magic('steer', 'why is it slow?')\n",
        "  get_ipython().run_line_magic('follow_up', 'and then?')\n",
        "%fork?\n",
    ]
    # %%agent bodies are not touched (IPython passes them verbatim)
    body = ["%%agent\n", "%steer inside a prompt?\n"]
    assert rewrite_input(body) == rewrite_wait_cell(body) == body


def test_an_empty_agent_cell_raises_the_magics_own_usage_error() -> None:
    from IPython.core.error import UsageError

    from pi_notebook.notebook.magics.input_rewrite import EMPTY_PROMPT

    for cell in (["%%agent\n"], ["%%agent --wait"], ["%%agent\n", "  \n"]):
        (line,) = rewrite_wait_cell(cell)
        with pytest.raises(UsageError, match="The cell is empty"):
            exec(line, {})
    assert EMPTY_PROMPT.startswith("The cell is empty")
    assert rewrite_wait_cell(["%%agent\n", "hi\n"]) == ["%%agent\n", "hi\n"]


def test_saved_views_are_found_under_their_old_module_names_too(tmp_path: Path) -> None:
    """Notebooks saved before the views moved to ``notebook.widgets`` keep their old ids."""
    import nbformat

    from pi_notebook.testing import ExecutedNotebook

    def model(anywidget_id: str) -> dict[str, object]:
        return {"state": {"_anywidget_id": anywidget_id}}

    state = {
        "a": model("pi_notebook.notebook.run_view.RunView"),
        "b": model("pi_notebook.notebook.widgets.run_view.RunView"),
        "c": model("pi_notebook.notebook.tree_view.TreeView"),
        "d": model("some.other.Widget"),
    }
    nb = nbformat.v4.new_notebook()
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": state}}
    executed = ExecutedNotebook(source=tmp_path / "n.ipynb", path=tmp_path / "n.ipynb", notebook=nb)
    assert len(executed.run_views) == 2
    assert len(executed.tree_views) == 1
