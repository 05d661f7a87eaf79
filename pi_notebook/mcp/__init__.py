"""pi_notebook.mcp — MCP servers as a source of agent tools, through the official ``mcp`` SDK.

It builds on ``pi_notebook.ai`` and ``pi_notebook.agent`` only (no IPython), so ``Agent`` and
``AgentHarness`` users pass ``McpServers(...).tools()`` like any other tools. The SDK is imported
when the first server starts, never by ``import pi_notebook``.
"""

import typing as _typing

from .._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from .config import (
        DEFAULT_TIMEOUT_MS,
        McpConfigError,
        McpServerConfig,
        config_paths,
        load_mcp_config,
        parse_mcp_json,
    )
    from .connection import McpCallError, McpConnection, McpStartError, RemoteTool
    from .content import to_tool_result
    from .naming import mcp_tool_name
    from .servers import McpServers
    from .tool import McpTool

_EXPORTS: dict[str, tuple[str, ...]] = {
    ".config": (
        "DEFAULT_TIMEOUT_MS",
        "McpConfigError",
        "McpServerConfig",
        "config_paths",
        "load_mcp_config",
        "parse_mcp_json",
    ),
    ".connection": ("McpCallError", "McpConnection", "McpStartError", "RemoteTool"),
    ".content": ("to_tool_result",),
    ".naming": ("mcp_tool_name",),
    ".servers": ("McpServers",),
    ".tool": ("McpTool",),
}
"""Where each public name lives: its submodule is imported when the name is first used
(``pi_notebook._lazy``)."""

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)

__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "McpCallError",
    "McpConfigError",
    "McpConnection",
    "McpServerConfig",
    "McpServers",
    "McpStartError",
    "McpTool",
    "RemoteTool",
    "config_paths",
    "load_mcp_config",
    "mcp_tool_name",
    "parse_mcp_json",
    "to_tool_result",
]
