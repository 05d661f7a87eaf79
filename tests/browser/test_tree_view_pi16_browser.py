"""The session tree of a pi 1.6 session file in a real JupyterLab and Chromium: system-message
patches with their badge, context-edited messages marked, usage entries hidden until "all
entries" is ticked."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.paths import GOLDEN

from .lab import LabNotebook

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

PI = GOLDEN / "pi-1.6" / "sessions" / "pi"


def test_a_pi_1_6_session_in_the_tree_widget(open_notebook: Callable[..., LabNotebook]) -> None:
    nb = open_notebook(
        "tree16.ipynb",
        [
            "%load_ext pi_notebook",
            "import shutil\n"
            f"shutil.copy({str(PI / 'system-messages.jsonl')!r}, 'sm16.jsonl')\n"
            f"shutil.copy({str(PI / 'context-edits.jsonl')!r}, 'ce16.jsonl')",
            "%session open sm16.jsonl",
            "%tree",
            "%session open ce16.jsonl",
            "%tree",
        ],
    )
    nb.run_and_wait(0, 1, 2, 3)
    tree = nb.cell(3).locator(".pi-tree")
    systems = tree.locator(".pi-node.pi-node-system")
    systems.first.wait_for()
    assert systems.count() == 3
    assert systems.first.locator(".pi-node-kind").inner_text() == "S"
    assert "tools +read, bash" in systems.first.inner_text()
    assert tree.locator(".pi-node-usage").count() == 0  # hidden, as pi hides them
    tree.locator(".pi-tree-meta-toggle").check()
    tree.locator(".pi-node-usage").first.wait_for()
    assert tree.locator(".pi-node-usage").count() == 2

    nb.run_and_wait(4, 5)  # (every tree view follows the session the kernel switches to)
    edits = nb.cell(5).locator(".pi-tree")
    edits.locator(".pi-node-context_edit").first.wait_for()
    omitted = edits.locator(".pi-node.pi-node-omitted")
    assert omitted.count() >= 1
    assert (
        omitted.first.locator(".pi-node-edit").get_attribute("title") == "hidden from the context"
    )
    assert edits.locator(".pi-node.pi-node-edited").count() >= 1
