"""Ordered delivery of harness events to ``AgentHarness.subscribe`` listeners."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from typing import Any, TypeAlias

from ..agent.listeners import Listener, Listeners
from ..ai.abort import AbortSignal
from .harness_events import HarnessEvent

__all__ = ["EventBus", "HarnessListener"]

_log = logging.getLogger(__name__)

HarnessListener: TypeAlias = Listener
"""``listener(event)`` or ``listener(event, signal)``, sync or async."""


class EventBus:
    """Delivers events to the listeners one at a time, in order.

    ``send`` awaits delivery. ``post`` (for the synchronous methods) queues an event for delivery
    as soon as possible: before the next ``send``, or by a drainer task. A listener may itself
    cause events (nested sends are delivered at once).

    A listener that raises does not fail the operation and the later listeners still get the
    event (``agent.listeners``: its first failure is logged with the traceback, later ones at
    debug level).
    """

    def __init__(self, current_signal: Callable[[], AbortSignal | None]) -> None:
        self._listeners = Listeners("harness", _log)
        self._posted: deque[HarnessEvent] = deque()
        self._lock: asyncio.Lock | None = None
        self._owner: asyncio.Task[Any] | None = None
        self._drainer: asyncio.Task[None] | None = None
        self._current_signal = current_signal

    def subscribe(self, listener: HarnessListener) -> Callable[[], None]:
        return self._listeners.subscribe(listener)

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
            await self._deliver(event, self._current_signal())

    async def _deliver(self, event: HarnessEvent, signal: AbortSignal | None) -> None:
        pending = self._listeners.deliver(event, signal)
        if pending is not None:
            await pending
