"""Where pi-coding-agent keeps session files, so sessions written here show up in ``pi -r``.

``<agent dir>/sessions/--<cwd, slashes and colons as dashes>--/<timestamp>_<session id>.jsonl``,
with the agent dir ``~/.pi/agent`` unless ``PI_CODING_AGENT_DIR`` says otherwise.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["default_session_dir", "encode_cwd", "session_file_name"]

_SEPARATORS = re.compile(r"[/\\:]")


def encode_cwd(cwd: str) -> str:
    """The directory name pi derives from a working directory: ``/home/u/p`` → ``--home-u-p--``."""
    if cwd[:1] in ("/", "\\"):
        cwd = cwd[1:]
    return f"--{_SEPARATORS.sub('-', cwd)}--"


def default_session_dir(cwd: str, root: str | os.PathLike[str] | None = None) -> Path:
    """pi's session directory for ``cwd`` under ``root`` (default: the agent dir's ``sessions``)."""
    if root is None:
        agent_dir = os.environ.get("PI_CODING_AGENT_DIR")
        base = Path(agent_dir).expanduser() if agent_dir else Path.home() / ".pi" / "agent"
        root = base / "sessions"
    return Path(root) / encode_cwd(cwd)


def session_file_name(session_id: str, timestamp: str) -> str:
    """``2026-11-30T00-58-14-328Z_<id>.jsonl`` for a header's ISO ``timestamp`` and ``id``."""
    return f"{timestamp.replace(':', '-').replace('.', '-')}_{session_id}.jsonl"
