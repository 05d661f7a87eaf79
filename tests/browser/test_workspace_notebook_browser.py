"""``notebooks/workspace.ipynb`` in a real JupyterLab and Chromium, replayed from the cassette
recorded there against the real Qwen2.5-Coder-1.5B (``cassettes/workspace-lab.jsonl``).

The headless replay (tests/notebook/test_notebooks.py) only sees the agent *propose* its cell;
here the labextension links the notebook to its kernel, so the agent's ``insert_cell`` lands
right below its ``%%agent`` cell and really runs, Allowed on its card as a user would (who
Denies a card asking to run a cell the agent did not write). The notebook's own check cell then
asserts the cell was inserted and ran.

The cells are run one at a time, top-down, as a user does in Lab: after a cell that starts a
run (``%fix``, ``%%agent``) the test waits for the run to end, answering each card, before it
runs the next cell (which awaits the run: a cell waiting on the agent would keep the agent's
``run_cell`` from starting — the tool says so — so a user does not Run All here).

To record the cassette again (a few minutes; read the new replies before committing them),
``python scripts/record_workspace.py --lab``: it serves the model and runs this test with
``PI_NOTEBOOK_RECORD_LAB`` set to the server's URL.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from .lab import LabNotebook, LabServer, close_notebook, open_notebook_page
from .lab import start_lab_with_labextension as start_lab

REPO = Path(__file__).resolve().parents[2]
LABEXTENSION = REPO / "pi_notebook" / "labextension"
NOTEBOOK = REPO / "notebooks" / "workspace.ipynb"
CASSETTE = REPO / "notebooks" / "cassettes" / "workspace-lab.jsonl"
RECORD_URL = os.environ.get("PI_NOTEBOOK_RECORD_LAB", "").strip()
# recording waits on four real replies, each minutes long on a busy CPU
pytestmark = [pytest.mark.browser, pytest.mark.timeout(7200 if RECORD_URL else 900)]
STEP_S = 1800 if RECORD_URL else 120  # a real model on two cores takes minutes per reply
SHOT_CARDS: set[str] = set()
"""The tools whose first approval card was saved as a screenshot."""

_JS_CELLS = """
(id) => {
  const panel = Array.from(window.jupyterapp.shell.widgets('main')).find((w) => w.id === id);
  const out = [];
  for (const widget of panel.content.widgets) {
    const model = widget.model;
    out.push({
      id: model.id,
      type: model.type,
      source: model.sharedModel.getSource(),
      count: model.type === 'code' ? model.executionCount : null,
      running: model.type === 'code' && model.executionState === 'running',
    });
  }
  return out;
}
"""

_JS_KERNEL_IDLE = """
(id) => {
  const panel = Array.from(window.jupyterapp.shell.widgets('main')).find((w) => w.id === id);
  return panel.sessionContext.session.kernel.status === 'idle';
}
"""


@pytest.fixture(scope="module")
def replay_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """A JupyterLab with this checkout's labextension whose kernels replay (or record) the
    Lab cassette."""
    if not (LABEXTENSION / "package.json").exists():
        pytest.fail("pi_notebook/labextension is missing: run `npm run build --prefix js`")
    if RECORD_URL:
        CASSETTE.unlink(missing_ok=True)
        env = {"PI_NOTEBOOK_RECORD": str(CASSETTE), "QWEN_BASE_URL": RECORD_URL}
    else:
        env = {"PI_NOTEBOOK_REPLAY": str(CASSETTE), "PI_NOTEBOOK_REPLAY_SPEED": "0"}
    with start_lab(tmp_path_factory.mktemp("workspace-notebook-lab"), LABEXTENSION, env) as lab:
        shutil.copyfile(NOTEBOOK, lab.root / NOTEBOOK.name)
        shutil.copytree(NOTEBOOK.parent / "data", lab.root / "data")
        yield lab


def cells_of(nb: LabNotebook) -> list[dict[str, Any]]:
    cells: list[dict[str, Any]] = nb.page.evaluate(_JS_CELLS, nb.panel_id)
    return cells


def answer_cards_until(nb: LabNotebook, done: Any, what: str) -> int:
    """Answer every approval card that shows up until ``done()`` as a careful user would:
    Allow, except a card that asks to run a cell the agent did not write or to edit the
    ``%%agent`` cell (Deny). The cards
    allowed. The first card of each tool is saved as
    ``test-artifacts/workspace-lab-<tool>-card.png``."""
    allowed = 0
    deadline = time.monotonic() + STEP_S
    while not done():
        card = nb.panel.locator(".pi-run .pi-tool:has(.pi-allow:visible)").first
        if nb.panel.locator(".pi-run .pi-tool .pi-allow:visible").count():
            tool = card.locator(".pi-tool-name").first.inner_text().strip() or "tool"
            if tool not in SHOT_CARDS:
                SHOT_CARDS.add(tool)
                nb.screenshot(card, f"workspace-lab-{tool}-card.png")
            question = card.locator(".pi-approval-question").inner_text()
            stray_run = question.startswith("Run ") and "(agent-" not in question
            if stray_run or (question.startswith("Edit ") and "'%%agent'" in question):
                card.locator(".pi-deny").click()
            else:
                card.locator(".pi-allow").click()
                allowed += 1
        elif time.monotonic() > deadline:
            runs = [text[-1500:] for text in nb.panel.locator(".pi-run").all_inner_texts()]
            cells = [(c["id"], c["count"], c["running"]) for c in cells_of(nb)]
            idle = nb.page.evaluate(_JS_KERNEL_IDLE, nb.panel_id)
            raise AssertionError(
                f"timed out after {STEP_S} s waiting for {what}: run views {runs}, "
                f"kernel idle {idle}, cells {cells}, kernel log:\n{nb.server.log_tail()}"
            )
        nb.page.wait_for_timeout(100)
    return allowed


def ran_to_the_end(nb: LabNotebook, cell_id: str) -> bool:
    """Whether the run view in cell ``cell_id``'s output shows a finished run."""
    index = [c["id"] for c in cells_of(nb)].index(cell_id)
    return bool(nb.cell(index).locator(".pi-run .pi-status-done").count())


def run_cell(nb: LabNotebook, cell_id: str) -> int:
    """Run one cell, then wait until it has finished, the kernel is idle and no run view in
    the notebook is live (answering every card meanwhile); the cards allowed."""
    index = [c["id"] for c in cells_of(nb)].index(cell_id)  # the previous cell has settled
    starts_run = cells_of(nb)[index]["source"].startswith(("%%agent", "%fix"))
    nb.run(index)

    def settled() -> bool:
        cell = next(c for c in cells_of(nb) if c["id"] == cell_id)
        return (
            cell["count"] is not None
            and not cell["running"]
            and bool(nb.page.evaluate(_JS_KERNEL_IDLE, nb.panel_id))
            # a cell that starts a run returns at once: wait for its run view to show the end
            and (not starts_run or ran_to_the_end(nb, cell_id))
            and nb.panel.locator(".pi-run.pi-run-live").count() == 0
        )

    return answer_cards_until(nb, settled, f"cell {cell_id} and its agent run")


def test_the_workspace_notebook_inserts_and_runs_its_cell_in_jupyterlab(
    replay_lab: LabServer, browser: Any
) -> None:
    if not RECORD_URL and not CASSETTE.exists():
        pytest.skip("no Lab cassette yet: record it with scripts/record_workspace.py --lab")
    original = nbformat.read(NOTEBOOK, as_version=4).cells
    code_ids = [cell.id for cell in original if cell.cell_type == "code"]
    agent_id = next(cell.id for cell in original if cell.source.startswith("%%agent"))
    nb = open_notebook_page(browser, replay_lab, NOTEBOOK.name, None)
    try:
        allowed = sum(run_cell(nb, cell_id) for cell_id in code_ids)
        cells = cells_of(nb)
        ids = [c["id"] for c in cells]
        # The %%agent run's cell is right below its %%agent cell (a cell %fix inserted is below
        # the %fix cell), named after the tool call, and it ran in the kernel; the notebook's
        # own checks passed.
        inserted = cells[ids.index(agent_id) + 1]
        assert inserted["id"].startswith("agent-") and inserted["count"] is not None, inserted
        assert "groupby" in inserted["source"] and "revenue" in inserted["source"], inserted
        index = ids.index(inserted["id"])
        output = nb.output_text(index)
        assert "espresso" in output.lower(), output
        # ... and the agent read that output: it came back as the tool's result
        results = [
            e["message"]
            for e in nb.session_entries()
            if e.get("message", {}).get("role") == "toolResult"
            and e["message"].get("toolName") in ("insert_cell", "run_cell")
        ]
        seen = "\n".join(b.get("text", "") for r in results for b in r["content"])
        # a table's row reads with tabs on the page and with spaces in the model's text
        words = " ".join(seen.split())
        assert all(" ".join(line.split()) in words for line in output.splitlines()), (output, seen)
        checks = nb.output_text(len(cells) - 1)
        assert "All checks passed." in checks, checks
        # what a user sees: the finished run above its inserted cell, and the session tree
        nb.screenshot(nb.cell(ids.index(agent_id)), "workspace-lab-run.png")
        nb.screenshot(nb.cell(index), "workspace-lab-inserted-cell.png")
        run_view = nb.cell(ids.index(agent_id)).locator(".pi-run").first
        nb.screenshot_span(run_view, nb.cell(index), "workspace-lab-run-and-cell.png")
        tree_cell = next(i for i, c in enumerate(cells) if c["source"].strip() == "%tree")
        nb.screenshot(nb.cell(tree_cell), "workspace-lab-tree.png")
        assert allowed >= 1  # the inserted cell (and its run) on a card
        assert not nb.page_errors, nb.page_errors
        if RECORD_URL:
            recorded = [json.loads(line) for line in CASSETTE.read_text().splitlines() if line]
            print(f"recorded {len(recorded)} lines into {CASSETTE}")
    finally:
        close_notebook(nb)
