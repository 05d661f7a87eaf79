"""``AssistantMessageEventStream``: an async iterator of events plus ``await result()``.

A producer pushes events; one consumer iterates. The backlog is a deque, so a consumer that falls
behind costs O(1) per event to catch up (pi's array ``shift()`` makes that quadratic). The
terminal ``done``/``error`` event resolves ``result()`` and is still delivered to the iterator.

Consecutive deltas into one block wait in the backlog as one ``DeltaRun`` (the block's chunk list
and a range of chunk counts); each delta's event object is built when the consumer takes it. A
queued delta then costs no GC-tracked object: a backlog of thousands of event objects would
survive young collections and drive full GC passes (``bench.agent_loop_bench`` text_100k). The
consumer sees the same events, in the same order.
"""

from __future__ import annotations

import asyncio
import types
from collections import deque
from collections.abc import Awaitable, Callable, Generator, Iterator
from itertools import chain
from typing import Any, TypeAlias

from .events import (
    AssistantMessageEvent,
    ChunkedPartialSource,
    delta_events,
    delta_fields_set,
    partial_event,
)
from .types import AssistantMessage

__all__ = ["AssistantMessageEventStream", "DeltaRun", "EventBatch"]


class DeltaRun:
    """Queued deltas ``first..last`` (chunk counts) into one block: event ``n`` is
    ``cls(type=kind, content_index=index, delta=chunks[n - 1])`` whose partial is
    ``source.materialize_at(n)``. The producer only appends to ``chunks``.

    ``live`` while the run is the last thing queued and the consumer has not taken it: the next
    delta into the same block and snapshot may then just raise ``last`` (``MessageBuilder`` does,
    without a call into the stream). The stream clears it when anything else is queued, the
    backlog is handed over, the run is taken or the stream ends."""

    __slots__ = ("chunks", "cls", "fields_set", "first", "index", "kind", "last", "live", "source")

    def __init__(
        self,
        cls: type[Any],
        kind: str,
        index: int,
        source: ChunkedPartialSource,
        chunks: list[str],
    ) -> None:
        self.cls = cls
        self.kind = kind
        self.index = index
        self.source = source
        self.chunks = chunks
        self.first = self.last = len(chunks)
        self.live = True
        self.fields_set = delta_fields_set(cls)
        """The ``__pydantic_fields_set__`` its events share (see ``partial_event``)."""

    def event(self, count: int) -> Any:
        """The event of the delta that brought the block to ``count`` chunks."""
        fields = {"type": self.kind, "content_index": self.index, "delta": self.chunks[count - 1]}
        return partial_event(self.cls, fields, self.source, count)

    def events(self, first: int | None = None) -> Iterator[Any]:
        """Its events, from chunk count ``first`` (default: all of them)."""
        start = self.first if first is None else first
        return delta_events(
            self.cls, self.kind, self.index, self.source, self.chunks, start, self.last
        )


_Queued: TypeAlias = "AssistantMessageEvent | DeltaRun"


class _Backlog(deque[_Queued]):
    """The queue of a stream: events and delta runs. Iterating it gives the events."""

    __slots__ = ()

    def __iter__(self) -> Iterator[AssistantMessageEvent]:
        # chain, not ``yield from``: a run's events come straight from its generator
        return chain.from_iterable(
            item.events() if type(item) is DeltaRun else (item,) for item in deque.__iter__(self)
        )


class EventBatch:
    """Events handed over at once by ``next_batch``: iterate it for the events in order;
    ``len()`` counts them."""

    __slots__ = ("_items",)

    def __init__(self, items: _Backlog) -> None:
        self._items = items

    def __iter__(self) -> Iterator[AssistantMessageEvent]:
        return iter(self._items)

    def queued(self) -> Iterator[AssistantMessageEvent | DeltaRun]:
        """What iterating gives, with each run of deltas as its ``DeltaRun`` (whose events are
        not built yet: ``DeltaRun.events``). For a consumer that handles a run in one go."""
        return deque.__iter__(self._items)

    def __len__(self) -> int:
        return sum(
            item.last - item.first + 1 if type(item) is DeltaRun else 1
            for item in deque.__iter__(self._items)
        )

    def __bool__(self) -> bool:
        return bool(self._items)

    def __repr__(self) -> str:
        return f"<EventBatch of {len(self)} events>"


@types.coroutine
def _step_aside() -> Generator[None, None, None]:
    """Give the loop one turn (``asyncio.sleep(0)`` without its checks)."""
    yield


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
        "_live",
        "_producer",
        "_result_waiters",
        "_started",
        "_stepped",
        "_waiter",
    )

    def __init__(
        self, producer: Callable[[AssistantMessageEventStream], Awaitable[None]] | None = None
    ):
        self._backlog = _Backlog()
        self._live: DeltaRun | None = None
        """The queued run that deltas may still join (see ``DeltaRun.live``)."""
        self._waiter: asyncio.Future[None] | None = None
        self._result_waiters: list[asyncio.Future[AssistantMessage]] = []
        self._ended = False
        self._final: AssistantMessage | None = None
        self._producer = producer
        self._started = producer is None
        self._stepped = producer is None
        """Whether the producer took its first step (``_wait``)."""
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
        live = self._live
        if live is not None:  # inlined _seal: once per event that is not a delta
            live.live = False
            self._live = None
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

    def push_delta(
        self, cls: type[Any], kind: str, index: int, source: ChunkedPartialSource, chunks: list[str]
    ) -> DeltaRun | None:
        """Append the event of the delta just appended to ``chunks`` (see ``DeltaRun``): it joins
        the live run when it continues it. Returns the run it went into (``None``, ignored, after
        the stream completed): while that run stays ``live``, the producer may queue the next
        delta into the same block and snapshot by raising its ``last`` itself."""
        if self._ended:
            return None
        run = self._live
        if (
            run is not None
            and run.chunks is chunks
            and run.source is source
            and run.last == len(chunks) - 1
        ):
            run.last += 1
            return run  # a consumer waits only on an empty backlog: nobody to wake
        self._seal()
        run = self._live = DeltaRun(cls, kind, index, source, chunks)
        self._backlog.append(run)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)
        return run

    def _seal(self) -> None:
        """No delta joins the live run any more (something else comes after it, or it left)."""
        run = self._live
        if run is not None:
            run.live = False
            self._live = None

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
        self._seal()
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
        # Until its first step the task is held by the loop's queue of ready callbacks; from
        # then on by ``_running_producers``, which it leaves as its coroutine ends (no done
        # callback: that would cost a loop callback per reply).
        asyncio.get_running_loop().create_task(self._run_producer(producer))

    async def _run_producer(
        self, producer: Callable[[AssistantMessageEventStream], Awaitable[None]]
    ) -> None:
        self._stepped = True
        task = asyncio.current_task()
        assert task is not None  # run only as the task ``_start`` made
        _running_producers.add(task)
        try:
            await producer(self)
        finally:
            _running_producers.discard(task)
            if not self._ended:
                self.end(None)

    def __aiter__(self) -> AssistantMessageEventStream:
        return self

    async def __anext__(self) -> AssistantMessageEvent:
        while True:
            backlog = self._backlog
            if backlog:
                head = backlog[0]
                if type(head) is not DeltaRun:
                    return backlog.popleft()  # type: ignore[return-value]
                count = head.first
                if count == head.last:
                    backlog.popleft()
                    if head is self._live:
                        self._seal()
                else:
                    head.first = count + 1
                event: AssistantMessageEvent = head.event(count)
                return event
            if self._ended:
                raise StopAsyncIteration
            await self._wait()

    async def next_batch(self) -> EventBatch:
        """Every event queued now, in order, waiting for one if none is; empty once the stream
        is over. The same events ``async for`` would give, without an await per event."""
        while not self._backlog:
            if self._ended:
                return EventBatch(_Backlog())
            await self._wait()
        batch = self._backlog
        self._backlog = _Backlog()
        self._seal()  # the consumer has it now
        return EventBatch(batch)

    async def _wait(self) -> None:
        self._start()
        if not self._stepped:
            # The producer's first step is queued in the loop: step aside once (as sleep(0)),
            # so it runs first. What it produced at once (a whole reply, for a model that
            # answers without waiting) is then here without a future to wake us: one loop
            # iteration a reply instead of two.
            await _step_aside()
            if self._backlog or self._ended:
                return
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
        return f"<AssistantMessageEventStream {state}, {len(EventBatch(self._backlog))} queued>"

    @staticmethod
    def of(events: list[Any]) -> AssistantMessageEventStream:
        """A finished stream holding ``events`` (handy in tests and scripted stream functions)."""
        stream = AssistantMessageEventStream()
        for event in events:
            stream.push(event)
        stream.end()
        return stream
