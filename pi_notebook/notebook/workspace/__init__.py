"""The notebook as the agent's workspace: what ran in the kernel (``history``), what changed
between turns (``summary``), the read tools, and (from the frontend side) the open document and
the tools that write to it."""

from .document import DocumentCell, DocumentError, NotebookDocument, NotebookNotConnected
from .edit_tools import WRITE_TOOL_NAMES, WriteTools
from .history import ErrorInfo, ExecutionHistory, ExecutionRecord, OutputSummary
from .read_tools import READ_TOOL_NAMES, read_tools

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
