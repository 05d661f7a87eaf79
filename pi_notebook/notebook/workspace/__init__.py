"""The notebook as the agent's workspace: what ran in the kernel (``history``), what changed
between turns (``summary``), the read tools, and (from the frontend side) the open document and
the tools that write to it."""

import typing as _typing

from ..._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from .document import DocumentCell, DocumentError, NotebookDocument, NotebookNotConnected
    from .edit_tools import WRITE_TOOL_NAMES, WriteTools
    from .history import ErrorInfo, ExecutionHistory, ExecutionRecord, OutputSummary
    from .reading_tools import READ_TOOL_NAMES, read_tools

_EXPORTS: dict[str, tuple[str, ...]] = {
    ".document": ("DocumentCell", "DocumentError", "NotebookDocument", "NotebookNotConnected"),
    ".edit_tools": ("WRITE_TOOL_NAMES", "WriteTools"),
    ".history": ("ErrorInfo", "ExecutionHistory", "ExecutionRecord", "OutputSummary"),
    ".reading_tools": ("READ_TOOL_NAMES", "read_tools"),
}
"""Where each public name lives: its submodule is imported when the name is first used
(``pi_notebook._lazy``)."""

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)

__all__ = [
    "READ_TOOL_NAMES",
    "WRITE_TOOL_NAMES",
    "DocumentCell",
    "DocumentError",
    "ErrorInfo",
    "ExecutionHistory",
    "ExecutionRecord",
    "NotebookDocument",
    "NotebookNotConnected",
    "OutputSummary",
    "WriteTools",
    "read_tools",
]
