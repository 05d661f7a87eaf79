"""``Run``: one ``%%agent`` cell's run, living as a task on the kernel's event loop.

The task is strongly referenced (asyncio keeps tasks only weakly); its outcome — including an
unexpected exception — is shown in the run's view, never lost. ``await run.wait()`` shields the
task, so a kernel interrupt stops the waiting, not the run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Literal

from ..ai.types import AssistantMessage

if TYPE_CHECKING:
    from .widgets.run_view import RunView

__all__ = ["Run", "RunState"]

RunState = Literal["queued", "running", "done", "aborted", "error"]

_live_tasks: set[asyncio.Task[None]] = set()


class Run:
    """A run started by ``%%agent`` (``prompt`` is the text after interpolation)."""

    def __init__(self, number: int, prompt: str, view: RunView) -> None:
        self.number = number
        self.prompt = prompt
        self.view = view
        self.state: RunState = "queued"
        self.result: AssistantMessage | None = None
        self.error: str | None = None
        self.pending: list[tuple[str, str]] = []
        """Steering and follow-up messages sent while the run waited in the queue."""
        self.cancelled = False
        self.budget: dict[str, float] = {}
        """This run's caps given on its ``%%agent`` line (``BudgetCaps`` fields)."""
        self.edit_cell: str | None = None
        """The cell the run is about ("Apply as edit" proposes a reply's code for it)."""
        self.cell_id: str | None = None
        """The cell the run was started from (None: not known)."""
        self._task: asyncio.Task[None] | None = None
        self._done = asyncio.get_running_loop().create_future()
        self._replying: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def take_pending(self) -> list[tuple[str, str]]:
        pending, self.pending = self.pending, []
        return pending

    def cancel_before_start(self) -> None:
        """``%abort`` while the run waits in the queue: it will not start."""
        self.cancelled = True
        self.pending.clear()

    def start(self, body: Callable[[Run], Awaitable[AssistantMessage | None]]) -> None:
        """Run ``body`` as a task on the running loop; record its outcome when it ends."""

        async def main() -> None:
            try:
                self.result = await body(self)
                if self.cancelled and self.result is None:
                    self.state = "aborted"
                    self.view.fail("Aborted before it started")
                elif self.result is not None and self.result.stop_reason == "aborted":
                    self.state = "aborted"
                elif self.result is not None and self.result.stop_reason == "error":
                    self.state = "error"
                    self.error = self.result.error_message
                else:
                    self.state = "done"
            except asyncio.CancelledError:
                self.state = "aborted"
                self.view.fail("The run was cancelled")
            except Exception as exc:  # shown in the view: a background task has nobody to raise to
                self.state = "error"
                self.error = str(exc) or type(exc).__name__
                self.view.fail(self.error)
                if getattr(exc, "code", None) == "session":  # AgentHarnessError: a write failed
                    self.view.note_unsaved(f"{self.error}; this turn is not in the file")
            finally:
                self.view.flush()
                self.reply_started()  # a run over before any reply keeps nobody waiting
                if not self._done.done():
                    self._done.set_result(None)

        task = asyncio.get_running_loop().create_task(main(), name=f"pi_notebook run {self.number}")
        self._task = task
        _live_tasks.add(task)
        task.add_done_callback(_live_tasks.discard)

    @property
    def finished(self) -> bool:
        return self._done.done()

    def reply_started(self) -> None:
        """The model began a reply of this run (its first streamed event came in)."""
        if not self._replying.done():
            self._replying.set_result(None)

    async def replying(self) -> None:
        """Return once the model has begun this run's reply, or the run is over. ``%steer``
        right after ``%%agent`` (as "Run All" sends it) reaches a run that has not asked the
        model yet and goes with the prompt; awaiting this first makes it arrive mid-reply, as
        when typed while the reply streams. Interrupting the kernel stops the waiting only."""
        await asyncio.shield(self._replying)

    async def wait(self) -> AssistantMessage | None:
        """The run's last assistant message, once it is over. Interrupting the kernel while
        waiting stops the waiting only; stop the run itself with ``%abort`` or the Stop button."""
        await asyncio.shield(self._done)
        return self.result

    def __repr__(self) -> str:
        return f"<Run {self.number} {self.state}: {self.prompt[:40]!r}>"
