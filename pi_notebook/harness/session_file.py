"""Starting a session file: its header line, and the locked create that refuses to overwrite.

This is the part of writing a session that needs no entry models, so a kernel can start a new
notebook's session file at ``%load_ext`` without importing pydantic: the header is
five plain fields, written byte for byte as :func:`~pi_notebook.harness.jsonl.encode_record`
writes a :class:`~pi_notebook.harness.entries.SessionHeader` (a test holds the two together).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from pathlib import Path

from .stamps import SESSION_VERSION, iso_now, new_id

__all__ = ["create_file", "header_line", "start_session_file", "utf8_line", "write_all"]

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def utf8_line(text: str) -> bytes:
    """``text`` (JSON) encoded for the file; lone surrogates, which UTF-8 cannot hold, are
    escaped as ``\\uXXXX`` the way ``JSON.stringify`` writes them."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")


def header_line(
    session_id: str, timestamp: str, cwd: str, parent_session: str | None = None
) -> bytes:
    """The first line of a session file, ``\\n`` included (pi's key order; no ``null``)."""
    header: dict[str, str | int] = {
        "type": "session",
        "version": SESSION_VERSION,
        "id": session_id,
        "timestamp": timestamp,
        "cwd": cwd,
    }
    if parent_session is not None:
        header["parentSession"] = parent_session
    return utf8_line(json.dumps(header, ensure_ascii=False, separators=(",", ":")) + "\n")


def write_all(fd: int, data: bytes) -> None:
    """``os.write`` until all of ``data`` is written (a write may take only part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def create_file(path: Path, data: bytes, *, fsync: bool = False) -> None:
    """Write ``data`` as the whole of a new session file, under the exclusive lock; an existing
    non-empty file is refused (``FileExistsError``) and left untouched."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if os.fstat(fd).st_size:
            raise FileExistsError(f"{path} already holds a session")
        write_all(fd, data)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def start_session_file(path: Path, cwd: str) -> str:
    """Create ``path`` holding only a new session's header; returns the session id. Open it with
    ``Session.open`` when it is first needed."""
    session_id = new_id()
    create_file(path, header_line(session_id, iso_now(), cwd))
    return session_id
