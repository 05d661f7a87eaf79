"""The write tools' answers without a notebook frontend (``workspace/proposals.py``), on their
own: what each tool says it would have done and what it records. The same answers through the
tools and an nbclient kernel are in ``test_workspace_edit_tools``."""

from __future__ import annotations

from pi_notebook.agent.tools import AgentToolResult
from pi_notebook.ai.types import TextContent
from pi_notebook.notebook.workspace.proposals import Proposals

HEAD = (
    "No notebook frontend is connected to this kernel (it runs under nbclient, papermill or a "
    "terminal, or JupyterLab lacks the pi_notebook extension), so "
)


def text(result: AgentToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


def test_edit_and_delete_say_what_would_have_changed() -> None:
    proposals = Proposals()
    edit = proposals.answer("edit_cell", {"cell_id": "c1", "source": "x = 2\n"}, run=False)
    assert text(edit) == f"{HEAD}cell c1 was not edited. Its new source would have been:\n" + (
        "```python\nx = 2\n```"
    )
    assert edit.details == {
        "notebook": {"action": "edit", "applied": False, "cell_id": "c1", "source": "x = 2\n"}
    }
    delete = proposals.answer("delete_cell", {"cell_id": "c1"}, run=False)
    assert text(delete) == f"{HEAD}cell c1 was not deleted."
    assert delete.details == {"notebook": {"action": "delete", "applied": False, "cell_id": "c1"}}
    assert proposals.cells == {}


def test_proposed_cells_are_numbered_and_only_code_the_model_proposed_is_shown_to_run() -> None:
    proposals = Proposals()
    note = {"source": "# Findings", "cell_type": "markdown"}
    first = proposals.answer("insert_cell", note, run=False)
    assert "The markdown cell would have been (proposed as cell proposed-1):\n" in text(first)
    assert "```markdown\n# Findings\n```" in text(first)
    code = proposals.answer("insert_cell", {"source": "df.mean()"}, run=False)
    assert "(proposed as cell proposed-2)" in text(code)
    assert proposals.cells == {
        "proposed-1": ("markdown", "# Findings"),
        "proposed-2": ("code", "df.mean()"),
    }

    ran = proposals.answer("run_cell", {"cell_id": "proposed-2"}, run=False)
    assert text(ran).endswith("show it to the user, who can run it:\n```python\ndf.mean()\n```")
    assert proposals.asked_to_run == {"proposed-2"}
    unknown = proposals.answer("run_cell", {"cell_id": "c9"}, run=False)
    assert text(unknown) == f"{HEAD}cell c9 was not run."
    assert unknown.details == {"notebook": {"action": "run", "applied": False, "cell_id": "c9"}}


def test_an_insert_asked_to_run_answers_for_the_run_too() -> None:
    proposals = Proposals()
    both = proposals.answer("insert_cell", {"source": "1 + 1", "run": True}, run=True)
    assert "no cell was inserted or run" in text(both)
    assert both.details is not None and both.details["notebook"]["run"] == {"applied": False}
    again = proposals.answer("run_cell", {"cell_id": "proposed-1"}, run=False)
    assert text(again).startswith("run_cell already answered for cell proposed-1")
