"""pi_notebook.agent — the agent core: loop, Agent, tool execution, hooks, queues."""

from .tools import AgentTool, AgentToolResult, ToolExecute, ToolUpdateCallback

__all__ = [
    "AgentTool",
    "AgentToolResult",
    "ToolExecute",
    "ToolUpdateCallback",
]
