"""The time machine's restore in a real JupyterLab and Chromium: the agent (a faux model)
inserts and runs a cell that changes the kernel's variables, edits one cell and deletes another;
in ``%tree`` the user goes back to the node before that turn ("Continue from here"), the restore
card lists what changes, Allow restores the variables from the checkpoint there and undoes the
three cell changes (the deleted cell comes back with its id, where it was), and the tree shows
the restore as an entry.

Screenshots: ``restore-card.png`` (the card in the tree) and ``restore-tree.png`` (the tree
after the restore), copied into docs/ with ``PI_NOTEBOOK_UPDATE_DOCS=1``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .lab import LabNotebook
from .test_review_browser import CELL_IDS
from .test_workspace_browser import LOAD, cells_of, faux_setup, keep, open_ws, workspace_lab

__all__ = ["open_ws", "workspace_lab"]  # fixtures used here

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

CHANGES = """[
    faux_assistant_message([faux_tool_call(
        "insert_cell",
        {"source": "df = df.assign(y=df.x * 10)\\nsteps = 2\\nprint(sorted(df.columns), steps)",
         "run": True},
        id="call_insert")]),
    lambda context, options, state, model: faux_assistant_message([faux_tool_call(
        "edit_cell", {"cell_id": cell_id("rate ="), "source": "rate = 0.9"}, id="call_edit")]),
    lambda context, options, state, model: faux_assistant_message([faux_tool_call(
        "delete_cell", {"cell_id": cell_id("scratch =")}, id="call_delete")]),
    faux_assistant_message("Added the column y, raised the rate and dropped the scratch cell."),
]"""

DATA = 'import pandas as pd\ndf = pd.DataFrame({"x": [1, 2, 3]})\nsteps = 1'
CHECK = "print(sorted(df.columns), steps, df.shape)"


def test_go_here_then_allow_restores_the_variables_and_the_cells(
    open_ws: Callable[..., LabNotebook],
) -> None:
    nb = open_ws(
        "restore.ipynb",
        [
            LOAD,
            CELL_IDS + faux_setup(CHANGES),
            DATA,
            "rate = 0.2",
            "scratch = 1",
            "%%agent\nAdd a column y, raise the rate, drop the scratch cell.",
            "%tree",
            CHECK,
        ],
    )
    nb.run_and_wait(0, 1, 2, 3, 4)
    before = cells_of(nb)
    nb.run(5)
    run = nb.panel.locator(".pi-run")
    for call in ("call_insert", "call_edit", "call_delete"):
        card = run.locator(f'.pi-tool[data-tool-call-id="{call}"]')
        card.locator(".pi-allow").click()
    run.locator(".pi-status.pi-status-done").wait_for()
    changed = cells_of(nb)
    ids = [c["id"] for c in changed]
    assert "agent-call_insert" in ids and before[4]["id"] not in ids
    assert changed[3]["source"] == "rate = 0.9"
    check = ids.index(before[-1]["id"])
    nb.run_and_wait(check)
    assert "['x', 'y'] 2 (3, 2)" in nb.output_text(check)

    # Go back to before the turn: the user's prompt node, "Continue from here".
    nb.run_and_wait(ids.index(before[6]["id"]))
    tree = nb.panel.locator(".pi-tree")  # not by index: the cells above it move
    title = nb.page.locator(".pi-node-title", has_text="Add a column y")
    tree.locator(".pi-node", has=title).first.click()
    tree.locator(".pi-tree-detail .pi-navigate").click()

    # The card: what changes, and the agent's three cell changes to undo; nothing changed yet.
    restore = tree.locator(".pi-tree-restore .pi-restore-pending")
    restore.wait_for()
    changes = {
        v.get_attribute("data-name"): v.get_attribute("data-change")
        for v in restore.locator(".pi-restore-variable").all()
    }
    assert changes["df"] == changes["steps"] == "restored", changes
    assert changes["rate"] == changes["scratch"] == "kept", changes
    steps = restore.locator(".pi-restore-step")
    assert [s.get_attribute("data-cell-id") for s in steps.all()] == [
        before[4]["id"],
        before[3]["id"],
        "agent-call_insert",
    ]
    assert [c["id"] for c in cells_of(nb)] == ids
    keep(nb.screenshot(restore, "restore-card.png"), "restore-card.png")
    restore.locator(".pi-restore-allow").click()

    # Allowed: the cells are as they were, ids included; the variables too; the tree shows it.
    tree.locator(".pi-tree-restore .pi-restore-done").wait_for()
    nb.wait_until(lambda: cells_of(nb) == before, "the notebook as it was")
    nb.run_and_wait(len(before) - 1)  # the check cell, back at its place
    assert "['x'] 1 (3, 1)" in nb.output_text(len(before) - 1)
    entry = tree.locator(".pi-node", has_text="pi_notebook.restore")
    entry.first.wait_for()
    assert "pi-node-leaf" in (entry.first.get_attribute("class") or "")
    keep(nb.screenshot(tree, "restore-tree.png"), "restore-tree.png")
    restored = [e for e in nb.session_entries() if e.get("customType") == "pi_notebook.restore"]
    assert len(restored) == 1 and restored[0]["details"]["restored"] == ["df", "steps"]
    assert [(d["action"], d["done"]) for d in restored[0]["details"]["document"]] == [
        ("reinsert", True),
        ("unedit", True),
        ("delete", True),
    ]


def test_fork_restore_shows_its_card_in_the_cell(open_ws: Callable[..., LabNotebook]) -> None:
    nb = open_ws(
        "fork_restore.ipynb",
        [
            LOAD,
            faux_setup('[faux_assistant_message("One."), faux_assistant_message("Two.")]'),
            "x = 1",
            "%%agent --wait\nFirst.",
            "x = 2\ny = 3",
            "%%agent --wait\nSecond.",
            "%fork -2 --restore",
            "print(x, 'y' in globals())",
        ],
    )
    nb.run_and_wait(0, 1, 2, 3, 4, 5, 6)
    assert "Moved to" in nb.output_text(6)
    card = nb.cell(6).locator(".pi-restore-pending")
    card.wait_for()
    changes = {
        v.get_attribute("data-name"): v.get_attribute("data-change")
        for v in card.locator(".pi-restore-variable").all()
    }
    assert {k: v for k, v in changes.items() if v != "kept"} == {"x": "restored", "y": "removed"}
    card.locator(".pi-restore-allow").click()
    nb.cell(6).locator(".pi-restore-done").wait_for()
    nb.run_and_wait(7)
    assert "1 False" in nb.output_text(7)
