""" "Insert as cell" and "Apply as edit" on a reply's code block, in a real JupyterLab (with this
checkout's labextension) and Chromium: a faux model answers a failing cell with a code block
instead of a tool call; one click inserts it below the ``%%agent`` cell, the other proposes it
as an edit of the failing cell on the edit card, and the notebook changes only after Allow."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .lab import FAUX_IMPORTS, LabNotebook
from .test_workspace_browser import cells_of, keep

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

SETUP = "\n".join(
    [
        FAUX_IMPORTS,
        "faux = register_faux_provider(tokens_per_second=400)",
        "reply = ('The column is called `Revenue`, with a capital R:\\n\\n'",
        "         '```python\\ntotal = sum(sales[\"Revenue\"])\\ntotal\\n```\\n\\n'",
        "         'In a terminal you could look at the file first:\\n\\n'",
        "         '```bash\\nhead sales.csv\\n```\\n')",
        "faux.set_responses([faux_assistant_message(reply)])",
        "%model faux/faux-1",
    ]
)
FIXED = 'total = sum(sales["Revenue"])\ntotal'


def test_a_code_block_is_inserted_as_a_cell_and_applied_as_an_edit(
    open_with_extension: Callable[..., LabNotebook],
) -> None:
    nb = open_with_extension(
        "code_actions.ipynb",
        [
            "%load_ext pi_notebook\n%agent_context off",
            SETUP,
            "sales = {'Revenue': [120, 80, 45]}",
            "total = sum(sales['revenue'])\ntotal",
            "%%agent\nWhy does the cell above fail?",
            "# notes below the run",
        ],
    )
    nb.run_and_wait(0, 1, 2, 3, 4)
    before = cells_of(nb)
    run = nb.cell(4).locator(".pi-run")
    run.locator(".pi-status.pi-status-done").wait_for()
    reply = run.locator(".pi-transcript .pi-assistant").first
    bar = reply.locator(".pi-code-actions")
    bar.first.wait_for()
    assert bar.count() == 1  # the python block; the bash one has none
    assert bar.locator("button").all_inner_texts() == ["Insert as cell", "Apply as edit"]
    assert "In [4]" in (bar.locator(".pi-code-edit").get_attribute("title") or "")
    keep(nb.screenshot(run, "code-actions.png"), "code-actions.png")

    # Insert as cell: at once, right below the %%agent cell (not at the cursor, not the end).
    bar.locator(".pi-code-insert").click()
    nb.wait_until(lambda: len(cells_of(nb)) == len(before) + 1, "the inserted cell")
    after = cells_of(nb)
    assert [c["id"] for c in after[:5]] == [c["id"] for c in before[:5]]
    assert after[5]["source"] == FIXED and after[5]["type"] == "code"
    assert after[6]["source"] == "# notes below the run"
    inserted = run.locator(".pi-tool", has_text="insert_cell")
    inserted.wait_for()
    assert 'By your click on "Insert as cell".' in inserted.inner_text()

    # Apply as edit: the edit card with its diff; the failing cell changes only on Allow.
    bar.locator(".pi-code-edit").click()
    card = run.locator('.pi-tool[data-tool-call-id^="pi-user-edit-"]')
    card.locator(".pi-allow").wait_for()
    assert card.locator(".pi-approval-question").inner_text().startswith("Edit code cell In [4]")
    dels = [t.strip() for t in card.locator(".pi-diff-del").all_inner_texts()]
    adds = [t.strip() for t in card.locator(".pi-diff-add").all_inner_texts()]
    assert dels == ["-total = sum(sales['revenue'])"]
    assert adds == ['+total = sum(sales["Revenue"])']
    assert cells_of(nb)[3]["source"] == "total = sum(sales['revenue'])\ntotal"
    keep(nb.screenshot(card, "code-actions-edit-card.png"), "code-actions-edit-card.png")
    card.locator(".pi-allow").click()
    nb.wait_until(lambda: cells_of(nb)[3]["source"] == FIXED, "the edit")
    card.locator(".pi-tool-result", has_text="Edited cell").wait_for()

    # The session knows what the user put into the notebook from the reply.
    def recorded() -> list[dict[str, object]]:
        entries = nb.session_entries()
        return [e for e in entries if e.get("customType") == "pi_notebook.code_action"]

    nb.wait_until(lambda: len(recorded()) == 2, "the session entries")
    actions = [e["details"]["notebook"]["action"] for e in recorded()]  # type: ignore[index]
    assert actions == ["insert", "edit"]
