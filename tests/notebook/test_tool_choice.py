"""A small model gets a lean set of read tools; ``%tools add`` offers one anyway and ``%tools
list`` says why a tool is off. Unit tests of the choice, then a real kernel (nbclient) with a
scripted model whose window is small, checking the tools each request declares."""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat

from pi_notebook import testing
from pi_notebook.ai.types import Model, ModelCost
from pi_notebook.notebook.tool_choice import READ_TOOL_NAMES, held_back


def _model(window: int) -> Model:
    return Model(
        id="m",
        name="m",
        api="x",
        provider="x",
        base_url="",
        input=["text"],
        cost=ModelCost(),
        context_window=window,
        max_tokens=1024,
    )


def test_small_headless_keeps_variables_and_last_error() -> None:
    hidden = held_back(_model(8192), frontend=False)
    offered = [n for n in READ_TOOL_NAMES if n not in hidden]
    assert offered == ["list_variables", "read_last_error"]
    assert "8,192-token window" in hidden["describe_variable"]


def test_small_with_a_frontend_keeps_the_cell_list() -> None:
    hidden = held_back(_model(4096), frontend=True)
    assert [n for n in READ_TOOL_NAMES if n not in hidden] == ["list_cells", "read_last_error"]


def test_large_or_unknown_models_get_every_tool_and_pins_stay() -> None:
    assert held_back(_model(128_000), frontend=False) == {}
    assert held_back(None, frontend=False) == {}
    pinned = held_back(_model(8192), frontend=False, pinned={"read_history"})
    assert "read_history" not in pinned and "describe_variable" in pinned


SETUP = """
from pi_notebook.ai import faux_assistant_message, register_faux_provider
from pi_notebook.ai.types import Model, ModelCost
small = Model(id="small", name="small", api="x", provider="x", base_url="", input=["text"],
              cost=ModelCost(), context_window=8192, max_tokens=1024)
faux = register_faux_provider(models=[small])
offered = []
def answer(context, options, state, model):
    offered.append([t.name for t in context.tools or []])
    return faux_assistant_message("ok")
faux.set_responses([answer] * 5)
%model faux/small
"""


def test_a_small_model_is_offered_the_lean_set(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    cells = [
        "%load_ext pi_notebook\n%agent_context off",
        SETUP,
        "%%agent --wait\nHi",
        "print(offered[-1])",
        "%tools list",
        "%tools add describe_variable run_python",
        "%%agent --wait\nAgain",
        "print(offered[-1])",
    ]
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    (tmp_path / "src").mkdir()
    source = tmp_path / "src" / "lean.ipynb"
    nbformat.write(nb, source)
    ran = testing.run_notebook(source, cassette=None, env={"PI_NOTEBOOK_MODEL": ""})
    ran.check()
    assert ran.text(3).strip() == "['list_variables', 'read_last_error']"
    listing = ran.text(4)
    assert (
        "[off] describe_variable (built-in) Describe one notebook variable: type, shape, dtypes "
        "and the first rows of tables. (not offered: a small model (8,192-token window) gets "
        "fewer read tools without a notebook frontend; %tools add describe_variable offers it "
        "anyway)"
    ) in listing
    assert "[on ] list_variables" in listing
    assert sorted(ast.literal_eval(ran.text(7))) == [
        "describe_variable",
        "list_variables",
        "read_last_error",
        "run_python",
    ]
