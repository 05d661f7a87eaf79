"""An ``edit_cell`` call that would change nothing the cell runs is answered without asking the
user, through the whole path of ``NotebookAgent`` (a faux model's call, the approval gate, the
in-process frontend of ``test_workspace_edit_tools``)."""

from __future__ import annotations

from typing import Any

from pi_notebook.ai import faux_assistant_message, faux_tool_call, register_faux_provider
from pi_notebook.ai.types import ToolResultMessage
from pi_notebook.notebook.kernel_agent import NotebookAgent
from pi_notebook.notebook.workspace.history import ExecutionHistory

from .test_workspace_code_actions import agent, connect
from .test_workspace_edit_tools import shell

__all__ = ["agent", "shell"]  # fixtures used here


async def test_a_reformat_of_a_failing_cell_is_refused_and_nothing_is_asked(
    agent: NotebookAgent, shell: tuple[Any, ExecutionHistory]
) -> None:
    ip, _history = shell
    frontend = connect(agent, ip)
    ip.run_cell("df = {'Revenue': 1}", store_history=True, cell_id="load")
    ip.run_cell("df['revenue']", store_history=True, cell_id="bad")
    faux = register_faux_provider()
    edit = faux_tool_call("edit_cell", {"cell_id": "bad", "source": 'df["revenue"]'})
    faux.set_responses(
        [faux_assistant_message([edit], stop_reason="toolUse"), faux_assistant_message("Done.")]
    )
    agent.use_model_now(faux.get_model())
    run = agent.start_run("fix the failing cell")
    await run.wait()
    faux.unregister()
    (result,) = [
        m for m in agent.session.build_context().messages if isinstance(m, ToolResultMessage)
    ]
    assert result.is_error
    words = result.content[0].text  # type: ignore[union-attr]
    assert words.startswith("This edit only reformats the code cell")
    assert "fail again with KeyError: 'revenue'" in words
    assert frontend.cells[1]["source"] == "df['revenue']"
    assert "approval" not in run.view.running_tools.get(edit.id, {})
