"""Token estimates for compaction: pi's chars/4 heuristic and the context size of a transcript.

Providers report exact usage only for the requests they served, so the size of the context is
taken from the last assistant reply with trustworthy usage, plus a character-based estimate of
every message after it. pi 1.6 decides compaction on the *projected* context (what the next
request will hold): that reply's usage stops counting once a context edit or a compaction came
after it, since the request it measured is no longer what will be sent. Lengths are counted as
JavaScript does (UTF-16 code units) and tool-call arguments are measured as ``JSON.stringify``
writes them, so the numbers match pi's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..ai.js_json import stringify
from ..ai.system_message import current_system_message
from ..ai.types import (
    AssistantMessage,
    ImageContent,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from .entries import CompactionEntry, ContextEditEntry, MessageEntry, SessionEntry
from .messages import (
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
)

__all__ = [
    "IMAGE_CHARS",
    "ContextTokenEstimate",
    "calculate_context_tokens",
    "estimate_context_tokens",
    "estimate_projected_context_tokens",
    "estimate_text_tokens",
    "estimate_tokens",
    "js_json_stringify",
    "js_length",
    "usable_usage",
]

IMAGE_CHARS = 4800
"""What one image counts for (≈ 1200 tokens): large on purpose, compacting early is cheap."""


def js_length(text: str) -> int:
    """``text.length`` in JavaScript: UTF-16 code units (astral characters count twice)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def js_json_stringify(value: Any) -> str:
    """``JSON.stringify(value)``: compact, non-ASCII kept, integral floats without ``.0``.

    Values JSON cannot hold are written as their ``str`` (pi writes a placeholder rather than
    fail an estimate or a summary over one odd argument).
    """
    return stringify(value, default=str)


def _content_chars(content: str | Sequence[Any]) -> int:
    if isinstance(content, str):
        return js_length(content)
    chars = 0
    for block in content:
        if isinstance(block, TextContent):
            chars += js_length(block.text)
        elif isinstance(block, ImageContent):
            chars += IMAGE_CHARS
    return chars


def _tokens(chars: int) -> int:
    return (chars + 3) // 4


def estimate_text_tokens(*texts: str) -> int:
    """pi's estimate for plain text: ``ceil(chars / 4)`` over all of ``texts``."""
    return _tokens(sum(js_length(text) for text in texts))


def estimate_tokens(message: object) -> int:
    """pi's estimate of one message's tokens: ``ceil(chars / 4)``.

    Counted: text of user, tool-result and custom messages (+4800 chars per image), text,
    thinking and tool calls (name + JSON arguments) of assistant replies, command and output of
    shell runs, summaries, and (pi 1.6) a system message's text, section values and the JSON of
    the tools it adds. Messages of unknown roles count 0.
    """
    if isinstance(message, SystemMessage):
        chars = _content_chars(message.content)
        chars += sum(js_length(v) for v in (message.sections or {}).values() if v)
        if message.tools_added:
            tools = [tool.to_json_dict() for tool in message.tools_added]
            chars += js_length(js_json_stringify(tools))
        return _tokens(chars)
    if isinstance(message, AssistantMessage):
        chars = 0
        for block in message.content:
            if isinstance(block, TextContent):
                chars += js_length(block.text)
            elif isinstance(block, ThinkingContent):
                chars += js_length(block.thinking)
            elif isinstance(block, ToolCall):
                chars += js_length(block.name) + js_length(js_json_stringify(block.arguments))
        return _tokens(chars)
    if isinstance(message, UserMessage | ToolResultMessage | CustomMessage):
        return _tokens(_content_chars(message.content))
    if isinstance(message, BashExecutionMessage):
        return _tokens(js_length(message.command) + js_length(message.output))
    if isinstance(message, BranchSummaryMessage | CompactionSummaryMessage):
        return _tokens(js_length(message.summary))
    return 0


def calculate_context_tokens(usage: Usage) -> int:
    """The context a reply's request used: ``total_tokens``, or the sum of its parts."""
    return usage.total_tokens or (usage.input + usage.output + usage.cache_read + usage.cache_write)


def usable_usage(message: object) -> Usage | None:
    """The usage of an assistant reply if it can be trusted: not aborted, not failed, not zero."""
    if (
        isinstance(message, AssistantMessage)
        and message.stop_reason != "aborted"
        and message.stop_reason != "error"
        and calculate_context_tokens(message.usage) > 0
    ):
        return message.usage
    return None


@dataclass(frozen=True, slots=True)
class ContextTokenEstimate:
    """How large a transcript is as context.

    ``tokens`` = ``usage_tokens`` (reported by the last reply with usable usage, at
    ``last_usage_index``) + ``trailing_tokens`` (estimated for the messages after it). Without
    any usable usage, ``last_usage_index`` is ``None`` and everything is estimated.
    """

    tokens: int
    usage_tokens: int
    trailing_tokens: int
    last_usage_index: int | None


def estimate_context_tokens(messages: Sequence[object]) -> ContextTokenEstimate:
    """The context size of ``messages`` (see :class:`ContextTokenEstimate`)."""
    for index in range(len(messages) - 1, -1, -1):
        usage = usable_usage(messages[index])
        if usage is not None:
            reported = calculate_context_tokens(usage)
            trailing = sum(estimate_tokens(m) for m in messages[index + 1 :])
            return ContextTokenEstimate(reported + trailing, reported, trailing, index)
    estimated = sum(estimate_tokens(m) for m in messages)
    return ContextTokenEstimate(estimated, 0, estimated, None)


def estimate_projected_context_tokens(
    messages: Sequence[object], branch: Sequence[SessionEntry]
) -> ContextTokenEstimate:
    """The size of the next request pi 1.6 uses to decide compaction (its
    ``estimateProjectedContextTokens``).

    ``messages`` is the context at the leaf (``Session.build_context().messages``) and ``branch``
    the root → leaf entries. As :func:`estimate_context_tokens` while the reply whose usage it
    takes was written after the latest context edit or compaction on the branch; otherwise that
    usage measured another context, and everything is estimated: the replayed system message
    once, then every message that is not a system message.
    """
    estimate = estimate_context_tokens(messages)
    if estimate.last_usage_index is not None:
        measured = messages[estimate.last_usage_index]
        latest = next(
            (
                index
                for index in range(len(branch) - 1, -1, -1)
                if isinstance(branch[index], ContextEditEntry | CompactionEntry)
            ),
            -1,
        )
        if any(
            isinstance(entry, MessageEntry) and entry.message is measured
            for entry in branch[latest + 1 :]
        ):
            return estimate
    system = current_system_message(messages)
    tokens = estimate_tokens(system) if system is not None else 0
    tokens += sum(estimate_tokens(m) for m in messages if not isinstance(m, SystemMessage))
    return ContextTokenEstimate(tokens, 0, tokens, None)
