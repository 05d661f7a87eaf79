"""``%checkpoint on|off|status``: the switch of the namespace's checkpoints.

%checkpoint            the same as status
%checkpoint status     on or off, how many, their size and caps, the last one and what it
                       skipped (and why)
%checkpoint on|off     take checkpoints at each run's start and after each cell the agent
                       runs, or stop (recorded in the session: a reopened notebook keeps it)
"""

from __future__ import annotations

import re
import shlex

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class, no_var_expand

from .base import AgentMagics

__all__ = ["CheckpointMagics"]

USAGE = "Usage: %checkpoint [on [--max-size SIZE] [--max-total SIZE] | off | status]"
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """``500MB``, ``2G``, ``1.5GiB``, ``4096`` (bytes) → bytes; ValueError otherwise."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a size (such as 500MB or 2GB)")
    size = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if size <= 0:
        raise ValueError(f"{text!r}: a size must be more than 0")
    return size


@magics_class
class CheckpointMagics(AgentMagics):
    """``%checkpoint``."""

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
        action = words[0].lower() if words else "status"
        if action not in ("on", "off", "status"):
            raise UsageError(f"{words[0]!r} is not on, off or status. {USAGE}")
        caps = _caps(words[1:]) if action == "on" else {}
        if action != "on" and len(words) > 1:
            raise UsageError(f"%checkpoint {action} takes nothing more. {USAGE}")
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
                checkpoints.set_enabled(on, **caps)

            self.pi.enqueue(record)
        else:
            checkpoints.set_enabled(on, **caps)
        where = checkpoints.store.root.name
        limits = ""
        if on:
            from ..checkpoints.writer import format_size

            size = caps.get("max_size") or checkpoints.max_size
            total = caps.get("max_total") or checkpoints.max_total
            limits = f"; caps {format_size(size)} each, {format_size(total)} in all"
        print(f"checkpoints: {action} ({where}/ beside the session file{limits})")


def _caps(words: list[str]) -> dict[str, int]:
    """``--max-size SIZE --max-total SIZE`` (either, in any order) → keyword arguments."""
    caps: dict[str, int] = {}
    rest = list(words)
    while rest:
        flag = rest.pop(0)
        key = {"--max-size": "max_size", "--max-total": "max_total"}.get(flag)
        if key is None or not rest:
            what = f"{flag} needs a size" if key else f"unknown option {flag!r}"
            raise UsageError(f"{what}. {USAGE}")
        try:
            caps[key] = parse_size(rest.pop(0))
        except ValueError as exc:
            raise UsageError(f"{exc}. {USAGE}") from None
    return caps
