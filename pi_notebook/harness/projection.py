"""A branch as the entries its context is built from, each with the messages it contributes.

pi 1.6 decides compaction over this *projection* (``buildSessionProjection``), not over the raw
path: after a compaction only the compaction itself (its system-message checkpoint and summary),
the entries it keeps (system messages left out: the checkpoint replaces them) and everything
after it count; an entry hidden by a context edit contributes no message (its tokens do not count
and it cannot start the kept part), a replaced one contributes its replacement. Keeping the entry
beside its messages tells where to cut, which ``Session.build_context`` (messages only) cannot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..ai.types import SystemMessage, TextContent
from .entries import (
    BranchSummaryEntry,
    CompactionEntry,
    ContextEditEntry,
    CustomMessageEntry,
    MessageEntry,
    SessionEntry,
    iso_to_ms,
)
from .messages import BranchSummaryMessage, CompactionSummaryMessage, CustomMessage, HarnessMessage

__all__ = ["ProjectedEntry", "entry_messages", "project_branch"]


@dataclass(frozen=True, slots=True)
class ProjectedEntry:
    """An entry of the projection and the messages it contributes to the context."""

    entry: SessionEntry
    messages: list[HarnessMessage]


def _ms(timestamp: str | None) -> int:
    try:
        return iso_to_ms(timestamp or "")
    except ValueError:
        return 0


def entry_messages(entry: SessionEntry) -> list[HarnessMessage]:
    """What an entry contributes to a context before any edit (pi's
    ``sessionEntryToContextMessages``): a message entry its message, a custom message and a
    non-empty branch summary their message, a compaction its checkpoint and summary."""
    if isinstance(entry, MessageEntry):
        return [entry.message]
    if isinstance(entry, CustomMessageEntry):
        custom = CustomMessage(
            custom_type=entry.custom_type,
            content=entry.content,
            display=entry.display,
            details=entry.details,
            timestamp=_ms(entry.timestamp),
        )
        return [custom]
    if isinstance(entry, BranchSummaryEntry) and entry.summary:
        summary = BranchSummaryMessage(
            summary=entry.summary, from_id=entry.from_id, timestamp=_ms(entry.timestamp)
        )
        return [summary]
    if isinstance(entry, CompactionEntry):
        compacted = CompactionSummaryMessage(
            summary=entry.summary, tokens_before=entry.tokens_before, timestamp=_ms(entry.timestamp)
        )
        checkpoint = entry.system_message
        return [compacted] if checkpoint is None else [checkpoint, compacted]
    return []


def _apply(messages: list[HarnessMessage], edit: ContextEditEntry | None) -> list[HarnessMessage]:
    if edit is None:
        return messages
    replacement = edit.replacement
    if replacement is None:
        return []
    out: list[HarnessMessage] = []
    for message in messages:
        if message.role in ("user", "assistant", "toolResult", "custom"):
            content = replacement.content
            if message.role in ("assistant", "toolResult") and isinstance(content, str):
                content = [TextContent(text=content)]
            message = message.model_copy(update={"content": content})
        out.append(message)
    return out


def project_branch(path: Sequence[SessionEntry]) -> list[ProjectedEntry]:
    """The projection of a root → leaf path (see the module docstring), in context order."""
    latest = next(
        (i for i in range(len(path) - 1, -1, -1) if isinstance(path[i], CompactionEntry)), -1
    )
    entries: list[SessionEntry]
    if latest < 0:
        entries = list(path)
    else:
        compaction = path[latest]
        assert isinstance(compaction, CompactionEntry)
        first = next(
            (i for i in range(latest) if path[i].id == compaction.first_kept_entry_id), latest
        )
        kept = [
            entry
            for entry in path[first:latest]
            if not (isinstance(entry, MessageEntry) and isinstance(entry.message, SystemMessage))
        ]
        entries = [compaction, *kept, *path[latest + 1 :]]
    edits: Mapping[str, ContextEditEntry] = {
        entry.target_id: entry for entry in entries if isinstance(entry, ContextEditEntry)
    }
    projected: list[ProjectedEntry] = []
    for index, entry in enumerate(entries):
        if isinstance(entry, CompactionEntry) and index > 0:
            messages: list[HarnessMessage] = []  # an older compaction among the kept entries
        else:
            messages = _apply(entry_messages(entry), edits.get(entry.id))
        projected.append(ProjectedEntry(entry, messages))
    return projected
