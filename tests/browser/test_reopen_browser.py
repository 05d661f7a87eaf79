"""A notebook closed and reopened in JupyterLab (default settings: no widget state is saved)
shows every finished run's transcript and every ``%tree`` again: the labextension puts each
view's static rendition where the widget renderer finds no model. With widget-state saving on,
the views render live from the saved state instead."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import nbformat
import pytest
from nbformat.sign import NotebookNotary

from tests.notebook.kernel_notebook import execute

from .conftest import LABEXTENSION
from .lab import (
    FAUX_IMPORTS,
    WAIT_MS,
    LabNotebook,
    LabServer,
    close_notebook,
    start_lab_with_labextension,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(420)]

WIDGETS_PLUGIN = "/lab/api/settings/@jupyter-widgets/jupyterlab-manager:plugin"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

CELLS = [
    "\n".join(
        [
            FAUX_IMPORTS,
            "faux = register_faux_provider(tokens_per_second=400)",
            "faux.set_responses([faux_assistant_message('First answer, kept.'),"
            " faux_assistant_message('Second answer, kept.')])",
            "%load_ext pi_notebook",
            "%model faux/faux-1",
        ]
    ),
    "%%agent\nFirst question",
    "%%agent\nSecond question",
    "%tree",
]


def save_widget_state(lab: LabServer, on: bool) -> None:
    """Turn JupyterLab's "Save Widget State Automatically" on or off (read when a page loads)."""
    lab.api("PUT", WIDGETS_PLUGIN, {"raw": f'{{"saveState": {"true" if on else "false"}}}'})


def run_and_save(nb: LabNotebook) -> None:
    """Run every cell (the agent cells without --wait, as a user would), wait for both runs and
    the tree, and save."""
    nb.run_and_wait(0, 1, 2, 3)
    runs = nb.panel.locator(".pi-run")
    nb.wait_until(
        lambda: (
            [runs.nth(i).locator(".pi-status").inner_text() for i in range(runs.count())]
            == ["done", "done"]
        ),
        "both runs to finish",
    )
    nb.page.wait_for_function(
        "() => document.querySelector('.pi-tree-window')?.textContent.includes('Second question')"
    )
    nb.save()


def saved_html(nb: LabNotebook, index: int) -> str:
    """The text/html the saved file holds beside cell ``index``'s widget output."""
    cell = nbformat.read(nb.path, as_version=4).cells[index]
    (output,) = [o for o in cell.outputs if WIDGET_MIME in o.get("data", {})]
    html: str = output["data"]["text/html"]
    return html


def assert_static_views(nb: LabNotebook) -> None:
    """Both transcripts and the tree are on the page as static renditions, no widget error."""
    statics = nb.panel.locator(".pi-run-static")
    statics.nth(1).wait_for()
    assert "First answer, kept." in statics.nth(0).inner_text()
    assert "Second answer, kept." in statics.nth(1).inner_text()
    tree = nb.panel.locator(".pi-tree-static")
    tree.wait_for()
    assert "Second question" in tree.inner_text()
    assert "Error displaying widget" not in nb.panel.inner_text()


def test_reopened_after_shutdown_shows_every_transcript_and_tree(
    extension_lab: LabServer, open_with_extension: Callable[..., LabNotebook]
) -> None:
    save_widget_state(extension_lab, False)
    nb = open_with_extension("reopen_shutdown.ipynb", CELLS)
    run_and_save(nb)
    assert "First answer, kept." in saved_html(nb, 1)
    assert "Second answer, kept." in saved_html(nb, 2)
    assert "done" in saved_html(nb, 2)
    close_notebook(nb)  # "Close and Shut Down"

    again = open_with_extension("reopen_shutdown.ipynb", None)
    assert_static_views(again)


def test_reopened_after_a_kernel_restart_shows_every_transcript_and_tree(
    extension_lab: LabServer, open_with_extension: Callable[..., LabNotebook]
) -> None:
    save_widget_state(extension_lab, False)
    nb = open_with_extension("reopen_restart.ipynb", CELLS)
    run_and_save(nb)
    (session,) = [s for s in extension_lab.api("GET", "/api/sessions") if s["path"] == nb.name]
    extension_lab.api("POST", f"/api/kernels/{session['kernel']['id']}/restart")
    nb.reload()
    assert_static_views(nb)


def test_with_widget_state_saving_the_views_come_back_live_from_the_saved_state(
    extension_lab: LabServer, open_with_extension: Callable[..., LabNotebook]
) -> None:
    save_widget_state(extension_lab, True)
    try:
        nb = open_with_extension("reopen_saved_state.ipynb", CELLS)
        run_and_save(nb)
        close_notebook(nb)
        assert nbformat.read(nb.path, as_version=4).metadata.get("widgets")

        again = open_with_extension("reopen_saved_state.ipynb", None)
        runs = again.panel.locator(".pi-run")
        runs.nth(1).wait_for()
        assert "First answer, kept." in runs.nth(0).inner_text()
        assert "Second answer, kept." in runs.nth(1).inner_text()
        again.page.wait_for_function(
            "() => document.querySelector('.pi-tree-window')?.textContent"
            ".includes('Second question')"
        )
        assert again.panel.locator(".pi-run-static").count() == 0
        assert "Error displaying widget" not in again.panel.inner_text()
    finally:
        save_widget_state(extension_lab, False)


def test_notebook_7_shows_the_static_renditions_of_a_notebook_saved_without_widget_state(
    tmp_path_factory: pytest.TempPathFactory, browser: Any
) -> None:
    """The same in Notebook 7, for a notebook executed headless and saved as JupyterLab saves
    by default (no widget state)."""
    base = tmp_path_factory.mktemp("nb7")
    (base / "root").mkdir()
    cells = [CELLS[0], *(c.replace("%%agent\n", "%%agent --wait\n") for c in CELLS[1:])]
    nb = execute(cells, base / "root", name="nb7.ipynb", env={"JPY_SESSION_NAME": "nb7.ipynb"})
    nb.metadata.pop("widgets", None)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    NotebookNotary().sign(nb)  # as after the user ran it: trusted
    nbformat.write(nb, base / "root" / "nb7.ipynb")
    with start_lab_with_labextension(base, LABEXTENSION, notebook7=True) as server:
        context = browser.new_context(viewport={"width": 1280, "height": 1000})
        try:
            page = context.new_page()
            page.set_default_timeout(WAIT_MS)
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(f"{server.url}/notebooks/nb7.ipynb?token={server.token}")
            statics = page.locator(".jp-Notebook .pi-run-static")
            statics.nth(1).wait_for()
            assert "First answer, kept." in statics.nth(0).inner_text()
            assert "Second answer, kept." in statics.nth(1).inner_text()
            page.locator(".jp-Notebook .pi-tree-static").wait_for()
            assert "Error displaying widget" not in page.locator(".jp-Notebook").inner_text()
            # Notebook 7 itself raises this one with the tests' isolated settings directory,
            # with or without pi_notebook's extension
            assert [e for e in errors if "reading 'schema'" not in e] == [], errors
        finally:
            context.close()
            server.shut_down_sessions(["nb7.ipynb"])
