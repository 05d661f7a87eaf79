"""Type stub of the package's public names; lazy-loader reads it to import each name's
submodule on first use."""

from .config import (
    DEFAULT_TIMEOUT_MS as DEFAULT_TIMEOUT_MS,
    McpConfigError as McpConfigError,
    McpServerConfig as McpServerConfig,
    config_paths as config_paths,
    load_mcp_config as load_mcp_config,
    parse_mcp_json as parse_mcp_json,
)
from .connection import (
    McpCallError as McpCallError,
    McpConnection as McpConnection,
    McpStartError as McpStartError,
    RemoteTool as RemoteTool,
)
from .content import to_tool_result as to_tool_result
from .naming import mcp_tool_name as mcp_tool_name
from .servers import McpServers as McpServers
from .tool import McpTool as McpTool
