"""The summary of what ran in the kernel since the agent's previous turn, put into the session
right before each prompt (``%agent_context on|off``; ``PI_NOTEBOOK_CONTEXT=off`` starts it off).

What the summary says is :func:`.workspace.summary.summarize_changes`'s; this module keeps the
mark where the next summary starts and writes it as a ``custom_message`` entry (the model sees it,
``%tree`` shows it).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..harness import Session
    from .workspace.document import NotebookDocument
    from .workspace.history import ExecutionHistory, ExecutionRecord

__all__ = ["ChangeFeed", "Changes", "kernel_count"]

Changes = tuple["list[ExecutionRecord]", int, int]
"""The records since the previous turn, and the history marks they lie between."""


def kernel_count(history: ExecutionHistory, cell_id: str | None) -> int | None:
    """The execution count the kernel gave cell ``cell_id`` last (running or finished)."""
    if cell_id is None:
        return None
    running = history.running
    if running is not None and running.cell_id == cell_id:
        return running.execution_count
    finished = (r for r in reversed(history.records()) if r.cell_id == cell_id)
    return next((r.execution_count for r in finished), None)


def _enabled_by_env() -> bool:
    setting = os.environ.get("PI_NOTEBOOK_CONTEXT", "on").strip().lower()
    return setting not in ("off", "0", "false", "no")


class ChangeFeed:
    """The change summary of ``history`` for the notebook in ``document``; ``takes_images``
    says whether the plots go as images or as a one-line note each."""

    def __init__(
        self,
        history: ExecutionHistory,
        document: NotebookDocument,
        takes_images: Callable[[], bool],
    ) -> None:
        self._history = history
        self._document = document
        self._takes_images = takes_images
        self.enabled = _enabled_by_env()
        """Send the summary before each run."""
        self._mark = 0

    def take(self) -> Changes | None:
        """The records since the agent's previous turn (None when the summary is off); the
        next turn's summary starts after this cell."""
        since, until = self._mark, self._history.mark
        self._mark = until
        if not self.enabled:
            return None
        return self._history.records(since=since), since, until

    async def append(self, session: Session, changes: Changes | None, anchor: str | None) -> None:
        """Put the summary of ``changes`` into ``session`` right before the prompt; ``anchor``:
        the cell the run was started from."""
        if changes is None:
            return
        records, since, until = changes
        document = None
        if self._document.connected:
            try:
                document = await self._document.cells()
            except Exception:  # the frontend went away: the kernel's records still stand
                document = None
        from ..harness.session import SessionWriteError
        from .workspace.summary import CUSTOM_TYPE, summarize_changes

        summary = summarize_changes(
            records,
            since=since,
            until=until,
            document=document,
            anchor=anchor,
            anchor_count=kernel_count(self._history, anchor),
        )
        if summary is None:
            return
        from ..ai.types import TextContent
        from .workspace.images import record_images

        plots = await asyncio.to_thread(record_images, summary.shown, self._takes_images())
        content = [TextContent(text=summary.text), *plots] if plots else summary.text
        # A failed write keeps it in memory (``unsaved_entries``): the run goes on and its view
        # says what is not saved.
        with contextlib.suppress(SessionWriteError):
            session.append_custom_message(
                CUSTOM_TYPE, content, display=True, details=summary.details
            )
