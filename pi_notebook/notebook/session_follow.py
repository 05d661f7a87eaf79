"""Which session file belongs to a notebook once it is renamed, moved or copied.

The labextension tells the kernel the notebook's path when a view opens and whenever it changes,
with the session id the notebook keeps in its metadata (``metadata.pi_notebook.session_id``).
These are the file-system parts of following it: a session file's id read from its header line
alone, the file holding an id among a directory's session files, the new name of a session file
when its notebook is renamed, a move that never overwrites, and whether another notebook in the
directory claims a session.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path

__all__ = [
    "claimed_by",
    "find_session_file",
    "header_id",
    "move_no_clobber",
    "notebook_stem",
    "renamed_session_file",
    "session_owner",
]

_SIBLING = re.compile(r"\.\d{8}-\d{6}(-\d+)?\.pi\.jsonl")
"""What ``%session new`` adds to the notebook's stem (``sibling_session_path``)."""

METADATA_KEY = "pi_notebook"
"""The notebook metadata key holding ``{"session_id": ...}``."""


def notebook_stem(notebook: str | Path) -> str:
    name = Path(notebook).name
    return name[: -len(".ipynb")] if name.endswith(".ipynb") else Path(name).stem


def header_id(path: Path) -> str | None:
    """The session id in ``path``'s header line; None when it has none (or cannot be read)."""
    try:
        with path.open("rb") as file:
            first = file.readline(64 * 1024)
        header = json.loads(first)
    except (OSError, ValueError):
        return None
    if isinstance(header, dict) and header.get("type") == "session":
        found = header.get("id")
        return found if isinstance(found, str) else None
    return None


def find_session_file(directory: Path, session_id: str, *, skip: Path | None = None) -> Path | None:
    """The session file in ``directory`` whose header names ``session_id`` (the newest if
    several do, as after a copy of the file), other than ``skip``."""
    try:
        candidates = [p for p in directory.glob("*.pi.jsonl") if p.is_file() and p != skip]
    except OSError:
        return None
    matching = [p for p in candidates if header_id(p) == session_id]
    return max(matching, key=lambda p: p.stat().st_mtime, default=None)


def renamed_session_file(session_file: Path, old_stem: str, new_stem: str) -> Path | None:
    """``session_file`` named for the renamed notebook: ``old.pi.jsonl`` → ``new.pi.jsonl``,
    ``old.<stamp>.pi.jsonl`` → ``new.<stamp>.pi.jsonl``; None for a file that is not named for
    the notebook (one opened with ``%session open``), which keeps its name."""
    name = session_file.name
    if name == f"{old_stem}.pi.jsonl" or _SIBLING.fullmatch(name.removeprefix(old_stem)):
        return session_file.with_name(new_stem + name[len(old_stem) :])
    return None


def session_owner(session_file: Path) -> Path:
    """The notebook a session file is named for (``a.b.pi.jsonl`` and ``a.b.<stamp>.pi.jsonl``
    → ``a.b.ipynb``), whether it exists or not."""
    stem = session_file.name.removesuffix(".pi.jsonl")
    stamp = _SIBLING.search(session_file.name)
    if stamp is not None and stamp.end() == len(session_file.name):
        stem = session_file.name[: stamp.start()]
    return session_file.with_name(f"{stem}.ipynb")


def move_no_clobber(source: Path, target: Path) -> None:
    """Move ``source`` to ``target``; ``FileExistsError`` (and nothing moved) when ``target``
    exists. A hard link then an unlink, so a file another process creates meanwhile at
    ``target`` is never overwritten; a rename where links are not supported."""
    try:
        os.link(source, target)
    except FileExistsError:
        raise
    except OSError:
        if target.exists():
            raise FileExistsError(target) from None
        os.rename(source, target)
        return
    os.unlink(source)


def claimed_by(directory: Path, session_id: str, *, skip: Path | None = None) -> Path | None:
    """Another notebook in ``directory`` whose metadata names ``session_id`` (None if none)."""
    try:
        notebooks = [p for p in directory.glob("*.ipynb") if p.is_file() and p != skip]
    except OSError:
        return None
    for notebook in notebooks:
        with contextlib.suppress(OSError, ValueError):
            metadata = json.loads(notebook.read_text(encoding="utf-8")).get("metadata", {})
            if (metadata.get(METADATA_KEY) or {}).get("session_id") == session_id:
                return notebook
    return None
