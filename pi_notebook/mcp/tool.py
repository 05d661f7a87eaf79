"""``McpTool``: an MCP server's tool as an ``AgentTool``.

Calling it calls the server (starting it if needed); progress notifications become
``on_update`` partial results (the run view's tool card shows them); the run's abort signal
cancels the request. A result with ``isError`` and a failed call both end as an error tool result
the model sees, with the server's text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from ..agent.tools import AgentTool, AgentToolResult, ToolUpdateCallback
from ..ai.abort import AbortSignal
from ..ai.types import TextContent
from .content import content_text, to_tool_result

if TYPE_CHECKING:
    from .connection import McpConnection, RemoteTool

__all__ = ["McpTool", "McpToolError", "make_mcp_tool", "progress_text"]


class McpToolError(RuntimeError):
    """The server answered with ``isError``: the message is its text, for the model."""


class McpTool(AgentTool):
    """A tool of an MCP server. ``requires_approval`` comes from the server's configuration."""

    server: str = Field(exclude=True)
    remote_name: str = Field(exclude=True)
    requires_approval: bool = Field(default=False, exclude=True)


def progress_text(progress: float, total: float | None, message: str | None) -> str:
    """``message — 3/10 (30%)``: a progress notification for the tool card."""
    amount = f"{progress:g}/{total:g} ({progress / total:.0%})" if total else f"{progress:g}"
    return f"{message} — {amount}" if message else f"progress {amount}"


def make_mcp_tool(connection: McpConnection, remote: RemoteTool, name: str) -> McpTool:
    """The ``AgentTool`` named ``name`` that calls ``remote`` on ``connection``."""
    server = connection.name

    async def execute(
        _tool_call_id: str,
        params: dict[str, Any],
        signal: AbortSignal | None,
        on_update: ToolUpdateCallback,
    ) -> AgentToolResult:
        def progress(value: float, total: float | None, message: str | None) -> None:
            text = progress_text(value, total, message)
            on_update(AgentToolResult(content=[TextContent(text=text)]))

        result = await connection.call_tool(
            remote.name, params, signal=signal, on_progress=progress
        )
        converted = to_tool_result(result, server, remote.name)
        if getattr(result, "is_error", False):
            raise McpToolError(content_text(converted.content) or f"{remote.name} failed")
        return converted

    return McpTool(
        name=name,
        label=remote.title or f"{remote.name} ({server})",
        description=remote.description,
        parameters=remote.input_schema,
        execute=execute,
        server=server,
        remote_name=remote.name,
        requires_approval=connection.config.require_approval,
    )
