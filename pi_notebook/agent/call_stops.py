"""Stopping one tool call while the run goes on (a tool card's own stop button).

Whoever runs the loop (``Agent``, ``AgentHarness``) hands one ``ToolCallStops`` to the loop
through ``AgentLoopConfig.tool_call_stops``. Tool execution then gives each call its own
``AbortSignal``, which fires when the run is aborted *or* when ``stop(tool_call_id)`` is called
for that call alone. A stopped call ends with an ``CANCELLED_TOOL_MESSAGE`` error result (the
model sees it) and the run carries on with the other calls and turns.
"""

from __future__ import annotations

from typing import Final

from ..ai.abort import AbortController, AbortSignal

__all__ = ["CANCELLED_TOOL_MESSAGE", "ToolCallStops"]

CANCELLED_TOOL_MESSAGE: Final = "Tool call aborted by the user"
"""The error result of a call stopped on its own (the run was not aborted)."""


class _Call:
    __slots__ = ("controller", "run_signal", "stopped")

    def __init__(self, controller: AbortController, run_signal: AbortSignal | None) -> None:
        self.controller = controller
        self.run_signal = run_signal
        self.stopped = False


class ToolCallStops:
    """The calls that can be stopped one by one: those between preparation and their result.

    One listener per run signal fans an abort out to that run's open calls (a listener per call
    would make a batch of n parallel calls cost n² to detach)."""

    __slots__ = ("_calls", "_watched")

    def __init__(self) -> None:
        self._calls: dict[str, _Call] = {}
        self._watched: AbortSignal | None = None

    @property
    def running(self) -> frozenset[str]:
        """Ids of the calls that can be stopped now."""
        return frozenset(self._calls)

    def open(self, tool_call_id: str, run_signal: AbortSignal | None) -> AbortSignal:
        """The signal of a call about to be prepared: it follows ``run_signal`` and
        ``stop(tool_call_id)``."""
        self._calls.pop(tool_call_id, None)  # a repeated id: a stop reaches the newest call
        controller = AbortController()
        if run_signal is not None:
            if run_signal.aborted:
                controller.abort(run_signal.reason)
            elif run_signal is not self._watched:
                self._watched = run_signal
                run_signal.add_listener(self._run_aborted)
        self._calls[tool_call_id] = _Call(controller, run_signal)
        return controller.signal

    def _run_aborted(self, run_signal: AbortSignal) -> None:
        for call in list(self._calls.values()):
            if call.run_signal is run_signal:
                call.controller.abort(run_signal.reason)

    def close(self, tool_call_id: str, *, abort: bool = False) -> None:
        """The call has its result: it can no longer be stopped. ``abort=True`` (the call's
        task was cancelled) fires its signal first, so whatever the tool started stops too."""
        call = self._calls.pop(tool_call_id, None)
        if call is not None and abort:
            call.controller.abort(CANCELLED_TOOL_MESSAGE)

    def stop(self, tool_call_id: str) -> bool:
        """Abort one call's signal; ``False`` when no such call is open (ended, never ran)."""
        call = self._calls.get(tool_call_id)
        if call is None or call.controller.signal.aborted:
            return False
        call.stopped = True
        call.controller.abort(CANCELLED_TOOL_MESSAGE)
        return True

    def stopped(self, tool_call_id: str) -> bool:
        """Whether ``stop`` reached this (still open) call."""
        call = self._calls.get(tool_call_id)
        return call is not None and call.stopped
