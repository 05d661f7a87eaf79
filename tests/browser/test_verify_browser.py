"""``%verify`` in a real JupyterLab with this checkout's labextension: the notebook is read from
the frontend (an edit not saved yet counts), run top-down in a fresh kernel, and the report
names the cell that only worked because a cell below ran first and the output that changed."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .lab import ARTIFACTS, LabNotebook

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]


_JS_SET_SOURCE = """
([id, index, source]) => {
  const panel = Array.from(window.jupyterapp.shell.widgets('main')).find((w) => w.id === id);
  panel.content.model.cells.get(index).sharedModel.setSource(source);
}
"""


def test_verify_reads_the_open_notebook_and_names_out_of_order_cells(
    open_with_extension: Callable[..., LabNotebook],
) -> None:
    nb = open_with_extension(
        "verify_me.ipynb",
        ["%load_ext pi_notebook", "x = 2", "print(x * 21)", "print(y)", "y = 5", "%verify"],
    )
    nb.run_and_wait(0, 1, 2, 4, 3)  # y's cell runs before the cell that prints it
    assert nb.output_text(3).strip() == "5"
    # Changed in the page, not saved and not run: the verification reads what the page holds.
    nb.page.evaluate(_JS_SET_SOURCE, [nb.panel_id, 1, "x = 3"])
    nb.run(5)
    nb.wait_until(lambda: "reproducible" in nb.output_text(5), "the %verify report", 180_000)
    report = nb.output_text(5)
    assert "NOT reproducible top-down" in report, report
    assert "the open notebook verify_me.ipynb" in report
    assert (
        "cell [4]: NameError: name 'y' is not defined — it ran without error in the notebook: "
        "cells below it ran before it ([5])" in report
    ), report
    assert "cell [3]: the document shows '42', a fresh run gives '63'" in report
    assert "cell [6]: a magic that sets up or asks the model was replaced by pass" in report
    ARTIFACTS.mkdir(exist_ok=True)
    nb.screenshot(nb.cell(5), "verify_report.png")
