"""The session a notebook agent works in: its file, opened on first use, the lock that tells other
kernels it is in use, and where each ``%%agent`` cell's runs branch from.

``%load_ext`` only starts a new notebook's file (its header line, :mod:`.session_files`), which
needs no pydantic model; the session is opened when first asked for. Which session a notebook
works in as it is renamed or copied is :mod:`.notebook_follow`'s decision.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .session_files import open_notebook_session, start_notebook_session
from .session_follow import header_id
from .session_lock import SessionLock

if TYPE_CHECKING:
    from ..harness import Session

__all__ = ["SessionSlot"]


class SessionSlot:
    """The session at ``path`` (started there if new), until another one is put in its place."""

    def __init__(self, path: Path) -> None:
        opened, notice = start_notebook_session(path)
        self._session: Session | None = None if isinstance(opened, Path) else opened
        self._file: Path = opened if isinstance(opened, Path) else path
        self.notice = notice
        """What was wrong with the session file at load (None: nothing)."""
        self.lock = SessionLock()
        self._cell_starts: dict[str, str | None] = {}
        """Per cell: the leaf its first run started from."""

    @property
    def opened(self) -> Session | None:
        """The session if it is open (None: only started, no entries yet)."""
        return self._session

    @property
    def session(self) -> Session:
        """The session, opened on first use."""
        if self._session is None:
            session, notice = open_notebook_session(self._file)
            if notice:  # the file changed since %load_ext started it
                print(f"pi_notebook: {notice}")
            self._session = session
        return self._session

    def put(self, session: Session) -> None:
        """Work in ``session`` from now on; its cells' runs branch anew."""
        self._session = session
        self._cell_starts.clear()
        if session.path is not None:
            self._file = session.path

    @property
    def path(self) -> Path:
        """The session's file."""
        if self._session is None:
            return self._file
        path = self._session.path
        assert path is not None
        return path

    @property
    def id(self) -> str | None:
        """The session's id (read from the file's header while the session is not open)."""
        if self._session is not None:
            return self._session.id
        return header_id(self._file)

    @property
    def restored_entries(self) -> int:
        """Entries the session holds (0 for a new one not opened yet)."""
        return 0 if self._session is None else len(self._session)

    def moved(self, target: Path) -> Path:
        """The session's file was moved to ``target``: write there, with the lock. Returns
        where the file was."""
        if self._session is not None:
            from ..harness.storage import JsonlSessionStorage

            storage = self._session.storage
            if isinstance(storage, JsonlSessionStorage):
                storage.relocate(target)
        old, self._file = self._file, target
        self.lock.move(target)
        return old

    def branch_for_cell(self, cell_key: str | None) -> None:
        """A re-run cell (``cell_key``: its id or source) starts a sibling branch where its
        first run started."""
        if cell_key is None:
            return
        if cell_key in self._cell_starts:
            start = self._cell_starts[cell_key]
            if self.session.leaf_id != start:
                self.session.set_leaf(start)
        else:
            self._cell_starts[cell_key] = self.session.leaf_id
