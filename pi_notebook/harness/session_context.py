"""What the model sees at a leaf of a session's entries: :class:`SessionContext`, made by
:func:`build_context` (pi 1.6's ``buildSessionContext``, a function of the entries and the leaf;
``Session.build_context`` is it at the session's own leaf).

The steps read the index's lists (types, ids) to find the settings, the compaction and the
context edits on the path, so a long branch of messages is read in C-level passes and only the
entries that matter are read (and built from their lines). The messages themselves are read
when the context's :class:`~pi_notebook.harness.context_messages.ContextMessages` is first read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import compress, count, repeat
from operator import eq
from typing import Any, TypeVar

from pydantic import Field, SerializerFunctionWrapHandler, field_serializer

from ..ai.system_message import current_system_message, system_message_text
from ..ai.types import AssistantMessage, PiModel, SystemMessage, TextContent, Tool
from .context_messages import ContextMessages
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
from .entry_list import EntryList, SessionFileError
from .messages import CompactionSummaryMessage, HarnessMessage
from .projection import entry_messages
from .session_index import SessionIndex
from .session_tree import entry_ms

__all__ = [
    "ModelRef",
    "SessionContext",
    "build_context",
    "collect_messages",
    "context_at",
    "context_edits",
    "context_messages",
    "last_at",
    "last_of",
    "latest_edits",
    "model_source",
    "system_messages",
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
    ``messages`` is a sequence read from the session's lines on first use (a list when the
    context is made by hand); they are the session's own objects: treat them as read-only.
    """

    messages: Sequence[HarnessMessage] = Field(default_factory=list)
    thinking_level: str = "off"
    model: ModelRef | None = None
    active_tool_names: list[str] | None = None
    system_prompt: str | None = None
    tools: list[Tool] | None = None
    tool_names: list[str] | None = None

    @field_serializer("messages", mode="wrap")
    def _messages_as_list(
        self, messages: Sequence[HarnessMessage], handler: SerializerFunctionWrapHandler
    ) -> Any:
        return handler(list(messages))  # (a context's own sequence is read first)


_KIND: dict[type[Any], str] = {
    ThinkingLevelChangeEntry: "thinking_level_change",
    ActiveToolsChangeEntry: "active_tools_change",
    CompactionEntry: "compaction",
}
"""The ``type`` of the entry classes whose last one on a path :func:`last_at` finds."""


def where(positions: list[int], kinds: list[str], kind: str) -> list[int]:
    """The positions whose entry is of type ``kind``."""
    return list(compress(positions, map(eq, kinds, repeat(kind))))


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
            found = entries.messages([positions[at]])
            if found is not None and type(found[0]) is AssistantMessage:
                return found[0]
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
    found = entries.messages(chosen)
    if found is None:  # (a hand-made or unreadable entry)
        messages = []
        collect_messages(messages, entries.take(positions), edits)
        return messages
    messages = found
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


def system_messages(index: SessionIndex, positions: list[int]) -> dict[int, SystemMessage]:
    """The system messages among the entries at ``positions``, by position, in path order
    (the index knows where they are: only they are read)."""
    if not index.systems:
        return {}
    chosen = list(compress(positions, map(set(index.systems).__contains__, positions)))
    entries = index.entries
    found: Sequence[HarnessMessage | None] | None = entries.messages(chosen)
    if found is None:  # (an unreadable entry, read leniently)
        found = [e.message if isinstance(e, MessageEntry) else None for e in entries.take(chosen)]
    return {p: m for p, m in zip(chosen, found, strict=True) if type(m) is SystemMessage}


def _without(positions: list[int], left_out: list[int]) -> list[int]:
    """``positions`` less ``left_out``."""
    if not left_out:
        return positions
    drop = set(left_out)
    return [p for p in positions if p not in drop]


def build_context(
    entries: Sequence[SessionEntry] | SessionIndex, leaf_id: str | None
) -> SessionContext:
    """What the model sees at ``leaf_id`` among ``entries`` (pi 1.6's ``buildSessionContext``,
    same messages in the same order); ``None`` is the position before the first entry (an empty
    context).

    ``entries`` are a session's entries in file order, or their :class:`SessionIndex` (a
    session's own, ``Session.index``: nothing to index again, and only the entries on the path
    that matter are read). Thinking level, model and active tools are the last ones set on the
    branch (an assistant message counts as a model choice). Without a compaction the messages
    are those of the branch's message, custom-message and non-empty branch-summary entries
    (system messages included). With one, only the newest counts: its system-message checkpoint
    and summary, then the branch from ``first_kept_entry_id`` up to it (system messages left
    out: the checkpoint replaces them), then everything after it. The latest context edit of
    each target among those entries hides or replaces its content. ``system_prompt``, ``tools``
    and ``tool_names`` replay the system messages of the result.
    """
    index = entries if isinstance(entries, SessionIndex) else SessionIndex(entries)
    start = None
    if leaf_id is not None:
        start = index.positions.get(leaf_id)
        if start is None:
            raise ValueError(f"Entry {leaf_id} not found among the entries")
    positions = index.path(start)
    if positions is None:
        raise SessionFileError(index.entries.source, None, "cycle in parent ids")
    return context_at(index, positions)


def context_at(index: SessionIndex, positions: list[int]) -> SessionContext:
    """:func:`build_context` at the end of the path ``positions`` (root first) of ``index``."""
    # Walked in the index's lists: the entries' types say where the settings, the
    # compaction and the edits are, so a long branch of messages is read in C-level passes
    # (only the messages and the few entries that matter are touched).
    entries, ids, types = index.entries, index.ids, index.types
    kinds = list(map(types.__getitem__, positions))
    present = set(kinds)
    thinking = last_of(entries, positions, kinds, present, ThinkingLevelChangeEntry)
    tools_change = last_of(entries, positions, kinds, present, ActiveToolsChangeEntry)
    at = last_at(entries, positions, kinds, present, CompactionEntry)
    thinking_level = "off" if thinking is None else thinking.thinking_level
    active_tools = None if tools_change is None else tools_change.active_tool_names
    source = model_source(entries, positions, kinds)
    edited = "context_edit" in present and any(
        type(entries[p]) is ContextEditEntry for p in where(positions, kinds, "context_edit")
    )

    # The messages are read when the context's sequence is first read; the system prompt
    # and tools are replayed now from the system messages alone.
    prefix: list[HarnessMessage] = []
    if at < 0:
        context, context_kinds = positions, kinds
        edits = context_edits(entries, context, context_kinds) if edited else None
    else:
        compaction = entries[positions[at]]
        assert isinstance(compaction, CompactionEntry)
        kept = positions[:at]
        kept_ids = list(map(ids.__getitem__, kept))
        first = compaction.first_kept_entry_id
        kept = kept[kept_ids.index(first) if first in kept_ids else len(kept) :]
        kept = _without(kept, list(system_messages(index, kept)))
        context = kept + positions[at + 1 :]
        context_kinds = list(map(types.__getitem__, context))
        edits = context_edits(entries, context, context_kinds) if edited else None
        edit = None if edits is None else edits.get(compaction.id)
        if edit is None or edit.replacement is not None:  # (a compaction is not editable)
            if compaction.system_message is not None:
                prefix.append(compaction.system_message)
            prefix.append(
                CompactionSummaryMessage(
                    summary=compaction.summary,
                    tokens_before=compaction.tokens_before,
                    timestamp=entry_ms(compaction.timestamp),
                )
            )
    shown = system_messages(index, context)
    if edits:  # (an edit hides a system message; it never replaces its content)
        for at_id in [p for p in shown if ids[p] in edits]:
            if edits[ids[at_id]].replacement is None:
                del shown[at_id]
    systems = [m for m in prefix if type(m) is SystemMessage]
    systems += shown.values()
    present_kinds = set(context_kinds)

    def read() -> list[HarnessMessage]:
        return prefix + context_messages(entries, ids, context, context_kinds, present_kinds, edits)

    model = None
    if isinstance(source, ModelChangeEntry):
        model = ModelRef(provider=source.provider, model_id=source.model_id)
    elif source is not None:
        model = ModelRef(provider=source.provider, model_id=source.model)
    system_prompt: str | None = None
    tools: list[Tool] | None = None
    state = current_system_message(systems) if systems else None
    if state is not None:
        system_prompt = system_message_text(state)
        tools = list(state.tools_added or ())
    return SessionContext.model_construct(
        messages=ContextMessages(read),
        thinking_level=thinking_level,
        model=model,
        active_tool_names=None if active_tools is None else list(active_tools),
        system_prompt=system_prompt,
        tools=tools,
        tool_names=None if tools is None else [tool.name for tool in tools],
    )
