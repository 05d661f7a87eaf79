"""Branch summaries: when the leaf moves to another part of the tree, what happened on the branch
left behind can be summarised into a ``branch_summary`` entry at the new position (pi's
``branch-summarization.ts``).

``collect_entries_for_branch_summary`` finds the abandoned entries (old leaf back to the common
ancestor), ``prepare_branch_entries`` keeps the newest ones that fit a token budget, and
``generate_branch_summary`` asks the model for the summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from ..agent.types import StreamFn
from ..ai.abort import AbortSignal
from ..ai.types import Model, TextContent, ToolResultMessage
from .compaction import (
    FileOperations,
    complete_summary,
    entry_to_message,
    format_file_operations,
    serialize_conversation,
)
from .entries import BranchSummaryEntry, CompactionEntry, SessionEntry
from .messages import HarnessMessage, convert_to_llm
from .prompts import BRANCH_SUMMARY_PREAMBLE, SUMMARIZATION_SYSTEM_PROMPT, branch_summary_prompt
from .session import Session
from .tokens import estimate_tokens

__all__ = [
    "BRANCH_SUMMARY_MAX_TOKENS",
    "NO_CONTENT_SUMMARY",
    "BranchEntries",
    "BranchPreparation",
    "BranchSummaryError",
    "BranchSummaryResult",
    "collect_entries_for_branch_summary",
    "generate_branch_summary",
    "prepare_branch_entries",
]

BRANCH_SUMMARY_MAX_TOKENS = 2048
"""Output budget of a branch summary."""

NO_CONTENT_SUMMARY = "No content to summarize"
"""The summary of a branch without any message to summarise."""


class BranchSummaryError(Exception):
    """A branch summary that could not be produced: ``code`` is ``aborted`` (the signal fired)
    or ``summarization_failed`` (the model call failed)."""

    def __init__(self, code: Literal["aborted", "summarization_failed"], message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class BranchEntries:
    """The entries left behind (oldest first) and the deepest entry both positions share."""

    entries: list[SessionEntry]
    common_ancestor_id: str | None


def collect_entries_for_branch_summary(
    session: Session, old_leaf_id: str | None, target_id: str
) -> BranchEntries:
    """The entries from ``old_leaf_id`` back to (not including) its common ancestor with
    ``target_id``, oldest first. Nothing when there is no old leaf."""
    if old_leaf_id is None:
        return BranchEntries([], None)
    old_path = {entry.id for entry in session.get_branch(old_leaf_id)}
    common = next((e.id for e in reversed(session.get_branch(target_id)) if e.id in old_path), None)
    entries: list[SessionEntry] = []
    current = session.get_entry(old_leaf_id)
    while current is not None and current.id != common:
        entries.append(current)
        current = None if current.parent_id is None else session.get_entry(current.parent_id)
    entries.reverse()
    return BranchEntries(entries, common)


@dataclass(slots=True)
class BranchPreparation:
    """The messages to summarise (oldest first), their file operations and estimated size."""

    messages: list[HarnessMessage] = field(default_factory=list)
    file_ops: FileOperations = field(default_factory=FileOperations)
    total_tokens: int = 0


def prepare_branch_entries(
    entries: Sequence[SessionEntry], token_budget: int = 0
) -> BranchPreparation:
    """Select what to summarise: newest first, until ``token_budget`` (0: no limit) is used up.

    Tool results are left out (their calls say enough); compactions and branch summaries come
    in as their summaries, and one that does not fit is still taken while less than 90% of the
    budget is used. File operations come from every tool call taken and from the details of
    every earlier generated branch summary.
    """
    preparation = BranchPreparation()
    for entry in entries:
        if isinstance(entry, BranchSummaryEntry) and not entry.from_hook:
            preparation.file_ops.add_details(entry.details)
    taken: list[HarnessMessage] = []
    for entry in reversed(entries):
        message = entry_to_message(entry)
        if message is None or isinstance(message, ToolResultMessage):
            continue
        preparation.file_ops.add_message(message)
        tokens = estimate_tokens(message)
        if token_budget > 0 and preparation.total_tokens + tokens > token_budget:
            is_summary = isinstance(entry, CompactionEntry | BranchSummaryEntry)
            if is_summary and preparation.total_tokens < 0.9 * token_budget:
                taken.append(message)
                preparation.total_tokens += tokens
            break
        taken.append(message)
        preparation.total_tokens += tokens
    taken.reverse()
    preparation.messages = taken
    return preparation


@dataclass(frozen=True, slots=True)
class BranchSummaryResult:
    """A generated branch summary (preamble and file lists included) and its file lists."""

    summary: str
    read_files: list[str]
    modified_files: list[str]

    def details(self) -> dict[str, list[str]]:
        """The ``details`` pi stores with the entry."""
        return {"readFiles": list(self.read_files), "modifiedFiles": list(self.modified_files)}


async def generate_branch_summary(
    entries: Sequence[SessionEntry],
    model: Model,
    *,
    api_key: str | None = None,
    headers: dict[str, str] | None = None,
    signal: AbortSignal | None = None,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    reserve_tokens: int = 16384,
    stream_fn: StreamFn | None = None,
    system_prompt: str = SUMMARIZATION_SYSTEM_PROMPT,
) -> BranchSummaryResult:
    """Summarise abandoned ``entries`` with ``model`` (at most 2048 output tokens, no thinking).

    What fits ``model.context_window - reserve_tokens`` is sent. An empty selection gives the
    summary "No content to summarize" without a model call. Raises
    :class:`BranchSummaryError` if the call fails or is aborted.
    """
    budget = (model.context_window or 128_000) - reserve_tokens
    preparation = prepare_branch_entries(entries, budget)
    if not preparation.messages:
        return BranchSummaryResult(NO_CONTENT_SUMMARY, [], [])
    prompt = branch_summary_prompt(
        serialize_conversation(convert_to_llm(preparation.messages)),
        custom_instructions,
        replace_instructions,
    )
    reply = await complete_summary(
        model,
        system_prompt,
        prompt,
        max_tokens=BRANCH_SUMMARY_MAX_TOKENS,
        api_key=api_key,
        headers=headers,
        signal=signal,
        stream_fn=stream_fn,
    )
    if reply.stop_reason == "aborted":
        raise BranchSummaryError("aborted", reply.error_message or "Branch summary aborted")
    if reply.stop_reason == "error":
        raise BranchSummaryError(
            "summarization_failed", reply.error_message or "Summarization failed"
        )
    text = "\n".join(b.text for b in reply.content if isinstance(b, TextContent))
    read_files, modified_files = preparation.file_ops.file_lists()
    summary = BRANCH_SUMMARY_PREAMBLE + text + format_file_operations(read_files, modified_files)
    return BranchSummaryResult(summary, read_files, modified_files)
