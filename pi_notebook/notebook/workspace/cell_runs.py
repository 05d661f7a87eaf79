"""Running a cell for the agent (``run_cell``, ``insert_cell`` with ``run``): the frontend
executes it the kernel's normal way, and the run waits for its record in the kernel's execution
history, or says why it cannot (the deadlock rule: a cell waiting for this run keeps the kernel
busy), then turns the record into the tool result: its text, error and images."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...agent.tools import AgentToolResult
from ...ai.abort import AbortSignal
from ...ai.types import ImageContent, TextContent
from .document import DocumentError, NotebookDocument, NotebookNotConnected
from .history import CellImage, ExecutionHistory, ExecutionRecord, bundle_image
from .images import model_images_async
from .write_results import bounded, text_result

__all__ = ["MAX_RESULT_IMAGES", "RUN_POLL_SECONDS", "CellRunner", "deadlock_words", "record_words"]

MAX_RESULT_IMAGES = 3
"""Images of a cell's outputs sent back to the model with ``run_cell``'s result."""
RUN_POLL_SECONDS = 0.2
"""How often a run waiting for its cell checks whether a cell now waits for the run."""


@dataclass
class CellRunner:
    """Runs code cells of one notebook for the agent's tools."""

    document: NotebookDocument
    history: ExecutionHistory
    waited_on: Callable[[], bool]
    """True while some cell awaits the agent's run (``NotebookAgent.wait``)."""
    takes_images: Callable[[], bool]
    """Whether the model in use takes images (a cell's plots are sent, else noted)."""

    async def run(
        self, cell_id: str, detail: dict[str, Any], signal: AbortSignal | None
    ) -> AgentToolResult:
        """Run the code cell ``cell_id`` through the frontend and wait for its record (or
        say why it cannot end now); ``detail`` goes into the result's details."""
        mark = self.history.mark
        await self.document.execute_cell(cell_id)
        waiting = asyncio.ensure_future(self.history.wait_for(cell_id, started_after=mark))
        try:
            while not waiting.done():
                await asyncio.wait([waiting], timeout=RUN_POLL_SECONDS)
                if waiting.done():
                    break
                if self.waited_on():
                    if not self._started(cell_id, mark):
                        words = deadlock_words(cell_id, queued=True)
                        return text_result(words, {**detail, "applied": False, "queued": True})
                    # the cell itself waits for this run (it awaits pi_notebook.current().wait()):
                    # it can only end after the run, so waiting for it would never end
                    return text_result(
                        f"Cell {cell_id} started and is waiting for this agent run to finish, "
                        "so it cannot end while you wait for it. It will finish after this run "
                        "ends. Do not run it again; answer the user now.",
                        {**detail, "applied": True, "waits_for_run": True},
                    )
                if signal is not None and signal.aborted:
                    return text_result(
                        f"Stopped waiting for cell {cell_id}: the run was stopped. The cell "
                        "may still be running.",
                        {**detail, "applied": True},
                    )
            record = waiting.result()
        finally:
            if not waiting.done():
                waiting.cancel()
        images = await self._images(cell_id)
        text = record_words(record)
        return AgentToolResult(
            content=[TextContent(text=text), *images],
            is_error=record.status == "error",  # a failed cell is a failed call: fix and rerun
            details={
                "notebook": {
                    **detail,
                    "applied": True,
                    "execution_count": record.execution_count,
                    "status": record.status,
                }
            },
        )

    def _started(self, cell_id: str, mark: int) -> bool:
        running = self.history.running
        return running is not None and running.cell_id == cell_id and running.index >= mark

    async def _images(self, cell_id: str) -> list[TextContent | ImageContent]:
        """The images among the cell's outputs, as the notebook shows them: for the model,
        downscaled, or a note each when it does not take images."""
        try:
            outputs = await self.document.cell_outputs(cell_id)
        except (NotebookNotConnected, DocumentError):
            return []
        images: list[CellImage] = []
        for output in outputs:
            data = output.get("data")
            image = bundle_image(data) if isinstance(data, dict) else None
            if image is not None:
                images.append(image)
        return await model_images_async(images, self.takes_images(), limit=MAX_RESULT_IMAGES)


def deadlock_words(cell_id: str, *, queued: bool) -> str:
    why = (
        "a cell is waiting for this agent run to finish (%%agent --wait, or "
        "await pi_notebook.current().wait(), perhaps queued by Run All), and the kernel "
        "runs one cell at a time"
    )
    if queued:
        return (
            f"Cell {cell_id} could not run yet: {why}. It is queued and will run after "
            "that cell ends, so its result is not available in this run. Tell the user; "
            "do not ask to run it again."
        )
    return (
        f"Cell {cell_id} was not run: {why}, so it could not start before this run ends. "
        "Tell the user to run it (or to start the agent without --wait)."
    )


def record_words(record: ExecutionRecord) -> str:
    count = f"In [{record.execution_count}]" if record.execution_count is not None else "It"
    if record.status == "interrupted":
        lines = [f"{count} was interrupted (the user stopped the kernel) before it finished."]
    elif record.status == "error" and record.error is not None:
        lines = [f"{count} failed with {record.error.ename}: {record.error.evalue}"]
        if record.error.traceback:
            lines.append(record.error.traceback)
    else:
        lines = [f"{count} ran without error."]
    for output in record.outputs:
        lines.append(f"[{output.kind}]\n{output.text}")
    if record.omitted_outputs:
        lines.append(f"[... {record.omitted_outputs} more outputs]")
    if record.result is not None:
        lines.append(f"Out[{record.execution_count}]:\n{record.result}")
    return bounded("\n".join(lines))
