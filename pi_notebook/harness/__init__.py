"""pi_notebook.harness — the session tree and its storage (pi's JSONL v3), harness messages."""

from .entries import (
    ActiveToolsChangeEntry,
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    LabelEntry,
    LeafEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionEntry,
    SessionHeader,
    SessionInfoEntry,
    ThinkingLevelChangeEntry,
)
from .jsonl import SessionFileError, SessionFileWarning
from .layout import default_session_dir, session_file_name
from .messages import (
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    HarnessMessage,
    bash_execution_to_text,
    convert_to_llm,
)
from .session import ModelRef, Session, SessionContext, SessionTreeNode
from .storage import InMemorySessionStorage, JsonlSessionStorage, SessionStorage

__all__ = [
    "ActiveToolsChangeEntry",
    "BashExecutionMessage",
    "BranchSummaryEntry",
    "BranchSummaryMessage",
    "CompactionEntry",
    "CompactionSummaryMessage",
    "CustomEntry",
    "CustomMessage",
    "CustomMessageEntry",
    "HarnessMessage",
    "InMemorySessionStorage",
    "JsonlSessionStorage",
    "LabelEntry",
    "LeafEntry",
    "MessageEntry",
    "ModelChangeEntry",
    "ModelRef",
    "Session",
    "SessionContext",
    "SessionEntry",
    "SessionFileError",
    "SessionFileWarning",
    "SessionHeader",
    "SessionInfoEntry",
    "SessionStorage",
    "SessionTreeNode",
    "ThinkingLevelChangeEntry",
    "bash_execution_to_text",
    "convert_to_llm",
    "default_session_dir",
    "session_file_name",
]
