"""``%checkpoint on|off|status``: the switch of the namespace's checkpoints.

%checkpoint            the same as status
%checkpoint status     on or off, how many, their size and caps, the last one and what it
                       skipped (and why)
%checkpoint on|off     take checkpoints at each run's start and after each cell the agent
                       runs, or stop (recorded in the session: a reopened notebook keeps it)
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class, no_var_expand

if TYPE_CHECKING:
    from .kernel_agent import NotebookAgent

__all__ = ["CheckpointMagics"]

USAGE = "Usage: %checkpoint [on|off|status]"


@magics_class
class CheckpointMagics(Magics):
    """``%checkpoint``."""

    def __init__(self, shell: Any, agent: NotebookAgent) -> None:
        super().__init__(shell)
        self.pi = agent

    @no_var_expand
    @line_magic
    def checkpoint(self, line: str) -> None:
        """%checkpoint [on|off|status]: record the notebook's variables when an %%agent run
        starts and after each cell the agent runs (beside the session file, in
        <notebook>.pi.ckpt/), or stop; status shows how many there are, their size, the caps
        and what the last one skipped. The switch is stored in the session."""
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"{exc}. {USAGE}") from None
        if len(words) > 1 or (words and words[0].lower() not in ("on", "off", "status")):
            raise UsageError(f"{line.strip()!r} is not on, off or status. {USAGE}")
        action = words[0].lower() if words else "status"
        if self.pi.read_only is not None and action != "status":
            raise UsageError("This session is open read-only: %checkpoint on|off cannot record")
        checkpoints = self.pi.checkpoints
        if action == "status":
            print(checkpoints.status())
            return
        on = action == "on"
        if self.pi.busy:  # the entry goes in after what is queued; the switch holds at once
            checkpoints.switch(on)

            async def record() -> None:
                checkpoints.set_enabled(on)

            self.pi.enqueue(record)
        else:
            checkpoints.set_enabled(on)
        where = checkpoints.store.root.name
        print(f"checkpoints: {action} ({where}/ beside the session file)")
