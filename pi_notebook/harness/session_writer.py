"""The write path of a session: every entry goes to the storage before the tree takes it.

A write that fails (read-only file, disk full) loses nothing the model said: message, summary
and usage entries stay in memory (``unsaved``) and are written before the next entry, or by
``flush()``; the append raises :class:`SessionWriteError` saying what was not saved, and
``write_error`` keeps it. Other entries (settings, labels, moves) are refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomMessageEntry,
    MessageEntry,
    SessionEntry,
    UsageEntry,
)
from .storage import SessionStorage

__all__ = ["EntryWriter", "SessionWriteError"]

_KEPT_ON_FAILURE = (
    MessageEntry,
    CustomMessageEntry,
    CompactionEntry,
    BranchSummaryEntry,
    UsageEntry,
)
"""Entries kept in memory when their write fails: what the model said and what it cost."""


class SessionWriteError(OSError):
    """Entries of a session could not be written; they are kept in memory (``unsaved``) and
    written before the next entry, or by :meth:`Session.flush`."""

    def __init__(self, path: str, cause: BaseException, unsaved: Sequence[SessionEntry]) -> None:
        kinds = ", ".join(_describe(entry) for entry in unsaved[:5])
        more = f" and {len(unsaved) - 5} more" if len(unsaved) > 5 else ""
        what = f"{len(unsaved)} entr{'y' if len(unsaved) == 1 else 'ies'} ({kinds}{more})"
        super().__init__(
            f"Could not write the session {path}: {cause}. Not saved yet: {what}; they are kept "
            "in memory and written with the next entry or Session.flush()"
            if unsaved
            else f"Could not write the session {path}: {cause}"
        )
        self.path = path
        self.cause = cause
        self.unsaved = list(unsaved)


def _describe(entry: SessionEntry) -> str:
    if isinstance(entry, MessageEntry):
        return f"{entry.message.role} message {entry.id}"
    return f"{entry.type} {entry.id}"


class EntryWriter:
    """Writes a session's entries through its storage, keeping what a failed write must not
    lose; ``take`` hands each entry to the tree once it is written (or kept)."""

    __slots__ = ("storage", "take", "unsaved", "write_error")

    def __init__(self, storage: SessionStorage, take: Callable[[SessionEntry], None]) -> None:
        self.storage = storage
        self.take = take
        self.unsaved: list[SessionEntry] = []
        self.write_error: SessionWriteError | None = None
        """The last failed write while entries are still unsaved (``None`` once all are on
        disk)."""

    def append(self, entry: SessionEntry) -> None:
        try:
            self._write_unsaved()
            self.storage.append(entry)
        except OSError as exc:
            if not isinstance(entry, _KEPT_ON_FAILURE):
                raise self._failed(exc) from exc
            self.take(entry)
            self.unsaved.append(entry)
            raise self._failed(exc) from exc
        self.take(entry)

    def flush(self) -> int:
        """Write the entries a failed write left in memory; returns how many were written."""
        count = len(self.unsaved)
        try:
            self._write_unsaved()
        except OSError as exc:
            raise self._failed(exc) from exc
        return count

    def _write_unsaved(self) -> None:
        unsaved = self.unsaved
        while unsaved:
            self.storage.append(unsaved[0])
            unsaved.pop(0)
        self.write_error = None

    def _failed(self, exc: OSError) -> SessionWriteError:
        if isinstance(exc, SessionWriteError):
            exc = exc.cause if isinstance(exc.cause, OSError) else exc
        error = SessionWriteError(str(self.storage.path or "<memory>"), exc, self.unsaved)
        if self.unsaved:
            self.write_error = error
        return error
