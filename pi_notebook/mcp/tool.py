"""``McpTool``: an MCP server's tool as an ``AgentTool``.

Calling it calls the server (starting it if needed); progress notifications become
``on_update`` partial results (the run view's tool card shows them); the run's abort signal
cancels the request, and so does the tool card's own stop (the call's signal). A result with
``isError`` is returned as an error result (``AgentToolResult.is_error``) with all its content
and ``structuredContent``; a failed call (timeout, transport, protocol) raises, which ends as an
error result with the reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from ..agent.tools import AgentTool, AgentToolResult, ToolUpdateCallback
from ..ai.abort import AbortSignal
from ..ai.types import TextContent
from .content import to_tool_result

if TYPE_CHECKING:
    from .connection import McpConnection, RemoteTool

__all__ = ["McpTool", "make_mcp_tool", "progress_text"]


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
        return to_tool_result(result, server, remote.name)

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
