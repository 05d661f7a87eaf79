"""A saved notebook stays small (real kernels, nbclient's saved widget state): the widgets'
code is stored once per notebook, not once per view, the libraries both views use once for
both, and a big session tree's text fallback
is bounded. Figures: ``python3 -m bench.notebook_size_bench``."""

from __future__ import annotations

import json
from pathlib import Path

from pi_notebook.notebook.widgets.base import STATIC
from pi_notebook.notebook.widgets.tree_view import FALLBACK_LINES, PAGE_ROWS
from tests.notebook.kernel_notebook import FAUX_SETUP, execute, widget_states

ENV = {"JPY_SESSION_NAME": "test.ipynb"}
BUNDLES = ("run_view.js", "run_view.css", "session_tree.js", "session_tree.css", "vendor.js")


def test_ten_runs_and_a_tree_store_the_widget_code_once(tmp_path: Path) -> None:
    replies = ", ".join(f"faux_assistant_message('Reply {i}.')" for i in range(10))
    nb = execute(
        [
            FAUX_SETUP.format(tps=None) + f"faux.set_responses([{replies}])",
            "%load_ext pi_notebook\n%model faux/faux-1",
            *(f"%%agent --wait\nQuestion {i}" for i in range(10)),
            "%tree",
        ],
        tmp_path,
        env=ENV,
    )
    states = widget_states(nb)
    code = sum((STATIC / name).stat().st_size for name in BUNDLES)
    saved = len(json.dumps(nb.metadata["widgets"]))
    views = [m for m in states.values() if m["state"].get("_module_id")]
    assert len(views) == 11 and all(len(m["state"]["_esm"]) < 2000 for m in views)
    code_models = {
        m["state"]["esm"]: m["state"]["vendor_id"] for m in states.values() if m["state"].get("esm")
    }
    vendor = (STATIC / "vendor.js").read_text(encoding="utf-8")
    assert len(code_models) == 3 and vendor in code_models
    # both views import the one vendor model, which holds the libraries they would each carry
    vendor_ids = {vendor_id for esm, vendor_id in code_models.items() if esm != vendor}
    assert len(vendor_ids) == 1 and states[vendor_ids.pop()]["state"]["esm"] == vendor
    # the code once, plus a few kB per view (before: the code once per view, 1.9 MB)
    assert saved < code + 11 * 8_000, (saved, code)


def test_a_big_trees_fallback_is_bounded(tmp_path: Path) -> None:
    make = (
        "from pi_notebook.ai import UserMessage\n"
        "from pi_notebook.harness import Session\n"
        "session = Session.create('test.pi.jsonl', cwd='.')\n"
        "for i in range(3000):\n"
        "    session.append_message(UserMessage(content=f'question {i}', timestamp=0))"
    )
    nb = execute([make, "%load_ext pi_notebook", "%tree"], tmp_path, env=ENV)
    shown = nb.cells[2].outputs[0]["data"]
    text = shown["text/plain"].splitlines()
    assert len(text) == FALLBACK_LINES + 2 and "more lines" in text[1 + FALLBACK_LINES // 8]
    assert text[-1].endswith("question 2999  *current")
    assert len(shown["text/html"]) < 100_000


def test_a_twenty_thousand_entry_tree_saves_one_bounded_page(tmp_path: Path) -> None:
    """A 20,000-entry ``%tree`` saved 3.9 MB of widget state; now its state holds
    one page of rows (the top and the rows around the current leaf) whatever the size, and
    the rest is fetched from the kernel on demand (custom messages, not saved)."""
    make = (
        "from pi_notebook.ai import UserMessage\n"
        "from pi_notebook.harness import Session\n"
        "session = Session.create('test.pi.jsonl', cwd='.')\n"
        "for i in range(20_000):\n"
        "    session.append_message(UserMessage(content=f'question {i}', timestamp=0))"
    )
    nb = execute([make, "%load_ext pi_notebook", "%tree"], tmp_path, env=ENV, timeout=180)
    (tree,) = [m["state"] for m in widget_states(nb).values() if "page" in m["state"]]
    page = tree["page"]
    assert page["total"] == page["entries"] == 20_000 and page["leaf_index"] == 19_999
    rows = [row for _, segment in page["segments"] for row in segment]
    assert len(rows) == PAGE_ROWS and rows[-1][2] == "question 19999"
    assert rows[0][2] == "question 0"
    assert len(json.dumps(tree)) < 100_000  # before: 3.9 MB
    code = sum(
        (STATIC / name).stat().st_size
        for name in ("session_tree.js", "session_tree.css", "vendor.js")
    )
    saved = (tmp_path / "test.ipynb").stat().st_size
    assert saved < code + 250_000, (saved, code)  # the code once, the page, the text fallback
