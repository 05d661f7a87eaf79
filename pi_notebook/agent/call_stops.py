"""Stopping one tool call while the run goes on (a tool card's own stop button).

Whoever runs the loop (``Agent``, ``AgentHarness``) hands one ``ToolCallStops`` to the loop
through ``AgentLoopConfig.tool_call_stops``. Tool execution then gives each call its own
``AbortSignal``, which fires when the run is aborted *or* when ``stop(tool_call_id)`` is called
for that call alone. A stopped call ends with an ``CANCELLED_TOOL_MESSAGE`` error result (the
model sees it) and the run carries on with the other calls and turns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from ..ai.abort import AbortController, AbortSignal

__all__ = ["CANCELLED_TOOL_MESSAGE", "ToolCallStops"]

CANCELLED_TOOL_MESSAGE: Final = "Tool call aborted by the user"
"""The error result of a call stopped on its own (the run was not aborted)."""


class _Call:
    __slots__ = ("controller", "detach", "stopped")

    def __init__(self, controller: AbortController, detach: Callable[[], None]) -> None:
        self.controller = controller
        self.detach = detach
        self.stopped = False


class ToolCallStops:
    """The calls that can be stopped one by one: those between preparation and their result."""

    __slots__ = ("_calls",)

    def __init__(self) -> None:
        self._calls: dict[str, _Call] = {}

    @property
    def running(self) -> frozenset[str]:
        """Ids of the calls that can be stopped now."""
        return frozenset(self._calls)

    def open(self, tool_call_id: str, run_signal: AbortSignal | None) -> AbortSignal:
        """The signal of a call about to be prepared: it follows ``run_signal`` and
        ``stop(tool_call_id)``."""
        self.close(tool_call_id)  # a repeated id: the newest call is the one a stop reaches
        controller = AbortController()
        detach: Callable[[], None] = _nothing
        if run_signal is not None:
            detach = run_signal.add_listener(lambda s: controller.abort(s.reason))
        self._calls[tool_call_id] = _Call(controller, detach)
        return controller.signal

    def close(self, tool_call_id: str, *, abort: bool = False) -> None:
        """The call has its result: it can no longer be stopped. ``abort=True`` (the call's
        task was cancelled) fires its signal first, so whatever the tool started stops too."""
        call = self._calls.pop(tool_call_id, None)
        if call is not None:
            call.detach()
            if abort:
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


def _nothing() -> None:
    return None
