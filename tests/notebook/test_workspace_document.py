"""The summary, the read tools and %fix's prompt against in-process records and a fake
document (the frontend's ``NotebookDocument`` contract: ``connected`` and ``async cells()``).
Real kernels: test_workspace_kernel.py; the real frontend: the browser tests."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from pi_notebook.notebook.workspace.fix import fix_prompt
from pi_notebook.notebook.workspace.history import ErrorInfo, ExecutionRecord, OutputSummary
from pi_notebook.notebook.workspace.reading_tools import read_tools
from pi_notebook.notebook.workspace.summary import MAX_SUMMARY_CHARS, summarize_changes


def record(index: int, source: str, **kw: Any) -> ExecutionRecord:
    base: dict[str, Any] = {
        "execution_count": index + 1,
        "cell_id": f"id{index}",
        "source": source,
        "status": "ok",
        "result": None,
        "error": None,
        "outputs": (),
        "started_at": 0.0,
        "ended_at": 1.0,
        "index": index,
    }
    base.update(kw)
    return ExecutionRecord(**base)


FAILED = record(
    1,
    "total(data)",
    status="error",
    error=ErrorInfo(
        "KeyError", "'prices'", "  Cell In[2], line 1, in <module>\nKeyError: 'prices'"
    ),
)
RECORDS = [
    record(0, "data = {'price': 3}\ndata", result="{'price': 3}"),
    FAILED,
    record(2, "%%agent\nhelp"),
    record(3, "print('x')", outputs=(OutputSummary("stdout", "x\n"),)),
]


@dataclass(frozen=True)
class Cell:
    id: str
    cell_type: str
    source: str
    execution_count: int | None
    edited_since_run: bool = False
    outputs: tuple[OutputSummary, ...] = ()


@dataclass
class FakeDocument:
    cells_: list[Cell] = field(default_factory=list)
    connected: bool = True
    fail: bool = False

    async def cells(self) -> Sequence[Cell]:
        if self.fail:
            raise ConnectionError("the notebook tab was closed")
        return list(self.cells_)


DOCUMENT = FakeDocument(
    [
        Cell("md", "markdown", "# Prices", None),
        Cell("id0", "code", "data = {'price': 4}\ndata", 1, edited_since_run=True),
        Cell("id1", "code", "total(data)", 2, outputs=(OutputSummary("display", "an image"),)),
        Cell("new", "code", "plot(data)", None),
    ]
)


def test_summary_lists_ran_cells_and_leaves_out_the_conversation() -> None:
    summary = summarize_changes(RECORDS, since=0, until=4)
    assert summary is not None
    text = summary.text
    assert "so far" in text and "In[1] (cell id id0) ran:" in text
    assert "[result] {'price': 3}" in text and "[error] KeyError: 'prices'" in text
    assert "%%agent" not in text and "[stdout] x" in text
    assert "read_last_error" in text
    assert summary.details == {"since": 0, "until": 4, "executionCounts": [1, 2, 4]}
    later = summarize_changes(RECORDS, since=3, until=4)
    assert later is not None and "since your last turn" in later.text and "data =" not in later.text
    assert summarize_changes(RECORDS, since=2, until=3) is None  # only the %%agent cell ran


def test_summary_is_bounded_and_keeps_the_newest_cells() -> None:
    many = [record(i, f"x{i} = {'y' * 700}") for i in range(40)]
    summary = summarize_changes(many, since=0, until=40)
    assert summary is not None and len(summary.text) <= MAX_SUMMARY_CHARS
    assert "x39 =" in summary.text and "x0 =" not in summary.text
    assert "earlier cells left out" in summary.text


def test_summary_flags_document_and_kernel_disagreement() -> None:
    cells = asyncio.run(DOCUMENT.cells())
    summary = summarize_changes(RECORDS, since=0, until=4, document=cells)
    assert summary is not None
    text = summary.text
    assert "1. [markdown] id md: # Prices" in text
    assert "id id0 (EDITED after it ran: the kernel ran an older version)" in text
    assert "id new (not run yet)" in text
    only_document = summarize_changes([], since=0, until=0, document=cells)
    assert only_document is not None and "(no cells ran)" in only_document.text


def test_summary_lists_the_document_down_to_the_run_cell_and_only_counts_the_rest() -> None:
    cells = [
        Cell("load", "code", "data = {'price': 4}", 1),
        Cell("ask", "code", "%%agent\nadd a total", 2),
        Cell("check", "code", "assert total(data) == 4", None),
        Cell("notes", "markdown", "## Checks below", None),
    ]
    summary = summarize_changes(RECORDS, since=0, until=4, document=cells, anchor="ask")
    assert summary is not None
    text = summary.text
    assert "1. [In[1]] id load: data = {'price': 4}" in text
    assert "id ask (this run's cell: the cells you insert go right below it)" in text
    assert "2 more cells the user wrote, not part of your task" in text
    assert "assert total" not in text and "Checks below" not in text and "check" not in text
    # an anchor the document does not hold (a cell deleted meanwhile) lists every cell
    unknown = summarize_changes(RECORDS, since=0, until=4, document=cells, anchor="gone")
    assert unknown is not None and "assert total(data) == 4" in unknown.text
    many = [Cell("ask", "code", "%%agent", 1)] + [
        Cell(f"c{i}", "code", "x", None) for i in range(20)
    ]
    bounded = summarize_changes([], since=0, until=0, document=many, anchor="ask")
    assert bounded is not None and "20 more cells" in bounded.text and "c1" not in bounded.text


def test_the_run_cell_reads_the_same_whether_or_not_the_frontend_shows_its_count() -> None:
    """The run's own cell is executing: the frontend may or may not have its execution count
    yet when the kernel asks (message timing), so the kernel's count stands in and no "not run
    yet" flag appears; the model's context (and a replayed cassette) does not depend on it."""
    shown = [Cell("load", "code", "x = 1", 1), Cell("ask", "code", "%%agent\ngo", 6)]
    pending = [Cell("load", "code", "x = 1", 1), Cell("ask", "code", "%%agent\ngo", None)]
    texts = [
        summarize_changes(RECORDS, since=0, until=4, document=d, anchor="ask", anchor_count=6)
        for d in (shown, pending)
    ]
    assert texts[0] is not None and texts[1] is not None
    assert texts[0].text == texts[1].text
    assert "2. [In[6]] id ask (this run's cell: the cells you insert go right below it)" in (
        texts[0].text
    )


def call(tools: dict[str, Any], name: str, **args: Any) -> str:
    async def go() -> str:
        result = await tools[name].execute("call-1", args, None, None)
        return "".join(getattr(part, "text", "") for part in result.content)

    return asyncio.run(go())


class History:
    """The reading methods the tools use, over fixed records."""

    def __init__(self, records: list[ExecutionRecord]) -> None:
        self._records = records
        self.agent_failure = None  # the agent's failed run_python: none here

    def records(self, since: int = 0) -> list[ExecutionRecord]:
        return [r for r in self._records if r.index >= since]

    def last_error(self) -> ExecutionRecord | None:
        return next((r for r in reversed(self._records) if r.status == "error"), None)


def test_read_tools_from_the_document_when_connected() -> None:
    tools = read_tools(History(RECORDS), lambda: DOCUMENT)  # type: ignore[arg-type]
    listed = call(tools, "list_cells")
    assert "EDITED after it ran" in listed and "not run yet" in listed
    cell = call(tools, "read_cell", cell="id0")
    assert "It was EDITED after it last ran." in cell
    assert "data = {'price': 4}" in cell  # the document's source ...
    assert "What the kernel ran:" in cell and "data = {'price': 3}" in cell  # ... and the kernel's
    by_count = call(tools, "read_cell", cell="In[2]")
    assert "Cell id1 (code)" in by_count and "[output] an image" in by_count


def test_read_tools_fall_back_to_the_history() -> None:
    closed = FakeDocument(DOCUMENT.cells_, fail=True)
    tools = read_tools(History(RECORDS), lambda: closed)  # type: ignore[arg-type]
    listed = call(tools, "list_cells")
    assert "did not answer (the notebook tab was closed)" in listed
    assert "In[2] error: total(data)" in listed
    tools = read_tools(History(RECORDS), lambda: None)  # type: ignore[arg-type]
    assert "No notebook frontend is connected" in call(tools, "list_cells")
    assert "Cell In[2], line 1" in call(tools, "read_last_error")
    assert call(tools, "read_history", last=1).startswith("In[4] (cell id id3) ran:")
    empty = read_tools(History([]), lambda: None)  # type: ignore[arg-type]
    assert "No cell has failed" in call(empty, "read_last_error")
    assert "no cells have run" in call(empty, "list_cells")


def test_read_cell_names_the_known_cells_on_a_miss() -> None:
    tools = read_tools(History(RECORDS), lambda: None)  # type: ignore[arg-type]

    async def go() -> Any:
        return await tools["read_cell"].execute("call-1", {"cell": "In[9]"}, None, None)

    with pytest.raises(KeyError, match=r"recent cells: In\[1\], In\[2\], In\[3\], In\[4\]"):
        asyncio.run(go())


def test_fix_prompt_with_and_without_write_tools() -> None:
    shown = fix_prompt(FAILED, "be brief")
    assert shown.startswith("The cell In[2] (cell id id1) failed.")
    assert "```python\ntotal(data)\n```" in shown and "KeyError: 'prices'" in shown
    assert "one ```python code block" in shown and shown.endswith("The user adds: be brief")
    written = fix_prompt(FAILED, tool_names=["list_cells", "edit_cell"])
    assert 'call edit_cell once, with cell_id "id1" and the cell\'s corrected source' in written
    assert "Do not insert a new cell." in written and "code block" not in written
    # insert_cell alone cannot carry out "edit the cell": the answer is a code block then
    inserting = fix_prompt(FAILED, tool_names=["insert_cell", "run_cell"])
    assert "one ```python code block" in inserting and "edit_cell" not in inserting
