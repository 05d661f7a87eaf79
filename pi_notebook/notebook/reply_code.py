"""What the user does with a code block of the model's reply: "Insert as cell" puts it below the
run's cell at once (the click is the approval), "Apply as edit" proposes it as the new source of
the cell the run is about and waits for Allow on its card. What was applied is written to the
session, so the model's next context and ``%tree`` know of it. The words and the proposal are
:mod:`.workspace.code_actions`'s.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .kernel_agent import NotebookAgent
    from .runs import Run

__all__ = ["CodeBlockActions"]


class CodeBlockActions:
    """The code-block buttons of ``agent``'s run views."""

    def __init__(self, agent: NotebookAgent) -> None:
        self._agent = agent
        self._anchors: dict[int, str] = {}
        """Per run: the cell its view's "Insert as cell" inserted last (the next goes below)."""
        self._clicks = 0

    async def clicked(self, run: Run, action: str, source: str) -> None:
        """The user clicked "Insert as cell" (``action`` "insert") or "Apply as edit" on a code
        block of ``run``'s replies."""
        self._clicks += 1
        call_id = f"pi-user-{action}-{self._clicks}"
        if action == "insert":
            await self._insert(run, call_id, source)
        else:
            await self._edit(run, call_id, source)

    async def _insert(self, run: Run, call_id: str, source: str) -> None:
        from .workspace.code_actions import action_message
        from .workspace.document import DocumentError, NotebookNotConnected

        view, tools = run.view, self._agent.write_tools
        after = self._anchors.get(run.number)
        if after is None:
            own = tools.run_number == run.number
            after = tools.anchor_cell_id if own else run.cell_id
        try:
            cell_id, after, note = await tools.place_cell(source, "code", None, after)
        except (DocumentError, NotebookNotConnected) as exc:
            view.add_note("Insert as cell: nothing was inserted", str(exc))
            return
        self._anchors[run.number] = cell_id
        if tools.run_number == run.number:  # the agent's next insert goes below it
            tools.anchor_cell_id = cell_id
        where = f"below cell {after}" if after is not None else "at the end of the notebook"
        text, details = action_message("insert", cell_id, source, after=after)
        view.add_action_result(
            call_id,
            "insert_cell",
            f"Inserted code cell {cell_id} {where}{note}. It has not run yet.",
            details,
            {
                "title": f"Insert a code cell {where}",
                "language": "python",
                "source": source,
                "diff": "",
                "always": False,
            },
            'By your click on "Insert as cell".',
        )
        self._record(text, details)

    async def _edit(self, run: Run, call_id: str, source: str) -> None:
        from .workspace.code_actions import action_message, propose_edit
        from .workspace.document import DocumentError, NotebookNotConnected

        view, tools = run.view, self._agent.write_tools
        target = run.edit_cell
        if target is None:
            view.add_note("Apply as edit: nothing to do", "This run is about no cell to edit.")
            return
        proposal = await propose_edit(tools, target, source)
        if isinstance(proposal, str):
            view.add_note("Apply as edit: nothing to do", proposal)
            return
        args = {"cell_id": target, "source": source}
        timeout = self._agent.approval_timeout
        allowed = await view.request_approval(
            call_id, "edit_cell", args, timeout=timeout, preview=proposal.preview
        )
        if not allowed:
            view.finish_action(call_id, "edit_cell", "Not applied: the notebook is unchanged.")
            return
        try:
            await tools.document.edit_cell(target, source)
        except (DocumentError, NotebookNotConnected) as exc:
            refused = f"The notebook refused: {exc} Nothing was changed."
            view.finish_action(call_id, "edit_cell", refused, is_error=True)
            return
        text, details = action_message("edit", target, source, old=proposal.cell.source)
        done = f"Edited cell {target}. It has not run since the edit."
        view.finish_action(call_id, "edit_cell", done, details)
        self._record(text, details)

    def _record(self, text: str, details: dict[str, Any]) -> None:
        """Write what the user applied to the session, after what is queued (a live run's
        entries first)."""
        from .workspace.code_actions import CUSTOM_TYPE

        agent = self._agent

        async def record() -> None:
            from ..harness.session import SessionWriteError

            if agent.read_only is not None:
                return
            with contextlib.suppress(SessionWriteError):  # kept in memory, written later
                agent.session.append_custom_message(
                    CUSTOM_TYPE, text, display=True, details=details
                )
            agent.refresh_tree_views()

        agent.enqueue(record)
