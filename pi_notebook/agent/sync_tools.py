"""Where sync tool functions run: worker threads that abandoned calls cannot starve.

``asyncio.to_thread`` uses the loop's default executor, a fixed pool (``min(32, cpus + 4)``
workers). A sync tool that hangs is abandoned by an abort (see ``tool_execution``) but keeps its
worker: a handful of them and every later sync tool waits forever in the pool's queue. Here a
call takes an idle worker or starts a new one, so a blocked worker only costs its own thread;
workers that stay idle for ``IDLE_S`` end. ``MAX_SYNC_TOOL_THREADS`` calls may block at once;
one more fails at once with ``SyncToolsExhausted``, which says how many were abandoned, rather
than waiting behind them. Workers are daemon threads: a hung tool does not keep the kernel from
exiting.

While a caller awaits a sync tool, its loop wakes every ``HEARTBEAT_S`` (``loop_awake``). A
signal (a kernel interrupt: Jupyter's Stop button is SIGINT) may be delivered to any thread, and
Python runs its handler only once the main thread runs bytecode again: with the loop asleep in
``epoll_wait`` and a tool that never returns, the interrupt would wait forever. The tool
execution keeps the loop awake the same way around every async tool (one that sleeps for long,
or swallows its cancellation); one timer per loop serves all of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, Final, TypeVar

__all__ = [
    "HEARTBEAT_S",
    "MAX_SYNC_TOOL_THREADS",
    "SyncToolsExhausted",
    "loop_awake",
    "run_sync_tool",
    "sync_tool_threads",
]

MAX_SYNC_TOOL_THREADS: Final = 64
"""How many sync tool calls may be running (or hung) at once."""
HEARTBEAT_S: Final = 0.1
"""How often the loop wakes while a sync tool is awaited (see above)."""
IDLE_S: Final = 30.0
"""Seconds an idle worker waits for another call before it ends."""

_T = TypeVar("_T")


class SyncToolsExhausted(RuntimeError):
    """Every sync tool worker is busy: the call was not started."""


class _Job:
    __slots__ = ("call", "future", "loop", "name", "started")

    def __init__(
        self,
        call: Callable[[], Any],
        name: str,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
    ) -> None:
        self.call = call
        self.name = name
        self.loop = loop
        self.future = future
        self.started = time.monotonic()

    def settle(self, ok: bool, value: Any) -> None:
        """Hand the outcome to the loop; nobody listens any more if the caller gave up."""

        def deliver() -> None:
            if self.future.done():
                return  # abandoned: the late result is ignored
            if ok:
                self.future.set_result(value)
            else:
                self.future.set_exception(value)

        with contextlib.suppress(RuntimeError):  # the loop is closed
            self.loop.call_soon_threadsafe(deliver)


class _Pool:
    """Idle workers wait on one queue; a call with no idle worker starts a new one."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._threads = 0
        self._running: set[_Job] = set()
        self._count = 0

    def submit(self, job: _Job) -> None:
        with self._lock:
            if self._idle > 0:
                self._idle -= 1  # that worker is taken now, even before it wakes up
            elif self._threads >= self.limit:
                raise SyncToolsExhausted(self._exhausted_message())
            else:
                self._threads += 1
                self._count += 1
                worker = threading.Thread(
                    target=self._work,
                    name=f"pi_notebook-sync-tool-{self._count}",
                    daemon=True,
                )
                worker.start()
            self._jobs.put(job)

    def _exhausted_message(self) -> str:
        running = sorted(self._running, key=lambda j: j.started)
        abandoned = [j for j in running if j.future.done()]
        now = time.monotonic()
        oldest = ", ".join(f"{j.name} ({now - j.started:.0f} s)" for j in running[:5])
        return (
            f"{len(running)} sync tool calls are still running ({len(abandoned)} of them "
            f"abandoned after an abort and still blocked), the most this kernel runs at once "
            f"({self.limit}); oldest: {oldest}. Restart the kernel to free them."
        )

    def _work(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=IDLE_S)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:  # nobody took this worker meanwhile: it ends
                        self._idle -= 1
                        self._threads -= 1
                        return
                continue  # a submit counted on this worker just now: its job is coming
            with self._lock:
                self._running.add(job)
            try:
                value = job.call()
            except Exception as exc:
                job.settle(False, _awaitable_error(exc))
            except BaseException as exc:  # SystemExit, KeyboardInterrupt: not the loop's to stop
                error = RuntimeError(f"the tool {job.name} raised {type(exc).__name__}")
                job.settle(False, error.with_traceback(exc.__traceback__))
            else:
                job.settle(True, value)
            finally:
                with self._lock:
                    self._running.discard(job)
                    self._idle += 1
                del job

    def counts(self) -> tuple[int, int]:
        with self._lock:
            return self._threads, len(self._running)


def _awaitable_error(exc: Exception) -> Exception:
    """``exc``, unless an asyncio future refuses it (StopIteration)."""
    if isinstance(exc, StopIteration):
        return RuntimeError(f"the tool raised StopIteration: {exc}")
    return exc


_pool = _Pool(MAX_SYNC_TOOL_THREADS)


async def run_sync_tool(fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
    """``fn(*args, **kwargs)`` in a sync tool worker (with the caller's context variables, as
    ``asyncio.to_thread``). Cancelling the await abandons the call: the thread finishes on its
    own and its result is dropped. Raises ``SyncToolsExhausted`` when no worker can be had."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[_T] = loop.create_future()
    context = contextvars.copy_context()
    call = functools.partial(context.run, fn, *args, **kwargs)
    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    _pool.submit(_Job(call, name, loop, future))
    with loop_awake():
        return await future


_awake: dict[asyncio.AbstractEventLoop, int] = {}
"""Per loop, how many ``loop_awake`` blocks are open in it now."""
_beating: set[asyncio.AbstractEventLoop] = set()
"""Loops with a ``_beat`` timer pending. A loop closed before its timer fired stays here until
the next loop starts beating (``_start_beating`` drops closed ones)."""


class _LoopAwake:
    """The context manager ``loop_awake`` returns (a class: it opens around every tool call)."""

    __slots__ = ("_loop",)

    def __enter__(self) -> None:
        loop = self._loop = asyncio.get_running_loop()
        open_blocks = _awake.get(loop, 0)
        _awake[loop] = open_blocks + 1
        if not open_blocks and loop not in _beating:
            _start_beating(loop)

    def __exit__(self, *_exc: object) -> None:
        loop = self._loop
        open_blocks = _awake[loop] - 1
        if open_blocks:
            _awake[loop] = open_blocks
        else:
            del _awake[loop]


def loop_awake() -> contextlib.AbstractContextManager[None]:
    """Wake the running loop every ``HEARTBEAT_S`` while any such block is open in it (see
    above). One timer per loop serves every open block, so a block costs a count, not a timer:
    it opens around every tool call."""
    return _LoopAwake()


def _start_beating(loop: asyncio.AbstractEventLoop) -> None:
    for other in list(_beating):  # a snapshot: loops in other threads may add theirs
        if other.is_closed():
            _beating.discard(other)
    _beating.add(loop)
    loop.call_later(HEARTBEAT_S, _beat, loop)


def _beat(loop: asyncio.AbstractEventLoop) -> None:
    """The heartbeat of ``loop_awake``: beats on while a block is open in ``loop``."""
    if loop in _awake:
        loop.call_later(HEARTBEAT_S, _beat, loop)
    else:
        _beating.discard(loop)


def sync_tool_threads() -> tuple[int, int]:
    """(worker threads alive, calls running in them now): for tests and benchmarks."""
    return _pool.counts()
