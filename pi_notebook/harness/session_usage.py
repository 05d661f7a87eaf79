"""What a session cost: tokens and dollars over every entry, as pi's ``getSessionStats``
counts them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..ai.types import AssistantMessage, ToolResultMessage, Usage
from .entries import BranchSummaryEntry, CompactionEntry, MessageEntry, SessionEntry, UsageEntry

__all__ = ["USAGE_TYPES", "UsageTotals", "usage_totals"]

USAGE_TYPES = ("message", "usage", "compaction", "branch_summary")
"""The types of the entries that can carry usage (the others need not be read)."""


@dataclass(slots=True)
class UsageTotals:
    """Tokens and dollars over every entry of the session (compacted history included), as pi's
    ``getSessionStats`` counts them: assistant replies, tool results, compactions, branch
    summaries and ``usage`` entries."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write

    def add(self, usage: Usage) -> None:
        self.input += usage.input
        self.output += usage.output
        self.cache_read += usage.cache_read
        self.cache_write += usage.cache_write
        self.cost += usage.cost.total


def usage_totals(entries: Iterable[SessionEntry]) -> UsageTotals:
    """The totals of ``entries`` (what was billed)."""
    totals = UsageTotals()
    for entry in entries:
        usage: Usage | None = None
        if isinstance(entry, MessageEntry):
            message = entry.message
            if isinstance(message, AssistantMessage | ToolResultMessage):
                usage = message.usage
        elif isinstance(entry, UsageEntry | CompactionEntry | BranchSummaryEntry):
            usage = entry.usage
        if usage is not None:
            totals.add(usage)
    return totals
