"""Ordered delivery of harness events to ``AgentHarness.subscribe`` listeners."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

from ..agent.listeners import takes_signal
from ..ai.abort import AbortSignal
from ..ai.producer import describe_error
from .harness_events import HarnessEvent
from .hooks import AgentHarnessError

__all__ = ["EventBus", "HarnessListener"]

_log = logging.getLogger(__name__)

HarnessListener: TypeAlias = Callable[..., Awaitable[None] | None]
"""``listener(event)`` or ``listener(event, signal)``, sync or async."""


class EventBus:
    """Delivers events to the listeners one at a time, in order.

    ``send`` awaits delivery and raises a listener's failure as ``AgentHarnessError("hook")``.
    ``post`` (for the synchronous methods) queues an event for delivery as soon as possible:
    before the next ``send``, or by a drainer task; a listener failing on a posted event is
    logged, as there is no caller to raise to. A listener may itself cause events (nested
    sends are delivered at once).
    """

    def __init__(self, current_signal: Callable[[], AbortSignal | None]) -> None:
        self._listeners: tuple[tuple[HarnessListener, bool], ...] = ()
        self._posted: deque[HarnessEvent] = deque()
        self._lock: asyncio.Lock | None = None
        self._owner: asyncio.Task[Any] | None = None
        self._drainer: asyncio.Task[None] | None = None
        self._current_signal = current_signal

    def subscribe(self, listener: HarnessListener) -> Callable[[], None]:
        entry = (listener, takes_signal(listener))
        self._listeners = (*self._listeners, entry)

        def unsubscribe() -> None:
            self._listeners = tuple(e for e in self._listeners if e is not entry)

        return unsubscribe

    def _get_lock(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    async def send(self, event: HarnessEvent, signal: AbortSignal | None = None) -> None:
        task = asyncio.current_task()
        if task is not None and self._owner is task:
            await self._deliver(event, signal)
            return
        async with self._get_lock():
            self._owner = task
            try:
                await self._drain_posted()
                await self._deliver(event, signal)
            finally:
                self._owner = None

    def post(self, event: HarnessEvent) -> None:
        self._posted.append(event)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # delivered by the next send or flush
        if self._drainer is None or self._drainer.done():
            self._drainer = loop.create_task(self.flush())

    async def flush(self) -> None:
        """Deliver every posted event."""
        task = asyncio.current_task()
        if task is not None and self._owner is task:
            await self._drain_posted()
            return
        async with self._get_lock():
            self._owner = task
            try:
                await self._drain_posted()
            finally:
                self._owner = None

    async def _drain_posted(self) -> None:
        while self._posted:
            event = self._posted.popleft()
            try:
                await self._deliver(event, self._current_signal())
            except AgentHarnessError:
                _log.exception("a harness listener failed on %s", event.type)

    async def _deliver(self, event: HarnessEvent, signal: AbortSignal | None) -> None:
        for listener, with_signal in self._listeners:
            try:
                outcome = listener(event, signal) if with_signal else listener(event)
                if outcome is not None and inspect.isawaitable(outcome):
                    await outcome
            except Exception as exc:
                raise AgentHarnessError(
                    "hook", f"A harness listener failed on {event.type}: {describe_error(exc)}"
                ) from exc
