"""The kernel agent's operation queue: runs, ``%fork``, ``%model`` and friends take effect one
after another in the order their cells ran, so "Run All" keeps notebook order."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["OperationQueue"]

T = TypeVar("T")


class OperationQueue:
    """One harness operation at a time, in the order they were queued."""

    def __init__(self) -> None:
        self._tail: asyncio.Future[Any] | None = None
        self._background: asyncio.Future[None] | None = None
        """Work that follows an operation off its path (the compaction a finished run called
        for): the next queued operation waits for it, :meth:`wait` does not."""
        self._inline: list[asyncio.Future[Any]] = []
        self._waiters = 0

    def enqueue(self, operation: Callable[[], Awaitable[T]]) -> asyncio.Future[T]:
        """Run ``operation`` after everything queued before it (errors don't block the queue)."""
        previous = self._tail

        async def step() -> T:
            if previous is not None:
                await asyncio.wait([previous])
            background = self._background
            if background is not None and not background.done():
                await asyncio.wait([background])  # one harness operation at a time
            return await operation()

        future = asyncio.ensure_future(step())
        self._tail = future
        return future

    async def wait(self) -> None:
        """Wait until everything queued so far is done (the background work excepted)."""
        self._waiters += 1  # a cell waits for the run: the run cannot ask to run cells now
        try:
            while self._tail is not None and not self._tail.done():
                shielded = asyncio.shield(self._tail)
                await asyncio.wait([shielded])
                if not shielded.cancelled():
                    shielded.exception()  # reported by its run (its view), not as unretrieved
        finally:
            self._waiters -= 1

    @property
    def waited_on(self) -> bool:
        """A cell is waiting in :meth:`wait`."""
        return self._waiters > 0

    def in_background(self, work: Coroutine[Any, Any, None]) -> None:
        """Start ``work`` now; the next queued operation waits for it."""
        self._background = asyncio.ensure_future(work)

    @property
    def background_running(self) -> bool:
        return self._background is not None and not self._background.done()

    @property
    def busy(self) -> bool:
        """Something is queued or running (the background work included)."""
        queued = self._tail is not None and not self._tail.done()
        return queued or self.background_running

    def run_inline(self, future: asyncio.Future[Any]) -> None:
        """Mark an operation that started with nothing queued before it: the cell that queued
        it waits for it (:meth:`settled`), as for a magic that does its work at once."""
        self._inline = [*(f for f in self._inline if not f.done()), future]

    async def settled(self) -> None:
        """Wait for the operations marked with :meth:`run_inline` (the input rewrite awaits
        this after ``%model`` and friends). An interrupt stops the waiting, not the operation."""
        while self._inline:
            future = self._inline.pop(0)
            await asyncio.wait([asyncio.shield(future)])
