"""pi_notebook.agent — the agent core: loop, Agent, tool execution, hooks, queues."""

from .decorator import FunctionTool, tool
from .tools import AgentTool, AgentToolResult, ToolExecute, ToolUpdateCallback
from .validation import ToolArgumentsError, validate_tool_arguments

__all__ = [
    "AgentTool",
    "AgentToolResult",
    "FunctionTool",
    "ToolArgumentsError",
    "ToolExecute",
    "ToolUpdateCallback",
    "tool",
    "validate_tool_arguments",
]
