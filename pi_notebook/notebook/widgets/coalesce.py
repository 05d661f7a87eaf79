"""Throttled widget syncing: at most one sync per interval per widget, carrying what changed.

Per-token trait syncs overrun jupyter_server's IOPub rate limit and the ZMQ high-water mark, and
both drop messages silently (spec/jupyter-kernel.md, Q6). A widget therefore *marks* the traits
whose source data changed and a :class:`Coalescer` calls its ``flush`` with the marked names at
most once per ``interval`` (50 ms: ≤ 20 syncs/s). Values are computed at flush time, so a burst of
deltas costs one rendering and one message. The first change after a quiet period goes out on
the next loop iteration, so latency stays low.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

__all__ = ["Cancellable", "Coalescer", "Scheduler"]


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class Scheduler(Protocol):
    """Runs a callback later; an asyncio event loop is one."""

    def call_later(self, delay: float, callback: Callable[[], object], /) -> Cancellable: ...


class Coalescer:
    """Collects the names of changed traits and flushes them, throttled.

    ``flush_fn(names)`` sets those traits (in one ``hold_sync`` block, so one comm message).
    Timers run on ``scheduler``, by default the running event loop at the time of the change.
    Without either (plain synchronous use), a change flushes at once when the interval has
    passed and otherwise waits for the next change or an explicit :meth:`flush`. A batch of
    changes made in :meth:`hold` flushes once at its end: a loop marking as it reads a big
    source would otherwise flush (and re-send everything) every ``interval`` as it goes,
    quadratic in the source's size.

    Not thread-safe: mark and flush on the event loop's thread.
    """

    def __init__(
        self,
        flush_fn: Callable[[frozenset[str]], None],
        *,
        interval: float = 0.05,
        clock: Callable[[], float] = time.monotonic,
        scheduler: Scheduler | None = None,
    ) -> None:
        if interval <= 0:
            raise ValueError(f"interval must be positive, got {interval!r}")
        self._flush_fn = flush_fn
        self._interval = interval
        self._clock = clock
        self._scheduler = scheduler
        self._dirty: set[str] = set()
        self._timer: Cancellable | None = None
        self._last_flush = -float("inf")
        self._flushes = 0
        self._held = 0

    @property
    def interval(self) -> float:
        return self._interval

    @property
    def dirty(self) -> frozenset[str]:
        """Names marked and not flushed yet."""
        return frozenset(self._dirty)

    @property
    def flushes(self) -> int:
        """How many flushes ran (each one is at most one sync)."""
        return self._flushes

    def mark(self, *names: str) -> None:
        """Note that these traits changed; they are synced within ``interval``."""
        self._dirty.update(names)
        if self._dirty and self._timer is None and not self._held:
            self._schedule()

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Mark freely inside: nothing is scheduled or flushed until the block ends (nested
        blocks: the outermost one), then what was marked is scheduled once."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
            if not self._held and self._dirty and self._timer is None:
                self._schedule()

    def discard(self) -> None:
        """Forget what was marked (its values were just sent whole) and a pending timer."""
        self._dirty.clear()
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()

    def _schedule(self) -> None:
        delay = max(0.0, self._last_flush + self._interval - self._clock())
        scheduler = self._scheduler
        if scheduler is None:
            try:
                scheduler = asyncio.get_running_loop()
            except RuntimeError:
                if delay == 0.0:
                    self.flush()
                return
        self._timer = scheduler.call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self.flush()

    def flush(self) -> None:
        """Sync everything marked now (the end of a run, a resync), whatever the interval."""
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        if not self._dirty:
            return
        names = frozenset(self._dirty)
        self._dirty.clear()
        self._last_flush = self._clock()
        self._flushes += 1
        try:
            self._flush_fn(names)
        except BaseException:
            self._dirty.update(names)  # not synced: keep them for the next flush
            raise

    def close(self) -> None:
        """Drop a pending timer (the widget is going away); marked names are kept."""
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
