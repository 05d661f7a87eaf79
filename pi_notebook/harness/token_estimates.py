"""A harness's context sizes, from figures remembered per message and per entry.

A harness sizes its whole context before every request (:func:`.tokens.estimate_context_tokens`
and :func:`.tokens.estimate_projected_context_tokens`). Recomputed, that is a pass of Python over
every message per request, quadratic over a long run. The messages and entries are the
session's own and read-only once appended, so what the estimates read of each (its token
estimate, its usable usage, whether it is a system message; an entry's kind and message) is
worked out once and kept while the object lives; the passes over the context are then C-level
lookups, and every figure is the one the recomputation gives.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from itertools import compress, repeat
from operator import ge, is_, itemgetter, not_
from typing import Any, Generic, TypeVar

from ..ai.system_message import current_system_message
from ..ai.types import SystemMessage
from .entries import CompactionEntry, ContextEditEntry, MessageEntry, SessionEntry
from .tokens import (
    ContextTokenEstimate,
    calculate_context_tokens,
    estimate_context_tokens,
    estimate_projected_context_tokens,
    estimate_tokens,
    usable_usage,
)

__all__ = ["TokenEstimates"]

_F = TypeVar("_F")
_MessageFacts = tuple[int, int, bool]
_EntryFacts = tuple[bool, object]
_TOKENS = itemgetter(0)
_USAGE = itemgetter(1)
_SYSTEM = itemgetter(2)
_RESETS = itemgetter(0)
_MESSAGE = itemgetter(1)


def _message_facts(message: object) -> _MessageFacts:
    """(its token estimate, the context tokens of its usable usage or -1, is it a system
    message)."""
    usage = usable_usage(message)
    reported = -1 if usage is None else calculate_context_tokens(usage)
    return estimate_tokens(message), reported, isinstance(message, SystemMessage)


def _entry_facts(entry: object) -> _EntryFacts:
    """(is it a context edit or a compaction, its message if it is a message entry)."""
    message = entry.message if isinstance(entry, MessageEntry) else None
    return isinstance(entry, ContextEditEntry | CompactionEntry), message


def _last(flags: list[bool]) -> int:
    """The position of the last true flag, -1 when none is."""
    if True not in flags:
        return -1
    return len(flags) - 1 - flags[::-1].index(True)


class _Memo(Generic[_F]):
    """The facts ``learn`` finds about objects, each kept while its object lives (dropped by a
    weak reference's callback when it is freed, before its address can be reused)."""

    __slots__ = ("_facts", "_learn", "_refs")

    def __init__(self, learn: Callable[[Any], _F]) -> None:
        self._learn = learn
        self._facts: dict[int, _F] = {}
        self._refs: dict[int, weakref.ref[Any]] = {}

    def __len__(self) -> int:
        return len(self._facts)

    def of(self, objects: Sequence[object]) -> list[_F] | None:
        """The facts of each of ``objects`` (``None`` when one cannot be weakly referenced)."""
        facts = self._facts
        keys = list(map(id, objects))
        for unknown in list(compress(objects, map(not_, map(facts.__contains__, keys)))):
            key = id(unknown)
            try:
                ref = weakref.ref(unknown, self._forgetter(key))
            except TypeError:
                return None
            facts[key] = self._learn(unknown)
            self._refs[key] = ref
        return list(map(facts.__getitem__, keys))

    def _forgetter(self, key: int) -> Callable[[weakref.ref[Any]], None]:
        facts, refs = self._facts, self._refs

        def forget(gone: weakref.ref[Any]) -> None:
            if refs.get(key) is gone:
                del refs[key]
                del facts[key]

        return forget


class TokenEstimates:
    """The context sizes of :mod:`.tokens`, each equal to its recomputation, from facts kept
    per message and per entry object while it lives. An object that cannot be weakly
    referenced makes the call fall back to the recomputation."""

    __slots__ = ("_entries", "_messages", "_system")

    def __init__(self) -> None:
        self._messages = _Memo(_message_facts)
        self._entries = _Memo(_entry_facts)
        self._system: tuple[list[object], int] = ([], 0)
        """The system messages last replayed, and the estimate of their replayed state."""

    def __len__(self) -> int:
        """How many objects' facts are kept."""
        return len(self._messages) + len(self._entries)

    def __call__(self, message: object) -> int:
        """:func:`~.tokens.estimate_tokens` of ``message``."""
        facts = self._messages.of([message])
        return estimate_tokens(message) if facts is None else facts[0][0]

    def context(self, messages: Sequence[object]) -> ContextTokenEstimate:
        """:func:`~.tokens.estimate_context_tokens` of ``messages``."""
        facts = self._messages.of(messages)
        if facts is None:
            return estimate_context_tokens(messages)
        return _context(facts)

    def projected(
        self, messages: Sequence[object], branch: Sequence[SessionEntry]
    ) -> ContextTokenEstimate:
        """:func:`~.tokens.estimate_projected_context_tokens` of ``messages`` and ``branch``."""
        facts = self._messages.of(messages)
        if facts is None:
            return estimate_projected_context_tokens(messages, branch)
        context = _context(facts)
        if context.last_usage_index is not None:
            entries = self._entries.of(branch)
            if entries is None:
                return estimate_projected_context_tokens(messages, branch)
            latest = _last(list(map(_RESETS, entries)))
            measured = messages[context.last_usage_index]
            if any(map(is_, map(_MESSAGE, entries[latest + 1 :]), repeat(measured))):
                return context
        systems = list(map(_SYSTEM, facts))
        replayed = list(compress(messages, systems))
        known, system_tokens = self._system
        if len(known) != len(replayed) or not all(map(is_, known, replayed)):
            state = current_system_message(replayed)
            system_tokens = 0 if state is None else estimate_tokens(state)
            self._system = (replayed, system_tokens)
        tokens = system_tokens + sum(compress(map(_TOKENS, facts), map(not_, systems)))
        return ContextTokenEstimate(tokens, 0, tokens, None)


def _context(facts: list[_MessageFacts]) -> ContextTokenEstimate:
    tokens: list[int] = list(map(_TOKENS, facts))
    usage: list[int] = list(map(_USAGE, facts))
    index = _last(list(map(ge, usage, repeat(0))))
    if index < 0:
        estimated = sum(tokens)
        return ContextTokenEstimate(estimated, 0, estimated, None)
    reported = usage[index]
    trailing = sum(tokens[index + 1 :])
    return ContextTokenEstimate(reported + trailing, reported, trailing, index)
