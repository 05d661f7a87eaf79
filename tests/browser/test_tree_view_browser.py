"""The session tree in a real JupyterLab and Chromium: open ``%tree``, click a node, continue
from it, and see the next run's branch appear in the live tree."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from .lab import FAUX_IMPORTS, LabNotebook

# Generous: a loaded CI machine may be slow to start Lab and the kernels (no test asserts time).
pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

SETUP = f"""{FAUX_IMPORTS}
faux = register_faux_provider()
faux.set_responses([faux_assistant_message(text)
                    for text in ("Answer one", "Answer two", "Answer three")])
%model faux/faux-1"""


def _padding(row: Any) -> float:
    value: str = row.evaluate("(el) => el.style.paddingLeft")
    return float(value.removesuffix("px"))


def _message_ids(entries: list[dict[str, Any]]) -> dict[str, str]:
    """Entry id by the text of its message (the faux replies and prompts are all distinct)."""
    ids: dict[str, str] = {}
    for entry in entries:
        message = entry.get("message") if entry.get("type") == "message" else None
        if message is None:
            continue
        content = message.get("content")
        text = (
            content
            if isinstance(content, str)
            else "".join(b.get("text", "") for b in content if b.get("type") == "text")
        )
        ids[text] = entry["id"]
    return ids


def test_continue_from_a_node_and_see_the_new_branch(
    open_notebook: Callable[..., LabNotebook],
) -> None:
    nb = open_notebook(
        "tree.ipynb",
        [
            "%load_ext pi_notebook",
            SETUP,
            "%%agent --wait\nFirst question",
            "%%agent --wait\nSecond question",
            "%tree",
            "%%agent --wait\nBranch question",
        ],
    )
    nb.run_and_wait(0, 1, 2, 3, 4)
    tree = nb.cell(4).locator(".pi-tree")
    node = tree.locator(".pi-node")

    def row(title: str) -> Any:
        return node.filter(has=nb.page.locator(".pi-node-title", has_text=title))

    row("Answer two").wait_for()
    assert "pi-node-leaf" in (row("Answer two").get_attribute("class") or "")
    titles = node.locator(".pi-node-title").all_inner_texts()
    assert titles[-4:] == ["First question", "Answer one", "Second question", "Answer two"]

    # Click a node: the detail pane shows its message; continue from there.
    row("Answer one").click()
    detail = tree.locator(".pi-tree-detail")
    detail.locator(".pi-detail-body", has_text="Answer one").wait_for()
    assert "pi-node-selected" in (row("Answer one").get_attribute("class") or "")
    meta = detail.locator(".pi-detail-meta").inner_text()
    assert "faux/faux-1" in meta
    detail.locator(".pi-navigate").click()
    tree.locator(".pi-node.pi-node-leaf", has_text="Answer one").wait_for()
    assert "● current" in row("Answer one").inner_text()

    # The next run continues from the chosen node: a second branch under "Answer one".
    nb.run_and_wait(5)
    tree.locator(".pi-node.pi-node-leaf", has_text="Answer three").wait_for()
    row("Branch question").wait_for()
    one, second, branch = row("Answer one"), row("Second question"), row("Branch question")
    assert one.locator(".pi-node-fold").inner_text() == "▾"  # a branch point now
    assert _padding(second) == _padding(branch) > _padding(one)
    assert "pi-node-path" in (branch.get_attribute("class") or "")
    assert "pi-node-path" not in (second.get_attribute("class") or "")
    assert "pi-node-path" in (one.get_attribute("class") or "")
    nb.screenshot(tree, "tree_view_branched.png")

    # The session file agrees: both questions hang from "Answer one" (through any bookkeeping).
    entries = nb.session_entries()
    by_id = {e["id"]: e for e in entries}
    ids = _message_ids(entries)

    def message_parent(entry_id: str) -> str | None:
        parent = by_id[entry_id].get("parentId")
        while parent is not None and by_id[parent].get("type") != "message":
            parent = by_id[parent].get("parentId")
        return parent

    assert ids["Answer one"] in meta  # the node clicked is that entry
    assert message_parent(ids["Second question"]) == ids["Answer one"]
    assert message_parent(ids["Branch question"]) == ids["Answer one"]
    assert message_parent(ids["Answer three"]) == ids["Branch question"]
