"""Where a notebook's session file lives.

The session of ``analysis.ipynb`` is ``analysis.pi.jsonl`` next to it, so reopening the notebook
restores its session tree. The notebook's path comes from ``JPY_SESSION_NAME``, which
jupyter_server sets for kernels that JupyterLab starts (a path relative to the server's root, or an
absolute one). Without it (nbclient, plain ``ipython``) the session is ``notebook.pi.jsonl`` in the
kernel's working directory. ``PI_NOTEBOOK_SESSION_DIR`` puts session files in another directory.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from ..harness.layout import default_session_dir

__all__ = [
    "DEFAULT_SESSION_NAME",
    "fallback_session_path",
    "latest_session_path",
    "notebook_location",
    "session_path_beside",
    "session_path_for",
    "sibling_session_path",
]

DEFAULT_SESSION_NAME = "notebook"
"""Stem of the session file when the kernel does not know its notebook."""


def _notebook_stem(session_name: str | None) -> str:
    if not session_name:
        return DEFAULT_SESSION_NAME
    name = Path(session_name).name
    for suffix in (".ipynb", ".py", ".md"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return name or DEFAULT_SESSION_NAME


def session_path_for(environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> Path:
    """The session file for the notebook this kernel runs."""
    env = os.environ if environ is None else environ
    here = Path.cwd() if cwd is None else cwd
    session_name = env.get("JPY_SESSION_NAME")
    stem = _notebook_stem(session_name)
    directory_override = env.get("PI_NOTEBOOK_SESSION_DIR")
    if directory_override:
        directory = Path(directory_override).expanduser()
    elif session_name and Path(session_name).is_absolute():
        directory = Path(session_name).parent
    else:
        # jupyter_server starts the kernel in the notebook's directory, so a relative
        # JPY_SESSION_NAME ("sub/dir/nb.ipynb") names a file in the working directory.
        directory = here
    return directory / f"{stem}.pi.jsonl"


def notebook_location(
    environ: Mapping[str, str] | None = None, cwd: Path | None = None
) -> tuple[Path | None, Path]:
    """The notebook this kernel runs (absolute; None when unknown) and the server's root
    directory, against which the labextension's paths are relative. jupyter_server starts the
    kernel in the notebook's directory and names it relative to the root."""
    env = os.environ if environ is None else environ
    here = Path.cwd() if cwd is None else cwd
    name = env.get("JPY_SESSION_NAME")
    if not name:
        return None, here
    if Path(name).is_absolute():
        return Path(name), here
    root = here
    for _ in Path(name).parent.parts:
        root = root.parent
    return here / Path(name).name, root


def session_path_beside(notebook: Path, environ: Mapping[str, str] | None = None) -> Path:
    """The session file named for ``notebook`` (``PI_NOTEBOOK_SESSION_DIR`` respected)."""
    env = dict(os.environ if environ is None else environ)
    env["JPY_SESSION_NAME"] = str(notebook)
    return session_path_for(env, notebook.parent)


def fallback_session_path(default: Path) -> Path:
    """Where the session goes when ``default``'s directory cannot be written (a read-only
    checkout): the same file name in pi's session directory for the notebook's directory."""
    return default_session_dir(str(default.parent.resolve())) / default.name


def sibling_session_path(path: Path, directory: Path | None = None) -> Path:
    """A new, unused ``<stem>.<timestamp>.pi.jsonl`` next to ``path`` (or in ``directory``)."""
    stem = path.name.removesuffix(".pi.jsonl")
    folder = path.parent if directory is None else directory
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    candidate = folder / f"{stem}.{stamp}.pi.jsonl"
    number = 1
    while candidate.exists():
        number += 1
        candidate = folder / f"{stem}.{stamp}-{number}.pi.jsonl"
    return candidate


def latest_session_path(default: Path) -> Path:
    """The notebook's most recently written session: ``default`` or one of its siblings made by
    ``%session new`` (``<stem>.<timestamp>.pi.jsonl``), also those in the fallback directory.
    ``default`` when there are none."""
    stem = default.name.removesuffix(".pi.jsonl")
    candidates: list[Path] = []
    for folder, name in ((default.parent, default.name), _fallback_dir(default)):
        try:
            candidates += [p for p in folder.glob(f"{stem}.*.pi.jsonl") if p.is_file()]
            if (folder / name).is_file():
                candidates.append(folder / name)
        except OSError:  # an unreadable directory holds nothing we can open
            continue
    if not candidates:
        return default
    return max(candidates, key=lambda p: p.stat().st_mtime)


def _fallback_dir(default: Path) -> tuple[Path, str]:
    fallback = fallback_session_path(default)
    return fallback.parent, fallback.name
