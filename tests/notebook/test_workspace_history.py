"""ExecutionHistory on an in-process InteractiveShell and in real kernels (nbclient)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

from pi_notebook.notebook.workspace.fix import fix_prompt
from pi_notebook.notebook.workspace.history import (
    MAX_OUTPUT_CHARS,
    MAX_OUTPUTS,
    ExecutionHistory,
    strip_ansi,
    summarize_bundle,
)

from .kernel_notebook import execute, outputs_text


@pytest.fixture
def shell() -> Iterator[tuple[Any, ExecutionHistory]]:
    ip = InteractiveShell.instance()
    history = ExecutionHistory()
    history.install(ip)
    try:
        yield ip, history
    finally:
        history.uninstall()


def test_records_result_error_and_counts(shell: tuple[Any, ExecutionHistory]) -> None:
    ip, history = shell
    start = history.mark
    ip.run_cell("x = 40 + 2\nx", store_history=True, cell_id="c1")
    ip.run_cell("def f():\n    return 1 / 0\nf()", store_history=True, cell_id="c2")
    ip.run_cell("print('hello')", store_history=True, cell_id="c3")
    first, failed, printed = history.records(since=start)
    assert (first.cell_id, first.status, first.result) == ("c1", "ok", "42")
    assert first.execution_count is not None
    assert failed.execution_count == first.execution_count + 1
    assert failed.status == "error" and failed.error is not None
    assert failed.error.ename == "ZeroDivisionError"
    assert failed.error.evalue == "division by zero"
    assert "return 1 / 0" in failed.error.traceback
    assert "interactiveshell.py" not in failed.error.traceback
    assert "\x1b[" not in failed.error.traceback
    assert printed.outputs[0].kind == "stdout" and printed.outputs[0].text == "hello\n"
    assert history.last_error() == failed
    assert [r.index for r in history.records(since=start)] == [start, start + 1, start + 2]
    assert history.records(since=start + 2) == [printed]


def test_a_users_key_error_and_missing_import_carry_the_hint_for_fix(
    shell: tuple[Any, ExecutionHistory],
) -> None:
    ip, history = shell
    start = history.mark
    ip.run_cell(
        "import pandas\nframe = pandas.DataFrame({'bmi': [1.0], 'age': [3]})\nframe['BMI'].mean()",
        store_history=True,
        cell_id="key",
    )
    ip.run_cell("np.zeros(3)", store_history=True, cell_id="alias")
    ip.run_cell("1 / 0", store_history=True, cell_id="plain")
    key, alias, plain = history.records(since=start)
    assert key.error is not None and "'bmi'" in key.error.hint and "'age'" in key.error.hint
    assert (
        alias.error is not None and alias.error.hint == "Hint: import it first: import numpy as np"
    )
    assert plain.error is not None and plain.error.hint == ""
    prompt = fix_prompt(key)
    assert key.error.hint in prompt and prompt.index("Traceback") < prompt.index(key.error.hint)
    assert "Hint" not in fix_prompt(plain)


def test_syntax_error_is_recorded(shell: tuple[Any, ExecutionHistory]) -> None:
    ip, history = shell
    start = history.mark
    ip.run_cell("x = (", store_history=True, cell_id="bad")
    (record,) = history.records(since=start)
    assert record.status == "error" and record.error is not None
    assert record.error.ename == "SyntaxError"


def test_interrupt_gives_status_interrupted(shell: tuple[Any, ExecutionHistory]) -> None:
    ip, history = shell
    start = history.mark
    ip.run_cell("raise KeyboardInterrupt", store_history=True, cell_id="slow")
    (record,) = history.records(since=start)
    assert record.status == "interrupted" and record.error is None
    assert history.last_error() is None or history.last_error() != record


def test_display_outputs_are_summarised(shell: tuple[Any, ExecutionHistory]) -> None:
    pd = pytest.importorskip("pandas")
    ip, history = shell
    ip.user_ns["frame"] = pd.DataFrame({f"c{i}": range(1000) for i in range(12)})
    start = history.mark
    ip.run_cell(
        "from IPython.display import display, Image\n"
        "display(frame)\n"
        "display({'image/png': b'\\x89PNG', 'text/plain': '<Figure>'}, raw=True)\n"
        "frame",
        store_history=True,
        cell_id="df",
    )
    (record,) = history.records(since=start)
    shown = [o.text for o in record.outputs if o.kind == "display"]
    assert shown[0].startswith("a DataFrame 1,000×12:")
    assert shown[1].startswith("an image (image/png)")
    assert record.result is not None and record.result.startswith("a DataFrame 1,000×12:")


def test_outputs_are_bounded(shell: tuple[Any, ExecutionHistory]) -> None:
    ip, history = shell
    start = history.mark
    ip.run_cell(
        "from IPython.display import display\n"
        "print('x' * 10_000)\n"
        "for i in range(50): display({'text/plain': str(i)}, raw=True)\n"
        "'y' * 10_000",
        store_history=True,
        cell_id="big",
    )
    (record,) = history.records(since=start)
    assert len(record.outputs) == MAX_OUTPUTS
    assert record.omitted_outputs >= 50 + 1 - MAX_OUTPUTS
    assert all(len(o.text) < MAX_OUTPUT_CHARS + 100 for o in record.outputs)
    assert record.result is not None and len(record.result) < MAX_OUTPUT_CHARS + 100


def test_running_is_the_open_record(shell: tuple[Any, ExecutionHistory]) -> None:
    ip, history = shell
    ip.user_ns["_history"] = history
    ip.run_cell("print('a'); _seen = _history.running", store_history=True, cell_id="r")
    seen = ip.user_ns["_seen"]
    assert seen.cell_id == "r" and seen.ended_at is None
    assert seen.outputs[0].text == "a\n"
    assert history.running is None


def test_wait_for_resolves_when_the_cell_finishes(shell: tuple[Any, ExecutionHistory]) -> None:
    ip, history = shell

    async def scenario() -> Any:
        ip.run_cell("1", store_history=True, cell_id="target")  # before the mark: ignored
        mark = history.mark
        waiting = asyncio.ensure_future(history.wait_for("target", started_after=mark))
        await asyncio.sleep(0)
        assert not waiting.done()
        ip.run_cell("2", store_history=True, cell_id="other")
        await asyncio.sleep(0)
        assert not waiting.done()
        ip.run_cell("3", store_history=True, cell_id="target")
        return await asyncio.wait_for(waiting, 5)

    record = asyncio.run(scenario())
    assert record.result == "3"


def test_uninstall_stops_listening() -> None:
    ip: Any = InteractiveShell.instance()
    history = ExecutionHistory()
    history.install(ip)
    history.uninstall()
    mark = history.mark
    ip.run_cell("print('after')", store_history=True)
    assert history.mark == mark
    assert "publish" not in vars(ip.display_pub)


def test_helpers() -> None:
    assert strip_ansi("\x1b[31mred\x1b[0m") == "red"
    assert summarize_bundle({"text/html": "<b/>"}) == "a rich output (text/html)"


def test_history_in_a_real_kernel(tmp_path: Path) -> None:
    """pre/post_run_cell, stdout and display_data through ipykernel, with nbclient's cell ids."""
    nb = execute(
        [
            "from pi_notebook.notebook.workspace.history import ExecutionHistory\n"
            "h = ExecutionHistory(); h.install(get_ipython())",
            "print('out'); 6 * 7",
            "from IPython.display import display, Markdown\ndisplay(Markdown('**hi**'))",
            "{}['missing']",
            "import dataclasses, json\n"
            "print(json.dumps([dataclasses.asdict(r) for r in h.records()]))",
        ],
        tmp_path,
        allow_errors=True,
    )
    records = json.loads(outputs_text(nb.cells[4]))
    # nbclient sends no metadata.cellId (JupyterLab does): records are known by their counts
    assert [r["cell_id"] for r in records] == [None, None, None]
    assert [r["execution_count"] for r in records] == [c.execution_count for c in nb.cells[1:4]]
    printed, shown, failed = records
    assert printed["result"] == "42" and printed["outputs"][0]["text"] == "out\n"
    assert printed["execution_count"] == nb.cells[1].execution_count
    assert shown["outputs"][0]["kind"] == "display"
    assert "Markdown" in shown["outputs"][0]["text"]
    assert failed["status"] == "error" and failed["error"]["ename"] == "KeyError"
    assert "Cell In[" in failed["error"]["traceback"]
    assert "\x1b[" not in failed["error"]["traceback"]
