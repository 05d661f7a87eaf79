"""Model-facing names of MCP tools: ``mcp__<server>__<tool>``, as pi names them.

Providers accept ``[A-Za-z0-9_-]{1,64}``: other characters become ``_``; a name that is too long,
or already taken by another server's tool, gets a short hash of the original pair instead of its
tail, so every tool keeps a stable, unique name.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Container

__all__ = ["MAX_TOOL_NAME", "mcp_tool_name", "sanitize"]

MAX_TOOL_NAME = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def sanitize(part: str) -> str:
    """``part`` with every character a provider rejects replaced by ``_``."""
    return _UNSAFE.sub("_", part) or "_"


def mcp_tool_name(server: str, tool: str, taken: Container[str] = ()) -> str:
    """The name of ``server``'s ``tool``; unique against ``taken``."""
    base = f"mcp__{sanitize(server)}__{sanitize(tool)}"
    if len(base) <= MAX_TOOL_NAME and base not in taken:
        return base
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()
    for size in (8, 12, 16, 64):
        name = f"{base[: MAX_TOOL_NAME - size - 1]}_{digest[:size]}"
        if name not in taken:
            return name
    raise ValueError(f"no free name for {server}/{tool}")  # pragma: no cover - 2**256 names
