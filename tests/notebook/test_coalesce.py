"""The sync throttle: at most one flush per interval, nothing lost, low latency after quiet."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable

import pytest

from pi_notebook.notebook.widgets.coalesce import Coalescer


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class FakeTimer:
    def __init__(self, when: float, callback: Callable[[], object]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeScheduler:
    """``call_later`` on a fake clock; :meth:`advance` runs the timers that come due."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.timers: list[FakeTimer] = []

    def call_later(self, delay: float, callback: Callable[[], object], /) -> FakeTimer:
        assert delay >= 0
        timer = FakeTimer(self.clock.now + delay, callback)
        self.timers.append(timer)
        return timer

    def advance(self, seconds: float) -> None:
        target = self.clock.now + seconds
        while True:
            due = [t for t in self.timers if not t.cancelled and t.when <= target]
            if not due:
                break
            timer = min(due, key=lambda t: t.when)
            self.timers.remove(timer)
            self.clock.now = max(self.clock.now, timer.when)
            timer.callback()
        self.timers = [t for t in self.timers if not t.cancelled]
        self.clock.now = target

    @property
    def pending(self) -> int:
        return sum(not t.cancelled for t in self.timers)


Flushes = list[tuple[float, frozenset[str]]]


def make(interval: float = 0.05) -> tuple[Coalescer, Flushes, FakeScheduler]:
    clock = FakeClock()
    scheduler = FakeScheduler(clock)
    flushed: Flushes = []
    coalescer = Coalescer(
        lambda names: flushed.append((clock.now, names)),
        interval=interval,
        clock=clock,
        scheduler=scheduler,
    )
    return coalescer, flushed, scheduler


def test_a_burst_of_changes_becomes_at_most_one_flush_per_interval() -> None:
    coalescer, flushed, scheduler = make()
    for _ in range(10_000):  # 10,000 deltas over 5 s (one every 0.5 ms)
        coalescer.mark("current")
        scheduler.advance(0.0005)
    scheduler.advance(1.0)
    times = [t for t, _ in flushed]
    assert len(times) <= 5 / 0.05 + 1
    assert len(times) >= 5 / 0.05 - 1
    assert all(b - a >= 0.05 - 1e-9 for a, b in itertools.pairwise(times))
    assert coalescer.dirty == frozenset()
    assert coalescer.flushes == len(flushed)


def test_the_first_change_after_a_quiet_period_goes_out_at_once() -> None:
    coalescer, flushed, scheduler = make()
    coalescer.mark("status")
    assert scheduler.timers[0].when == 0.0  # next loop iteration
    scheduler.advance(0)
    assert flushed == [(0.0, frozenset({"status"}))]
    scheduler.advance(1.0)
    coalescer.mark("status")
    scheduler.advance(0)
    assert [t for t, _ in flushed] == [0.0, 1.0]


def test_changes_within_an_interval_are_merged() -> None:
    coalescer, flushed, scheduler = make()
    coalescer.mark("status")
    scheduler.advance(0)
    coalescer.mark("current")
    coalescer.mark("messages", "current")
    assert scheduler.pending == 1
    scheduler.advance(0.049)
    assert len(flushed) == 1
    scheduler.advance(0.001)
    assert flushed[1] == (0.05, frozenset({"current", "messages"}))


def test_an_explicit_flush_syncs_now_and_cancels_the_timer() -> None:
    coalescer, flushed, scheduler = make()
    coalescer.mark("a")
    scheduler.advance(0)
    coalescer.mark("b")
    coalescer.flush()
    assert flushed[-1][1] == frozenset({"b"})
    assert scheduler.pending == 0
    coalescer.flush()  # nothing marked: nothing sent
    assert len(flushed) == 2


def test_a_failing_flush_keeps_its_names_for_the_next_one() -> None:
    calls: list[frozenset[str]] = []

    def flush(names: frozenset[str]) -> None:
        calls.append(names)
        if len(calls) == 1:
            raise RuntimeError("comm closed")

    coalescer = Coalescer(flush, scheduler=FakeScheduler(FakeClock()))
    coalescer.mark("a")
    with pytest.raises(RuntimeError):
        coalescer.flush()
    assert coalescer.dirty == frozenset({"a"})
    coalescer.flush()
    assert calls == [frozenset({"a"}), frozenset({"a"})]


def test_without_a_loop_a_change_flushes_when_due_and_otherwise_waits() -> None:
    clock = FakeClock()
    flushed: list[frozenset[str]] = []
    coalescer = Coalescer(flushed.append, clock=clock)
    coalescer.mark("a")
    assert flushed == [frozenset({"a"})]
    clock.now = 0.01
    coalescer.mark("b")
    assert len(flushed) == 1 and coalescer.dirty == frozenset({"b"})
    clock.now = 0.06
    coalescer.mark("c")
    assert flushed[-1] == frozenset({"b", "c"})


async def test_on_a_running_loop_the_loop_runs_the_timers() -> None:
    flushed: list[frozenset[str]] = []
    coalescer = Coalescer(flushed.append, interval=0.02)
    coalescer.mark("a")
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert flushed == [frozenset({"a"})]
    coalescer.mark("b")
    coalescer.mark("c")
    await asyncio.sleep(0.05)
    assert flushed == [frozenset({"a"}), frozenset({"b", "c"})]
    coalescer.mark("d")
    coalescer.close()
    await asyncio.sleep(0.05)
    assert coalescer.dirty == frozenset({"d"})


def test_the_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="interval"):
        Coalescer(lambda names: None, interval=0)


def test_hold_defers_the_synchronous_flush_to_the_end_of_a_batch() -> None:
    """Outside an event loop a mark flushes at once when the interval has passed: a loop
    marking as it reads would flush (and re-send everything) every interval, quadratic."""
    clock = FakeClock()
    flushed: list[frozenset[str]] = []
    sync = Coalescer(flushed.append, interval=0.05, clock=clock)
    with sync.hold():
        for i in range(1000):
            clock.now = i * 0.01
            sync.mark("rows")
            with sync.hold():  # nested: only the outermost block ends the batch
                sync.mark("leaf")
        assert flushed == []
    assert flushed == [frozenset({"rows", "leaf"})]
    sync.mark("rows")
    sync.discard()
    sync.flush()
    assert len(flushed) == 1 and sync.dirty == frozenset()
