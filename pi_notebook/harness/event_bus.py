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

__all__ = ["EventBus", "HarnessListener"]

_log = logging.getLogger(__name__)

HarnessListener: TypeAlias = Callable[..., Awaitable[None] | None]
"""``listener(event)`` or ``listener(event, signal)``, sync or async."""


class EventBus:
    """Delivers events to the listeners one at a time, in order.

    ``send`` awaits delivery. ``post`` (for the synchronous methods) queues an event for delivery
    as soon as possible: before the next ``send``, or by a drainer task. A listener may itself
    cause events (nested sends are delivered at once).

    A listener that raises does not fail the operation (a broken display must not end the run
    it displays) and the later listeners still get the event. Its first failure is logged with
    the traceback, once: a listener that fails on every streamed delta would otherwise write a
    traceback per token; its later failures are logged at debug level.
    """

    def __init__(self, current_signal: Callable[[], AbortSignal | None]) -> None:
        self._listeners: tuple[tuple[HarnessListener, bool], ...] = ()
        self._posted: deque[HarnessEvent] = deque()
        self._lock: asyncio.Lock | None = None
        self._owner: asyncio.Task[Any] | None = None
        self._drainer: asyncio.Task[None] | None = None
        self._current_signal = current_signal
        self._failed: set[int] = set()
        """``id`` of the listener entries whose failure was reported."""

    def subscribe(self, listener: HarnessListener) -> Callable[[], None]:
        entry = (listener, takes_signal(listener))
        self._listeners = (*self._listeners, entry)

        def unsubscribe() -> None:
            self._listeners = tuple(e for e in self._listeners if e is not entry)
            self._failed.discard(id(entry))

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
            await self._deliver(event, self._current_signal())

    async def _deliver(self, event: HarnessEvent, signal: AbortSignal | None) -> None:
        for entry in self._listeners:
            listener, with_signal = entry
            try:
                outcome = listener(event, signal) if with_signal else listener(event)
                if outcome is not None and inspect.isawaitable(outcome):
                    await outcome
            except Exception as exc:
                self._report(entry, event, exc)

    def _report(
        self, entry: tuple[HarnessListener, bool], event: HarnessEvent, exc: Exception
    ) -> None:
        """Log a listener's failure (being handled): with its traceback the first time."""
        listener = entry[0]
        name = getattr(listener, "__qualname__", None) or repr(listener)
        if id(entry) in self._failed:
            _log.debug("harness listener %s failed again on %s: %s", name, event.type, exc)
            return
        self._failed.add(id(entry))
        _log.error(
            "harness listener %s failed on %s: %s; the run goes on (later failures of this "
            "listener are logged at debug level)",
            name,
            event.type,
            describe_error(exc),
            exc_info=exc,
        )
