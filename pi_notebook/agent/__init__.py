"""pi_notebook.agent — the agent core: loop, Agent, tool execution, hooks, queues."""

from .tools import AgentTool, AgentToolResult, ToolExecute, ToolUpdateCallback
from .validation import ToolArgumentsError, validate_tool_arguments

__all__ = [
    "AgentTool",
    "AgentToolResult",
    "ToolArgumentsError",
    "ToolExecute",
    "ToolUpdateCallback",
    "validate_tool_arguments",
]
