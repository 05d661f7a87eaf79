"""``%verify`` and the agent's ``verify_notebook`` tool in a real kernel (nbclient): the kernel's
notebook file, as JupyterLab saved it after out-of-order work, is run top-down in a fresh
kernel. The report names the output that changed, the cell that only worked because a cell
below it ran first, the skipped ``%%agent`` cell and the cells after the failure; a notebook
whose cell fails in the document too reports that cell as failing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat

from tests.notebook.kernel_notebook import FAUX_SETUP, execute, outputs_text


def code(source: str, count: int | None, outputs: list[dict[str, Any]] | None = None) -> Any:
    cell = nbformat.v4.new_code_cell(source)
    cell.execution_count = count
    cell.outputs = [nbformat.from_dict(o) for o in outputs or []]
    return cell


def stream(text: str) -> dict[str, Any]:
    return {"output_type": "stream", "name": "stdout", "text": text}


def error_output(ename: str, evalue: str) -> dict[str, Any]:
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": []}


def result_output(count: int, text: str) -> dict[str, Any]:
    return {
        "output_type": "execute_result",
        "execution_count": count,
        "data": {"text/plain": text},
        "metadata": {},
    }


def write_work(path: Path, cells: list[Any]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = cells
    nbformat.write(nb, path)


def verify_work(folder: Path, line: str) -> str:
    """Run ``line`` in a kernel whose notebook is ``work.ipynb``; what it printed."""
    nb = execute(
        ["%load_ext pi_notebook", line],
        folder,
        name="driver.ipynb",
        env={"JPY_SESSION_NAME": "work.ipynb"},
        timeout=180,
    )
    return outputs_text(nb.cells[1])


AGENT_CHECKS = """\
faux.set_responses([
    faux_assistant_message([faux_tool_call("verify_notebook", {})], stop_reason="toolUse"),
    faux_assistant_message("Checked."),
])
"""


def test_verify_reports_order_changed_outputs_and_skips_agent_cells(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "n.txt").write_text("2", encoding="utf-8")
    write_work(
        tmp_path / "work.ipynb",
        [
            nbformat.v4.new_markdown_cell("# Analysis"),
            code("x = int(open('data/n.txt').read())", 1),
            code("print(x * 21)", 2, [stream("41\n")]),  # the document is stale
            code("%%agent\nPlot it", 3),
            code("print(y)", 6, [stream("5\n")]),  # y came from the cell below
            code("y = 5", 5),
            code("print('end')", 7, [stream("end\n")]),
        ],
    )
    nb = execute(
        [
            FAUX_SETUP.format(tps=None) + AGENT_CHECKS,
            "%load_ext pi_notebook\n%model faux/faux-1\n%tools add verify_notebook",
            "%verify",
            "%%agent --wait\nIs the notebook reproducible?",
            "import pi_notebook, json\n"
            "results = [e.message for e in pi_notebook.current().session.get_branch()\n"
            "           if getattr(e, 'message', None) is not None\n"
            "           and e.message.role == 'toolResult']\n"
            "print(json.dumps([r.content[0].text for r in results]))",
            "%verify --timeout 0",
        ],
        tmp_path,
        name="driver.ipynb",
        env={"JPY_SESSION_NAME": "work.ipynb", "PI_NOTEBOOK_CONTEXT": "off"},
        timeout=180,
        allow_errors=True,
    )
    report = outputs_text(nb.cells[2])
    assert "%verify: NOT reproducible top-down" in report, report
    assert "work.ipynb as saved on disk" in report
    assert "Output differs from the document:" in report
    assert "cell [3]: the document shows '41', a fresh run gives '42'" in report
    assert "Worked only because of the order cells ran in:" in report
    assert (
        "cell [5]: NameError: name 'y' is not defined — it ran without error in the notebook: "
        "cells below it ran before it ([6])" in report
    )
    assert "Skipped (would ask a model):" in report
    assert "cell [4]: an %%agent cell" in report
    assert "Not run (after the failure):\n  cells [6], [7]" in report
    (tool_text,) = json.loads(outputs_text(nb.cells[4]))
    assert tool_text.startswith("%verify: NOT reproducible top-down")
    assert "cell [5]: NameError" in tool_text
    assert "UsageError" in outputs_text(nb.cells[5])
    assert "--timeout must be a positive number" in outputs_text(nb.cells[5])
    # the user's folder is untouched: no session or output of the verification run in it
    # (the hidden lock and the checkpoints are the driver kernel's, beside its own session)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".work.pi.jsonl.lock",
        "data",
        "driver.ipynb",
        "work.ipynb",
        "work.pi.ckpt",
        "work.pi.jsonl",
    ]


def test_a_cell_that_fails_in_the_document_too(tmp_path: Path) -> None:
    write_work(
        tmp_path / "work.ipynb",
        [
            code("a = 1", 1),
            code("a / 0", 2, [error_output("ZeroDivisionError", "division by zero")]),
            code("print(a)", None),
        ],
    )
    report = verify_work(tmp_path, "%verify --timeout 60")
    assert "Fails top-down:\n  cell [2]: ZeroDivisionError: division by zero" in report, report
    assert "Worked only because" not in report
    assert "cells [3]" in report


def test_a_reproducible_notebook(tmp_path: Path) -> None:
    write_work(
        tmp_path / "work.ipynb",
        [
            code("import math\nv = math.sqrt(16)", 1),
            code("v", 2, [result_output(2, "4.0")]),
        ],
    )
    report = verify_work(tmp_path, "%verify")
    assert report.startswith("%verify: reproducible"), report
    assert "2 cells run in a fresh kernel" in report
