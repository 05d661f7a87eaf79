"""Offer a restore after a move in the session tree, apply it on approval, and record it.

:class:`Restorer` is made per move: :meth:`Restorer.plan` compares the checkpoint at the node
with one of the namespace taken just before the move (and plans the undo of the agent's cell
changes on the branch being left), the owner shows :meth:`RestorePlan.card` and waits for the
answer, and :meth:`Restorer.apply` restores. Nothing is changed before the answer; a checkpoint that
fails its check at load time changes nothing either (every object is read and checked before
any value is set).

The restore is written into the session as a ``custom_message`` entry (custom type
:data:`CUSTOM_TYPE`) below the node moved to: ``%tree`` shows it, and the model's next turn
reads what was restored, removed and re-created (its tools then see the restored namespace).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..widgets.tree_rows import entry_row, short_id
from ..workspace.document import NotebookDocument
from .document_revert import StepOutcome, apply_steps, branch_left, plan_revert
from .plan import RestorePlan, compare, recreate_cells

if TYPE_CHECKING:
    from ..checkpoints.store import CheckpointStore, Manifest

__all__ = ["CUSTOM_TYPE", "RestoreResult", "Restorer"]

CUSTOM_TYPE = "pi_notebook.restore"
_MAX_OUTPUT = 600
_MAX_NAMES = 30


@dataclass
class RestoreResult:
    """What a restore did: the words for the card and the session entry's text and details."""

    done: bool
    words: str
    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)


def _names(names: list[str], limit: int = _MAX_NAMES) -> str:
    """Names for the model's message, bounded (a namespace may hold hundreds)."""
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _cut(text: str, limit: int = _MAX_OUTPUT) -> str:
    return text if len(text) <= limit else text[:limit] + " […]"


@dataclass
class Restorer:
    """The restore of one move from ``from_id`` to ``to_id`` (the session is at ``to_id``
    already: the conversation moves whatever the answer)."""

    session: Any
    namespace: dict[str, Any]
    document: NotebookDocument | None
    store: CheckpointStore | None
    """None while checkpoints are off."""
    run_code: Callable[[str, dict[str, Any]], tuple[str, bool]]
    """Runs a cell's source in the namespace: its printed output, and whether it failed."""

    async def plan(
        self, from_id: str | None, to_id: str, now: Manifest | str | None
    ) -> RestorePlan:
        """``now``: a checkpoint of the namespace taken before the move (at ``from_id``, so
        that moving back restores it), or why none could be taken."""
        entry = self.session.get_entry(to_id)
        title = entry_row(entry)[3] if entry is not None else short_id(to_id)
        plan = RestorePlan(target_id=to_id, target_title=title)
        if self.document is not None and self.document.connected:
            plan.document = plan_revert(branch_left(self.session, from_id, to_id))
        if self.store is None:
            plan.refusal = (
                "Checkpoints are off, so the variables cannot be restored (%checkpoint on "
                "records them from the next run on); the kernel is left as it is."
            )
            return plan
        path = [e.id for e in self.session.get_branch(to_id)]
        manifest = await asyncio.to_thread(self.store.latest_for, path)
        if manifest is None:
            plan.refusal = (
                f"No checkpoint at or above {short_id(to_id)} (none was taken on this branch "
                "up to there), so the variables cannot be restored; the kernel is left as it is."
            )
            return plan
        plan.checkpoint = manifest
        from ..checkpoints.store import CheckpointError

        try:
            await asyncio.to_thread(self.store.verify, manifest)
        except CheckpointError as exc:
            plan.refusal = (
                f"The checkpoint at {short_id(manifest.entry_id or to_id)} cannot be used: {exc}. "
                "Nothing is restored from it; the kernel is left as it was."
            )
            return plan
        if now is None or isinstance(now, str):
            plan.refusal = (
                f"No checkpoint of the namespace as it is now could be taken ({now or 'off'}), so "
                "nothing is compared or restored; the kernel is left as it is."
            )
            return plan
        plan.now = now
        plan.variables = compare(manifest, now)
        plan.recreate = recreate_cells(plan.variables)
        return plan

    async def apply(self, plan: RestorePlan, *, revert_document: bool = True) -> RestoreResult:
        """Restore what ``plan`` offers; the words say what was done (or why nothing was)."""
        lines: list[str] = []
        details: dict[str, Any] = {"targetId": plan.target_id}
        if plan.changes_variables:
            assert self.store is not None and plan.checkpoint is not None
            from ..checkpoints.store import CheckpointError

            try:
                loaded = await asyncio.to_thread(self.store.load, plan.checkpoint)
            except CheckpointError as exc:
                words = (
                    f"The checkpoint could not be loaded ({exc}); nothing was restored and the "
                    "kernel is as it was."
                )
                return RestoreResult(False, words)
            assert plan.now is not None
            variables = compare(plan.checkpoint, plan.now, loaded.failed)
            lines += self._restore_values(variables, loaded.values, details)
            details["checkpoint"] = plan.checkpoint.seq
            lines += self._recreate(recreate_cells(variables), details)
        elif plan.refusal:
            lines.append(plan.refusal)
        if revert_document and plan.document and self.document is not None:
            outcomes = await apply_steps(self.document, plan.document)
            lines += self._document_lines(outcomes, details)
        where = short_id(plan.target_id)
        message = "[notebook] The user restored the notebook to how it was at entry "
        message += f"{where} of the conversation.\n" + "\n".join(lines)
        words = "\n".join(lines) or "Nothing needed restoring."
        return RestoreResult(True, words, message, details)

    def _restore_values(
        self, variables: list[Any], values: dict[str, Any], details: dict[str, Any]
    ) -> list[str]:
        restored = [v for v in variables if v.change == "restored" and v.name in values]
        removed = [v for v in variables if v.change == "removed"]
        kept = [v for v in variables if v.change == "kept"]
        for change in restored:
            self.namespace[change.name] = values[change.name]
        for change in removed:
            self.namespace.pop(change.name, None)
        details["restored"] = [v.name for v in restored]
        details["removed"] = [v.name for v in removed]
        details["kept"] = [v.name for v in kept]
        lines = []
        if restored:
            names = _names([f"{v.name} ({v.type})" for v in restored])
            lines.append(f"Variables restored to their values there: {names}.")
        if removed:
            names = _names([v.name for v in removed])
            lines.append(f"Variables removed (they did not exist there): {names}.")
        if kept:
            lines.append("Left as they are (the same there): " + _names([v.name for v in kept]))
        unrestorable = [v for v in variables if v.change == "unrestorable"]
        details["unrestorable"] = {v.name: v.note for v in unrestorable}
        for change in unrestorable:
            how = "" if change.origin is not None else " and no cell to re-create it is known"
            lines.append(f"Could not restore {change.name} ({change.type}: {change.note}){how}.")
        return lines

    def _recreate(self, cells: list[Any], details: dict[str, Any]) -> list[str]:
        lines = []
        ran = []
        for cell in cells:
            output, failed = self.run_code(cell.origin.source, self.namespace)
            ran.append({"label": cell.label, "names": list(cell.names), "failed": failed})
            names = ", ".join(cell.names)
            lines.append(
                f"Ran the cell that made {names} again ({cell.label}):\n"
                f"```python\n{cell.origin.source.rstrip()}\n```\n"
                f"{'It failed' if failed else 'Its output'}: {_cut(output)}"
            )
        details["recreated"] = ran
        return lines

    @staticmethod
    def _document_lines(outcomes: list[StepOutcome], details: dict[str, Any]) -> list[str]:
        details["document"] = [
            {"action": o.step.action, "cellId": o.step.cell_id, "done": o.done} for o in outcomes
        ]
        lines = ["The agent's cell changes on the branch left were undone:"]
        lines += [f"- {o.step.title}: {o.words}" for o in outcomes]
        return lines
