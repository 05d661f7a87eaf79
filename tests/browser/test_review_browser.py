"""Several cell changes of one reply, reviewed on one card in a real JupyterLab and Chromium: the
faux model proposes an insert, an edit and a delete in one reply; the user rejects the edit,
accepts the insert and accepts the rest with "Accept all"; the notebook changes only after the
last decision, and each tool result tells the model what the user decided. Stop ends a run
whose review is pending, and nothing is written."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .lab import LabNotebook
from .test_workspace_browser import (
    LOAD,
    cells_of,
    faux_setup,
    keep,
    open_ws,
    tool_results,
    workspace_lab,
)

__all__ = ["open_ws", "workspace_lab"]  # fixtures used here

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

CELL_IDS = """
import pi_notebook
def cell_id(prefix):
    return next(r.cell_id for r in pi_notebook.current().history.records()
                if r.source.startswith(prefix))
"""

THREE_CHANGES = """[
    lambda context, options, state, model: faux_assistant_message([
        faux_tool_call("insert_cell", {"source": "total = rate * 2\\ntotal"}, id="call_insert"),
        faux_tool_call("edit_cell", {"cell_id": cell_id("rate ="), "source": "rate = 0.9"},
                       id="call_edit"),
        faux_tool_call("delete_cell", {"cell_id": cell_id("scratch =")}, id="call_delete"),
    ]),
    lambda context, options, state, model: faux_assistant_message(
        "Results: " + " | ".join(text_of(m) for m in context.messages[-3:])),
]"""


def test_one_review_card_accept_one_reject_one_then_accept_all(
    open_ws: Callable[..., LabNotebook],
) -> None:
    nb = open_ws(
        "ws_review.ipynb",
        [
            LOAD,
            CELL_IDS + faux_setup(THREE_CHANGES),
            "rate = 0.2",
            "scratch = 1",
            "%%agent\nDouble the rate in a new cell, raise it, and drop the scratch cell.",
        ],
    )
    nb.run_and_wait(0, 1, 2, 3)
    before = cells_of(nb)
    nb.run(4)
    run = nb.panel.locator(".pi-run")  # the one run view (its cell moves up with the delete)
    review = run.locator(".pi-review")
    review.locator(".pi-review-accept-all").wait_for()
    assert "Review 3 changes" in review.locator(".pi-review-question").inner_text()
    changes = review.locator(".pi-review-change")
    assert changes.count() == 3
    titles = review.locator(".pi-review-title").all_inner_texts()
    assert titles[0].startswith("Insert a code cell below code cell")
    assert titles[1].startswith("Edit code cell") and titles[2].startswith("Delete code cell")
    edit = review.locator('.pi-review-change[data-tool-call-id="call_edit"]')
    assert [t.strip() for t in edit.locator(".pi-diff-del").all_inner_texts()] == ["-rate = 0.2"]
    assert [t.strip() for t in edit.locator(".pi-diff-add").all_inner_texts()] == ["+rate = 0.9"]
    # the tool cards point at the review and have no buttons of their own
    assert run.locator(".pi-tool .pi-allow").count() == 0
    keep(nb.screenshot(review, "review-card.png"), "review-card.png")

    edit.locator(".pi-review-reject").click()
    review.locator(
        '.pi-review-change[data-tool-call-id="call_edit"] .pi-review-rejected'
    ).wait_for()
    review.locator('.pi-review-change[data-tool-call-id="call_insert"] .pi-review-accept').click()
    review.locator(
        '.pi-review-change[data-tool-call-id="call_insert"] .pi-review-accepted'
    ).wait_for()
    nb.screenshot(review, "review-card-decided.png")
    assert cells_of(nb) == before  # nothing lands before every change is decided

    review.locator(".pi-review-accept-all").click()  # the one left: the delete
    run.locator(".pi-status.pi-status-done").wait_for()
    assert run.locator(".pi-review").count() == 0
    after = cells_of(nb)
    sources = [c["source"] for c in after]
    assert "scratch = 1" not in sources  # deleted
    assert "rate = 0.2" in sources  # the edit was rejected
    assert (
        sources[
            sources.index(
                "%%agent\nDouble the rate in a new cell, raise it, and drop the scratch cell."
            )
            + 1
        ]
        == "total = rate * 2\ntotal"
    )
    assert len(after) == len(before)  # one inserted, one deleted

    results = {r["toolCallId"]: r for r in tool_results(nb)}
    text = {k: " ".join(b.get("text", "") for b in r["content"]) for k, r in results.items()}
    assert text["call_insert"].startswith("The user accepted this change (one of 3 changes")
    assert "Inserted code cell" in text["call_insert"]
    assert results["call_edit"]["isError"] is True
    assert text["call_edit"].startswith("The user rejected this change")
    assert "notebook is unchanged by it" in text["call_edit"]
    assert text["call_delete"].startswith("The user accepted this change")
    assert "2 accepted, 1 rejected" in text["call_delete"]
    # ... and the model's next request carried them
    reply = run.locator(".pi-transcript .pi-assistant", has_text="Results:")
    assert "The user rejected this change" in reply.inner_text()
    card = run.locator('.pi-tool[data-tool-call-id="call_edit"]')
    assert "review of 3 changes (2 accepted)" in card.locator(".pi-approval-denied").inner_text()


TWO_INSERTS = """[
    faux_assistant_message([
        faux_tool_call("insert_cell", {"source": "a = 1"}, id="call_a"),
        faux_tool_call("insert_cell", {"source": "b = 2"}, id="call_b"),
    ]),
    faux_assistant_message("never reached"),
]"""


def test_stop_ends_a_run_whose_review_is_pending(open_ws: Callable[..., LabNotebook]) -> None:
    nb = open_ws("ws_review_stop.ipynb", [LOAD, faux_setup(TWO_INSERTS), "%%agent\nTwo cells."])
    nb.run_and_wait(0, 1)
    before = cells_of(nb)
    nb.run(2)
    run = nb.cell(2).locator(".pi-run")
    run.locator(".pi-review .pi-review-accept").first.click()  # one accepted, one undecided
    run.locator(".pi-review .pi-review-accepted").wait_for()
    run.locator(".pi-stop-button").click()
    run.locator(".pi-status.pi-status-aborted").wait_for(timeout=10_000)
    assert run.locator(".pi-review").count() == 0
    assert cells_of(nb) == before  # even the accepted change was not applied
    nb.wait_cell(2)
