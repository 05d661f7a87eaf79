"""The user's two actions on a code block of a reply: "Insert as cell" and "Apply as edit".

A model that answers with a fenced code block instead of calling a tool leaves the user to copy
it by hand. The run view offers two buttons on such a block, only for code the kernel runs
(``python`` or no language named) and only while a notebook frontend is connected:

- **Insert as cell** puts the code into a new code cell below the run's ``%%agent`` cell (or
  below the cell inserted last from the same run), through the same document path as the
  agent's ``insert_cell``. The click is the approval.
- **Apply as edit** proposes the code as the new source of the cell the run is about (the cell
  ``%fix`` targets, else the last cell whose latest run failed) on the edit card the agent's
  ``edit_cell`` gets, with its diff; nothing changes before the user allows it. Code equal to
  the cell's source is no edit: it is dropped with a note.

What was applied is recorded in the session (:func:`action_message`): a custom message that
enters the model's next context, so it knows which cell holds its code, and that ``%tree``
shows.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .document import DocumentCell, DocumentError, NotebookNotConnected

if TYPE_CHECKING:  # a run's view starts with edit_target alone (the run's imports come later)
    from ..widgets.protocol import ApprovalPreview
    from .edit_tools import WriteTools
    from .history import ExecutionHistory

__all__ = [
    "CUSTOM_TYPE",
    "RUNNABLE_LANGUAGES",
    "CodeAction",
    "EditProposal",
    "action_message",
    "code_blocks",
    "edit_target",
    "propose_edit",
]

CodeAction = Literal["insert", "edit"]
CUSTOM_TYPE = "pi_notebook.code_action"
"""The session's custom message recording what the user applied from a reply."""
RUNNABLE_LANGUAGES = frozenset({"", "python", "py", "python3", "ipython", "ipython3"})
"""A fenced block's first info word (lower-cased) that marks code this kernel runs
(``js/src/code_actions.js`` has the same list)."""


@functools.cache
def _parser() -> Callable[[str], Any]:
    import mistune

    return mistune.create_markdown(renderer=None)


def _fenced(tokens: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
    for token in tokens:
        if token.get("type") == "block_code" and token.get("style") == "fenced":
            info = str((token.get("attrs") or {}).get("info") or "")
            words = info.split()
            yield (words[0].lower() if words else ""), str(token.get("raw", ""))
        children = token.get("children")
        if isinstance(children, list):
            yield from _fenced(children)


def code_blocks(text: str) -> list[str]:
    """The fenced code blocks of a reply's Markdown that the kernel runs, in order."""
    tokens = _parser()(text)
    assert isinstance(tokens, list)  # the AST renderer
    return [raw for language, raw in _fenced(tokens) if language in RUNNABLE_LANGUAGES]


def edit_target(history: ExecutionHistory) -> str | None:
    """The cell a run is about when nothing names one: the last cell whose latest execution
    failed (a cell that failed and then ran cleanly is fixed already)."""
    latest = {r.cell_id: r for r in history.records() if r.cell_id is not None}
    failed = [r for r in latest.values() if r.status == "error"]
    return max(failed, key=lambda r: r.index).cell_id if failed else None


@dataclass(frozen=True)
class EditProposal:
    """An edit of ``cell`` to ``source``: ``preview`` is the approval card's."""

    cell: DocumentCell
    source: str
    preview: ApprovalPreview


async def propose_edit(tools: WriteTools, cell_id: str, source: str) -> EditProposal | str:
    """The card for making ``source`` the source of cell ``cell_id``, or why there is none
    (the cell is gone, or the code is what it holds already)."""
    try:
        cells = await tools.document.cells()
    except NotebookNotConnected as exc:
        return str(exc)
    cell = next((c for c in cells if c.id == cell_id), None)
    if cell is None:
        return f"Cell {cell_id} is no longer in the notebook; nothing was edited."
    if cell.source.rstrip() == source.rstrip():
        label = tools.describe_cell(cell)
        return f"No change: the code block is what {label} holds already; nothing was edited."
    try:
        preview = await tools.preview("edit_cell", {"cell_id": cell_id, "source": source})
    except DocumentError as exc:
        return f"{exc} Nothing was edited."
    return EditProposal(cell, source, preview)


def action_message(
    action: CodeAction, cell_id: str, source: str, *, after: str | None = None, old: str = ""
) -> tuple[str, dict[str, Any]]:
    """What the session records for an applied action: the words the model reads, and the
    details (``details["notebook"]``, as the write tools record their changes)."""
    from .edit_tools import unified_diff

    if action == "insert":
        where = f"below cell {after}" if after is not None else "at the end of the notebook"
        text = (
            "The user inserted a code block of your reply into the notebook as code cell "
            f"{cell_id} ({where}). It has not run yet."
        )
        notebook: dict[str, Any] = {
            "action": "insert",
            "applied": True,
            "by": "user",
            "cell_id": cell_id,
            "after_cell_id": after,
            "cell_type": "code",
            "source": source,
        }
    else:
        text = (
            "The user applied a code block of your reply as the new source of cell "
            f"{cell_id}. It has not run since the edit."
        )
        notebook = {
            "action": "edit",
            "applied": True,
            "by": "user",
            "cell_id": cell_id,
            "source": source,
            "diff": unified_diff(old, source),
        }
    return text, {"notebook": notebook}
