"""Opening a notebook's session file whatever state it is in: a notebook must load even with a
damaged, read-only or unwritable session.

A notebook without a session yet gets a new file holding only the header
(:func:`start_notebook_session`): the ``Session`` object, and with it the pydantic models of
the entries, loads when the session is first used, so ``%load_ext`` in a new notebook imports
none of them (``bench/kernel_bench.py`` measures it). An existing session is opened at once: its
entry count and any problem with the file are reported by ``%load_ext``.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from ..harness.session_file import start_session_file
from .locations import fallback_session_path, sibling_session_path

if TYPE_CHECKING:
    from ..harness.jsonl import SessionFileError
    from ..harness.session import Session

__all__ = ["open_notebook_session", "open_session", "start_notebook_session"]


def open_session(path: Path) -> Session:
    """The session stored at ``path``, created (with its directory) when missing."""
    from ..harness.session import Session
    from ..harness.storage import JsonlSessionStorage

    if path.exists() and path.stat().st_size > 0:
        return Session.open(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return Session.create(JsonlSessionStorage(path), cwd=str(path.parent))


def _has_records(path: Path) -> bool:
    return path.is_file() and path.stat().st_size > 0


def start_notebook_session(path: Path) -> tuple[Session | Path, str | None]:
    """Like :func:`open_notebook_session`, but a session that does not exist yet is only
    started: its file is written (the header) and returned as a path, to be opened with
    :func:`open_notebook_session` on first use."""
    if _has_records(path):
        return open_notebook_session(path)
    try:
        return _start(path), None
    except FileExistsError:  # another kernel started it meanwhile
        return open_notebook_session(path)
    except OSError as exc:
        moved = _writable_sibling(path, same_name=True)
        where = f"{path.parent} is not writable ({exc.strerror or exc})"
        return _start(moved), f"{where}: this notebook's session is in {moved}"


def _start(path: Path) -> Path:
    start_session_file(path, cwd=str(path.parent))
    return path


def open_notebook_session(path: Path) -> tuple[Session, str | None]:
    """The notebook's session at ``path`` whatever state the file is in, and a one-line notice
    when it is not the file as it was.

    A malformed line is skipped (it stays in the file); a file that cannot be read at all, or is
    read-only, is left as it is and the session continues in a new file beside it (a copy of
    what could be read); a directory that cannot be written holds nothing new, so the session
    goes to pi's session directory instead (:func:`fallback_session_path`).
    """
    from ..harness.jsonl import SessionFileError
    from ..harness.session import Session

    if not _has_records(path):
        try:
            return open_session(path), None
        except OSError as exc:
            moved = _writable_sibling(path, same_name=True)
            where = f"{path.parent} is not writable ({exc.strerror or exc})"
            return open_session(moved), f"{where}: this notebook's session is in {moved}"
    notice: str | None = None
    try:
        session = Session.open(path)
        # An entry's content is checked when first read (by a run): one that turns out damaged
        # then is kept as an unknown entry with a warning, not an error that fails every run.
        session.index.entries.strict = False
    except SessionFileError as exc:
        lenient, notice = _open_leniently(path, exc)
        if lenient is None:
            return _fresh_beside(path, notice)
        session = lenient
    except OSError as exc:
        return _fresh_beside(path, f"cannot read {path} ({exc.strerror or exc})")
    if os.access(path, os.W_OK):
        return session, notice
    copy = _writable_sibling(path)
    session = session.fork(copy)
    read_only = f"{path.name} is read-only; continuing in a copy, {copy}"
    return session, f"{notice}; {read_only}" if notice else read_only


def _open_leniently(path: Path, error: SessionFileError) -> tuple[Session | None, str]:
    """Open ``path`` skipping malformed lines; the notice names the first one."""
    from ..harness.jsonl import SessionFileError, SessionFileWarning
    from ..harness.session import Session

    where = f"{path}:{error.line}" if error.line is not None else str(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SessionFileWarning)
        try:
            session = Session.open(path, strict=False)
        except (SessionFileError, OSError) as exc:
            return None, f"cannot read {where}: {getattr(exc, 'reason', exc)}"
    skipped = sum(1 for w in caught if issubclass(w.category, SessionFileWarning)) or 1
    lines = "line" if skipped == 1 else f"{skipped} lines"
    return session, (
        f"{where}: {error.reason}; skipped that {lines}, opened the other "
        f"{len(session)} entries (the file is left as it is)"
    )


def _fresh_beside(path: Path, reason: str) -> tuple[Session, str]:
    fresh = _writable_sibling(path)
    notice = f"{reason}; started a fresh session in {fresh} (the old file is kept)"
    return open_session(fresh), notice


def _writable_sibling(path: Path, *, same_name: bool = False) -> Path:
    """A new session file next to ``path``; in pi's session directory (else the temporary
    one) when that cannot be written. ``same_name``: keep ``path``'s name if it is free."""
    fallback = fallback_session_path(path)
    for folder in (path.parent, fallback.parent, Path(tempfile.gettempdir()) / "pi_notebook"):
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(folder, os.W_OK):
            named = folder / path.name
            if same_name and not (named.exists() and named.stat().st_size > 0):
                return named
            return sibling_session_path(named)
    raise PermissionError(f"no writable directory for the session of {path}")
