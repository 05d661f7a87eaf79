"""Telling the run views that a session write failed, and that it is saved after all.

A session keeps an entry whose write failed in memory (``Session.unsaved_entries``) and writes
it with the next write that works; the harness goes on meanwhile, so nothing else reports it.
:class:`SaveNotices` is asked while a run streams and when it ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..harness import Session

__all__ = ["SaveNoticeView", "SaveNotices"]


class SaveNoticeView(Protocol):
    """What a view shows of the session's writes (``RunView``'s notices)."""

    def note_unsaved(self, reason: str) -> None: ...

    def note_saved(self) -> None: ...


class SaveNotices:
    """The views that say "not saved", with what each says (told once the retry worked)."""

    def __init__(self) -> None:
        self._unsaved: dict[SaveNoticeView, str] = {}

    def check(self, session: Session, view: SaveNoticeView) -> None:
        """Show in ``view`` that a write of ``session`` failed (once per reason), or tell every
        view that said so that the entries are in the file now."""
        error = session.write_error
        if error is not None and session.unsaved_entries:
            from ..ai.producer import describe_error

            reason = (
                f"Could not write the session {error.path}: {describe_error(error.cause)}; "
                "this turn is not in the file yet (kept in memory, written as soon as the "
                "file can be written again)"
            )
            if self._unsaved.get(view) != reason:
                self._unsaved[view] = reason
                view.note_unsaved(reason)
        elif self._unsaved:
            for shown in self._unsaved:
                shown.note_saved()
            self._unsaved.clear()
