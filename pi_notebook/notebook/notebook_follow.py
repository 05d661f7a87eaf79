"""Which notebook the kernel's agent serves, and which session goes with it as the notebook is
renamed, moved, copied or reopened.

The labextension says the notebook's path when a view opens (with the session id the notebook
keeps in its metadata) and whenever it changes. :class:`NotebookFollow` decides what follows: the
session file is renamed with its notebook, a notebook that names another session takes that one
(or a copy when another notebook or kernel has it), and a new notebook never keeps another
notebook's session. The file-system parts are in :mod:`.session_follow`.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from .locations import notebook_location, session_path_beside, sibling_session_path
from .session_files import open_session
from .session_follow import (
    claimed_by,
    find_session_file,
    move_no_clobber,
    notebook_stem,
    renamed_session_file,
    session_owner,
)
from .session_lock import lock_holder

if TYPE_CHECKING:
    from .kernel_agent import NotebookAgent

__all__ = ["NotebookFollow"]


class NotebookFollow:
    """The notebook of ``agent`` and the session that follows it (``agent.session``,
    ``agent.use_session``); a session opened read-only is never moved or switched."""

    def __init__(self, agent: NotebookAgent) -> None:
        self._agent = agent
        self.notebook, self._root = notebook_location()
        """The notebook's file (None: unknown) and the server root its frontend path is
        relative to."""

    def follow(
        self, path: str, session_id: str | None, hello: bool
    ) -> tuple[str | None, list[str]]:
        """The frontend's word (``NotebookDocument.follow``): the session id the notebook
        should keep in its metadata (None: leave it) and what to tell the user."""
        notices = self.notebook_opened(path, session_id) if hello else self.notebook_moved(path)
        agent = self._agent
        return (None if agent.read_only is not None else agent.session_id), notices

    def continue_in_copy(self, held: str) -> str:
        """Another kernel holds the session file: fork it into a file of this notebook's own
        (the original is not written), and say so with the other choice."""
        agent = self._agent
        original = agent.session_path
        copy = sibling_session_path(original)
        agent.session = agent.session.fork(copy)
        agent.session_lock.acquire(copy)
        return (
            f"{original.name} is open in {held}, so this notebook continues in a copy, "
            f"{copy.name} (the original is not written). To look at the original instead: "
            f"%session open {original} --read-only"
        )

    def notebook_opened(self, path: str, session_id: str | None) -> list[str]:
        """A notebook view said hello: its path (relative to the server root) and the session
        id in its metadata. Follows a rename made while the kernel was away, reopens the
        notebook's own session after a move or copy, and never keeps another notebook's
        session. Returns what to tell the user."""
        agent = self._agent
        notices = self.notebook_moved(path)
        own = agent.session_id
        # once something ran or is queued here, switching the session would lose it
        if agent.runs or agent.busy or agent.read_only is not None:
            return notices
        if session_id and session_id != own:
            notices += self._adopt(session_id)
        elif not session_id and own is not None and agent.restored_entries:
            notices += self._leave_claimed(own)
        return notices

    def notebook_moved(self, path: str) -> list[str]:
        """The notebook is at ``path`` now (relative to the server root): its session file
        follows it when named for it, never over an existing file."""
        if not path:
            return []
        agent = self._agent
        notebook = self._root / path
        old, self.notebook = self.notebook, notebook
        if old is None or old == notebook or agent.read_only is not None:
            return []
        current = agent.session_path
        renamed = renamed_session_file(current, notebook_stem(old), notebook_stem(notebook))
        if renamed is None:
            return []
        target = session_path_beside(notebook).with_name(renamed.name)
        if target == current:
            return []
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            move_no_clobber(current, target)
        except FileExistsError:
            return [f"{target.name} exists already: this notebook's session stays in {current}"]
        except OSError as exc:
            why = exc.strerror or exc
            return [f"could not move the session file ({why}); it stays in {current}"]
        agent.session_moved(target)
        return []

    def _adopt(self, session_id: str) -> list[str]:
        """The notebook's metadata names another session than the one opened by name: take
        that one (it was moved or renamed while this notebook was closed), or a copy of it when
        it is another notebook's (this notebook is a copy) or another kernel has it open."""
        agent = self._agent
        mine = agent.session_path
        found = find_session_file(mine.parent, session_id, skip=mine)
        if found is None:
            return [
                f"this notebook's session ({session_id[:8]}) is not beside it any more: "
                f"working in {mine.name}"
            ]
        held = lock_holder(found)
        owner = session_owner(found)
        is_copy = owner != self.notebook and owner.exists()
        # the file opened by name holds nothing yet: the found session takes its place
        empty = agent.restored_entries == 0
        if empty:
            mine.unlink(missing_ok=True)
        if held is not None or is_copy:
            from ..harness.session import Session

            target = mine if empty else sibling_session_path(mine)
            agent.use_session(Session.open(found).fork(target))
            why = f"open in {held}" if held else f"{owner.name}'s session"
            return [f"{found.name} is {why}: this notebook continues in a copy, {target.name}"]
        target = found
        if empty:
            with contextlib.suppress(OSError):  # else it is used where it is
                move_no_clobber(found, mine)
                target = mine
        agent.use_session(open_session(target))
        return [
            f"reopened this notebook's session ({len(agent.session)} entries) from {found.name}"
        ]

    def _leave_claimed(self, own: str) -> list[str]:
        """A notebook without a session id opened a session another notebook here claims (a
        new ``Untitled`` finding an old ``Untitled.pi.jsonl``): start a session of its own."""
        agent = self._agent
        claimed = agent.session_path
        other = claimed_by(claimed.parent, own, skip=self.notebook)
        if other is None:
            return []
        fresh = sibling_session_path(claimed)
        agent.use_session(open_session(fresh))
        return [
            f"{other.name} owns the session in {claimed.name}: this notebook starts its own, "
            f"{fresh.name}"
        ]
