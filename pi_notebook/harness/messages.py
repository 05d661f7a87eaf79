"""The harness's own message roles and their fixed conversion to LLM messages.

Besides pi-ai's ``user``/``assistant``/``toolResult``, a session transcript holds four roles the
model never sees as such: ``bashExecution`` (a shell command the user ran), ``custom`` (extension
content), ``branchSummary`` and ``compactionSummary``. :func:`convert_to_llm` turns them into user
messages with pi's exact texts, at the provider boundary only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import Field

from ..ai.types import (
    AssistantMessage,
    Message,
    PiModel,
    SystemMessage,
    TextContent,
    ToolResultMessage,
    UserContent,
    UserMessage,
    now_ms,
)

__all__ = [
    "BRANCH_SUMMARY_PREFIX",
    "BRANCH_SUMMARY_SUFFIX",
    "COMPACTION_SUMMARY_PREFIX",
    "COMPACTION_SUMMARY_SUFFIX",
    "BashExecutionMessage",
    "BranchSummaryMessage",
    "CompactionSummaryMessage",
    "CustomMessage",
    "HarnessMessage",
    "bash_execution_to_text",
    "convert_to_llm",
]

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:"
    "\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUMMARY_SUFFIX = "</summary>"
"""Note pi's asymmetry: no newline before ``</summary>`` for branch summaries."""


class BashExecutionMessage(PiModel):
    """A shell command the user ran themselves (``!cmd`` in pi), with its output."""

    role: Literal["bashExecution"] = "bashExecution"
    command: str
    output: str
    exit_code: int | None = None
    cancelled: bool = False
    truncated: bool = False
    full_output_path: str | None = None
    timestamp: int = Field(default_factory=now_ms)
    exclude_from_context: bool | None = None
    """``True`` keeps the command in the transcript but out of the model's context."""


class CustomMessage(PiModel):
    """Extension content that takes part in the context (sent as a user message).

    ``display`` says whether a UI shows it; ``details`` is for the extension, never for the model.
    """

    role: Literal["custom"] = "custom"
    custom_type: str
    content: str | list[UserContent]
    display: bool = True
    details: Any = None
    timestamp: int = Field(default_factory=now_ms)


class BranchSummaryMessage(PiModel):
    """What happened on a branch the conversation came back from (``from_id``: where it left)."""

    role: Literal["branchSummary"] = "branchSummary"
    summary: str
    from_id: str
    timestamp: int = Field(default_factory=now_ms)


class CompactionSummaryMessage(PiModel):
    """The summary that replaces the compacted part of the history."""

    role: Literal["compactionSummary"] = "compactionSummary"
    summary: str
    tokens_before: int
    timestamp: int = Field(default_factory=now_ms)


HarnessMessage: TypeAlias = Annotated[
    SystemMessage
    | UserMessage
    | AssistantMessage
    | ToolResultMessage
    | BashExecutionMessage
    | CustomMessage
    | BranchSummaryMessage
    | CompactionSummaryMessage,
    Field(discriminator="role"),
]
"""Any message a session transcript may hold (discriminator ``role``)."""


def bash_execution_to_text(message: BashExecutionMessage) -> str:
    """The user-message text pi sends the model for a shell command the user ran."""
    text = f"Ran `{message.command}`\n"
    text += f"```\n{message.output}\n```" if message.output else "(no output)"
    if message.cancelled:
        text += "\n\n(command cancelled)"
    elif message.exit_code is not None and message.exit_code != 0:
        text += f"\n\nCommand exited with code {message.exit_code}"
    if message.truncated and message.full_output_path:
        text += f"\n\n[Output truncated. Full output: {message.full_output_path}]"
    return text


def _user_text(text: str, timestamp: int) -> UserMessage:
    return UserMessage.model_construct(
        role="user",
        content=[TextContent.model_construct(type="text", text=text)],
        timestamp=timestamp,
    )


def convert_to_llm(messages: Iterable[object]) -> list[Message]:
    """Turn a transcript into what a provider accepts.

    ``system`` (pi 1.6)/``user``/``assistant``/``toolResult`` pass through unchanged (same
    objects; providers fold system messages into the prompt); the four harness
    roles become user messages with pi's texts; a ``bashExecution`` with ``exclude_from_context``
    and any message of another kind are dropped.
    """
    out: list[Message] = []
    for message in messages:
        if isinstance(message, UserMessage | AssistantMessage | ToolResultMessage | SystemMessage):
            out.append(message)
        elif isinstance(message, BashExecutionMessage):
            if not message.exclude_from_context:
                out.append(_user_text(bash_execution_to_text(message), message.timestamp))
        elif isinstance(message, CustomMessage):
            if isinstance(message.content, str):
                out.append(_user_text(message.content, message.timestamp))
            else:
                out.append(
                    UserMessage.model_construct(
                        role="user", content=message.content, timestamp=message.timestamp
                    )
                )
        elif isinstance(message, BranchSummaryMessage):
            text = BRANCH_SUMMARY_PREFIX + message.summary + BRANCH_SUMMARY_SUFFIX
            out.append(_user_text(text, message.timestamp))
        elif isinstance(message, CompactionSummaryMessage):
            text = COMPACTION_SUMMARY_PREFIX + message.summary + COMPACTION_SUMMARY_SUFFIX
            out.append(_user_text(text, message.timestamp))
    return out
