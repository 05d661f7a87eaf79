"""A paged session tree in a real JupyterLab and Chromium: a session bigger than one page opens
with its side branches folded; unfold one (its rows come from the kernel), find an entry that
was not in the first page by search, and continue from it. A notebook saved headless and
reopened without its kernel shows the saved page and says the rest needs the kernel."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import nbformat
import pytest
from nbformat.sign import NotebookNotary

from pi_notebook.notebook.widgets.tree_view import PAGE_ROWS
from tests.notebook.kernel_notebook import execute

from .lab import LabNotebook, LabServer, close_notebook, open_notebook_page

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

# The notebook's own session (<stem>.pi.jsonl), written before %load_ext opens it: a main line of
# 3,000 entries with a side branch of 30 entries every 100.
MAKE = """\
from pi_notebook.ai import UserMessage
from pi_notebook.harness import Session
session = Session.create("pages.pi.jsonl", cwd=".")
line = [session.append_message(UserMessage(content=f"main {i}", timestamp=0)).id
        for i in range(2999)]
for at in range(50, 2999, 100):
    session.set_leaf(line[at])
    for i in range(30):
        session.append_message(UserMessage(content=f"side {at}.{i}", timestamp=0))
session.set_leaf(line[-1])  # a move writes nothing: the last entry, written last, is the leaf
session.append_message(UserMessage(content="main 2999", timestamp=0))
del session"""


def _titles(tree: Any) -> list[str]:
    titles: list[str] = tree.locator(".pi-node .pi-node-title").all_inner_texts()
    return titles


def test_unfold_search_and_continue_from_an_entry_not_in_the_first_page(
    open_notebook: Callable[..., LabNotebook],
) -> None:
    nb = open_notebook("pages.ipynb", [MAKE, "%load_ext pi_notebook", "%tree"])
    nb.run_and_wait(0, 1, 2)
    tree = nb.cell(2).locator(".pi-tree")
    tree.locator(".pi-node.pi-node-leaf", has_text="main 2999").wait_for()
    assert "3900 entries" in tree.locator(".pi-tree-count").inner_text()
    spacer = tree.locator(".pi-tree-spacer").evaluate("(el) => parseInt(el.style.height)")
    assert spacer == (3000 + 30) * 24  # the main line and one folded row per side branch

    # Right under the leaf come the side branches, folded with their size: unfold the first.
    folded = tree.locator(".pi-node", has=nb.page.locator(".pi-node-hidden")).first
    folded.wait_for()
    assert folded.locator(".pi-node-title").inner_text() == "side 2950.0"
    assert folded.locator(".pi-node-hidden").inner_text() == "+29"
    folded.locator(".pi-node-fold").click()
    tree.locator(".pi-node-title", has_text="side 2950.12").wait_for()
    height = tree.locator(".pi-tree-spacer").evaluate("(el) => parseInt(el.style.height)")
    assert height == (3000 + 30 + 29) * 24
    assert "side 2950.1" in _titles(tree)

    # Scroll to the top half: rows not in the synced page arrive from the kernel.
    tree.locator(".pi-tree-scroller").evaluate("(el) => { el.scrollTop = 1500 * 24; }")
    tree.locator(".pi-node-title", has_text="main 1500").wait_for()
    assert tree.locator(".pi-node-pending").count() == 0

    # Search for an entry inside a folded side branch (far outside the first page).
    search = tree.locator(".pi-tree-search")
    search.fill("side 1250.7")
    search.press("Enter")
    result = tree.locator(".pi-tree-result", has_text="side 1250.7")
    result.wait_for()
    assert "1 match" in tree.locator(".pi-tree-results-head").inner_text()
    result.click()
    selected = tree.locator(".pi-node.pi-node-selected", has_text="side 1250.7")
    selected.wait_for()
    detail = tree.locator(".pi-tree-detail")
    detail.locator(".pi-detail-body", has_text="side 1250.7").wait_for()
    nb.screenshot(tree, "tree_view_paged.png")

    # Continue from it: it becomes the current leaf (a move writes nothing, as in pi 1.6: the
    # next prompt hangs under it).
    detail.locator(".pi-navigate").click()
    tree.locator(".pi-node.pi-node-leaf", has_text="side 1250.7").wait_for()
    entries = nb.session_entries()
    assert entries[-1].get("message", {}).get("content") == "main 2999"
    assert all(e["type"] != "leaf" for e in entries)
    assert PAGE_ROWS < 3000  # the entries found were never in the synced page


def test_a_saved_tree_without_its_kernel_shows_its_page_and_says_the_rest_needs_it(
    lab: LabServer, browser: Any
) -> None:
    cells = [MAKE.replace("pages.pi.jsonl", "offline.pi.jsonl"), "%load_ext pi_notebook", "%tree"]
    env = {"JPY_SESSION_NAME": "offline.ipynb"}
    nb = execute(cells, lab.root, name="offline.ipynb", env=env, timeout=180)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    NotebookNotary().sign(nb)  # Lab renders widgets only in trusted notebooks (as after a run)
    page = open_notebook_page(browser, lab, "reopened.ipynb", [])
    try:
        nbformat.write(nb, lab.root / "reopened.ipynb")
        page.page.goto(f"{lab.url}/lab/tree/reopened.ipynb?reset&token={lab.token}")
        tree = page.page.locator(".jp-Cell .pi-tree")
        tree.locator(".pi-node.pi-node-leaf", has_text="main 2999").wait_for()
        tree.locator(".pi-tree-scroller").evaluate("(el) => { el.scrollTop = 1500 * 24; }")
        offline = tree.locator(".pi-tree-offline")
        offline.wait_for()
        assert "the rest needs the running kernel" in offline.inner_text()
        assert tree.locator(".pi-node-pending").first.inner_text().endswith("(needs the kernel)")
        tree.locator(".pi-tree-scroller").evaluate("(el) => { el.scrollTop = 0; }")
        tree.locator(".pi-node-title", has_text="main 0").wait_for()  # the saved page shows
        assert not page.page_errors, page.page_errors
    finally:
        close_notebook(page)
