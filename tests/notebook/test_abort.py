"""``%abort`` in real kernels (nbclient) while a notebook ``@tool`` ignores its signal: a sync one
sleeping 30 s in its worker thread, an async one that swallows its cancellation, a sync one that
blocks forever. The run ends (the kernel waits for it with a generous ceiling, no timing claim:
bench/abort_bench.py prints the latency), the tool card says "Operation aborted", the session
file holds the aborted tool result (no call without a result), the ``%%agent`` queued behind it
runs, and the kernel stays usable. An interrupt (the kernel's Stop button: SIGINT) while such a
tool runs stops the waiting cell only; the run is then aborted the same way."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_core.utils import ensure_async
from nbclient import NotebookClient

from tests.notebook.kernel_notebook import FAUX_SETUP, execute, outputs_text

ENV = {"JPY_SESSION_NAME": "test.ipynb"}

TOOLS = {
    "sync-sleep": """
@pi_notebook.tool
def slow() -> str:
    '''Takes its time, deaf to the abort.'''
    started.set()
    time.sleep(30)
    return 'late'
""",
    "async-stubborn": """
@pi_notebook.tool
async def slow() -> str:
    '''Takes its time and swallows its cancellation.'''
    started.set()
    while True:
        try:
            await asyncio.sleep(30)
            return 'late'
        except asyncio.CancelledError:
            pass
""",
    "raw-agent-tool": """
from pi_notebook.agent import AgentTool, AgentToolResult

async def _never(call_id, args, signal, on_update):
    started.set()
    while True:  # never resolves, and swallows its cancellation
        try:
            await asyncio.get_running_loop().create_future()
        except asyncio.CancelledError:
            pass
    return AgentToolResult(content=[])

slow = AgentTool(
    name='slow',
    description='A raw AgentTool (not @tool): waits for good, deaf to the abort.',
    parameters={'type': 'object', 'properties': {}},
    execute=_never,
)
%tools add slow
""",
    "sync-forever": """
@pi_notebook.tool
def slow() -> str:
    '''Blocks its thread for good.'''
    started.set()
    threading.Event().wait()
    return 'never'
""",
}

SETUP = (
    FAUX_SETUP.format(tps=None)
    + "faux.set_responses([faux_assistant_message(faux_tool_call('slow', {})), "
    "faux_assistant_message('queued ran'), faux_assistant_message('still here')])\n"
    "import asyncio, threading, time, pi_notebook\n"
    "started = threading.Event()\n"
)
LOAD = "%load_ext pi_notebook\n%model faux/faux-1"
WAIT_STARTED = "await asyncio.to_thread(started.wait, 30)\nassert started.is_set()"
CHECK = """\
pi = pi_notebook.current()
first, second = pi.runs
await asyncio.wait_for(first.wait(), 30)  # a ceiling for a broken fix, not a timing claim
print('ended after', round(time.monotonic() - aborted_at, 2), 's')
await asyncio.wait_for(pi.wait(), 30)
print('first:', first.view.status)
print(first.view.transcript_text())
print('second:', second.view.status, second.result.text)
"""
USABLE = """\
print(sum(range(10)))
await asyncio.wait_for(pi.wait(), 30)
"""
AGAIN = "%%agent --wait\nStill there?"


def session_lines(directory: Path) -> list[dict[str, Any]]:
    text = (directory / "test.pi.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()][1:]


def assert_every_call_has_its_result(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """The tool result of the one call to ``slow`` (and no call without a result)."""
    messages = [e["message"] for e in lines if e["type"] == "message"]
    calls = [
        block["id"]
        for m in messages
        if m["role"] == "assistant"
        for block in m["content"]
        if block["type"] == "toolCall"
    ]
    results = {m["toolCallId"]: m for m in messages if m["role"] == "toolResult"}
    assert len(calls) == 1 and set(results) == set(calls), (calls, results)
    return results[calls[0]]


def assert_aborted_and_usable(nb: Any, directory: Path, check: int) -> None:
    report = outputs_text(nb.cells[check])
    assert "first: aborted" in report, report
    assert "[slow error]\n  Operation aborted" in report, report
    assert "second: done queued ran" in report, report
    assert outputs_text(nb.cells[check + 1]).startswith("45\n")
    assert "still here" in outputs_text(nb.cells[check + 2])
    result = assert_every_call_has_its_result(session_lines(directory))
    assert result["isError"] is True
    assert result["content"] == [{"type": "text", "text": "Operation aborted"}]
    replies = [
        e["message"]
        for e in session_lines(directory)
        if e["type"] == "message" and e["message"]["role"] == "assistant"
    ]
    assert [r["stopReason"] for r in replies] == ["toolUse", "aborted", "stop", "stop"]


@pytest.mark.parametrize("kind", sorted(TOOLS))
def test_abort_ends_a_run_whose_tool_ignores_it(tmp_path: Path, kind: str) -> None:
    nb = execute(
        [
            SETUP,
            LOAD,
            TOOLS[kind],
            "%%agent\nUse slow",
            WAIT_STARTED,
            "%%agent\nAfter the abort",  # queued behind the hung run
            "aborted_at = time.monotonic()\n%abort",
            CHECK,
            USABLE,
            AGAIN,
        ],
        tmp_path,
        env=ENV,
        timeout=120,
    )
    assert outputs_text(nb.cells[6]) == "Aborted the run.\n"
    assert_aborted_and_usable(nb, tmp_path, check=7)


STOP_TAG = "press-stop"
"""A cell so tagged is interrupted by the kernel manager (the Stop button) once it printed
STOP_MARKER, its last statement before it awaits."""
STOP_MARKER = "awaiting\n"
STOP_SETTLE_S = 0.2
"""From the marker reaching the client to the interrupt: the kernel has gone from its print into
the await long before (a few bytecodes), this is a margin for a descheduled kernel."""


class _StopPresser(NotebookClient):
    """Presses Stop (``interrupt_kernel``, as the button does) when a cell tagged STOP_TAG has
    printed STOP_MARKER: on an event, not after a fixed wait."""

    pressed = False

    def process_message(self, msg: dict[str, Any], cell: Any, cell_index: int) -> Any:
        out = super().process_message(msg, cell, cell_index)
        if (
            not self.pressed
            and STOP_TAG in cell.metadata.get("tags", ())
            and msg["msg_type"] == "stream"
            and STOP_MARKER in msg["content"].get("text", "")
        ):
            self.pressed = True
            loop = asyncio.get_running_loop()
            loop.call_later(STOP_SETTLE_S, lambda: asyncio.ensure_future(self._press()))
        return out

    async def _press(self) -> None:
        await ensure_async(self.km.interrupt_kernel())


def execute_pressing_stop(cells: list[str], directory: Path, stop: int) -> Any:
    """``execute`` with cell ``stop`` interrupted through the kernel manager, as the Stop button
    does, once that cell printed STOP_MARKER (then it awaits)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nb.cells[stop].metadata["tags"] = [STOP_TAG]
    saved = dict(os.environ)
    os.environ.update({"PYDEVD_DISABLE_FILE_VALIDATION": "1", **ENV})
    for key in ("PI_NOTEBOOK_MODEL", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"):
        os.environ.pop(key, None)
    try:
        client = _StopPresser(
            nb,
            timeout=120,
            allow_errors=True,
            kernel_name="python3",
            resources={"metadata": {"path": str(directory)}},
        )
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert client.pressed, "the stop cell never printed its marker"
    return nb


@pytest.mark.parametrize("kind", sorted(TOOLS))
def test_the_stop_button_while_a_deaf_tool_runs_stops_the_waiting_only(
    tmp_path: Path, kind: str
) -> None:
    nb = execute_pressing_stop(
        [
            SETUP,
            LOAD,
            TOOLS[kind],
            "%%agent\nUse slow",
            WAIT_STARTED,
            "%%agent\nAfter the abort",
            # Stop pressed while this waits
            f"print({STOP_MARKER!r}, end='', flush=True)\nawait pi_notebook.current().wait()",
            "print(pi_notebook.current().runs[0].state)",
            "aborted_at = time.monotonic()\n%abort",
            CHECK,
            USABLE,
            AGAIN,
        ],
        tmp_path,
        stop=6,
    )
    # ipykernel cancels an awaiting cell's task on an interrupt: CancelledError (or, in a sync
    # cell, KeyboardInterrupt)
    stopped = outputs_text(nb.cells[6])
    assert stopped.startswith(STOP_MARKER), stopped
    stopped = stopped.removeprefix(STOP_MARKER)
    assert stopped.startswith(("KeyboardInterrupt", "CancelledError")), stopped
    assert outputs_text(nb.cells[7]) == "running\n"  # the interrupt did not end the run
    assert outputs_text(nb.cells[8]) == "Aborted the run.\n"
    assert_aborted_and_usable(nb, tmp_path, check=9)
