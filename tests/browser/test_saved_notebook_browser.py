"""A notebook executed headless (nbclient) and opened later in JupyterLab: its run views and
session tree render from the saved widget state alone (their code is stored once, in a shared
module model, not in every view)."""

from __future__ import annotations

from typing import Any

import nbformat
import pytest
from nbformat.sign import NotebookNotary

from tests.notebook.kernel_notebook import FAUX_SETUP, execute, widget_states

from .lab import LabServer, close_notebook, open_notebook_page

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

REPLIES = ", ".join(f"faux_assistant_message('Saved reply {i}.')" for i in range(3))


def test_an_executed_notebook_renders_its_views_from_the_saved_state(
    lab: LabServer, browser: Any
) -> None:
    cells = [
        FAUX_SETUP.format(tps=None) + f"faux.set_responses([{REPLIES}])",
        "%load_ext pi_notebook\n%model faux/faux-1",
        *(f"%%agent --wait\nQuestion {i}" for i in range(3)),
        "%tree",
    ]
    nb = execute(cells, lab.root, name="saved.ipynb", env={"JPY_SESSION_NAME": "saved.ipynb"})
    states = widget_states(nb)
    shared = [m for m in states.values() if "esm" in m["state"]]
    # the run view's and the tree's code, and the libraries both import, once each
    assert len(shared) == 3
    assert all(len(m["state"].get("_esm", "")) < 2000 for m in states.values())
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    NotebookNotary().sign(nb)  # Lab renders widgets only in trusted notebooks (as after a run)

    # open_notebook_page writes its own file: put the executed one in its place and reopen
    page = open_notebook_page(browser, lab, "opened.ipynb", [])
    try:
        nbformat.write(nb, lab.root / "opened.ipynb")
        page.page.goto(f"{lab.url}/lab/tree/opened.ipynb?reset&token={lab.token}")
        runs = page.page.locator(".jp-Cell .pi-run")
        runs.nth(2).wait_for()
        assert runs.count() == 3
        for i in range(3):
            assert f"Saved reply {i}." in runs.nth(i).inner_text()
            assert runs.nth(i).locator(".pi-status").inner_text() == "done"
        page.page.locator(".jp-Cell").nth(5).scroll_into_view_if_needed()
        page.page.wait_for_function(
            "() => document.querySelector('.pi-tree-window')?.textContent.includes('Question 2')"
        )
        assert not page.page_errors, page.page_errors
    finally:
        close_notebook(page)
