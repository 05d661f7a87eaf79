"""Type stub of the package's public names; lazy-loader reads it to import each name's
submodule on first use."""

from .decorator import (
    INJECTED_PARAMETERS as INJECTED_PARAMETERS,
    FunctionTool as FunctionTool,
    ToolOptions as ToolOptions,
    tool as tool,
)
from .output import (
    DEFAULT_MAX_OUTPUT_CHARS as DEFAULT_MAX_OUTPUT_CHARS,
    to_tool_result as to_tool_result,
)
