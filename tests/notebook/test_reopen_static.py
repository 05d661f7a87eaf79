"""A notebook whose widget state was not saved (JupyterLab's default) still shows every run's
transcript and every ``%tree`` where the page has no widget models: ``jupyter nbconvert --to
html`` and static viewers render the text/html each view's output carries, which is kept up to
date until the run ends."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat

from .kernel_notebook import FAUX_SETUP, execute

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def test_nbconvert_html_without_widget_state_shows_transcripts_and_tree(tmp_path: Path) -> None:
    replies = "faux_assistant_message('Converted answer one.'), faux_assistant_message('Two.')"
    cells = [
        FAUX_SETUP.format(tps=None) + f"faux.set_responses([{replies}])",
        "%load_ext pi_notebook\n%model faux/faux-1",
        "%%agent\nFirst question",  # no --wait: the run ends after its cell
        "%%agent --wait\nSecond question",
        "%tree",
    ]
    nb = execute(cells, tmp_path, name="plain.ipynb")
    nb.metadata.pop("widgets", None)  # what JupyterLab saves by default
    path = tmp_path / "plain.ipynb"
    nbformat.write(nb, path)
    for index in (2, 3, 4):
        (output,) = [o for o in nb.cells[index].outputs if WIDGET_MIME in o.get("data", {})]
        assert "text/html" in output["data"]

    subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", str(path)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    page = (tmp_path / "plain.html").read_text(encoding="utf-8")
    assert page.count('class="pi-run-static"') == 2
    assert "Converted answer one." in page
    assert "Two." in page
    assert 'class="pi-tree-static"' in page
    assert "Second question" in page.split('class="pi-tree-static"', 1)[1]
    assert "model not found" not in page
