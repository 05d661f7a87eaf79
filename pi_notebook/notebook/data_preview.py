"""A first look at the data files a prompt names, put into the session right before the prompt.

A model that has not seen a file guesses its column names and values (``df['BMI']`` for a
column ``bmi``, ``== 'M'`` for ``'malignant'``, a string ``'0'`` for an integer code) and spends
its turns on the errors. When a prompt names a text data file (CSV, TSV, JSON lines, plain text)
that exists in the kernel's working directory, the model gets its header and first rows, read
from disk, as a ``custom_message`` entry before the prompt (``%tree`` and the run view show it),
much as a coding agent attaches a file the user mentions. A file is shown once per notebook agent
until it changes on disk; binary formats (Parquet, Excel, HDF5, SQLite) are not opened. A model
that cannot call tools gets none: it would only answer from those first rows. A file named like
a credentials file is never shown, and the values of the kernel's secret-looking environment
variables are blanked out of what is.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..harness import Session

__all__ = ["CUSTOM_TYPE", "DATA_FILE", "DataPreview", "named_data_files", "preview_text"]

CUSTOM_TYPE = "data_preview"
"""The ``customType`` of the preview entries."""
DATA_FILE = re.compile(
    r"[\w./-]+\.(?:csv|tsv|json|jsonl|parquet|feather|xlsx?|h5|hdf5|sqlite|db|txt|dat)\b", re.I
)
"""A data file's name as a prompt writes it (``sales.csv``, ``data/iris.csv``)."""
_TEXT_SUFFIXES = {".csv", ".tsv", ".json", ".jsonl", ".txt", ".dat"}
_SECRET_FILE = re.compile(r"secret|credential|password|passwd|token|api[_-]?key|\.env", re.I)
"""A file named like one holding credentials is never shown, whatever its suffix."""
_SECRET_VAR = re.compile(r"(API_KEY|_KEY|TOKEN|SECRET|PASSWORD)$", re.I)
"""Environment variables whose values are blanked out of a preview."""
_ROWS = 3
"""Rows shown after the header."""
_LINE_CHARS = 400
_MAX_FILES = 3


def named_data_files(prompt: str, cwd: Path = Path()) -> list[Path]:
    """The data files ``prompt`` names that exist relative to ``cwd``, in the order named."""
    found: list[Path] = []
    for name in dict.fromkeys(DATA_FILE.findall(prompt)):
        path = cwd / name
        try:
            if path.is_file():
                found.append(path)
        except OSError:  # a name too long for the file system, a permission error
            continue
    return found


def _first_lines(path: Path) -> tuple[list[str], bool] | None:
    """The header and first rows of ``path`` and whether more follow; None when it is empty,
    binary or unreadable."""
    lines: list[str] = []
    try:
        with path.open("rb") as handle:
            for raw in handle:
                if len(lines) > _ROWS:
                    return lines, True
                if b"\0" in raw:
                    return None
                text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                if len(text) > _LINE_CHARS:
                    text = text[:_LINE_CHARS] + " …"
                lines.append(text)
    except OSError:
        return None
    return (lines, False) if lines else None


def preview_text(paths: list[Path], cwd: Path = Path()) -> str | None:
    """What the model is shown of ``paths`` (names relative to ``cwd``), or None when none of
    them is a readable text file."""
    parts = []
    for path in paths[:_MAX_FILES]:
        if path.suffix.lower() not in _TEXT_SUFFIXES or _SECRET_FILE.search(path.name):
            continue
        head = _first_lines(path)
        if head is None:
            continue
        lines, more = head
        with contextlib.suppress(ValueError):
            path = path.relative_to(cwd)
        extent = "its first lines; more follow" if more else "the whole file"
        block = "\n".join(lines)
        parts.append(f"{path.as_posix()} ({extent}):\n```\n{block}\n```")
    if not parts:
        return None
    text = (
        "The data files named in the prompt, as read from disk (use these exact column names "
        "and values in code):\n\n" + "\n\n".join(parts)
    )
    # a key of this kernel's environment copied into a data file stays out of the session;
    # imported here because the redaction module brings the model types, which %load_ext defers
    from ..ai.redaction import Redactor

    secrets = (v for k, v in os.environ.items() if _SECRET_VAR.search(k))
    return Redactor(secrets).scrub(text)


class DataPreview:
    """The previews one notebook agent has sent: a file goes again only after it changed."""

    def __init__(self) -> None:
        self._shown: set[tuple[str, int, int]] = set()

    def _new(self, paths: list[Path]) -> list[Path]:
        fresh = []
        for path in paths:
            try:
                stat = path.stat()
            except OSError:
                continue
            key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
            if key not in self._shown:
                self._shown.add(key)
                fresh.append(path)
        return fresh

    def text_for(self, prompt: str, cwd: Path) -> str | None:
        """The preview of the files ``prompt`` names that were not shown as they are now."""
        return preview_text(self._new(named_data_files(prompt, cwd)), cwd)

    async def append(self, session: Session, prompt: str, cwd: Path | None = None) -> bool:
        """Put the preview of the files ``prompt`` names into ``session`` (the kernel's working
        directory by default); whether there was one. The files are read off the event loop."""
        cwd = Path.cwd() if cwd is None else cwd
        text = await asyncio.to_thread(self.text_for, prompt, cwd)
        if text is None:
            return False
        from ..harness.session import SessionWriteError

        # a failed write keeps it in memory: the run goes on and its view says what is not saved
        with contextlib.suppress(SessionWriteError):
            session.append_custom_message(CUSTOM_TYPE, text, display=True)
        return True
