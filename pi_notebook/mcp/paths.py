"""Where pi looks for ``mcp.json`` files: plain paths, so ``%load_ext`` can see whether any
exists before importing the configuration models (``config``) to read one."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["config_paths"]


def config_paths(notebook_dir: Path | None = None) -> list[Path]:
    """The ``mcp.json`` files read, lowest precedence first."""
    agent_dir = os.environ.get("PI_CODING_AGENT_DIR")
    user = Path(agent_dir).expanduser() if agent_dir else Path.home() / ".pi" / "agent"
    paths = [user / "mcp.json"]
    if notebook_dir is not None:
        paths += [notebook_dir / ".pi" / "mcp.json", notebook_dir / "mcp.json"]
    return paths
