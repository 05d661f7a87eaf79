"""pi_notebook.tools — plain Python functions as agent tools.

This is not the agent core (pi has no such layer): it builds ``AgentTool`` objects from functions
— a JSON schema from the type hints, descriptions from the docstring, return values (text, images,
DataFrames, rich reprs) turned into content for the model — and hands them to the core. It imports
``pi_notebook.agent``; the core reaches it only through the lazily re-exported ``tool``.
"""

import typing as _typing

from .._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from .decorator import INJECTED_PARAMETERS, FunctionTool, ToolOptions, tool
    from .output import DEFAULT_MAX_OUTPUT_CHARS, to_tool_result

_EXPORTS: dict[str, tuple[str, ...]] = {
    ".decorator": ("INJECTED_PARAMETERS", "FunctionTool", "ToolOptions", "tool"),
    ".output": ("DEFAULT_MAX_OUTPUT_CHARS", "to_tool_result"),
}
"""Where each public name lives: its submodule is imported when the name is first used
(``pi_notebook._lazy``)."""

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)

__all__ = [
    "DEFAULT_MAX_OUTPUT_CHARS",
    "INJECTED_PARAMETERS",
    "FunctionTool",
    "ToolOptions",
    "to_tool_result",
    "tool",
]
