"""Awaiting a tool (or a hook) in the caller's own task, under the abort rules of tool execution.

``unless_aborted(work, signal)`` awaits ``work`` and returns ``(False, result)``; its exception
propagates. Once ``signal`` fires, ``work`` has ``ABORT_GRACE_S`` to end on its own (its result is
kept); then it is cancelled, and if it has not ended ``UNWIND_S`` later it is abandoned: it goes
on in a task of its own, its outcome ignored, and the caller gets ``(True, None)``.

Why not a task per call: a task costs its creation and registration and a loop iteration or two
each way, a large share of one agent-loop turn for a tool that answers at once
(``bench.agent_loop_bench``'s ``turns_1k``). Here ``work`` is stepped by hand
(``send``/``throw``) and every future it waits on goes to the caller's task unchanged, so the
tool runs as it would in a task of its own: its steps run in a copy of the caller's context
variables, a cancellation reaches the future it waits on, and ``asyncio.timeout`` or an anyio
cancel scope inside it works (the current task stays the same for the whole call). What differs
is ``asyncio.current_task()`` (the caller's), and a cancellation of the caller while the tool
runs is thrown into the tool first: a tool that does not end at once then goes on in a task of
its own (as it did before) and the caller is cancelled regardless.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import types
from collections.abc import Awaitable, Generator
from typing import Any, Final, TypeVar

from ..ai.abort import AbortSignal

__all__ = ["ABORT_GRACE_S", "UNWIND_S", "abandoned_count", "unless_aborted"]

ABORT_GRACE_S: Final = 0.25
"""Seconds a running tool gets after the abort to finish on its own before it is cancelled."""
UNWIND_S: Final = 0.05
"""Seconds a cancelled tool gets to unwind before it is left behind."""

_log = logging.getLogger(__name__)
_T = TypeVar("_T")
_Steps = Any  # what ``__await__`` returns: an iterator with send/throw/close
_abandoned: set[asyncio.Task[Any]] = set()
"""Work left running after an abort (kept referenced until it ends)."""


def abandoned_count() -> int:
    """How many abandoned tools are still running (for tests and diagnostics)."""
    return len(_abandoned)


async def unless_aborted(work: Awaitable[_T], signal: AbortSignal | None) -> tuple[bool, _T]:
    """``(False, result)`` once ``work`` ends (its exception propagates), or ``(True, None)``
    when ``signal`` fired and ``work`` did not end in time (see the module docstring)."""
    if signal is None:
        return False, await work
    task = asyncio.current_task()
    if task is None:  # driven outside asyncio's tasks: nothing to cancel, so no deadline
        return False, await work
    steps = work.__await__()
    context = contextvars.copy_context()
    try:
        yielded = context.run(steps.send, None)
    except StopIteration as stop:
        # Ended within its first step, without waiting (a tool that answers at once, the
        # commonest kind): no abort could have cut it short, so no watch is set up for it.
        return False, stop.value
    watch = _Watch(task)
    remove = signal.add_listener(watch.on_abort)  # fired during the first step: arms at once
    try:
        return await _drive(steps, context, watch, yielded)
    finally:
        remove()
        watch.close()


class _Watch:
    """The deadline of one call: armed by the abort, it cancels the caller's task once."""

    __slots__ = ("cancelled", "closed", "loop", "task", "timer")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.loop = task.get_loop()
        self.timer: asyncio.TimerHandle | None = None
        self.cancelled = False
        """Set when ``cancel`` ran: the next resumption of the task brings its CancelledError."""
        self.closed = False

    def on_abort(self, _signal: AbortSignal) -> None:
        # abort() may run on another thread (or on this one, inside a tool's own step)
        self.loop.call_soon_threadsafe(self._arm)

    def _arm(self) -> None:
        if not self.closed and self.timer is None:
            self.timer = self.loop.call_later(ABORT_GRACE_S, self._cancel)

    def _cancel(self) -> None:
        if not self.closed:
            self.cancelled = True
            self.task.cancel()

    def given_up(self) -> tuple[bool, Any]:
        """The outcome once our own cancellation was delivered: the task's count of cancel
        requests goes back (it was ours); anybody else's still stands and is raised."""
        self.task.uncancel()
        if self.task.cancelling():
            raise asyncio.CancelledError
        return True, None

    def close(self) -> None:
        self.closed = True
        if self.timer is not None:
            self.timer.cancel()


@types.coroutine
def _drive(
    steps: _Steps, context: contextvars.Context, watch: _Watch, yielded: Any
) -> Generator[Any, Any, tuple[bool, Any]]:
    """``yield from steps`` in ``context`` from its first step's ``yielded`` on, with the abort
    rules of ``unless_aborted``."""
    run, send, throw = context.run, steps.send, steps.throw
    while True:
        thrown: BaseException | None = None
        try:
            sent = yield yielded
        except GeneratorExit:
            steps.close()
            raise
        except BaseException as exc:
            sent, thrown = None, exc
        try:
            yielded = run(send, sent) if thrown is None else run(throw, thrown)
        except StopIteration as stop:
            return watch.given_up() if watch.cancelled else (False, stop.value)
        except BaseException as exc:
            if not watch.cancelled:
                raise
            if not isinstance(exc, asyncio.CancelledError | Exception):
                raise  # KeyboardInterrupt, SystemExit: not a tool's outcome
            if not isinstance(exc, asyncio.CancelledError):
                _log.debug("an aborted tool failed while it was cancelled", exc_info=exc)
            return watch.given_up()
        if isinstance(thrown, asyncio.CancelledError):  # it went on after a cancellation
            if watch.cancelled:
                return (yield from _unwind(steps, context, yielded, watch))
            _abandon(steps, context, yielded)  # the caller was cancelled: it goes on alone
            raise thrown


@types.coroutine
def _unwind(
    steps: _Steps, context: contextvars.Context, pending: Any, watch: _Watch
) -> Generator[Any, Any, tuple[bool, Any]]:
    """The tool swallowed our cancellation and waits on ``pending``: keep stepping it until it
    ends or ``UNWIND_S`` passed, then leave it running on its own."""
    loop = watch.loop
    deadline = loop.time() + UNWIND_S
    woken: asyncio.Future[None] | None = None

    def wake(_: object = None) -> None:
        if woken is not None and not woken.done():
            woken.set_result(None)

    while True:
        is_future = asyncio.isfuture(pending)
        woken = loop.create_future()
        timer = loop.call_at(deadline, wake)
        if is_future:
            pending.add_done_callback(wake)
        else:
            loop.call_soon(wake)  # a bare yield (sleep(0)): step again on the next iteration
        try:
            yield from woken
        except asyncio.CancelledError:  # the caller is cancelled meanwhile: leave the tool
            _abandon(steps, context, pending)
            watch.task.uncancel()  # ours was delivered already; the new one stands
            raise
        finally:
            timer.cancel()
            if is_future:
                pending.remove_done_callback(wake)
        if (is_future and not pending.done()) or loop.time() >= deadline:
            _abandon(steps, context, pending)
            return watch.given_up()
        try:
            pending = context.run(steps.send, None)
        except StopIteration:
            return watch.given_up()
        except Exception as exc:
            _log.debug("an aborted tool failed while it was cancelled", exc_info=exc)
            return watch.given_up()
        except asyncio.CancelledError:
            return watch.given_up()


def _abandon(steps: _Steps, context: contextvars.Context, pending: Any) -> None:
    """Let ``steps`` run on in a task of its own, from the future it waits on."""
    task = asyncio.get_running_loop().create_task(_carry_on(steps, pending), context=context)
    _abandoned.add(task)
    task.add_done_callback(_forget)


async def _carry_on(steps: _Steps, pending: Any) -> Any:
    return await _resumed(steps, pending)


@types.coroutine
def _resumed(steps: _Steps, pending: Any) -> Generator[Any, Any, Any]:
    """``yield from steps`` from where it stopped: waiting on ``pending``."""
    yielded = pending
    while True:
        thrown: BaseException | None = None
        sent: Any = None
        try:
            sent = yield yielded
        except GeneratorExit:
            steps.close()
            raise
        except BaseException as exc:
            thrown = exc
        try:
            yielded = steps.send(sent) if thrown is None else steps.throw(thrown)
        except StopIteration as stop:
            return stop.value


def _forget(task: asyncio.Task[Any]) -> None:
    _abandoned.discard(task)
    if not task.cancelled() and task.exception() is not None:
        _log.debug("an abandoned tool failed late", exc_info=task.exception())
