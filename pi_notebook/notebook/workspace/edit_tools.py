"""The write tools: the agent inserts, edits, deletes and runs cells of the open notebook.

Each asks for approval in the run view first (the card shows the proposed source, a diff for an
edit, and for ``run_cell`` an "always allow for this session" button); the approval hook in
``kernel_agent`` calls :meth:`WriteTools.preview` and :meth:`WriteTools.approve`. A tool acts
only on a call that was approved (or on a tool always allowed), whoever calls it.

Where cells land: an inserted cell goes right below the ``%%agent`` cell that started the run, or
below the cell the same run inserted last, never at the user's cursor, so the notebook stays
top-down reproducible. Running a cell asks the frontend to execute it (the kernel's normal path:
``In``/``Out``, execution counts and the notebook's outputs are real) and waits for it in the
kernel's execution history; its result, error and images come back as the tool result
(``cell_runs``).

The deadlock rule: the agent's run and the cell share the kernel, which runs one cell at a time.
When a cell is waiting for this run (``%%agent --wait``, ``await pi_notebook.current().wait()``,
also one queued by Run All), a cell the agent asks to run cannot start before that cell ends;
``run_cell`` says so instead of waiting forever. An interrupt of the agent-run cell is reported
as "interrupted".

Without a frontend (nbclient, papermill, a terminal) every tool returns a clear, deterministic
result saying no notebook is connected and what would have been done. A proposed cell gets an
id (``proposed-1``, ...) so the model can go on and ask to run it: ``run_cell`` then answers
with the code that would have run, and the executed notebook shows the proposal whole
(``proposals``).

Each result's ``details["notebook"]`` records the change (action, cell id, source...), so the
session tree shows what every branch did to the notebook.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from pydantic import BaseModel, Field

from ...agent.tools import AgentTool, AgentToolResult, ToolUpdateCallback
from ...ai.abort import AbortSignal
from ...ai.types import TextContent
from ..widgets.protocol import ApprovalPreview
from .cell_runs import CellRunner, deadlock_words
from .document import (
    CellType,
    DocumentCell,
    DocumentError,
    NotebookDocument,
    NotebookNotConnected,
)
from .history import ExecutionHistory
from .proposals import Proposals
from .write_results import fence, text_result

__all__ = [
    "WRITE_TOOL_NAMES",
    "WriteTools",
    "new_cell_id",
    "unified_diff",
]

WRITE_TOOL_NAMES = ("insert_cell", "edit_cell", "delete_cell", "run_cell")
_MAX_DIFF = 20_000
_MAX_ID_BASE = 48
"""Room for ``agent-`` and the frontend's ``-N`` suffix within nbformat's 64 characters."""

_Body = Callable[[str, dict[str, Any], AbortSignal | None], Awaitable[AgentToolResult]]


class _InsertArgs(BaseModel):
    source: str = Field(description="The new cell's source.")
    cell_type: Literal["code", "markdown"] = Field(
        default="code", description="code (the default) or markdown."
    )
    run: bool = Field(
        default=False,
        description="true to run the new code cell right after inserting it; its result "
        "then comes back with this call (no run_cell needed).",
    )


class _EditArgs(BaseModel):
    cell_id: str = Field(description="The id of the cell to change (from list_cells).")
    source: str = Field(description="The cell's complete new source.")


class _CellArgs(BaseModel):
    cell_id: str = Field(description="The id of the cell (from list_cells or insert_cell).")


_PARAMETERS: dict[str, type[BaseModel]] = {
    "insert_cell": _InsertArgs,
    "edit_cell": _EditArgs,
    "delete_cell": _CellArgs,
    "run_cell": _CellArgs,
}


def unified_diff(old: str, new: str, name: str = "cell") -> str:
    """``old`` → ``new`` as a unified diff (bounded), ``""`` when they are equal."""
    lines = difflib.unified_diff(
        old.splitlines(), new.splitlines(), f"{name} (now)", f"{name} (proposed)", lineterm=""
    )
    text = "\n".join(lines)
    return text if len(text) <= _MAX_DIFF else text[:_MAX_DIFF] + "\n[... diff cut]"


def same_code(old: str, new: str) -> bool:
    """Whether Python source ``new`` runs exactly what ``old`` runs: the same syntax tree
    (quotes, spacing, line breaks and comments aside); False where either does not parse."""
    try:
        return ast.dump(ast.parse(old)) == ast.dump(ast.parse(new))
    except (SyntaxError, ValueError):
        return False


def new_cell_id(tool_call_id: str) -> str:
    """The id asked for a cell the call ``tool_call_id`` inserts: the call's id, made a valid
    nbformat cell id. It ties the cell to the call that made it (the session tree and the
    notebook file name the same cell), and a replayed cassette gives the same cell ids as the
    recording did. The frontend adds a suffix if the notebook already has a cell with it."""
    cleaned = re.sub(r"[^A-Za-z0-9_-]", "-", tool_call_id).strip("-")[:_MAX_ID_BASE]
    return f"agent-{cleaned}" if cleaned else "agent-cell"


def _runs_inserted(args: dict[str, Any]) -> bool:
    """Whether an ``insert_cell`` call asks to run its code cell too."""
    return args.get("run") is True and (args.get("cell_type") or "code") == "code"


def _short(cell_id: str) -> str:
    return cell_id[:8]


@dataclass
class WriteTools:
    """The write tools of one kernel, and what they remember between calls of a run."""

    document: NotebookDocument
    history: ExecutionHistory
    waited_on: Callable[[], bool] = lambda: False
    """True while some cell awaits the agent's run (``NotebookAgent.wait``)."""
    takes_images: Callable[[], bool] = lambda: False
    """Whether the model in use takes images (a cell's plots are sent, else noted)."""
    anchor_cell_id: str | None = None
    """The next inserted cell lands below this one (the ``%%agent`` cell, then the run's last
    inserted cell); None: at the end of the notebook."""
    always_allowed: set[str] = field(default_factory=set)
    """Tools the user allowed for the rest of the session ("always allow")."""
    _approved: set[str] = field(default_factory=set)
    _notes: dict[str, str] = field(default_factory=dict)
    """Words an approved call's result starts with (how the user decided it)."""
    _run_number: int | None = None
    _proposals: Proposals = field(default_factory=Proposals)
    """What was proposed without a frontend."""

    # --- the run and its approvals ---------------------------------------------------------------

    def begin_run(self, run_number: int, agent_cell_id: str | None) -> None:
        """Run ``run_number`` (started by the ``%%agent`` cell ``agent_cell_id``) takes the
        model's turn: a new run inserts below its cell, a follow-up in the same run goes on
        below the cell it inserted last."""
        if run_number != self._run_number:
            self._run_number = run_number
            self.anchor_cell_id = agent_cell_id

    @property
    def run_number(self) -> int | None:
        """The run whose inserts :attr:`anchor_cell_id` places."""
        return self._run_number

    def needs_approval(self, tool_name: str) -> bool:
        """Whether a call must be approved: nothing to approve without a frontend (the tool
        only reports what it would have done), for a tool always allowed, or for a cell that
        cannot run now anyway (the deadlock rule: the tool says why)."""
        if tool_name == "run_cell" and self.waited_on():
            return False
        return self.document.connected and tool_name not in self.always_allowed

    def approve(self, tool_call_id: str, note: str = "") -> None:
        """The user allowed this call; ``note`` opens its result (e.g. how a review went)."""
        self._approved.add(tool_call_id)
        if note:
            self._notes[tool_call_id] = note

    @staticmethod
    def valid_args(tool_name: str, args: dict[str, Any]) -> dict[str, Any] | None:
        """``args`` as the tool would take them, None when they are not valid (the call then
        fails on its own, before anything asks the user)."""
        parameters = _PARAMETERS.get(tool_name)
        if parameters is None:
            return None
        try:
            return parameters.model_validate(args).model_dump()
        except ValueError:
            return None

    def allow_always(self, tool_name: str) -> None:
        self.always_allowed.add(tool_name)

    def _take_approval(self, tool_call_id: str, tool_name: str) -> bool:
        if tool_name in self.always_allowed:
            return True
        if tool_call_id in self._approved:
            self._approved.discard(tool_call_id)
            return True
        return False

    async def preview(
        self, tool_name: str, args: dict[str, Any], *, follows_insert: bool = False
    ) -> ApprovalPreview:
        """What the approval card shows for this call (raises ``DocumentError`` for a cell that
        is not in the notebook, ``NotebookNotConnected`` without a frontend).
        ``follows_insert``: an insert reviewed after another insert of the same reply, which
        lands below that one."""
        if tool_name == "insert_cell":
            cell_type = str(args.get("cell_type") or "code")
            where = "below the cell inserted before it" if follows_insert else None
            where = where or await self._anchor_words()
            verb = "Insert and run" if _runs_inserted(args) else "Insert"
            return {
                "title": f"{verb} a {cell_type} cell {where}",
                "language": "markdown" if cell_type == "markdown" else "python",
                "source": str(args.get("source", "")),
                "diff": "",
                "always": False,
            }
        cell = await self._cell(str(args.get("cell_id", "")))
        language = "markdown" if cell.cell_type == "markdown" else "python"
        label = self.describe_cell(cell)
        if tool_name == "edit_cell":
            new = str(args.get("source", ""))
            return {
                "title": f"Edit {label}",
                "language": language,
                "source": new,
                "diff": unified_diff(cell.source, new) or "(no change)",
                "always": False,
            }
        if tool_name == "delete_cell":
            return {
                "title": f"Delete {label}",
                "language": language,
                "source": cell.source,
                "diff": "",
                "always": False,
            }
        return {
            "title": f"Run {label}",
            "language": language,
            "source": cell.source,
            "diff": "",
            "always": True,
        }

    async def unchanged(self, tool_name: str, args: dict[str, Any]) -> str | None:
        """Why an ``edit_cell`` call is answered without asking the user: its source is the
        cell's own, or it only reformats a cell whose last run of that source failed (it
        would fail again the same way). None for any other call, or a cell not found."""
        if tool_name != "edit_cell":
            return None
        try:
            cell = await self._cell(str(args.get("cell_id", "")))
        except (DocumentError, NotebookNotConnected):
            return None  # the call itself reports it
        new = str(args.get("source", ""))
        label = self.describe_cell(cell)
        if new.rstrip() == cell.source.rstrip():
            return f"The {label} already has exactly this source; nothing was changed."
        if cell.cell_type != "code" or not same_code(cell.source, new):
            return None
        runs = (r for r in reversed(self.history.records()) if r.cell_id == cell.id)
        last = next(runs, None)
        if last is None or last.error is None or last.source != cell.source:
            return None
        error = f"{last.error.ename}: {last.error.evalue}"
        error = error if len(error) <= 200 else error[:199] + "…"
        return (
            f"This edit only reformats the {label}: the code it runs is the same, so it would "
            f"fail again with {error}. Nothing was changed; change what the code does."
        )

    async def _anchor_words(self) -> str:
        if self.anchor_cell_id is None:
            return "at the end of the notebook"
        cells = await self.document.cells()
        cell = next((c for c in cells if c.id == self.anchor_cell_id), None)
        if cell is None:
            return "at the end of the notebook"
        return f"below {self.describe_cell(cell)}"

    @staticmethod
    def describe_cell(cell: DocumentCell) -> str:
        count = f"In [{cell.execution_count}] " if cell.execution_count is not None else ""
        first = next((line for line in cell.source.splitlines() if line.strip()), "")
        first = first if len(first) <= 40 else first[:39] + "…"
        return f"{cell.cell_type} cell {count}({_short(cell.id)}: {first!r})"

    async def _cell(self, cell_id: str) -> DocumentCell:
        cells = await self.document.cells()
        cell = next((c for c in cells if c.id == cell_id), None)
        if cell is None:
            known = ", ".join(c.id for c in cells[:30]) or "none"
            raise DocumentError(f"There is no cell with id {cell_id!r} (cell ids: {known}).")
        return cell

    # --- the tools -------------------------------------------------------------------------------

    def tools(self) -> dict[str, AgentTool]:
        """The four write tools (the approval hook asks before each call)."""

        def make(
            name: str,
            description: str,
            parameters: type[BaseModel],
            body: _Body,
        ) -> AgentTool:
            async def execute(
                tool_call_id: str,
                params: dict[str, Any],
                signal: AbortSignal | None,
                _on_update: ToolUpdateCallback,
            ) -> AgentToolResult:
                return await self._guarded(name, tool_call_id, params, signal, body)

            return AgentTool(
                name=name,
                label=name.replace("_", " "),
                description=description,
                parameters=parameters,
                execute=execute,
                execution_mode="sequential",
            )

        return {
            "insert_cell": make(
                "insert_cell",
                "Insert a new cell into the open notebook, below the %%agent cell that started "
                "this run (or below the cell you inserted last). Returns the new cell's id. "
                "With run set to true it also runs the code cell and returns its result; "
                "otherwise use run_cell with the returned id. The user approves it first.",
                _InsertArgs,
                self._insert,
            ),
            "edit_cell": make(
                "edit_cell",
                "Replace the whole source of a cell of the open notebook (the user sees a diff "
                "and approves it first). It does not run the cell.",
                _EditArgs,
                self._edit,
            ),
            "delete_cell": make(
                "delete_cell",
                "Delete a cell of the open notebook (the user approves it first).",
                _CellArgs,
                self._delete,
            ),
            "run_cell": make(
                "run_cell",
                "Run a code cell of the open notebook through the kernel, like Shift+Enter, and "
                "return its result, error, printed output and images (the user approves it).",
                _CellArgs,
                self._run,
            ),
        }

    async def _guarded(
        self,
        name: str,
        tool_call_id: str,
        params: dict[str, Any],
        signal: AbortSignal | None,
        body: _Body,
    ) -> AgentToolResult:
        if not self.document.connected:
            return self._proposals.answer(name, params, run=_runs_inserted(params))
        if name == "run_cell" and self.waited_on():
            cell_id = str(params.get("cell_id", ""))
            words = deadlock_words(cell_id, queued=False)
            return text_result(words, {"action": "run", "cell_id": cell_id, "applied": False})
        if not self._take_approval(tool_call_id, name):
            return text_result(f"{name} was not approved by the user; nothing was changed.")
        note = self._notes.pop(tool_call_id, "")
        try:
            result = await body(tool_call_id, params, signal)
        except NotebookNotConnected as exc:
            return text_result(f"{exc} Nothing was changed.")
        except DocumentError as exc:
            return text_result(f"{note} The notebook refused: {exc} Nothing was changed.".strip())
        if note and result.content and isinstance(result.content[0], TextContent):
            first = result.content[0]
            result.content[0] = TextContent(text=f"{note}\n{first.text}")
        return result

    async def _insert(
        self, call_id: str, params: dict[str, Any], signal: AbortSignal | None
    ) -> AgentToolResult:
        source = str(params["source"])
        cell_type = cast(CellType, params.get("cell_type") or "code")
        cell_id, after, note = await self.place_cell(
            source, cell_type, new_cell_id(call_id), self.anchor_cell_id
        )
        self.anchor_cell_id = cell_id
        where = f"below cell {after}" if after is not None else "at the end of the notebook"
        language = "markdown" if cell_type == "markdown" else "python"
        inserted = f"Inserted {cell_type} cell {cell_id} {where}{note}."
        detail: dict[str, Any] = {
            "action": "insert",
            "applied": True,
            "cell_id": cell_id,
            "after_cell_id": after,
            "cell_type": cell_type,
            "source": source,
        }
        if cell_type == "code" and _runs_inserted(params):
            ran = await self._runner().run(cell_id, {"action": "run", "cell_id": cell_id}, signal)
            run_detail = dict((ran.details or {})["notebook"])
            for key in ("action", "cell_id", "source"):
                run_detail.pop(key, None)
            detail["run"] = run_detail
            first = ran.content[0] if ran.content else None
            words = first.text if isinstance(first, TextContent) else ""
            return AgentToolResult(
                content=[
                    TextContent(text=f"{inserted}\n{fence(source, language)}\n{words}"),
                    *ran.content[1:],  # the cell's images (or notes on them)
                ],
                details={"notebook": detail},
            )
        run_hint = (
            f"It has not run yet, so nobody has seen its output: call run_cell with cell_id "
            f'"{cell_id}" to run it and read its result.'
            if cell_type == "code"
            else "Markdown cells do not run."
        )
        return text_result(f"{inserted} {run_hint}\n" + fence(source, language), detail)

    async def place_cell(
        self, source: str, cell_type: CellType, cell_id: str | None, after: str | None
    ) -> tuple[str, str | None, str]:
        """Insert a cell below ``after`` (None: at the end), or at the end when that cell is
        gone, never at the user's cursor; ``cell_id`` is the id asked for (None: the
        frontend's). Returns the new cell's id, the cell it follows and a note on where it
        went when that is not where it was asked to go."""
        try:
            made = await self.document.insert_cell(
                source, after_cell_id=after, cell_type=cell_type, cell_id=cell_id
            )
        except DocumentError:
            if after is None:
                raise
            # the cell it should follow was deleted meanwhile: the end, never the cursor
            made = await self.document.insert_cell(
                source, after_cell_id=None, cell_type=cell_type, cell_id=cell_id
            )
            return made, None, " (the cell it should follow is gone, so it went to the end)"
        return made, after, ""

    async def _edit(
        self, _call: str, params: dict[str, Any], _signal: AbortSignal | None
    ) -> AgentToolResult:
        cell = await self._cell(str(params["cell_id"]))
        source = str(params["source"])
        await self.document.edit_cell(cell.id, source)
        return text_result(
            f"Edited cell {cell.id}. It has not run since the edit.",
            {
                "action": "edit",
                "applied": True,
                "cell_id": cell.id,
                "source": source,
                "diff": unified_diff(cell.source, source),
            },
        )

    async def _delete(
        self, _call: str, params: dict[str, Any], _signal: AbortSignal | None
    ) -> AgentToolResult:
        cell = await self._cell(str(params["cell_id"]))
        cells = await self.document.cells()
        ids = [c.id for c in cells]
        position = ids.index(cell.id) if cell.id in ids else 0
        await self.document.delete_cell(cell.id)
        if self.anchor_cell_id == cell.id:
            self.anchor_cell_id = None
        return text_result(
            f"Deleted {cell.cell_type} cell {cell.id}.",
            {
                "action": "delete",
                "applied": True,
                "cell_id": cell.id,
                "source": cell.source,
                # where it was, so that a restore can put it back there
                "cell_type": cell.cell_type,
                "after_cell_id": ids[position - 1] if position > 0 else None,
            },
        )

    async def _run(
        self, _call: str, params: dict[str, Any], signal: AbortSignal | None
    ) -> AgentToolResult:
        cell = await self._cell(str(params["cell_id"]))
        if cell.cell_type != "code":
            return text_result(f"Cell {cell.id} is a {cell.cell_type} cell; only code runs.")
        detail: dict[str, Any] = {"action": "run", "cell_id": cell.id, "source": cell.source}
        return await self._runner().run(cell.id, detail, signal)

    def _runner(self) -> CellRunner:
        # made for each run: waited_on and takes_images may be replaced after construction
        return CellRunner(self.document, self.history, self.waited_on, self.takes_images)
