"""One operation at a time: which one runs (the phase), its abort controller, and when it has
ended."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Literal, TypeAlias

from ..ai.abort import AbortController, AbortSignal
from .event_bus import EventBus
from .harness_events import AbortEvent
from .hooks import AgentHarnessError
from .queues import AbortResult
from .session_writes import SessionWriter

__all__ = ["HarnessPhase", "Operations"]

_log = logging.getLogger(__name__)

HarnessPhase: TypeAlias = Literal["idle", "turn", "compaction", "branch_summary"]


class Operations:
    """The harness's operations: ``scope(phase)`` runs one (``busy`` when another runs), and
    at its end writes what waits for a save point and tells of an abort."""

    def __init__(self, writer: SessionWriter, events: EventBus) -> None:
        self._writer = writer
        self._events = events
        self.phase: HarnessPhase = "idle"
        self.controller: AbortController | None = None
        self._done: asyncio.Future[None] | None = None
        self._pending_abort: AbortResult | None = None

    @property
    def signal(self) -> AbortSignal | None:
        return None if self.controller is None else self.controller.signal

    @asynccontextmanager
    async def scope(
        self, phase: HarnessPhase, on_end: Callable[[], None]
    ) -> AsyncIterator[AbortController]:
        """Run an operation as ``phase``; ``on_end`` is called as it ends, before the harness
        is idle again."""
        if self.phase != "idle":
            raise AgentHarnessError("busy", f"AgentHarness is busy ({self.phase})")
        self.phase = phase
        controller = self.controller = AbortController()
        done = self._done = asyncio.get_running_loop().create_future()
        try:
            yield controller
        except asyncio.CancelledError:
            controller.abort()  # the caller gave up: stop the provider and the tools too
            raise
        finally:
            try:
                await self._writer.flush()
            except AgentHarnessError:
                _log.exception("pending session writes could not be flushed")
            self.phase = "idle"
            self.controller = None
            self._done = None
            on_end()
            aborted, self._pending_abort = self._pending_abort, None
            if aborted is not None:
                self._events.post(
                    AbortEvent(
                        cleared_steer=aborted.cleared_steer,
                        cleared_follow_up=aborted.cleared_follow_up,
                    )
                )
            done.set_result(None)

    def enter_compaction(self) -> Callable[[], None]:
        """Show an automatic compaction inside another operation as the ``compaction`` phase;
        returns how to go back."""
        phase, self.phase = self.phase, "compaction"

        def leave() -> None:
            self.phase = phase

        return leave

    async def wait_for_idle(self) -> None:
        while self._done is not None:
            await asyncio.shield(self._done)
        await self._events.flush()

    def abort(self, cleared: AbortResult) -> None:
        """Abort what runs; the ``abort`` event telling of ``cleared`` follows its end (at once
        when nothing runs)."""
        if self.controller is not None:
            self._pending_abort = cleared
            self.controller.abort()
        else:
            self._events.post(
                AbortEvent(
                    cleared_steer=cleared.cleared_steer, cleared_follow_up=cleared.cleared_follow_up
                )
            )
