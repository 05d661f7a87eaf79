"""The time machine's restore in a real JupyterLab and Chromium: the agent (a faux model)
inserts and runs a cell that changes the kernel's variables; in ``%tree`` the user goes back to
the node before that turn ("Continue from here"), the restore card lists what changes, Allow
restores the variables from the checkpoint there and deletes the cell the agent inserted, and
the tree shows the restore as an entry.

Screenshots: ``restore-card.png`` (the card in the tree) and ``restore-tree.png`` (the tree
after the restore), copied into docs/ with ``PI_NOTEBOOK_UPDATE_DOCS=1``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .lab import LabNotebook
from .test_workspace_browser import LOAD, cells_of, faux_setup, keep, open_ws, workspace_lab

__all__ = ["open_ws", "workspace_lab"]  # fixtures used here

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

INSERT_AND_RUN = """[
    faux_assistant_message([faux_tool_call(
        "insert_cell",
        {"source": "df = df.assign(y=df.x * 10)\\nsteps = 2\\nprint(sorted(df.columns), steps)",
         "run": True},
        id="call_insert")]),
    faux_assistant_message("Added the column y and ran it."),
]"""

DATA = 'import pandas as pd\ndf = pd.DataFrame({"x": [1, 2, 3]})\nsteps = 1'
CHECK = "print(sorted(df.columns), steps, df.shape)"


def test_go_here_then_allow_restores_the_variables_and_the_cells(
    open_ws: Callable[..., LabNotebook],
) -> None:
    nb = open_ws(
        "restore.ipynb",
        [LOAD, faux_setup(INSERT_AND_RUN), DATA, "%%agent\nAdd a column y.", "%tree", CHECK],
    )
    nb.run_and_wait(0, 1, 2)
    before = cells_of(nb)
    nb.run(3)
    run = nb.cell(3).locator(".pi-run")
    card = run.locator('.pi-tool[data-tool-call-id="call_insert"]')
    card.locator(".pi-allow").click()
    nb.wait_until(lambda: len(cells_of(nb)) == len(before) + 1, "the inserted cell")
    run.locator(".pi-status.pi-status-done").wait_for()
    inserted = cells_of(nb)[4]
    assert inserted["id"] == "agent-call_insert"
    nb.run_and_wait(6)
    assert "['x', 'y'] 2 (3, 2)" in nb.output_text(6)

    # Go back to before the turn: the user's prompt node, "Continue from here".
    nb.run_and_wait(5)
    tree = nb.panel.locator(".pi-tree")  # by index it would move up with the deleted cell
    prompt = tree.locator(
        ".pi-node", has=nb.page.locator(".pi-node-title", has_text="Add a column y.")
    )
    prompt.first.click()
    tree.locator(".pi-tree-detail .pi-navigate").click()

    # The card: what changes, and the agent's cell to delete; nothing changed yet.
    restore = tree.locator(".pi-tree-restore .pi-restore-pending")
    restore.wait_for()
    changes = {
        v.get_attribute("data-name"): v.get_attribute("data-change")
        for v in restore.locator(".pi-restore-variable").all()
    }
    assert changes["df"] == "restored" and changes["steps"] == "restored", changes
    steps = restore.locator(".pi-restore-step")
    assert steps.count() == 1 and steps.first.get_attribute("data-cell-id") == inserted["id"]
    assert len(cells_of(nb)) == len(before) + 1
    keep(nb.screenshot(restore, "restore-card.png"), "restore-card.png")
    restore.locator(".pi-restore-allow").click()

    # Allowed: the inserted cell is gone, the variables are as they were, the tree shows it.
    tree.locator(".pi-tree-restore .pi-restore-done").wait_for()
    nb.wait_until(lambda: len(cells_of(nb)) == len(before), "the inserted cell deleted")
    assert [c["id"] for c in cells_of(nb)] == [c["id"] for c in before]
    nb.run_and_wait(5)  # the check cell, back at its place
    assert "['x'] 1 (3, 1)" in nb.output_text(5)
    entry = tree.locator(".pi-node", has_text="pi_notebook.restore")
    entry.first.wait_for()
    assert "pi-node-leaf" in (entry.first.get_attribute("class") or "")
    keep(nb.screenshot(tree, "restore-tree.png"), "restore-tree.png")
    restored = [e for e in nb.session_entries() if e.get("customType") == "pi_notebook.restore"]
    assert len(restored) == 1 and restored[0]["details"]["restored"] == ["df", "steps"]
    assert restored[0]["details"]["document"] == [
        {"action": "delete", "cellId": inserted["id"], "done": True}
    ]
