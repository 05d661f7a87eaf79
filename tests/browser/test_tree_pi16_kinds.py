"""Two pi 1.6 entry kinds in the tree widget, in a real JupyterLab and Chromium, node by node:
a system-message *patch* (sections set and deleted, tools swapped) shows what it changes, and a
message replaced by a context edit is marked as edited (one hidden by a null edit as hidden),
while its row keeps the raw history's text."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.paths import GOLDEN

from .lab import LabNotebook

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

PI = GOLDEN / "pi-1.6" / "sessions" / "pi"
PATCH = "07fb54b8"  # system-messages.jsonl: date and style set, cwd deleted, bash/read → edit/read
EDITED = "d372f212"  # context-edits.jsonl: an assistant reply replaced by "short answer"
HIDDEN = "a3a474af"  # context-edits.jsonl: a message hidden by a null edit


def test_a_system_patch_and_context_edits_node_by_node(
    open_notebook: Callable[..., LabNotebook],
) -> None:
    nb = open_notebook(
        "tree16kinds.ipynb",
        [
            "%load_ext pi_notebook",
            "import shutil\n"
            f"shutil.copy({str(PI / 'system-messages.jsonl')!r}, 'sm16k.jsonl')\n"
            f"shutil.copy({str(PI / 'context-edits.jsonl')!r}, 'ce16k.jsonl')",
            "%session open sm16k.jsonl",
            "%tree",
            "%session open ce16k.jsonl",
            "%tree",
        ],
    )
    nb.run_and_wait(0, 1, 2, 3)
    patch = nb.cell(3).locator(f'.pi-tree .pi-node[data-id="{PATCH}"]')
    patch.wait_for()
    assert "pi-node-system" in (patch.get_attribute("class") or "")
    text = patch.inner_text()
    assert "sections date, -cwd, style" in text
    assert "tools +edit, read -bash, read" in text

    nb.run_and_wait(4, 5)
    tree = nb.cell(5).locator(".pi-tree")
    edited = tree.locator(f'.pi-node[data-id="{EDITED}"]')
    edited.wait_for()
    assert "pi-node-edited" in (edited.get_attribute("class") or "")
    assert edited.locator(".pi-node-edit").get_attribute("title") == "edited in the context"
    assert "short answer" not in edited.inner_text()  # the row shows the raw history
    hidden = tree.locator(f'.pi-node[data-id="{HIDDEN}"]')
    hidden.wait_for()
    assert "pi-node-omitted" in (hidden.get_attribute("class") or "")
    assert hidden.locator(".pi-node-edit").get_attribute("title") == "hidden from the context"
