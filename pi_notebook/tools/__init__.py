"""pi_notebook.tools — plain Python functions as agent tools.

This is not the agent core (pi has no such layer): it builds ``AgentTool`` objects from functions
— a JSON schema from the type hints, descriptions from the docstring, return values (text, images,
DataFrames, rich reprs) turned into content for the model — and hands them to the core. It imports
``pi_notebook.agent``; the core reaches it only through the lazily re-exported ``tool``.
"""

from .decorator import INJECTED_PARAMETERS, FunctionTool, ToolOptions, tool
from .output import DEFAULT_MAX_OUTPUT_CHARS, to_tool_result

__all__ = [
    "DEFAULT_MAX_OUTPUT_CHARS",
    "INJECTED_PARAMETERS",
    "FunctionTool",
    "ToolOptions",
    "to_tool_result",
    "tool",
]
