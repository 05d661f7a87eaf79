"""One kernel at a time appends to a notebook's session file.

A kernel holds an exclusive ``flock`` on a hidden lock file beside the session file
(``.analysis.pi.jsonl.lock``) for as long as it works in that session. The operating system drops
the lock when the process ends, however it ends, so a dead kernel never blocks the next one. The
lock file holds the holder's pid, for the message the second kernel shows. (The session file
itself cannot carry this lock: each append takes a short ``flock`` on it, which a lock held by
the same process on another descriptor would block.)
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

__all__ = ["SessionLock", "lock_holder", "lock_path"]


def lock_path(session_file: Path) -> Path:
    return session_file.with_name(f".{session_file.name}.lock")


class SessionLock:
    """The lock on one session file, held by this process until :meth:`release`."""

    def __init__(self) -> None:
        self._fd: int | None = None
        self.path: Path | None = None
        """The session file locked (None: none)."""

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, session_file: Path) -> str | None:
        """Lock ``session_file`` for this process (releasing any other file it held). None when
        it is ours now; otherwise who holds it, in words. A directory where no lock file can be
        written gets no lock (its session file could not be written either)."""
        if self.path == session_file:
            return None
        target = lock_path(session_file)
        try:
            fd = os.open(target, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _read_holder(fd)
            os.close(fd)
            return f"another kernel ({holder})" if holder else "another kernel"
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}\n".encode())
        self.release()
        self._fd, self.path = fd, session_file
        return None

    def move(self, session_file: Path) -> None:
        """The session file was renamed to ``session_file``: the lock follows it (the lock is
        on the lock file's inode, which is renamed too)."""
        if self._fd is None or self.path is None:
            return
        with contextlib.suppress(OSError):
            os.replace(lock_path(self.path), lock_path(session_file))
        self.path = session_file

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)  # closing the descriptor drops the flock
        self._fd, self.path = None, None


def lock_holder(session_file: Path) -> str | None:
    """Who else holds ``session_file``'s lock, in words; None when no other process does."""
    try:
        fd = os.open(lock_path(session_file), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:  # no lock file: nobody ever locked it
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        holder = _read_holder(fd)
        return f"another kernel ({holder})" if holder else "another kernel"
    finally:
        os.close(fd)
    return None


def _read_holder(fd: int) -> str:
    try:
        return os.pread(fd, 100, 0).decode(errors="replace").strip()
    except OSError:
        return ""
