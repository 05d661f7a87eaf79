"""``AbortController`` / ``AbortSignal``: cooperative cancellation, as in the web platform.

A signal can be checked (``.aborted``), listened to (``.add_listener``) or awaited (``.wait()``).
Listeners run synchronously in ``abort()``; one that raises is reported and the rest still run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

__all__ = ["AbortController", "AbortError", "AbortSignal"]

_log = logging.getLogger(__name__)


class AbortError(Exception):
    """Raised by code that gives up because its signal was aborted."""

    def __init__(self, message: str = "Request was aborted") -> None:
        super().__init__(message)


class AbortSignal:
    __slots__ = ("_aborted", "_events", "_listeners", "_reason")

    def __init__(self) -> None:
        self._aborted = False
        self._reason: Any = None
        self._listeners: list[Callable[[AbortSignal], Any]] = []
        self._events: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    @property
    def aborted(self) -> bool:
        return self._aborted

    @property
    def reason(self) -> Any:
        return self._reason

    def add_listener(self, listener: Callable[[AbortSignal], Any]) -> Callable[[], None]:
        """Call ``listener(signal)`` on abort (at once if already aborted); returns a remover."""
        if self._aborted:
            listener(self)
            return lambda: None
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    async def wait(self) -> None:
        """Return once the signal is aborted."""
        if self._aborted:
            return
        event = asyncio.Event()
        entry = (asyncio.get_running_loop(), event)
        self._events.append(entry)
        try:
            await event.wait()
        finally:
            if entry in self._events:
                self._events.remove(entry)

    def _fire(self, reason: Any) -> None:
        if self._aborted:
            return
        self._aborted = True
        self._reason = reason
        listeners, self._listeners = self._listeners, []
        for listener in listeners:
            try:
                listener(self)
            except Exception:
                _log.exception("abort listener failed")
        for loop, event in self._events:
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is loop:
                event.set()
            else:
                loop.call_soon_threadsafe(event.set)

    def __repr__(self) -> str:
        return f"<AbortSignal aborted={self._aborted}>"


class AbortController:
    """Owns one ``AbortSignal``; ``abort()`` fires it (idempotent, safe from any thread's loop)."""

    __slots__ = ("signal",)

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: Any = None) -> None:
        self.signal._fire(reason)
