"""Listeners of an event source (``Agent.subscribe``, ``AgentHarness.subscribe``): called in
subscription order, each with ``listener(event)`` or ``listener(event, signal)``, sync or async.

The signal is passed only to a listener that asks for it, explicitly rather than by a guess from
the arity:

- naming its second positional parameter ``signal`` (``def on(event, signal): …``), or
- making its second parameter positional-only with no default (``def on(event, sig, /): …``),
  or
- taking ``*args`` after the event (or as its only parameter).

Anything else is called with the event alone: ``lambda e, i=i: …`` keeps its ``i``.

A listener that raises never fails the run it listens to (a broken display must not end the run
it displays), and the later listeners still get the event. Its first failure is logged with the
traceback; its later ones at debug level (one that fails on every streamed delta would otherwise
log a traceback per token).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

from ..ai.abort import AbortSignal
from ..ai.producer import describe_error

__all__ = ["Listener", "Listeners", "takes_signal"]

Listener: TypeAlias = Callable[..., Awaitable[None] | None]
"""``listener(event)`` or ``listener(event, signal)``, sync or async."""
_Entry: TypeAlias = tuple[Listener, bool]


def takes_signal(listener: Callable[..., Any]) -> bool:
    """Whether ``listener`` asks for the abort signal as its second argument (see above)."""
    try:
        parameters = list(inspect.signature(listener).parameters.values())
    except (TypeError, ValueError):
        return False
    for position, parameter in enumerate(parameters, start=1):
        if parameter.kind is parameter.VAR_POSITIONAL:
            return True
        if parameter.kind not in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            return False
        if position == 2:
            if parameter.name == "signal":
                return True
            return parameter.kind is parameter.POSITIONAL_ONLY and (
                parameter.default is parameter.empty
            )
    return False


class Listeners:
    """The subscribers of one event source; ``source`` names it in the log (``"agent"``)."""

    __slots__ = ("_entries", "_failed", "_log", "_source")

    def __init__(self, source: str, log: logging.Logger) -> None:
        self._entries: tuple[_Entry, ...] = ()
        self._failed: set[int] = set()
        """``id`` of the entries whose failure was logged with its traceback."""
        self._source = source
        self._log = log

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Add ``listener``; returns a function that removes it."""
        entry = (listener, takes_signal(listener))
        self._entries = (*self._entries, entry)

        def unsubscribe() -> None:
            self._entries = tuple(e for e in self._entries if e is not entry)
            self._failed.discard(id(entry))

        return unsubscribe

    def deliver(self, event: Any, signal: AbortSignal | None) -> Awaitable[None] | None:
        """Hand ``event`` to every listener in order. Returns ``None`` when every listener was
        synchronous (nothing to await and no coroutine made: this runs once per streamed delta),
        else an awaitable that finishes the delivery."""
        entries = self._entries
        for position, entry in enumerate(entries):
            listener, with_signal = entry
            try:
                outcome = listener(event, signal) if with_signal else listener(event)
            except Exception as exc:
                self._report(entry, event, exc)
                continue
            if outcome is not None and inspect.isawaitable(outcome):
                return self._finish(event, signal, entry, outcome, entries[position + 1 :])
        return None

    async def _finish(
        self,
        event: Any,
        signal: AbortSignal | None,
        entry: _Entry,
        pending: Awaitable[Any],
        rest: tuple[_Entry, ...],
    ) -> None:
        """``deliver`` from its first asynchronous listener (``pending``, of ``entry``) on."""
        try:
            await pending
        except Exception as exc:
            self._report(entry, event, exc)
        for later in rest:
            listener, with_signal = later
            try:
                outcome = listener(event, signal) if with_signal else listener(event)
                if outcome is not None and inspect.isawaitable(outcome):
                    await outcome
            except Exception as exc:
                self._report(later, event, exc)

    def _report(self, entry: _Entry, event: Any, exc: Exception) -> None:
        listener = entry[0]
        name = getattr(listener, "__qualname__", None) or repr(listener)
        kind = getattr(event, "type", type(event).__name__)
        if id(entry) in self._failed:
            self._log.debug("%s listener %s failed again on %s: %s", self._source, name, kind, exc)
            return
        self._failed.add(id(entry))
        self._log.error(
            "%s listener %s failed on %s: %s; the run goes on (later failures of this listener "
            "are logged at debug level)",
            self._source,
            name,
            kind,
            describe_error(exc),
            exc_info=exc,
        )
