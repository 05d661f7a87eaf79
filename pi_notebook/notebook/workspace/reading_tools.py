"""The read-only workspace tools (on by default; ``%tools remove NAME`` turns one off):

- ``list_cells``: the open notebook's cells when a frontend is connected (markdown, not-yet-run
  and edited-after-running cells flagged), else the cells the kernel ran, in order;
- ``read_cell``: one cell by ``In[n]`` / ``n`` / cell id, with its outputs and result or error;
- ``read_history``: the last executions in the kernel, fully;
- ``read_last_error``: the last failing cell with its traceback.

They read ``ExecutionHistory`` and, when there is one, the frontend's document (any object with
``connected`` and ``async cells()``, as ``document.NotebookDocument`` has). ``read_cell`` and
``read_history`` add the cells' image outputs (plots) as images when the model takes them, and
a one-line note per image otherwise (``images``).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ...agent.tools import AgentToolResult
from ...ai.types import TextContent
from ...tools import FunctionTool, tool
from .history import ExecutionHistory, ExecutionRecord
from .images import model_images, record_images
from .render import DocumentCellLike, cell_label, clip, describe_document, describe_record

__all__ = ["READ_TOOL_NAMES", "DocumentLike", "read_tools"]

READ_TOOL_NAMES = ("list_cells", "read_cell", "read_history", "read_last_error")
_NO_HISTORY = "(no cells have run since pi_notebook was loaded)"
_COUNT = re.compile(r"^\s*(?:In\s*\[\s*)?(\d+)\s*\]?\s*$")


class DocumentLike(Protocol):
    """The open notebook as the frontend reports it."""

    @property
    def connected(self) -> bool: ...
    async def cells(self) -> Sequence[DocumentCellLike]: ...


def _find(records: Sequence[ExecutionRecord], cell: str) -> ExecutionRecord | None:
    """The latest execution of ``cell`` (``In[3]``, ``3`` or a cell id)."""
    match = _COUNT.match(cell)
    for record in reversed(records):
        if match and record.execution_count == int(match.group(1)):
            return record
        if record.cell_id is not None and record.cell_id == cell.strip():
            return record
    return None


def _document_outputs(cell: Any) -> str:
    outputs = getattr(cell, "outputs", None)
    if not outputs:
        return ""
    texts = [getattr(o, "text", None) or str(o) for o in outputs]
    return "\n".join(f"[output] {clip(t, 600)}" for t in texts)


def _with_images(text: str, records: Sequence[ExecutionRecord], takes_images: bool) -> Any:
    """``text`` alone, or with the images of ``records`` after it."""
    blocks = record_images(records, takes_images)
    return AgentToolResult(content=[TextContent(text=text), *blocks]) if blocks else text


def read_tools(
    history: ExecutionHistory,
    document: Callable[[], DocumentLike | None],
    takes_images: Callable[[], bool] = lambda: False,
) -> dict[str, FunctionTool]:
    """The read tools over ``history`` and the document ``document()`` returns (or None);
    ``takes_images()`` says whether the model in use takes image input."""

    async def open_cells() -> tuple[Sequence[DocumentCellLike] | None, str]:
        doc = document()
        if doc is None or not doc.connected:
            return None, "No notebook frontend is connected: these are the cells the kernel ran."
        try:
            return await doc.cells(), ""
        except Exception as exc:  # the frontend went away mid-call: the kernel still knows
            return None, f"The notebook frontend did not answer ({exc}); the kernel's view:"

    async def list_cells() -> str:
        """List the notebook's cells in order: the open document's cells when the notebook is
        connected (markdown included; cells not run yet or edited after running are flagged),
        otherwise every cell the kernel ran, with its status."""
        cells, note = await open_cells()
        records = history.records()
        if cells is not None:
            return describe_document(cells, records) or "(the notebook is empty)"
        rows = [
            f"{cell_label(r)} {r.status}: {clip(r.source.strip().splitlines()[0], 120)}"
            if r.source.strip()
            else f"{cell_label(r)} {r.status}: (empty)"
            for r in records
        ]
        return "\n".join([note, *rows]) if rows else _NO_HISTORY

    async def read_cell(cell: str) -> Any:
        """Read one cell with its outputs and its result or error.

        Args:
            cell: The cell: its execution count (``3`` or ``In[3]``) or its cell id.
        """
        records = history.records()
        found = _find(records, cell)
        cells, _note = await open_cells()
        if cells is not None:
            doc_cell = next((c for c in cells if c.id == cell.strip()), None)
            if doc_cell is None and found is not None and found.cell_id:
                doc_cell = next((c for c in cells if c.id == found.cell_id), None)
            if doc_cell is not None:
                head = f"Cell {doc_cell.id} ({doc_cell.cell_type}) in the open notebook:"
                flag = " It was EDITED after it last ran." if doc_cell.edited_since_run else ""
                parts = [head + flag, f"```\n{doc_cell.source}\n```"]
                outputs = _document_outputs(doc_cell)
                if outputs:
                    parts.append(outputs)
                if found is None:
                    found = next((r for r in reversed(records) if r.cell_id == doc_cell.id), None)
                if found is not None:
                    parts.append("What the kernel ran:\n" + describe_record(found))
                return await _images_of(found, "\n".join(parts))
        if found is None:
            known = ", ".join(cell_label(r) for r in records[-10:]) or "none yet"
            raise KeyError(f"No cell {cell!r} has run in this kernel (recent cells: {known})")
        return await _images_of(
            found, describe_record(found, source_limit=4_000, output_limit=2_000)
        )

    async def _images_of(record: ExecutionRecord | None, text: str) -> Any:
        if record is None or not record.images:
            return text
        blocks = await asyncio.to_thread(model_images, record.images, takes_images())
        return AgentToolResult(content=[TextContent(text=text), *blocks])

    def read_history(last: int = 10) -> Any:
        """Read the last executions in the kernel, oldest first: source, outputs, result or
        error of each. This is what really ran, in the order it ran.

        Args:
            last: How many executions to return (1 to 50).
        """
        count = max(1, min(int(last), 50))
        records = history.records()[-count:]
        if not records:
            return _NO_HISTORY
        text = "\n\n".join(describe_record(r, source_limit=1_500) for r in records)
        return _with_images(text, records, takes_images())  # a sync tool: in a worker thread

    def read_last_error() -> str:
        """Read the last cell that failed: its source, the exception and the traceback."""
        # The agent's own failed run_python counts too when it is the later: the model often
        # asks for "the last error" right after one, and "no cell has failed" misleads it.
        record = history.last_error()
        failure = history.agent_failure
        if failure is not None and (record is None or failure.at >= (record.ended_at or 0)):
            return (
                "Your last run_python call failed (no cell has failed since):\n"
                f"```python\n{clip(failure.code.rstrip(), 4_000)}\n```\n"
                f"[error] {clip(failure.output.rstrip(), 2_000)}"
            )
        if record is None:
            return "No cell has failed since pi_notebook was loaded."
        return describe_record(record, source_limit=4_000, output_limit=1_000)

    return {
        "list_cells": tool(list_cells),
        "read_cell": tool(read_cell),
        "read_history": tool(read_history),
        "read_last_error": tool(read_last_error),
    }
