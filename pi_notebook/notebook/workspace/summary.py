"""The change summary: what the user did in the notebook between two agent turns, as one
bounded message the model reads before the next prompt.

It goes into the session as a ``custom_message`` entry (custom type ``notebook_changes``), so
``%tree`` shows it between the turns and a re-run or fork from an older point sees the notebook
as it was then. The summary is made when the ``%%agent`` cell executes (not when its queued run
starts), from the records that finished since the agent's previous turn; conversation cells
(``%%agent``, ``%fix``, ``%steer``, ...) are left out, they are in the transcript already.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .history import ExecutionRecord
from .render import DocumentCellLike, describe_document, describe_record, is_conversation_cell

__all__ = ["CUSTOM_TYPE", "MAX_SUMMARY_CHARS", "ChangeSummary", "summarize_changes"]

CUSTOM_TYPE = "notebook_changes"
MAX_SUMMARY_CHARS = 4_000
"""The whole message's bound; the newest cells are kept when it must be cut."""
MAX_CELLS = 12


@dataclass(frozen=True)
class ChangeSummary:
    """The message text and the facts stored beside it in the entry's ``details``."""

    text: str
    execution_counts: tuple[int | None, ...]
    since: int
    until: int
    shown: tuple[ExecutionRecord, ...] = field(default=(), compare=False)
    """The cells the text describes (their plots go with it: ``images.record_images``)."""

    @property
    def details(self) -> dict[str, Any]:
        return {
            "since": self.since,
            "until": self.until,
            "executionCounts": list(self.execution_counts),
        }


def summarize_changes(
    records: Sequence[ExecutionRecord],
    *,
    since: int,
    until: int,
    document: Sequence[DocumentCellLike] | None = None,
    anchor: str | None = None,
    anchor_count: int | None = None,
    limit: int = MAX_SUMMARY_CHARS,
) -> ChangeSummary | None:
    """The summary of ``records`` (those in ``[since, until)``), or None when nothing but
    conversation cells ran and there is no document to describe. ``anchor`` is the id of the
    cell that started the run and ``anchor_count`` its execution count in the kernel (see
    ``describe_document``)."""
    ran = [r for r in records if since <= r.index < until and not is_conversation_cell(r)]
    if not ran and not (document and since == 0):
        return None  # nothing new: the document itself is sent once, then read with list_cells
    shown = ran[-MAX_CELLS:]
    older = len(ran) - len(shown)
    first_turn = since == 0
    header = (
        "[notebook] Cells the user ran in the kernel"
        + (" so far" if first_turn else " since your last turn")
        + " (oldest first; what really ran, which may differ from the notebook file):"
    )
    parts = [describe_record(r, source_limit=800, output_limit=400, traceback=False) for r in shown]
    errors = [r for r in shown if r.status == "error"]
    tail: list[str] = []
    if errors:
        tail.append(
            "The last error was in "
            f"{_label(errors[-1])}; the read_last_error tool gives its full traceback."
        )
    if document:
        tail.append(
            "The open notebook now (cells in document order):\n"
            + describe_document(document, records, anchor=anchor, anchor_count=anchor_count)
        )
    if not ran:
        parts = ["(no cells ran)"]
    body = _fit(header, parts, tail, older, limit)
    return ChangeSummary(
        text=body,
        execution_counts=tuple(r.execution_count for r in ran),
        since=since,
        until=until,
        shown=tuple(shown),
    )


def _label(record: ExecutionRecord) -> str:
    return f"In[{record.execution_count}]" if record.execution_count is not None else "a cell"


def _fit(header: str, parts: list[str], tail: list[str], older: int, limit: int) -> str:
    """Join the pieces, dropping the oldest cells first until the text fits ``limit``."""
    while True:
        skipped = [f"({older} earlier cells left out)"] if older else []
        text = "\n\n".join([header, *skipped, *parts, *tail])
        if len(text) <= limit or len(parts) <= 1:
            return text if len(text) <= limit else text[: limit - 30] + "\n[... summary cut]"
        parts = parts[1:]
        older += 1
