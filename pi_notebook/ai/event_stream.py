"""``AssistantMessageEventStream``: an async iterator of events plus ``await result()``.

A producer pushes events; one consumer iterates. The backlog is a deque, so a consumer that falls
behind costs O(1) per event to catch up (pi's array ``shift()`` makes that quadratic). The
terminal ``done``/``error`` event resolves ``result()`` and is still delivered to the iterator.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from .events import AssistantMessageEvent
from .types import AssistantMessage

__all__ = ["AssistantMessageEventStream"]

_running_producers: set[asyncio.Task[None]] = set()
"""Strong references: a producer task must not be garbage-collected while it streams."""


class AssistantMessageEventStream:
    """The events of one assistant reply. Never raises once created: failures are ``error`` events.

    Either iterate it (``async for event in stream``) or ``await stream.result()``, or both.
    """

    __slots__ = (
        "_backlog",
        "_ended",
        "_final",
        "_producer",
        "_result_waiters",
        "_started",
        "_waiter",
    )

    def __init__(
        self, producer: Callable[[AssistantMessageEventStream], Awaitable[None]] | None = None
    ):
        self._backlog: deque[AssistantMessageEvent] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._result_waiters: list[asyncio.Future[AssistantMessage]] = []
        self._ended = False
        self._final: AssistantMessage | None = None
        self._producer = producer
        self._started = producer is None
        if producer is not None:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return  # started lazily by the first consumer
            self._start()

    # --- producer side ---------------------------------------------------------------------------

    def push(self, event: AssistantMessageEvent) -> None:
        """Append one event. Ignored after the stream completed."""
        if self._ended:
            return
        self._backlog.append(event)
        # The discriminator, not isinstance: pydantic's metaclass makes a failing isinstance
        # check a Python-level call, twice per pushed delta.
        if event.type == "done":
            self._complete(event.message)
        elif event.type == "error":
            self._complete(event.error)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def end(self, result: AssistantMessage | None = None) -> None:
        """Close the stream (without a terminal event, ``result`` becomes the final message)."""
        if not self._ended:
            self._complete(result)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def _complete(self, message: AssistantMessage | None) -> None:
        self._ended = True
        self._final = message
        for fut in self._result_waiters:
            if not fut.done():
                if message is None:
                    fut.set_exception(RuntimeError("stream ended without a final message"))
                else:
                    fut.set_result(message)
        self._result_waiters.clear()

    # --- consumer side ---------------------------------------------------------------------------

    def _start(self) -> None:
        if self._started:
            return
        self._started = True
        producer = self._producer
        assert producer is not None
        task = asyncio.get_running_loop().create_task(self._run_producer(producer))
        _running_producers.add(task)
        task.add_done_callback(_running_producers.discard)

    async def _run_producer(
        self, producer: Callable[[AssistantMessageEventStream], Awaitable[None]]
    ) -> None:
        try:
            await producer(self)
        finally:
            if not self._ended:
                self.end(None)

    def __aiter__(self) -> AssistantMessageEventStream:
        return self

    async def __anext__(self) -> AssistantMessageEvent:
        while True:
            if self._backlog:
                return self._backlog.popleft()
            if self._ended:
                raise StopAsyncIteration
            await self._wait()

    async def next_batch(self) -> deque[AssistantMessageEvent]:
        """Every event queued now, in order, waiting for one if none is; empty once the stream
        is over. The same events ``async for`` would give, without an await per event."""
        while not self._backlog:
            if self._ended:
                return deque()
            await self._wait()
        batch = self._backlog
        self._backlog = deque()
        return batch

    async def _wait(self) -> None:
        self._start()
        waiter = asyncio.get_running_loop().create_future()
        self._waiter = waiter
        await waiter

    async def result(self) -> AssistantMessage:
        """The final message (``done.message`` or ``error.error``)."""
        if self._ended:
            if self._final is None:
                raise RuntimeError("stream ended without a final message")
            return self._final
        self._start()
        fut: asyncio.Future[AssistantMessage] = asyncio.get_running_loop().create_future()
        self._result_waiters.append(fut)
        return await fut

    @property
    def done(self) -> bool:
        """True once the terminal event was pushed (or the stream was ended)."""
        return self._ended

    def __repr__(self) -> str:
        state = "done" if self._ended else "streaming"
        return f"<AssistantMessageEventStream {state}, {len(self._backlog)} queued>"

    @staticmethod
    def of(events: list[Any]) -> AssistantMessageEventStream:
        """A finished stream holding ``events`` (handy in tests and scripted stream functions)."""
        stream = AssistantMessageEventStream()
        for event in events:
            stream.push(event)
        stream.end()
        return stream
