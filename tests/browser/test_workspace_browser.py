"""The notebook as the agent's workspace, in a real JupyterLab and Chromium: the labextension
built from ``js/src/lab`` links each notebook to its kernel, and the agent (a faux model scripted
to call the write tools) inserts, edits and runs cells, each approved on its card.

This module runs its own JupyterLab with the repository's built labextension on
``JUPYTER_PATH`` (an editable install made elsewhere may hold another build, or none).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from .lab import (
    FAUX_IMPORTS,
    LabNotebook,
    LabServer,
    _free_port,
    _lab_environment,
    _stop,
    _wait_for_server,
    notebook_opener,
    start_lab_with_labextension,
    write_notebook,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]
PlaywrightTimeout = pytest.importorskip("playwright.sync_api").TimeoutError

LABEXTENSION = Path(__file__).resolve().parents[2] / "pi_notebook" / "labextension"
DOCS = Path(__file__).resolve().parents[2] / "docs"
LOAD = "%load_ext pi_notebook"

# Read the notebook as the frontend holds it (window.jupyterapp exists in the test Lab only).
_JS_CELLS = """
(id) => {
  const panel = Array.from(window.jupyterapp.shell.widgets('main')).find((w) => w.id === id);
  const cells = panel.content.model.cells;
  const out = [];
  for (let i = 0; i < cells.length; i += 1) {
    const cell = cells.get(i);
    out.push({ id: cell.id, type: cell.type, source: cell.sharedModel.getSource() });
  }
  return out;
}
"""

FAUX_HELPERS = """
import re
def text_of(message):
    content = message.content
    return content if isinstance(content, str) else " ".join(
        block.text for block in content if block.type == "text")
def last_tool_text(context):
    return text_of(context.messages[-1])
"""


@pytest.fixture(scope="module")
def workspace_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """A JupyterLab that loads this checkout's labextension."""
    if not (LABEXTENSION / "package.json").exists():
        pytest.fail("pi_notebook/labextension is missing: run `npm run build --prefix js`")
    with start_lab_with_labextension(
        tmp_path_factory.mktemp("workspace-lab"), LABEXTENSION
    ) as server:
        yield server


@pytest.fixture
def open_ws(workspace_lab: LabServer, browser: Any) -> Iterator[Callable[..., LabNotebook]]:
    with notebook_opener(browser, workspace_lab) as open_:
        yield open_


def faux_setup(responses: str) -> str:
    return "\n".join(
        [
            FAUX_IMPORTS,
            FAUX_HELPERS,
            "faux = register_faux_provider(tokens_per_second=400)",
            f"faux.set_responses({responses})",
            "%model faux/faux-1",
        ]
    )


def cells_of(nb: LabNotebook) -> list[dict[str, str]]:
    cells: list[dict[str, str]] = nb.page.evaluate(_JS_CELLS, nb.panel_id)
    return cells


def file_cell_ids(nb: LabNotebook) -> list[str]:
    return [str(cell.id) for cell in nbformat.read(nb.path, as_version=4).cells]


def tool_results(nb: LabNotebook) -> list[dict[str, Any]]:
    return [
        e["message"]
        for e in nb.session_entries()
        if e.get("type") == "message" and e["message"].get("role") == "toolResult"
    ]


def keep(path: Path, name: str) -> None:
    """Copy a screenshot into docs/ (the feature's pictures) when ``PI_NOTEBOOK_UPDATE_DOCS=1``;
    otherwise it stays in test-artifacts/ only, so a test run leaves the checkout clean."""
    if os.environ.get("PI_NOTEBOOK_UPDATE_DOCS") == "1":
        shutil.copyfile(path, DOCS / name)


INSERT_AND_RUN = """[
    faux_assistant_message([faux_tool_call(
        "insert_cell", {"source": "total = sum(range(10))\\nprint('the total is', total)\\ntotal"},
        id="call_insert")]),
    lambda context, options, state, model: faux_assistant_message([faux_tool_call(
        "run_cell",
        {"cell_id": re.search(r"Inserted code cell (\\S+)", last_tool_text(context)).group(1)},
        id="call_run")]),
    lambda context, options, state, model: faux_assistant_message(
        "I added and ran the cell. It said: " + last_tool_text(context)),
]"""


def test_an_allowed_cell_lands_below_the_agent_cell_runs_and_reaches_the_reply(
    open_ws: Callable[..., LabNotebook],
) -> None:
    nb = open_ws(
        "ws_insert.ipynb",
        [
            LOAD,
            faux_setup(INSERT_AND_RUN),
            "%%agent\nAdd up 0..9 in a new cell and run it.",
            "# a later cell the insert must not land after",
            "%tree",
        ],
    )
    before = cells_of(nb)
    agent_cell = before[2]["id"]
    nb.run_and_wait(0, 1)
    nb.run(2)
    run = nb.cell(2).locator(".pi-run")

    # The card shows the proposed source and where it goes; nothing is inserted before Allow.
    card = run.locator('.pi-tool[data-tool-call-id="call_insert"]')
    card.locator(".pi-allow").wait_for()
    source = card.locator(".pi-approval-source")
    assert source.inner_text() == "total = sum(range(10))\nprint('the total is', total)\ntotal"
    question = card.locator(".pi-approval-question").inner_text()
    assert question.startswith("Insert a code cell below code cell")
    assert "%%agent" in question
    assert len(cells_of(nb)) == len(before)
    keep(nb.screenshot(card, "workspace-card.png"), "workspace-card.png")
    card.locator(".pi-allow").click()

    # Directly below the %%agent cell, although the cursor moved on to the next cell.
    nb.wait_until(lambda: len(cells_of(nb)) == len(before) + 1, "the inserted cell")
    after = cells_of(nb)
    assert [c["id"] for c in after[:3]] == [c["id"] for c in before[:3]]
    inserted = after[3]
    assert inserted["id"] == "agent-call_insert"  # the kernel names it after the tool call
    assert inserted["source"].startswith("total = sum(range(10))")
    assert inserted["type"] == "code"
    assert [c["source"] for c in after[4:]] == [c["source"] for c in before[3:]]

    # Running it is approved on its own card ("always allow" offered), then it runs in the
    # kernel: real execution count and outputs in the notebook.
    run_card = run.locator('.pi-tool[data-tool-call-id="call_run"]')
    run_card.locator(".pi-allow-always").wait_for()
    assert run_card.locator(".pi-approval-source").inner_text().startswith("total = sum")
    run_card.locator(".pi-allow").click()
    new_cell = nb.cell(3)
    new_cell.locator(".jp-OutputArea", has_text="the total is 45").wait_for()
    assert "45" in nb.output_text(3)
    nb.page.wait_for_function(
        """([id, index]) => {
          const panel = Array.from(window.jupyterapp.shell.widgets('main'))
            .find((w) => w.id === id);
          return panel.content.widgets[index].model.executionCount !== null;
        }""",
        arg=[nb.panel_id, 3],
    )

    # The tool result, and so the agent's next reply, carries the cell's output.
    run.locator(".pi-status.pi-status-done").wait_for()
    reply = run.locator(".pi-transcript .pi-assistant", has_text="I added and ran the cell")
    reply.wait_for()
    assert "the total is 45" in reply.inner_text()
    assert "Out[" in reply.inner_text()
    keep(nb.screenshot(nb.panel, "workspace-inserted-cell.png"), "workspace-inserted-cell.png")

    # The session records what the run did to the notebook.
    results = {r["toolCallId"]: r for r in tool_results(nb)}
    insert_detail = results["call_insert"]["details"]["notebook"]
    assert insert_detail["action"] == "insert"
    assert insert_detail["cell_id"] == inserted["id"]
    assert insert_detail["after_cell_id"] == agent_cell
    run_detail = results["call_run"]["details"]["notebook"]
    assert run_detail["action"] == "run" and run_detail["status"] == "ok"
    assert run_detail["cell_id"] == inserted["id"]

    # ... and %tree shows it.
    nb.run_and_wait(5)
    tree = nb.cell(5).locator(".pi-tree")
    node = tree.locator(".pi-node", has_text="insert_cell: Inserted code cell")
    node.first.wait_for()
    assert tree.locator(".pi-node", has_text="run_cell: In [").count() == 1
    node.first.click()
    tree.locator(".pi-tree-detail .pi-detail-body", has_text="Inserted code cell").wait_for()
    keep(nb.screenshot(nb.cell(5), "workspace-tree.png"), "workspace-tree.png")


TARGET = """
import pi_notebook
def target_id():
    return next(r.cell_id for r in pi_notebook.current().history.records()
                if r.source.startswith("rate ="))
"""

EDIT_DENY_THEN_ALLOW = """[
    lambda context, options, state, model: faux_assistant_message([faux_tool_call(
        "edit_cell", {"cell_id": target_id(), "source": "rate = 0.25\\nprint(rate * 100)"},
        id="call_edit_denied")]),
    lambda context, options, state, model: faux_assistant_message([faux_tool_call(
        "edit_cell", {"cell_id": target_id(), "source": "rate = 0.5\\nprint(rate * 100)"},
        id="call_edit_allowed")]),
    faux_assistant_message("Changed the rate."),
]"""


def test_an_edit_shows_a_diff_and_deny_leaves_the_notebook_unchanged(
    open_ws: Callable[..., LabNotebook],
) -> None:
    nb = open_ws(
        "ws_edit.ipynb",
        [
            LOAD,
            TARGET + faux_setup(EDIT_DENY_THEN_ALLOW),
            "rate = 0.2\nprint(rate * 100)",
            "%%agent\nRaise the rate.",
        ],
    )
    target = file_cell_ids(nb)[2]
    nb.run_and_wait(0, 1, 2)
    before = cells_of(nb)
    assert before[2]["id"] == target
    nb.run(3)
    run = nb.cell(3).locator(".pi-run")

    denied = run.locator('.pi-tool[data-tool-call-id="call_edit_denied"]')
    denied.locator(".pi-deny").wait_for()
    assert [t.strip() for t in denied.locator(".pi-diff-del").all_inner_texts()] == ["-rate = 0.2"]
    assert [t.strip() for t in denied.locator(".pi-diff-add").all_inner_texts()] == ["+rate = 0.25"]
    assert denied.locator(".pi-allow-always").count() == 0  # offered for run_cell only
    nb.screenshot(denied, "workspace-edit-diff.png")
    denied.locator(".pi-deny").click()
    denied.locator(".pi-tool-error-text", has_text="denied edit_cell").wait_for()
    assert cells_of(nb) == before  # nothing changed

    allowed = run.locator('.pi-tool[data-tool-call-id="call_edit_allowed"]')
    allowed.locator(".pi-allow").wait_for()
    allowed.locator(".pi-allow").click()
    nb.wait_until(lambda: cells_of(nb)[2]["source"].startswith("rate = 0.5"), "the edit")
    assert [c["id"] for c in cells_of(nb)] == [c["id"] for c in before]
    run.locator(".pi-status.pi-status-done").wait_for()
    details = {r["toolCallId"]: r.get("details") for r in tool_results(nb)}
    assert details["call_edit_denied"] is None or "notebook" not in details["call_edit_denied"]
    edit = details["call_edit_allowed"]["notebook"]
    assert edit["action"] == "edit" and edit["cell_id"] == target
    assert "-rate = 0.2" in edit["diff"] and "+rate = 0.5" in edit["diff"]


SLOW_CELL = """[
    faux_assistant_message([faux_tool_call(
        "insert_cell",
        {"source": "import asyncio\\nawait asyncio.sleep(4)\\nprint('slept')"},
        id="call_insert")]),
    lambda context, options, state, model: faux_assistant_message([faux_tool_call(
        "run_cell",
        {"cell_id": re.search(r"Inserted code cell (\\S+)", last_tool_text(context)).group(1)},
        id="call_run")]),
    lambda context, options, state, model: faux_assistant_message(
        "Done: " + last_tool_text(context)),
]"""

BUTTON = """
import ipywidgets as widgets
label = widgets.Label("not clicked")
button = widgets.Button(description="ping")
def on_click(_button):
    label.value = "clicked while the agent's cell ran" if running() else "clicked"
button.on_click(on_click)
def running():
    import pi_notebook
    now = pi_notebook.current().history.running
    return now is not None and "asyncio.sleep" in now.source
widgets.VBox([button, label])
"""


def test_the_kernel_answers_a_widget_while_an_agent_run_cell_sleeps(
    open_ws: Callable[..., LabNotebook],
) -> None:
    nb = open_ws(
        "ws_responsive.ipynb",
        [LOAD, faux_setup(SLOW_CELL), BUTTON, "%%agent\nWait a little in a new cell."],
    )
    nb.run_and_wait(0, 1, 2)
    nb.run(3)
    run = nb.cell(3).locator(".pi-run")
    run.locator('.pi-tool[data-tool-call-id="call_insert"] .pi-allow').click()
    always = run.locator('.pi-tool[data-tool-call-id="call_run"] .pi-allow-always')
    always.click()
    # The inserted cell (index 4) is running: click the button in cell 2 meanwhile.
    nb.page.wait_for_function(
        """([id, index]) => {
          const panel = Array.from(window.jupyterapp.shell.widgets('main'))
            .find((w) => w.id === id);
          const cell = panel.content.widgets[index];
          return cell && cell.model.sharedModel.getSource().includes('asyncio.sleep')
            && cell.model.executionState === 'running';
        }""",
        arg=[nb.panel_id, 4],
    )
    nb.cell(2).locator("button", has_text="ping").click()
    nb.cell(2).locator(".widget-label", has_text="clicked while the agent's cell ran").wait_for()
    assert "slept" not in nb.output_text(4)  # answered before the cell finished
    nb.cell(4).locator(".jp-OutputArea", has_text="slept").wait_for()
    reply = run.locator(".pi-transcript .pi-assistant", has_text="Done:")
    reply.wait_for()
    assert "slept" in reply.inner_text()
    card = run.locator('.pi-tool[data-tool-call-id="call_run"]')
    assert "Always allowed for this session." in card.locator(".pi-approval-allowed").inner_text()


WAIT_THEN_RUN = """[
    faux_assistant_message([faux_tool_call("insert_cell", {"source": "print('later')"},
                                           id="call_insert")]),
    lambda context, options, state, model: faux_assistant_message([faux_tool_call(
        "run_cell",
        {"cell_id": re.search(r"Inserted code cell (\\S+)", last_tool_text(context)).group(1)},
        id="call_run")]),
    lambda context, options, state, model: faux_assistant_message(
        "Noted: " + last_tool_text(context)),
]"""


def test_running_a_cell_from_a_waited_run_is_refused_not_deadlocked(
    open_ws: Callable[..., LabNotebook],
) -> None:
    nb = open_ws(
        "ws_wait.ipynb",
        [LOAD, faux_setup(WAIT_THEN_RUN), "%%agent --wait\nAdd a cell and run it."],
    )
    nb.run_and_wait(0, 1)
    nb.run(2)
    run = nb.cell(2).locator(".pi-run")
    run.locator('.pi-tool[data-tool-call-id="call_insert"] .pi-allow').click()
    reply = run.locator(".pi-transcript .pi-assistant", has_text="Noted:")
    reply.wait_for()
    assert "was not run" in reply.inner_text()
    assert "--wait" in reply.inner_text()
    nb.wait_cell(2)  # the --wait cell ended: no deadlock
    inserted = nb.cell(3)
    assert "later" in inserted.inner_text()
    assert "later" not in nb.output_text(3)  # it was not run


LONG_CELL = """[
    faux_assistant_message([faux_tool_call(
        "insert_cell",
        {"source": "import time\\nprint('sleep' + 'ing', flush=True)\\n"
                   "time.sleep(120)\\nprint('fin' + 'ished')"},
        id="call_insert")]),
    lambda context, options, state, model: faux_assistant_message([faux_tool_call(
        "run_cell",
        {"cell_id": re.search(r"Inserted code cell (\\S+)", last_tool_text(context)).group(1)},
        id="call_run")]),
    lambda context, options, state, model: faux_assistant_message(
        "Heard back: " + last_tool_text(context)),
]"""


def test_interrupting_an_agent_run_cell_reports_interrupted(
    open_ws: Callable[..., LabNotebook],
) -> None:
    nb = open_ws("ws_interrupt.ipynb", [LOAD, faux_setup(LONG_CELL), "%%agent\nTake your time."])
    nb.run_and_wait(0, 1)
    nb.run(2)
    run = nb.cell(2).locator(".pi-run")
    run.locator('.pi-tool[data-tool-call-id="call_insert"] .pi-allow').click()
    run.locator('.pi-tool[data-tool-call-id="call_run"] .pi-allow').click()
    # Interrupt once the cell is inside its sleep (it printed first).
    nb.cell(3).locator(".jp-OutputArea", has_text="sleeping").wait_for()
    # The usual interrupt (the toolbar's ■ button does the same).
    nb.page.evaluate(
        """(id) => {
          const panel = Array.from(window.jupyterapp.shell.widgets('main'))
            .find((w) => w.id === id);
          panel.sessionContext.session.kernel.interrupt();
          return null;
        }""",
        nb.panel_id,
    )
    reply = run.locator(".pi-transcript .pi-assistant", has_text="Heard back:")
    reply.wait_for()
    assert "was interrupted" in reply.inner_text()
    assert "KeyboardInterrupt" in nb.output_text(3)
    assert "finished" not in nb.output_text(3)
    run.locator(".pi-status.pi-status-done").wait_for()  # the run itself went on to its end


def test_notebook7_loads_the_same_labextension(tmp_path: Path, browser: Any) -> None:
    """Jupyter Notebook 7 (when installed; not a dependency) runs the same extension: the agent
    inserts below its cell and runs the cell there too."""
    pytest.importorskip("notebook", minversion="7")
    base = tmp_path
    data = base / "data" / "labextensions"
    data.mkdir(parents=True)
    (data / "pi-notebook-widgets").symlink_to(LABEXTENSION, target_is_directory=True)
    root = base / "root"
    root.mkdir()
    env = _lab_environment(base)
    env["JUPYTER_PATH"] = os.pathsep.join(
        p for p in [str(base / "data"), os.environ.get("JUPYTER_PATH", "")] if p
    )
    port, token = _free_port(), secrets.token_hex(16)
    write_notebook(
        root / "nb7.ipynb",
        [LOAD, faux_setup(INSERT_AND_RUN), "%%agent\nAdd up 0..9 and run it.", "# later"],
    )
    command = [
        sys.executable,
        *("-m", "notebook", "--no-browser", "--ip=127.0.0.1", "--allow-root"),
        f"--port={port}",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
    ]
    with (base / "notebook.log").open("wb") as log:
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=root,
            start_new_session=True,
        )
    server = LabServer(f"http://127.0.0.1:{port}", token, root, base / "notebook.log")
    try:
        _wait_for_server(server, process)
        page = browser.new_page(viewport={"width": 1200, "height": 1000})
        try:
            page.set_default_timeout(60_000)
            page.goto(f"{server.url}/notebooks/nb7.ipynb?token={token}")
            cells = page.locator(".jp-Notebook .jp-Cell")

            def run(index: int, shows: str) -> None:
                cells.nth(index).locator(".jp-InputArea-editor").click()
                page.keyboard.press("Shift+Enter")
                cells.nth(index).locator(".jp-OutputArea", has_text=shows).wait_for()

            cells.first.wait_for(timeout=120_000)
            # No window.jupyterapp here: until the kernel is connected Shift+Enter runs nothing,
            # so the first cell is run again until its output shows.
            loaded = cells.nth(0).locator(".jp-OutputArea", has_text="pi_notebook: session")
            for _attempt in range(12):
                # Notebook 7 asks for a kernel when the page opened before the kernel specs
                # loaded: take the preferred one (Python 3), as a user would
                chooser = page.locator(".jp-Dialog", has_text="Select Kernel")
                if chooser.count():
                    chooser.locator(".jp-mod-accept").click()
                cells.nth(0).locator(".jp-InputArea-editor").click()
                page.keyboard.press("Shift+Enter")
                with contextlib.suppress(PlaywrightTimeout):
                    loaded.wait_for(timeout=10_000)
                    break
            loaded.wait_for()
            run(1, "Model: faux")
            cells.nth(2).locator(".jp-InputArea-editor").click()
            page.keyboard.press("Shift+Enter")
            page.locator('.pi-tool[data-tool-call-id="call_insert"] .pi-allow').click()
            page.locator('.pi-tool[data-tool-call-id="call_run"] .pi-allow').click()
            reply = page.locator(".pi-transcript .pi-assistant", has_text="I added and ran")
            reply.wait_for()
            assert "the total is 45" in reply.inner_text()
            sources = cells.locator(".jp-InputArea-editor").all_inner_texts()
            assert sources[3].startswith("total = sum(range(10))")
            assert sources[4].strip() == "# later"
            assert "the total is 45" in cells.nth(3).locator(".jp-OutputArea").inner_text()
        finally:
            page.close()
    finally:
        _stop(process)


INSERT_ONLY = """[
    faux_assistant_message([faux_tool_call("insert_cell", {"source": "after_reload = 1"},
                                           id="call_insert")]),
    faux_assistant_message("Inserted."),
]"""


def test_a_reloaded_page_links_again(open_ws: Callable[..., LabNotebook]) -> None:
    """After a page reload the kernel's announcement is found among its open comms."""
    nb = open_ws("ws_reload.ipynb", [LOAD, faux_setup(INSERT_ONLY), "%%agent\nAdd a cell."])
    nb.run_and_wait(0, 1)
    nb.save_and_reload()
    # the page links when it meets the kernel; a run started before that sees no frontend
    nb.wait_until(lambda: nb.page.evaluate(_JS_LINKS, nb.panel_id) >= 2, "the page's link")
    nb.run(2)
    run = nb.cell(2).locator(".pi-run")
    run.locator('.pi-tool[data-tool-call-id="call_insert"] .pi-allow').click()
    nb.wait_until(lambda: len(cells_of(nb)) == 4, "the inserted cell")
    assert cells_of(nb)[3]["source"] == "after_reload = 1"
    run.locator(".pi-transcript .pi-assistant", has_text="Inserted.").wait_for()


# How many comms of the workspace target the notebook's kernel has open: its marker, plus one per
# linked page.
_JS_LINKS = """
async (id) => {
  const panel = Array.from(window.jupyterapp.shell.widgets('main')).find((w) => w.id === id);
  const kernel = panel?.sessionContext.session?.kernel;
  if (!kernel || kernel.connectionStatus !== 'connected') return 0;
  const reply = await kernel.requestCommInfo({ target_name: 'pi_notebook.workspace' });
  return Object.keys(reply.content.comms ?? {}).length;
}
"""


# Run a JupyterLab command on the notebook with cell `index` active (what a key press does).
_JS_COMMAND = """
([id, index, command]) => {
  const app = window.jupyterapp;
  const panel = Array.from(app.shell.widgets('main')).find((w) => w.id === id);
  app.shell.activateById(id);
  panel.content.activeCellIndex = index;
  panel.content.deselectAll();
  return app.commands.execute(command).then(() => null);
}
"""


def type_into(nb: LabNotebook, index: int, text: str) -> None:
    """Replace cell ``index``'s source by typing, as a user does in the editor."""
    editor = nb.cell(index).locator(".cm-content")
    editor.click()
    nb.page.keyboard.press("Control+a")
    nb.page.keyboard.type(text)
    nb.page.keyboard.press("Escape")


def test_the_change_summary_reads_the_document(open_ws: Callable[..., LabNotebook]) -> None:
    """What the model is told before a run comes from the open document too: a cell edited in
    the editor after it ran, and a cell the user added and never ran; the cells below the
    ``%%agent`` cell are only counted."""
    nb = open_ws(
        "ws_document.ipynb",
        [
            LOAD,
            faux_setup('[faux_assistant_message("Noted.")]'),
            "rate = 0.1",
            "%%agent\nWhat?",
            "assert total == 20",
        ],
    )
    nb.run_and_wait(0, 1, 2)
    type_into(nb, 2, "rate = 0.2")
    nb.page.evaluate(_JS_COMMAND, [nb.panel_id, 2, "notebook:insert-cell-below"])
    nb.wait_until(lambda: len(cells_of(nb)) == 6, "the new cell")
    type_into(nb, 3, "total = rate * 100")
    cells = cells_of(nb)
    assert [c["source"] for c in cells[2:4]] == ["rate = 0.2", "total = rate * 100"]
    edited_id, unrun_id, agent_id, below_id = (cells[i]["id"] for i in (2, 3, 4, 5))

    nb.run(4)
    nb.cell(4).locator(".pi-run .pi-transcript .pi-assistant", has_text="Noted.").wait_for()
    changes = [
        e
        for e in nb.session_entries()
        if e.get("type") == "custom_message" and e.get("customType") == "notebook_changes"
    ]
    assert changes, "no change summary in the session"
    summary = changes[-1]["content"]
    summary = summary if isinstance(summary, str) else " ".join(b["text"] for b in summary)
    # the document's part lists each cell as "N. [In[n]] id ID (notes): source"
    document = [line for line in summary.splitlines() if re.match(r"\d+\. \[", line)]
    edited = next(line for line in document if f"id {edited_id}" in line)
    assert "EDITED after it ran" in edited and "rate = 0.2" in edited, summary
    unrun = next(line for line in document if f"id {unrun_id}" in line)
    assert "not run yet" in unrun and "total = rate * 100" in unrun, summary
    agent = next(line for line in document if f"id {agent_id}" in line)
    assert "this run's cell" in agent, summary
    assert "1 more cell the user wrote" in summary and below_id not in summary
    assert "assert total == 20" not in summary
    # what the kernel really ran is there too: the old source of the edited cell
    assert "rate = 0.1" in summary


def test_the_change_summary_holds_a_cells_output_once(
    open_ws: Callable[..., LabNotebook],
) -> None:
    """A cell's stdout appears once in the change summary (with the cell's record; the
    document's listing holds sources only), and the run view does not repeat it."""
    nb = open_ws(
        "ws_stdout.ipynb",
        [
            LOAD,
            faux_setup('[faux_assistant_message("Noted.")]'),
            "print('printed by the cell')",
            "%%agent\nWhat ran?",
        ],
    )
    nb.run_and_wait(0, 1, 2)
    nb.run(3)
    nb.cell(3).locator(".pi-run .pi-transcript .pi-assistant", has_text="Noted.").wait_for()
    changes = [
        e
        for e in nb.session_entries()
        if e.get("type") == "custom_message" and e.get("customType") == "notebook_changes"
    ]
    summary = changes[-1]["content"]
    summary = summary if isinstance(summary, str) else " ".join(b["text"] for b in summary)
    assert summary.count("[stdout] printed by the cell") == 1, summary
    view = nb.cell(3).locator(".pi-run").inner_text()
    assert "printed by the cell" not in view, view  # the run view does not repeat it either
