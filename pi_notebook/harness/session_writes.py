"""How the harness writes to its session: at once when idle, at the next save point when busy,
and on in memory (reported, not raised) while the file cannot be written."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import TypeVar, cast

from ..ai.producer import describe_error
from .event_bus import EventBus
from .harness_events import SessionWriteErrorEvent
from .hooks import AgentHarnessError
from .session import Session, SessionWriteError

__all__ = ["SessionWriter"]

_log = logging.getLogger(__name__)
_E = TypeVar("_E")


class SessionWriter:
    """Writes to ``session``; ``idle()`` says whether a change may be written now."""

    def __init__(self, session: Session, events: EventBus, idle: Callable[[], bool]) -> None:
        self.session = session
        self._events = events
        self._idle = idle
        self._pending: deque[Callable[[], object]] = deque()

    @property
    def has_pending(self) -> bool:
        return bool(self._pending)

    def persist(self, write: Callable[[], _E]) -> _E:
        """Run ``write`` now. An entry the session keeps in memory because its file cannot be
        written is returned and reported; any other failure raises ``AgentHarnessError``."""
        kept_before = len(self.session.unsaved_entries)
        try:
            return write()
        except AgentHarnessError:
            raise
        except SessionWriteError as exc:
            kept = self.session.unsaved_entries
            if len(kept) > kept_before:  # kept in memory (``Session.write_error``): go on
                self._report_unsaved(exc, len(kept), first=kept_before == 0)
                return cast(_E, kept[-1])
            raise AgentHarnessError(
                "session", f"Could not write the session: {describe_error(exc)}"
            ) from exc
        except Exception as exc:
            raise AgentHarnessError(
                "session", f"Could not write the session: {describe_error(exc)}"
            ) from exc

    def _report_unsaved(self, exc: SessionWriteError, unsaved: int, *, first: bool) -> None:
        """Say that entries are in memory only: a warning when that starts (not again for each
        entry while the file stays unwritable), and an event for every one, which a listener
        can show (the notebook's run view says "Not saved")."""
        reason = describe_error(exc)
        if first:
            _log.warning("the session could not be written; kept in memory: %s", reason)
        else:
            _log.debug("kept in memory (%d entries): %s", unsaved, reason)
        self._events.post(SessionWriteErrorEvent(error_message=reason, unsaved=unsaved))

    def defer(self, write: Callable[[], object]) -> None:
        """Write at the next save point."""
        self._pending.append(write)

    def write_or_defer(self, write: Callable[[], object]) -> None:
        """Persist a change now when idle, at the next save point when busy."""
        if self._idle():
            self.persist(write)
        else:
            self._pending.append(write)

    async def flush(self) -> None:
        """Write what waits for a save point (a write that fails stays first in line)."""
        while self._pending:
            self.persist(self._pending[0])
            self._pending.popleft()
