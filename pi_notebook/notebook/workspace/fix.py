"""``%fix``: the prompt that asks the agent to explain and fix the last failing cell.

The prompt carries the failing cell (source, exception, trimmed traceback) so even a model
without tools can answer. With the frontend's write tools active the agent edits the failing
cell in place (the edit asks for approval; a second cell with the same fix would only clutter
the notebook, so the prompt asks for none); without them, or with no notebook connected, it
shows the fixed cell in a code block, so an executed notebook gets the same, deterministic
answer.
"""

from __future__ import annotations

from collections.abc import Collection

from .history import ExecutionRecord
from .render import cell_label, describe_error

__all__ = ["fix_prompt"]


def fix_prompt(
    record: ExecutionRecord, instructions: str = "", *, tool_names: Collection[str] = ()
) -> str:
    """The ``%fix`` prompt for the failed ``record``."""
    label = cell_label(record)
    where = f" (cell id {record.cell_id})" if record.cell_id else ""
    can_write = "edit_cell" in tool_names  # the fix is an edit of the cell, nothing else
    target = f'cell_id "{record.cell_id}"' if record.cell_id else "that cell's id"
    how = (
        f"Then fix it in place: call edit_cell once, with {target} and the cell's corrected "
        "source, complete (keep the user's intent). Do not insert a new cell."
        if can_write
        else "Then give the corrected cell in one ```python code block, complete, so it can "
        "replace the failing cell as it is."
    )
    parts = [
        f"The cell {label}{where} failed.",
        f"```python\n{record.source.rstrip()}\n```",
        describe_error(record),
        "Explain in one or two sentences why it failed. " + how,
    ]
    if instructions.strip():
        parts.append(f"The user adds: {instructions.strip()}")
    return "\n\n".join(parts)
