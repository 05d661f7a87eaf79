"""Keeps a model from calling the same tool with the same arguments over and over in one run.

Small local models (the 1.5B coder models that run on a laptop) fall into loops, above all at
temperature 0: the same ``describe_variable`` or ``run_cell`` call turn after turn, each result
the same as the last, until someone presses Stop. The guard counts identical calls (same tool,
same arguments) in a row within a run. Up to ``allowed`` of them run; later ones are refused with
a reason the model reads ("already called N times… answer the user"), which breaks most loops; a
model that still repeats the call ``stop_after`` times is stopped, its run ending as aborted with
a notice in the run view. Any other call in between starts the count again, so running a cell
again after editing it is never refused; so does another run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RepeatGuard", "RepeatVerdict"]


@dataclass(frozen=True, slots=True)
class RepeatVerdict:
    """What to do with a call: run it (``reason`` None), refuse it, or refuse it and stop."""

    reason: str | None = None
    stop: bool = False


@dataclass
class RepeatGuard:
    allowed: int = 2
    """Identical calls in a row that go through."""
    stop_after: int = 5
    """The identical call in a row that stops the run (refused calls included)."""
    _last: tuple[str, str] | None = field(default=None, repr=False)
    _streak: int = field(default=0, repr=False)

    def __post_init__(self) -> None:
        if not 1 <= self.allowed < self.stop_after:
            raise ValueError("need 1 <= allowed < stop_after")

    def begin_run(self) -> None:
        self._last, self._streak = None, 0

    def check(self, tool_name: str, arguments: dict[str, Any]) -> RepeatVerdict:
        """Count this call and say whether it may run."""
        key = (tool_name, json.dumps(arguments, sort_keys=True, default=str))
        self._streak = self._streak + 1 if key == self._last else 1
        self._last = key
        times = self._streak
        if times <= self.allowed:
            return RepeatVerdict()
        before = times - 1
        if times >= self.stop_after:
            return RepeatVerdict(
                f"{tool_name} was called {times} times in this run with the same arguments; "
                "the run was stopped.",
                stop=True,
            )
        return RepeatVerdict(
            f"{tool_name} was already called {before} times in this run with these same "
            "arguments, and calling it again gives nothing new, so this call did not run. "
            "Do not call it again: answer the user with what you have."
        )
