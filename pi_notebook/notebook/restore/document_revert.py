"""Undo what the agent did to the notebook on the branch being left.

Every applied cell change of the write tools is recorded in its tool result's
``details["notebook"]`` (action, cell id, source; an edit's unified diff; a delete's source).
Moving from one node of the session tree to another leaves the entries after the two branches'
common ancestor; their applied changes, undone newest first, give the notebook back as it was
at that ancestor: an inserted cell is deleted, an edited cell gets its old source back (the
recorded diff applied in reverse to the recorded new source), a deleted cell is inserted again
with its id and source.

A step is only taken when the cell is as the agent left it: a cell the user changed since is
listed as left as is, never overwritten.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..workspace.document import CellType, DocumentCell, DocumentError, NotebookDocument

__all__ = [
    "DocumentStep",
    "StepOutcome",
    "apply_steps",
    "branch_left",
    "plan_revert",
    "unapply_diff",
]

StepAction = Literal["delete", "unedit", "reinsert"]

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class DocumentStep:
    """One undo: ``delete`` an inserted cell, ``unedit`` an edited one (back to
    ``source``), ``reinsert`` a deleted one (``source`` below ``after_cell_id``)."""

    action: StepAction
    cell_id: str
    source: str
    """The source the cell gets (unedit, reinsert) or has now (delete)."""
    expected: str | None = None
    """The source the agent left the cell with (delete, unedit): the step is taken only if the
    cell still has it."""
    after_cell_id: str | None = None
    cell_type: CellType = "code"
    problem: str = ""
    """Why this change cannot be undone (the record is incomplete); ``""`` when it can."""

    @property
    def title(self) -> str:
        first = next((line for line in self.source.splitlines() if line.strip()), "")
        first = first if len(first) <= 40 else first[:39] + "…"
        verb = {
            "delete": "Delete the inserted cell",
            "unedit": "Restore the source of the edited cell",
            "reinsert": "Insert again the deleted cell",
        }[self.action]
        cell = self.cell_id if len(self.cell_id) <= 24 else self.cell_id[:23] + "…"
        return f"{verb} {cell} ({first!r})"


@dataclass(frozen=True)
class StepOutcome:
    step: DocumentStep
    done: bool
    words: str


def branch_left(session: Any, from_id: str | None, to_id: str | None) -> list[Any]:
    """The entries a move from ``from_id`` to ``to_id`` leaves behind: those on the path to
    ``from_id`` after its common ancestor with ``to_id``, oldest first (empty when ``to_id``
    is ``from_id`` or below it)."""
    if from_id is None:
        return []
    left = session.get_branch(from_id)
    # both are paths from the root: what they share is the start of each
    shared = {e.id for e in session.get_branch(to_id)} if to_id is not None else set()
    return [e for e in left if e.id not in shared]


def _notebook_detail(entry: Any) -> dict[str, Any] | None:
    message = getattr(entry, "message", None)
    if getattr(message, "role", None) != "toolResult":
        return None
    details = getattr(message, "details", None)
    detail = details.get("notebook") if isinstance(details, dict) else None
    if not isinstance(detail, dict) or detail.get("applied") is not True:
        return None
    return detail


def unapply_diff(new: str, diff: str) -> str | None:
    """The old text of a ``difflib.unified_diff`` (as ``edit_tools.unified_diff`` makes it)
    given the new text; None when the diff does not fit ``new`` or was cut."""
    if not diff or diff.endswith("[... diff cut]"):
        return None
    new_lines = new.splitlines()
    old: list[str] = []
    at = 0  # the next line of ``new_lines`` not yet copied
    lines = diff.split("\n")
    i = 0
    while i < len(lines) and not lines[i].startswith("@@"):
        i += 1  # the ---/+++ header
    while i < len(lines):
        match = _HUNK.match(lines[i])
        if match is None:
            return None
        start = int(match.group(3))
        count = int(match.group(4)) if match.group(4) is not None else 1
        begin = start - 1 if count else start  # an empty side names the line before it
        if begin < at:
            return None
        old.extend(new_lines[at:begin])
        at = begin
        i += 1
        while i < len(lines) and not lines[i].startswith("@@"):
            line = lines[i]
            tag, text = line[:1], line[1:]
            if tag in (" ", "+"):
                if at >= len(new_lines) or new_lines[at] != text:
                    return None
                at += 1
                if tag == " ":
                    old.append(text)
            elif tag == "-":
                old.append(text)
            elif line:
                return None
            i += 1
    old.extend(new_lines[at:])
    return "\n".join(old)


def plan_revert(entries: Iterable[Any]) -> list[DocumentStep]:
    """The undo steps of the applied cell changes recorded in ``entries`` (oldest first), in
    the order to take them: newest change first."""
    steps: list[DocumentStep] = []
    for entry in entries:
        detail = _notebook_detail(entry)
        if detail is None:
            continue
        action = detail.get("action")
        cell_id = str(detail.get("cell_id") or "")
        source = str(detail.get("source") or "")
        if not cell_id:
            continue
        if action == "insert":
            steps.append(DocumentStep("delete", cell_id, source, expected=source))
        elif action == "edit":
            old = unapply_diff(source, str(detail.get("diff") or ""))
            problem = "" if old is not None else "its old source is not recorded whole"
            steps.append(
                DocumentStep("unedit", cell_id, old or "", expected=source, problem=problem)
            )
        elif action == "delete":
            kind = detail.get("cell_type")
            after = detail.get("after_cell_id")
            steps.append(
                DocumentStep(
                    "reinsert",
                    cell_id,
                    source,
                    after_cell_id=after if isinstance(after, str) else None,
                    cell_type=kind if kind in ("code", "markdown", "raw") else "code",
                )
            )
    steps.reverse()
    return steps


def _matches(cell: DocumentCell | None, expected: str | None) -> bool:
    return cell is not None and (expected is None or cell.source.rstrip() == expected.rstrip())


async def apply_steps(
    document: NotebookDocument, steps: Sequence[DocumentStep]
) -> list[StepOutcome]:
    """Take ``steps`` in order; each outcome says what happened (a cell changed since the agent
    left it, or one already gone, is left as is)."""
    outcomes: list[StepOutcome] = []
    for step in steps:
        if step.problem:
            outcomes.append(StepOutcome(step, False, f"left as is: {step.problem}"))
            continue
        cells = {cell.id: cell for cell in await document.cells()}
        cell = cells.get(step.cell_id)
        try:
            if step.action == "reinsert":
                if cell is not None:
                    outcomes.append(StepOutcome(step, False, "left as is: the cell is there"))
                    continue
                after = step.after_cell_id if step.after_cell_id in cells else None
                await document.insert_cell(
                    step.source, after_cell_id=after, cell_type=step.cell_type, cell_id=step.cell_id
                )
                where = f"below {after}" if after else "at the end (its neighbour is gone)"
                outcomes.append(StepOutcome(step, True, f"inserted again {where}"))
            elif not _matches(cell, step.expected):
                why = "the cell is gone" if cell is None else "the cell was changed since"
                outcomes.append(StepOutcome(step, False, f"left as is: {why}"))
            elif step.action == "delete":
                await document.delete_cell(step.cell_id)
                outcomes.append(StepOutcome(step, True, "deleted"))
            else:
                await document.edit_cell(step.cell_id, step.source)
                outcomes.append(StepOutcome(step, True, "source restored"))
        except DocumentError as exc:
            outcomes.append(StepOutcome(step, False, f"the notebook refused: {exc}"))
    return outcomes
