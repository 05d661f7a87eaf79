"""Execution records and document cells as text for the model: one shared, bounded layout so
the change summary, the read tools and ``%fix`` describe a cell the same way."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol

from .history import ExecutionRecord

__all__ = [
    "DocumentCellLike",
    "cell_label",
    "clip",
    "describe_document",
    "describe_error",
    "describe_record",
    "is_conversation_cell",
]

_PI_MAGIC = re.compile(
    r"^%%?(agent|fix|agent_context|steer|follow_up|abort|fork|model|thinking|tools|compact|tree"
    r"|session|label|load_ext pi_notebook|reload_ext pi_notebook)(\s|$)"
)


class DocumentCellLike(Protocol):
    """What the workspace reads of a cell of the open notebook (``document.DocumentCell``)."""

    @property
    def id(self) -> str: ...
    @property
    def cell_type(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def execution_count(self) -> int | None: ...
    @property
    def edited_since_run(self) -> bool: ...


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return text[:limit].rstrip() + f" [... {len(text) - limit} more characters]"


def cell_label(record: ExecutionRecord) -> str:
    """``In[3]`` (or the cell id, or the record's place when the cell had no count)."""
    if record.execution_count is not None:
        return f"In[{record.execution_count}]"
    if record.cell_id:
        return f"cell {record.cell_id}"
    return f"execution #{record.index + 1}"


def is_conversation_cell(record: ExecutionRecord) -> bool:
    """A cell that talks to or configures the agent (``%%agent``, ``%fix``, ``%model``, ...):
    the session already holds it, so summaries leave it out."""
    first = record.source.lstrip().split("\n", 1)[0]
    return _PI_MAGIC.match(first) is not None


def describe_error(record: ExecutionRecord, *, traceback: bool = True) -> str:
    if record.error is None:
        return "interrupted" if record.status == "interrupted" else ""
    error = record.error
    head = f"{error.ename}: {error.evalue}"
    if traceback and error.traceback:
        head = f"{head}\nTraceback (most recent call last):\n{error.traceback}"
    return f"{head}\n{error.hint}" if error.hint else head


def describe_record(
    record: ExecutionRecord,
    *,
    source_limit: int = 1_200,
    output_limit: int = 600,
    traceback: bool = True,
) -> str:
    """One executed cell: label, status, source, outputs, result or error (all bounded)."""
    status = {"ok": "ran", "error": "failed", "interrupted": "was interrupted"}[record.status]
    where = f" (cell id {record.cell_id})" if record.cell_id and record.execution_count else ""
    lines = [f"{cell_label(record)}{where} {status}:", _fenced(clip(record.source, source_limit))]
    budget = output_limit
    for output in record.outputs:
        if budget <= 0:
            break
        text = clip(output.text.rstrip("\n"), budget)
        budget -= len(text)
        lines.append(f"[{output.kind}] {text}")
    if record.omitted_outputs:
        lines.append(f"[... {record.omitted_outputs} more outputs]")
    if record.result is not None:
        lines.append(f"[result] {clip(record.result, output_limit)}")
    if record.status != "ok":
        lines.append(f"[error] {describe_error(record, traceback=traceback)}")
    return "\n".join(lines)


def _fenced(source: str) -> str:
    return f"```python\n{source.rstrip()}\n```" if source.strip() else "(empty cell)"


def describe_document(
    cells: Sequence[DocumentCellLike],
    records: Sequence[Any],
    *,
    anchor: str | None = None,
    anchor_count: int | None = None,
) -> str:
    """The open notebook's cells in order, flagging where the document and the kernel
    disagree (never run, edited after running).

    ``anchor`` is the id of the cell that started the run. The cells down to it are listed;
    the ones below it are only counted: the agent's cells land right below the anchor and may
    build on what is above, never on what the user wrote further down (a small model otherwise
    copies those cells into its own, or runs them). ``list_cells`` still lists them all.

    The anchor is executing (it started this run), so it is flagged as nothing else, and its
    execution count is the kernel's (``anchor_count``) when the frontend has not shown one yet:
    whether it has depends on message timing, and the model's context must not.
    """
    ran = {r.cell_id for r in records if getattr(r, "cell_id", None)}
    ids = [cell.id for cell in cells]
    cut = ids.index(anchor) + 1 if anchor in ids else len(cells)
    lines: list[str] = []
    for position, cell in enumerate(cells[:cut], start=1):
        notes: list[str] = []
        if cell.id == anchor:
            number = cell.execution_count or anchor_count
            count = f"In[{number}]" if number else "In[ ]"
        elif cell.cell_type == "code":
            if cell.execution_count is None and cell.id not in ran:
                notes.append("not run yet")
            elif cell.edited_since_run:
                notes.append("EDITED after it ran: the kernel ran an older version")
            count = f"In[{cell.execution_count}]" if cell.execution_count else "In[ ]"
        else:
            count = cell.cell_type
        if cell.id == anchor:
            notes.append("this run's cell: the cells you insert go right below it")
        note = f" ({'; '.join(notes)})" if notes else ""
        first = clip(cell.source.strip().replace("\n", " ⏎ "), 160) or "(empty)"
        lines.append(f"{position}. [{count}] id {cell.id}{note}: {first}")
    below = len(cells) - cut
    if below:
        lines.append(
            f"(Below this run's cell: {below} more cell{'s' if below > 1 else ''} the user "
            "wrote, not part of your task.)"
        )
    return "\n".join(lines)
