"""Work awaited in the caller's task (``abortable.unless_aborted``) behaves as it did in a task of
its own: its context variables stay its own, timeouts and cancellation reach it, an abort gives
it its grace and then leaves it behind, and the caller's cancellation is never swallowed."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import pytest

from pi_notebook.agent.abortable import ABORT_GRACE_S, abandoned_count, unless_aborted
from pi_notebook.ai import AbortController

_var: contextvars.ContextVar[str] = contextvars.ContextVar("_var", default="caller")


async def test_the_result_and_the_exception_come_back_as_from_await() -> None:
    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    async def fail() -> None:
        await asyncio.sleep(0.001)
        raise KeyError("broken")

    signal = AbortController().signal
    assert await unless_aborted(answer(), signal) == (False, 42)
    with pytest.raises(KeyError, match="broken"):
        await unless_aborted(fail(), signal)
    assert await unless_aborted(asyncio.sleep(0, "no signal"), None) == (False, "no signal")


async def test_the_work_runs_in_a_copy_of_the_callers_context() -> None:
    async def sets() -> str:
        _var.set("tool")
        await asyncio.sleep(0)
        return _var.get()

    _var.set("caller")
    assert await unless_aborted(sets(), AbortController().signal) == (False, "tool")
    assert _var.get() == "caller"


async def test_a_timeout_inside_the_work_is_its_own() -> None:
    async def times_out() -> str:
        try:
            async with asyncio.timeout(0.01):
                await asyncio.sleep(10)
        except TimeoutError:
            return "timed out"
        return "slept"

    task = asyncio.current_task()
    assert task is not None
    assert await unless_aborted(times_out(), AbortController().signal) == (False, "timed out")
    assert task.cancelling() == 0


async def test_work_that_ends_within_the_grace_keeps_its_result() -> None:
    controller = AbortController()

    async def winds_down() -> str:
        await asyncio.sleep(0.01)
        return "finished"

    loop = asyncio.get_running_loop()
    loop.call_soon(controller.abort)
    assert await unless_aborted(winds_down(), controller.signal) == (False, "finished")


async def test_work_that_ignores_the_abort_is_cancelled_after_the_grace() -> None:
    controller = AbortController()
    seen: list[str] = []

    async def sleeps() -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return "late"

    loop = asyncio.get_running_loop()
    started = loop.time()
    loop.call_soon(controller.abort)
    outcome: tuple[bool, Any] = await unless_aborted(sleeps(), controller.signal)
    assert outcome == (True, None)
    assert seen == ["cancelled"] and loop.time() - started >= ABORT_GRACE_S
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0  # our own cancellation was taken back


async def test_work_that_swallows_the_cancellation_is_left_running() -> None:
    controller = AbortController()
    release = asyncio.Event()
    ended: list[str] = []

    async def deaf() -> str:
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                continue
        ended.append("ended on its own")
        return "late"

    before = abandoned_count()
    asyncio.get_running_loop().call_soon(controller.abort)
    outcome: tuple[bool, Any] = await unless_aborted(deaf(), controller.signal)
    assert outcome == (True, None)
    assert abandoned_count() == before + 1  # still running, in a task of its own
    release.set()
    for _ in range(20):
        await asyncio.sleep(0)
    assert ended == ["ended on its own"] and abandoned_count() == before


async def test_the_callers_cancellation_is_raised_even_if_the_work_swallows_it() -> None:
    release = asyncio.Event()
    ended: list[str] = []

    async def deaf() -> None:
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                continue
        ended.append("ended")

    async def caller() -> Any:
        return await unless_aborted(deaf(), AbortController().signal)

    before = abandoned_count()
    running = asyncio.ensure_future(caller())
    await asyncio.sleep(0.01)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert running.cancelled()
    assert abandoned_count() == before + 1
    release.set()
    for _ in range(20):
        await asyncio.sleep(0)
    assert ended == ["ended"] and abandoned_count() == before


async def test_the_callers_cancellation_during_the_grace_is_not_taken_for_the_abort() -> None:
    controller = AbortController()

    async def sleeps() -> None:
        await asyncio.sleep(30)

    async def caller() -> Any:
        return await unless_aborted(sleeps(), controller.signal)

    running = asyncio.ensure_future(caller())
    await asyncio.sleep(0)
    controller.abort()
    await asyncio.sleep(ABORT_GRACE_S / 2)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert running.cancelled()
