"""What the write tools answer when no notebook frontend is connected (nbclient, papermill, a
terminal): a clear, deterministic result saying so and what would have been done. A proposed cell
gets an id (``proposed-1``, ...) so the model can go on and ask to run it: ``run_cell`` then
answers with the code that would have run, once, and more firmly when asked again."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...agent.tools import AgentToolResult
from .write_results import fence, text_result

__all__ = ["Proposals"]


@dataclass
class Proposals:
    """The cells proposed in one kernel without a frontend, and the answers about them."""

    cells: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Proposed cells: id → (cell type, source)."""
    asked_to_run: set[str] = field(default_factory=set)
    """Proposed cells ``run_cell`` was already asked to run."""

    def answer(self, name: str, params: dict[str, Any], *, run: bool) -> AgentToolResult:
        """The result of the write tool ``name`` called with ``params`` (``run``: an
        ``insert_cell`` that asks to run its code cell too)."""
        head = (
            "No notebook frontend is connected to this kernel (it runs under nbclient, "
            "papermill or a terminal, or JupyterLab lacks the pi_notebook extension), so "
        )
        source = str(params.get("source", ""))
        cell_id = str(params.get("cell_id", ""))
        detail: dict[str, Any] = {"action": name.removesuffix("_cell"), "applied": False}
        if name == "insert_cell":
            kind = str(params.get("cell_type") or "code")
            cell_id = f"proposed-{len(self.cells) + 1}"
            self.cells[cell_id] = (kind, source)
            language = "markdown" if kind == "markdown" else "python"
            detail.update(cell_id=cell_id, cell_type=kind, source=source)
            if run:
                # asked to run it too: the firm answer run_cell would give, at once
                self.asked_to_run.add(cell_id)
                detail["run"] = {"applied": False}
                text = (
                    f"{head}no cell was inserted or run. The {kind} cell that would have been "
                    f"inserted and run (proposed as cell {cell_id}):\n"
                    f"{fence(source, language)}\nIt cannot run here; do not ask again. Show "
                    "the user this code, who can run it."
                )
            else:
                text = (
                    f"{head}no cell was inserted. The {kind} cell would have been "
                    f"(proposed as cell {cell_id}):\n{fence(source, language)}\n"
                    f'run_cell with cell_id "{cell_id}" shows the user the code to run.'
                )
        elif name == "edit_cell":
            text = f"{head}cell {cell_id} was not edited. Its new source would have been:\n"
            text += fence(source)
            detail.update(cell_id=cell_id, source=source)
        elif name == "delete_cell":
            text = f"{head}cell {cell_id} was not deleted."
            detail.update(cell_id=cell_id)
        elif cell_id in self.asked_to_run:
            # a small model may ask again and again: say it once more, shorter and firmer
            text = (
                f"run_cell already answered for cell {cell_id}: with no notebook connected it "
                "cannot run, however often it is asked. Do not call run_cell again; show the "
                "user the cell's code and end your turn."
            )
            detail.update(cell_id=cell_id, repeated=True)
        elif cell_id in self.cells:
            self.asked_to_run.add(cell_id)
            kind, proposed = self.cells[cell_id]
            text = (
                f"{head}cell {cell_id} was not run (it cannot run here; do not ask again). "
                "This is the code that would have run; show it to the user, who can run it:"
                f"\n{fence(proposed)}"
            )
            detail.update(cell_id=cell_id, source=proposed)
        else:
            text = f"{head}cell {cell_id} was not run."
            detail.update(cell_id=cell_id)
        return text_result(text, detail)
