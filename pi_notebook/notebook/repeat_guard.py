"""Keeps a model from making the same tool calls over and over in one run.

Small local models (the 1.5B coder models that run on a laptop) fall into loops, above all at
temperature 0: the same ``describe_variable`` or ``run_cell`` call turn after turn, or two calls
in turn (A, B, A, B), each result the same as the last, until someone presses Stop. The guard
keeps the run's calls (tool, arguments, and the result once it is known) and looks for a short
cycle at the end: the same call again and again, or a cycle of two or three calls whose
arguments and results repeat. Once a cycle has gone round twice, its next call is refused with a
nudge the model reads (what that call already gave, and to use it), which breaks most loops; a
model that keeps going round is stopped, its run ending as aborted with a notice in the run view.
A refused call that repeats one that succeeded says so (``answer_due``): the notebook then takes
the tools away for the rest of the run, so the model answers with the result it has.

The same call twice in a row counts whatever its results (``allowed`` of them run; only one when
it failed, since the same arguments fail the same way again); a longer
cycle counts only while its results repeat too, so running a cell again after editing it, or
re-reading something that changed, is never refused. Another run starts afresh.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RepeatGuard", "RepeatVerdict"]

_LONGEST_CYCLE = 3
_PREVIEW = 300


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


@dataclass(frozen=True, slots=True)
class RepeatVerdict:
    """What to do with a call: run it (``reason`` None), refuse it, or refuse it and stop."""

    reason: str | None = None
    stop: bool = False
    answer_due: bool = False
    """The refused call repeats one that succeeded: its result is already in the context."""


@dataclass
class _Call:
    name: str
    key: str
    result: str | None = None
    failed: bool = False


@dataclass
class RepeatGuard:
    allowed: int = 2
    """Identical calls in a row that go through (a longer cycle always goes round twice)."""
    stop_after: int = 5
    """The identical call in a row that stops the run (refused calls included); a longer cycle
    is stopped after as many refused calls."""
    _calls: list[_Call] = field(default_factory=list, repr=False)
    _by_id: dict[str, _Call] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not 1 <= self.allowed < self.stop_after:
            raise ValueError("need 1 <= allowed < stop_after")

    def begin_run(self) -> None:
        self._calls, self._by_id = [], {}

    def check(
        self, tool_name: str, arguments: dict[str, Any], call_id: str | None = None
    ) -> RepeatVerdict:
        """Count this call and say whether it may run (its result comes with :meth:`record`)."""
        key = tool_name + json.dumps(arguments, sort_keys=True, default=str)
        call = _Call(tool_name, key)
        verdict = self._verdict(call)
        if verdict.reason is not None:
            # A refused call stands for the result it would repeat: the cycle stays visible.
            call.result = self._last_result(key)
        elif call_id is not None:
            self._by_id[call_id] = call
        self._calls.append(call)
        return verdict

    def record(self, call_id: str, result: str, *, failed: bool = False) -> None:
        """The result of a call that ran (``failed``: an error result)."""
        call = self._by_id.pop(call_id, None)
        if call is not None:
            call.result, call.failed = result, failed

    def _last_result(self, key: str) -> str | None:
        return next((c.result for c in reversed(self._calls) if c.key == key), None)

    def _repeats(self, call: _Call, period: int) -> int:
        """How many calls at the end (this one included) repeat the call ``period`` before."""
        calls = [*self._calls, call]
        count = 0
        for index in range(len(calls) - 1, period - 1, -1):
            now, before = calls[index], calls[index - period]
            if now.key != before.key:
                break
            if (
                period > 1
                and now is not call
                and (now.result is None or now.result != before.result)
            ):
                break  # a longer cycle counts only results seen to repeat
            count += 1
        return count

    def _verdict(self, call: _Call) -> RepeatVerdict:
        streak = self._repeats(call, 1) + 1
        # a call that just failed fails again with the same arguments: refused at once
        if streak > self.allowed or (streak > 1 and self._calls[-1].failed):
            return self._same_call(call, streak)
        refusals = self.stop_after - self.allowed
        for period in range(2, _LONGEST_CYCLE + 1):
            repeats = self._repeats(call, period)
            # the cycle went round twice: this call would start its third round
            if repeats > period:
                cycle = [c.name for c in self._calls[-(period - 1) :]]
                stop = repeats - period >= refusals
                return self._cycle(call, cycle, stop)
        return RepeatVerdict()

    def _already(self, call: _Call) -> str:
        result = self._last_result(call.key)
        if result is None:
            return ""
        if len(result) > _PREVIEW:  # the end: where an error or a final value is
            result = "[...] " + result[-_PREVIEW:]
        return f" It gave: {result}"

    def _same_call(self, call: _Call, times: int) -> RepeatVerdict:
        if times >= self.stop_after:
            return RepeatVerdict(
                f"{call.name} was called {times} times in this run with the same arguments; "
                "the run was stopped.",
                stop=True,
            )
        return RepeatVerdict(
            f"{call.name} was already called {_times(times - 1)} in this run with these same "
            "arguments, and calling it again gives nothing new, so this call did not run."
            f"{self._already(call)}\nDo not call it again with the same arguments: change them "
            "(fix the code if it failed), use what you have, or answer the user.",
            answer_due=not self._calls[-1].failed,
        )

    def _cycle(self, call: _Call, others: list[str], stop: bool) -> RepeatVerdict:
        between = " and ".join(dict.fromkeys(others))
        if stop:
            return RepeatVerdict(
                f"{call.name} and {between} were called in turn again and again with the same "
                "arguments and results; the run was stopped.",
                stop=True,
            )
        return RepeatVerdict(
            f"You keep calling {call.name} and {between} in turn with the same arguments, and "
            "they keep giving the same results, so this call did not run."
            f"{self._already(call)}\nDo not call them again: use what you have (run code if "
            "you need more), or answer the user."
        )
