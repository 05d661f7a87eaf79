"""Type stub of the package's public names; lazy-loader reads it to import each name's
submodule on first use."""

from .document import (
    DocumentCell as DocumentCell,
    DocumentError as DocumentError,
    NotebookDocument as NotebookDocument,
    NotebookNotConnected as NotebookNotConnected,
)
from .edit_tools import WRITE_TOOL_NAMES as WRITE_TOOL_NAMES, WriteTools as WriteTools
from .history import (
    ErrorInfo as ErrorInfo,
    ExecutionHistory as ExecutionHistory,
    ExecutionRecord as ExecutionRecord,
    OutputSummary as OutputSummary,
)
from .reading_tools import READ_TOOL_NAMES as READ_TOOL_NAMES, read_tools as read_tools
