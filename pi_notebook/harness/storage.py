"""Where a session's records live: a pi JSONL file, or memory.

:class:`JsonlSessionStorage` is append-only and durable against crashes of the writing process:
every entry is one ``write`` of one complete line, made under an exclusive advisory lock
(``fcntl.flock``) so concurrent writers never interleave bytes, and handed to the OS before
``append`` returns (``fsync=True`` also forces it to disk). A line torn by a killed writer is
dropped with a :class:`SessionFileWarning` the next time the file is opened or appended to.

(pi 1.6 instead terminates a torn last line with a newline and then skips it as a malformed line
on every read. Cutting it off keeps the file valid for strict readers; both read the same
entries, and pi reads the repaired file unchanged.)
"""

from __future__ import annotations

import fcntl
import os
import warnings
from abc import ABC, abstractmethod
from collections.abc import Iterable
from pathlib import Path

from pydantic_core import from_json

from .entries import SESSION_VERSION, SessionEntry, SessionHeader
from .entry_list import EntryList
from .jsonl import (
    DecodedSession,
    SessionFileWarning,
    declared_version,
    decode_session,
    decode_session_file,
    encode_record,
)
from .session_file import create_file, write_all
from .session_index import SessionIndex

__all__ = ["InMemorySessionStorage", "JsonlSessionStorage", "SessionStorage"]


class SessionStorage(ABC):
    """The persistence a :class:`~pi_notebook.harness.Session` writes through."""

    @property
    def path(self) -> Path | None:
        """The backing file, if any (a forked session's header names it as its parent)."""
        return None

    @abstractmethod
    def create(self, header: SessionHeader, entries: Iterable[SessionEntry] = ()) -> None:
        """Start a new session with ``header`` and initial ``entries``; refuses to overwrite."""

    @abstractmethod
    def load(self) -> tuple[SessionHeader, list[SessionEntry]]:
        """The header and every entry, in the order they were appended."""

    @abstractmethod
    def append(self, entry: SessionEntry) -> None:
        """Persist one more entry (after this returns, ``load`` includes it)."""

    def load_indexed(self) -> tuple[SessionHeader, EntryList, SessionIndex]:
        """:meth:`load`, with the entries' structure index (``Session.open`` uses it; a
        storage that decodes entries can collect it on the way)."""
        header, entries = self.load()
        index = SessionIndex(EntryList(entries))
        return header, index.entries, index


class InMemorySessionStorage(SessionStorage):
    """Keeps the records in a list: for tests, scratch sessions and notebooks without a file."""

    def __init__(self) -> None:
        self._header: SessionHeader | None = None
        self._entries: list[SessionEntry] = []

    def create(self, header: SessionHeader, entries: Iterable[SessionEntry] = ()) -> None:
        if self._header is not None:
            raise FileExistsError("this in-memory storage already holds a session")
        self._header = header
        self._entries = list(entries)

    def load(self) -> tuple[SessionHeader, list[SessionEntry]]:
        if self._header is None:
            raise LookupError("this in-memory storage holds no session yet (use Session.create)")
        return self._header, list(self._entries)

    def append(self, entry: SessionEntry) -> None:
        if self._header is None:
            raise LookupError("this in-memory storage holds no session yet (use Session.create)")
        self._entries.append(entry)

    def __repr__(self) -> str:
        return f"InMemorySessionStorage(entries={len(self._entries)})"


def _is_complete_json(line: bytes) -> bool:
    try:
        from_json(line)
    except ValueError:
        return False
    return True


def _last_line_start(fd: int, size: int) -> int:
    """Offset just after the last ``\\n`` before ``size`` (0 if none)."""
    end = size
    while end > 0:
        start = max(0, end - 65536)
        newline = os.pread(fd, end - start, start).rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        end = start
    return 0


def _read(fd: int, size: int) -> bytes:
    """The first ``size`` bytes of a file (fewer if it is shorter)."""
    chunks: list[bytes] = []
    offset = 0
    while offset < size and (chunk := os.pread(fd, size - offset, offset)):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _head(fd: int, size: int) -> bytes:
    """The first bytes of a file, through the end of its first non-blank line."""
    want = 4096
    while True:
        head = os.pread(fd, min(want, size), 0)
        if len(head) >= size or len(head) < want:
            return head
        text = head.lstrip()
        if text and b"\n" in text:
            return head
        want *= 8


class JsonlSessionStorage(SessionStorage):
    """A session file in pi's JSONL version 3 format.

    ``strict=True`` (the default) refuses a file with a malformed line anywhere but at the very
    end: :class:`SessionFileError` names the file and line. ``strict=False`` skips such lines
    with a warning, like pi-coding-agent does (they stay in the file). Files of versions 1 and 2
    are migrated and rewritten on open. ``fsync=True`` makes every append wait for the disk
    (survives power loss, costs milliseconds); without it an append survives any crash of this
    process but not of the machine.

    The lock is advisory: it orders writers that use it (this class, in any process); pi itself
    does not take it.
    """

    def __init__(self, path: str | os.PathLike[str], *, strict: bool = True, fsync: bool = False):
        self._path = Path(path)
        self.strict = strict
        self.fsync = fsync

    @property
    def path(self) -> Path:
        return self._path

    def __repr__(self) -> str:
        return f"JsonlSessionStorage({str(self._path)!r})"

    def relocate(self, path: str | os.PathLike[str]) -> None:
        """The file was moved to ``path`` (by its owner): write there from now on."""
        self._path = Path(path)

    def create(self, header: SessionHeader, entries: Iterable[SessionEntry] = ()) -> None:
        data = b"".join([encode_record(header), *(encode_record(e) for e in entries)])
        create_file(self._path, data, fsync=self.fsync)

    def append(self, entry: SessionEntry) -> None:
        line = encode_record(entry)
        fd = os.open(self._path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._repair_tail(fd)
            write_all(fd, line)
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)  # releases the lock

    def load(self) -> tuple[SessionHeader, list[SessionEntry]]:
        decoded = self._decode()
        return decoded.header, list(decoded.entries)

    def load_indexed(self) -> tuple[SessionHeader, EntryList, SessionIndex]:
        decoded = self._decode()
        return decoded.header, decoded.entries, decoded.index

    def _decode(self) -> DecodedSession:
        source = str(self._path)
        writable = os.access(self._path, os.W_OK)
        flags = (os.O_RDWR | os.O_APPEND if writable else os.O_RDONLY) | os.O_CLOEXEC
        fd = os.open(self._path, flags)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if writable else fcntl.LOCK_SH)
            if writable:
                self._repair_tail(fd)
            size = os.fstat(fd).st_size
            if not writable and size:
                size = self._readable_size(fd, size)
            if declared_version(_head(fd, size), source=source) < SESSION_VERSION:
                lines = _read(fd, size).split(b"\n")  # rare: migrated under the lock
                decoded = decode_session(lines, source=source, strict=self.strict)
                if writable:
                    self._rewrite(decoded.header, decoded.entries)
                return decoded
            # Validating a big file takes a while: writers need not wait for it. Its first
            # ``size`` bytes stay as they are (the file only grows, and a torn line written
            # later is cut off past them), so it is read, a slice at a time, after the lock.
            fcntl.flock(fd, fcntl.LOCK_UN)
            return decode_session_file(fd, size, source=source, strict=self.strict)
        finally:
            os.close(fd)

    # --- repairs ---------------------------------------------------------------------------------

    def _repair_tail(self, fd: int) -> None:
        """Under the lock: make the file end with a complete line.

        A last line without ``\\n`` is either complete JSON (the newline is added) or the torn
        remains of a write that was killed (it is cut off, with a warning). A last line that is
        not JSON although terminated is a torn line pi 1.6 has already terminated: cut off too.
        """
        size = os.fstat(fd).st_size
        if size == 0:
            return
        tail = os.pread(fd, 2, max(0, size - 2))
        if tail.endswith(b"\n"):
            if tail[:1] in (b"}", b"\n") or size < 2:  # a complete entry ends with "}": no parse
                return
            start = _last_line_start(fd, size - 1)
            line = os.pread(fd, size - 1 - start, start)
            if start == 0 or not line.strip() or _is_complete_json(line):
                return
            os.ftruncate(fd, start)
            self._warn_torn(size - 1 - start)
            return
        start = _last_line_start(fd, size)
        if _is_complete_json(os.pread(fd, size - start, start)):
            write_all(fd, b"\n")
            return
        os.ftruncate(fd, start)
        self._warn_torn(size - start)

    def _readable_size(self, fd: int, size: int) -> int:
        """The read-only variant of :meth:`_repair_tail`: how much of the file to read (a torn
        last line is left out; a complete one without its newline is read)."""
        if os.pread(fd, 1, size - 1) == b"\n":
            start = _last_line_start(fd, size - 1)
            line = os.pread(fd, size - 1 - start, start)
            if start == 0 or not line.strip() or _is_complete_json(line):
                return size
            self._warn_torn(len(line), repaired=False)
            return start
        start = _last_line_start(fd, size)
        if _is_complete_json(os.pread(fd, size - start, start)):
            return size
        self._warn_torn(size - start, repaired=False)
        return start

    def _warn_torn(self, size: int, *, repaired: bool = True) -> None:
        action = "removed it from the file" if repaired else "ignored it (file is read-only)"
        warnings.warn(
            f"{self._path}: the last line ({size} bytes) was torn by an interrupted write; "
            f"{action}",
            SessionFileWarning,
            stacklevel=4,
        )

    def _rewrite(self, header: SessionHeader, entries: Iterable[SessionEntry]) -> None:
        """Replace the file atomically (after a version migration)."""
        temporary = self._path.with_name(f".{self._path.name}.{os.getpid()}.tmp")
        try:
            with open(temporary, "wb") as file:
                file.write(b"".join([encode_record(header), *map(encode_record, entries)]))
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self._path)
        finally:
            temporary.unlink(missing_ok=True)
