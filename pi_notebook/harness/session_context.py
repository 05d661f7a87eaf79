"""What the model sees at a session's leaf: :class:`SessionContext`, and the steps that
:meth:`Session.build_context` takes over the entries on the path to the leaf.

The steps read the index's lists (types, ids) to find the settings, the compaction and the
context edits on the path, so a long branch of messages is read in C-level passes and only the
entries that matter are read (and built from their lines).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import compress, count, repeat
from operator import attrgetter, eq
from typing import Any, TypeVar

from pydantic import Field

from ..ai.types import AssistantMessage, PiModel, SystemMessage, TextContent, Tool
from .entries import (
    ActiveToolsChangeEntry,
    BranchSummaryEntry,
    CompactionEntry,
    ContextEditEntry,
    CustomMessageEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionEntry,
    ThinkingLevelChangeEntry,
)
from .entry_list import EntryList
from .messages import HarnessMessage
from .projection import entry_messages

__all__ = [
    "ModelRef",
    "SessionContext",
    "collect_messages",
    "context_edits",
    "context_messages",
    "is_system",
    "last_at",
    "last_of",
    "latest_edits",
    "model_source",
    "where",
]

_E = TypeVar("_E", bound=SessionEntry)


class ModelRef(PiModel):
    """Which model a branch last used: ``{"provider": …, "modelId": …}``."""

    provider: str
    model_id: str


class SessionContext(PiModel):
    """What the model sees at the leaf: messages, thinking level, model, active tools.

    ``active_tool_names`` is ``None`` when the branch never changed them (use the defaults).
    ``system_prompt``, ``tools`` and ``tool_names`` are the replayed state of the system
    messages among ``messages`` (pi 1.6), ``None`` when there are none.
    The messages are the session's own objects: treat them as read-only.
    """

    messages: list[HarnessMessage] = Field(default_factory=list)
    thinking_level: str = "off"
    model: ModelRef | None = None
    active_tool_names: list[str] | None = None
    system_prompt: str | None = None
    tools: list[Tool] | None = None
    tool_names: list[str] | None = None


_MESSAGE = attrgetter("message")
_KIND: dict[type[Any], str] = {
    ThinkingLevelChangeEntry: "thinking_level_change",
    ActiveToolsChangeEntry: "active_tools_change",
    CompactionEntry: "compaction",
}
"""The ``type`` of the entry classes whose last one on a path :func:`last_at` finds."""


def where(positions: list[int], kinds: list[str], kind: str) -> list[int]:
    """The positions whose entry is of type ``kind``."""
    return list(compress(positions, map(eq, kinds, repeat(kind))))


def is_system(entry: SessionEntry) -> bool:
    return isinstance(entry, MessageEntry) and type(entry.message) is SystemMessage


def last_at(
    entries: EntryList, positions: list[int], kinds: list[str], present: set[str], cls: type[Any]
) -> int:
    """Where on the path the last entry of class ``cls`` is (-1: none)."""
    kind = _KIND[cls]
    if kind not in present:
        return -1
    backwards, last = kinds[::-1], len(kinds) - 1
    found = backwards.index(kind)
    while type(entries[positions[last - found]]) is not cls:
        try:
            found = backwards.index(kind, found + 1)
        except ValueError:
            return -1
    return last - found


def last_of(
    entries: EntryList, positions: list[int], kinds: list[str], present: set[str], cls: type[_E]
) -> _E | None:
    at = last_at(entries, positions, kinds, present, cls)
    return None if at < 0 else entries[positions[at]]  # type: ignore[return-value]


def model_source(
    entries: EntryList, positions: list[int], kinds: list[str]
) -> ModelChangeEntry | AssistantMessage | None:
    """The last model choice on the path: a model change, or an assistant message."""
    for at in range(len(kinds) - 1, -1, -1):
        kind = kinds[at]
        if kind == "message":
            entry = entries[positions[at]]
            if type(entry) is MessageEntry and type(entry.message) is AssistantMessage:
                return entry.message
        elif kind == "model_change":
            entry = entries[positions[at]]
            if type(entry) is ModelChangeEntry:
                return entry
    return None


def context_edits(
    entries: EntryList, positions: list[int], kinds: list[str]
) -> dict[str, ContextEditEntry]:
    """The latest context edit of each target among the entries at ``positions``."""
    return latest_edits(entries.take(where(positions, kinds, "context_edit")))


def context_messages(
    entries: EntryList,
    ids: list[str],
    positions: list[int],
    kinds: list[str],
    present: set[str],
    edits: Mapping[str, ContextEditEntry] | None,
) -> list[HarnessMessage]:
    """The context messages of the entries at ``positions`` (see ``Session.build_context``)."""
    if "custom_message" in present or "branch_summary" in present:
        messages: list[HarnessMessage] = []
        collect_messages(messages, entries.take(positions), edits)
        return messages
    chosen = positions if present == {"message"} else where(positions, kinds, "message")
    chosen_entries = entries.take(chosen)
    if set(map(type, chosen_entries)) - {MessageEntry}:  # (a hand-made or unreadable entry)
        messages = []
        collect_messages(messages, entries.take(positions), edits)
        return messages
    messages = list(map(_MESSAGE, chosen_entries))
    if not edits:
        return messages
    hits = list(compress(count(), map(edits.__contains__, map(ids.__getitem__, chosen))))
    if not hits:
        return messages
    edited: list[HarnessMessage] = []
    done = 0
    for at in hits:
        edited += messages[done:at]
        edit = edits[ids[chosen[at]]]
        if edit.replacement is not None:
            edited.append(edited_message(messages[at], edit))
        done = at + 1
    edited += messages[done:]
    return edited


def latest_edits(entries: Iterable[SessionEntry]) -> dict[str, ContextEditEntry]:
    """The latest context edit of each target among ``entries``."""
    return {e.target_id: e for e in entries if isinstance(e, ContextEditEntry)}


def edited_message(message: HarnessMessage, edit: ContextEditEntry) -> HarnessMessage:
    """``message`` with an edit's replacement content (pi: user, assistant, toolResult, custom)."""
    replacement = edit.replacement
    assert replacement is not None
    role = message.role
    if role not in ("user", "assistant", "toolResult", "custom"):
        return message
    content = replacement.content
    if role in ("assistant", "toolResult") and isinstance(content, str):
        content = [TextContent(text=content)]
    return message.model_copy(update={"content": content})


def collect_messages(
    messages: list[HarnessMessage],
    entries: Sequence[SessionEntry],
    edits: Mapping[str, ContextEditEntry] | None = None,
) -> None:
    """Append the context messages of ``entries`` (see ``Session.build_context``)."""
    for entry in entries:
        message: HarnessMessage
        if isinstance(entry, MessageEntry):
            message = entry.message
        elif isinstance(entry, CustomMessageEntry | BranchSummaryEntry):
            made = entry_messages(entry)  # (an empty branch summary adds none)
            if not made:
                continue
            message = made[0]
        else:
            continue
        if edits is not None and (edit := edits.get(entry.id)) is not None:
            if edit.replacement is None:
                continue
            message = edited_message(message, edit)
        messages.append(message)
