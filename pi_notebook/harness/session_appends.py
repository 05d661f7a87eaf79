"""The ``append_*`` methods of a session and its write path: each builds an entry as a child
of the leaf, writes it through an :class:`EntryWriter` and hands it to the tree, which moves
the leaf onto it.

A write that fails (read-only file, disk full) loses nothing the model said: message, summary
and usage entries stay in memory (``unsaved_entries``) and are written before the next entry,
or by ``flush()``; the append raises :class:`SessionWriteError` saying what was not saved, and
``write_error`` keeps it. Other entries (settings, labels, moves) are refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from ..ai.system_message import current_system_message
from ..ai.types import (
    AssistantMessage,
    Content,
    SystemMessage,
    TextContent,
    Tool,
    ToolReference,
    Usage,
    UserContent,
)
from .entries import (
    ActiveToolsChangeEntry,
    BranchSummaryEntry,
    CompactionEntry,
    ContextEditEntry,
    ContextEditReplacement,
    CustomEntry,
    CustomMessageEntry,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionEntry,
    SessionInfoEntry,
    ThinkingLevelChangeEntry,
    UsageEntry,
    iso_now,
)
from .messages import BranchSummaryMessage, CompactionSummaryMessage, HarnessMessage
from .session_tree import SessionTree, entry_ms
from .storage import SessionStorage

if TYPE_CHECKING:
    from .session_context import SessionContext

__all__ = ["EntryWriter", "SessionAppends", "SessionWriteError"]

_E = TypeVar("_E", bound=SessionEntry)


_KEPT_ON_FAILURE = (
    MessageEntry,
    CustomMessageEntry,
    CompactionEntry,
    BranchSummaryEntry,
    UsageEntry,
)
"""Entries kept in memory when their write fails: what the model said and what it cost."""


class SessionWriteError(OSError):
    """Entries of a session could not be written; they are kept in memory (``unsaved``) and
    written before the next entry, or by :meth:`Session.flush`."""

    def __init__(self, path: str, cause: BaseException, unsaved: Sequence[SessionEntry]) -> None:
        kinds = ", ".join(_describe(entry) for entry in unsaved[:5])
        more = f" and {len(unsaved) - 5} more" if len(unsaved) > 5 else ""
        what = f"{len(unsaved)} entr{'y' if len(unsaved) == 1 else 'ies'} ({kinds}{more})"
        super().__init__(
            f"Could not write the session {path}: {cause}. Not saved yet: {what}; they are kept "
            "in memory and written with the next entry or Session.flush()"
            if unsaved
            else f"Could not write the session {path}: {cause}"
        )
        self.path = path
        self.cause = cause
        self.unsaved = list(unsaved)


def _describe(entry: SessionEntry) -> str:
    if isinstance(entry, MessageEntry):
        return f"{entry.message.role} message {entry.id}"
    return f"{entry.type} {entry.id}"


class EntryWriter:
    """Writes a session's entries through its storage, keeping what a failed write must not
    lose; ``take`` hands each entry to the tree once it is written (or kept)."""

    __slots__ = ("storage", "take", "unsaved", "write_error")

    def __init__(self, storage: SessionStorage, take: Callable[[SessionEntry], None]) -> None:
        self.storage = storage
        self.take = take
        self.unsaved: list[SessionEntry] = []
        self.write_error: SessionWriteError | None = None
        """The last failed write while entries are still unsaved (``None`` once all are on
        disk)."""

    def append(self, entry: SessionEntry) -> None:
        try:
            self._write_unsaved()
            self.storage.append(entry)
        except OSError as exc:
            if not isinstance(entry, _KEPT_ON_FAILURE):
                raise self._failed(exc) from exc
            self.take(entry)
            self.unsaved.append(entry)
            raise self._failed(exc) from exc
        self.take(entry)

    def flush(self) -> int:
        """Write the entries a failed write left in memory; returns how many were written."""
        count = len(self.unsaved)
        try:
            self._write_unsaved()
        except OSError as exc:
            raise self._failed(exc) from exc
        return count

    def _write_unsaved(self) -> None:
        unsaved = self.unsaved
        while unsaved:
            self.storage.append(unsaved[0])
            unsaved.pop(0)
        self.write_error = None

    def _failed(self, exc: OSError) -> SessionWriteError:
        if isinstance(exc, SessionWriteError):
            exc = exc.cause if isinstance(exc.cause, OSError) else exc
        error = SessionWriteError(str(self.storage.path or "<memory>"), exc, self.unsaved)
        if self.unsaved:
            self.write_error = error
        return error


class SessionAppends:
    """What :class:`~pi_notebook.harness.Session` appends, and how: its ``append_*`` methods,
    ``flush`` and the entries a failed write left unsaved."""

    _tree: SessionTree
    _writer: EntryWriter

    if TYPE_CHECKING:

        def build_context(self) -> SessionContext: ...

    @property
    def write_error(self) -> SessionWriteError | None:
        """The last failed write while entries are still unsaved (``None`` once all are on
        disk)."""
        return self._writer.write_error

    @property
    def unsaved_entries(self) -> list[SessionEntry]:
        """Entries kept in memory whose write failed (oldest first); empty when all are saved."""
        return list(self._writer.unsaved)

    def flush(self) -> int:
        """Write the entries a failed write left in memory; returns how many were written.

        Raises :class:`SessionWriteError` (with what is still unsaved) if the storage still fails.
        """
        return self._writer.flush()

    def _append(self, entry: _E) -> _E:
        self._writer.append(entry)
        return entry

    def _base(self) -> dict[str, Any]:
        return {"id": self._tree.new_id(), "parent_id": self._tree.leaf_id, "timestamp": iso_now()}

    def append_message(self, message: HarnessMessage) -> MessageEntry:
        """Append a transcript message (user, assistant, tool result, bash execution, custom).

        Summaries are entries of their own: use :meth:`append_compaction` and
        :meth:`append_branch_summary` instead of appending summary messages.
        """
        if isinstance(message, BranchSummaryMessage | CompactionSummaryMessage):
            raise ValueError(
                f"{message.role} messages are appended as append_compaction/append_branch_summary"
            )
        if isinstance(message, SystemMessage):
            self._check_system_message(message)
        elif isinstance(message, AssistantMessage) and message.stop_reason == "pending":
            raise ValueError("A reply still streaming (stop reason 'pending') is not persisted")
        return self._append(MessageEntry(**self._base(), message=message))

    def append_system_message(
        self,
        content: str | Sequence[TextContent] = "",
        *,
        sections: Mapping[str, str | None] | None = None,
        tools_added: Sequence[Tool] | None = None,
        tools_removed: Sequence[str] | None = None,
        timestamp: int | None = None,
    ) -> MessageEntry:
        """Append a pi 1.6 system message: more instructions, section patches (``None`` deletes
        a section), tools added (a name declared again is redefined in place) or removed.

        Refused (``ValueError``) when it changes nothing, removes a tool the branch does not
        declare, or adds the same name twice; the replayed result is on ``build_context()``.
        """
        message = SystemMessage(
            content=content if isinstance(content, str) else list(content),
            sections=None if sections is None else dict(sections),
            tools_added=None if tools_added is None else list(tools_added),
            tools_removed=None
            if tools_removed is None
            else [ToolReference(name=name) for name in tools_removed],
            **({} if timestamp is None else {"timestamp": timestamp}),
        )
        return self.append_message(message)

    def _check_system_message(self, message: SystemMessage) -> None:
        if not (message.text or message.sections or message.tools_added or message.tools_removed):
            raise ValueError("A system message must add text, patch a section or change tools")
        for name in message.sections or {}:
            if not name:
                raise ValueError("System prompt section names must not be empty")
        added = [tool.name for tool in message.tools_added or ()]
        twice = sorted({name for name in added if added.count(name) > 1})
        if twice:
            raise ValueError(f"A system message adds tool(s) twice: {', '.join(twice)}")
        if message.tools_removed:
            declared = set(self.build_context().tool_names or ())
            missing = [ref.name for ref in message.tools_removed if ref.name not in declared]
            if missing:
                raise ValueError(f"Cannot remove undeclared tool(s): {', '.join(missing)}")

    def append_usage(
        self,
        kind: str,
        provider: str,
        model: str,
        usage: Usage | Mapping[str, Any],
        note: str | None = None,
    ) -> UsageEntry:
        """Record tokens spent outside the transcript (e.g. ``kind="cache_warm"``): no context
        message, but counted in :meth:`usage_totals`."""
        if not kind:
            raise ValueError("A usage entry needs a kind (e.g. 'cache_warm')")
        spent = usage if isinstance(usage, Usage) else Usage.model_validate(usage)
        return self._append(
            UsageEntry(
                **self._base(),
                kind=kind,
                provider=provider,
                model=model,
                usage=spent,
                note=note or None,
            )
        )

    def append_context_edit(
        self,
        target_id: str,
        replacement: str | Sequence[Content] | ContextEditReplacement | Mapping[str, Any] | None,
    ) -> ContextEditEntry:
        """Hide (``None``) or replace the content of an earlier message in future contexts.

        The target must be a user, assistant or tool-result message or a custom message on the
        branch to the leaf; a string replacing an assistant or tool-result content is stored as
        one text block (pi 1.6's rules). The raw history is untouched.
        """
        normalized = _replacement(replacement)
        target = self._tree.require(target_id)
        if not any(entry.id == target_id for entry in self._tree.path_to(self._tree.leaf_id)):
            raise ValueError(f"Entry {target_id} is not on the active branch")
        role = None
        if isinstance(target, MessageEntry):
            role = target.message.role
        elif isinstance(target, CustomMessageEntry):
            role = "custom"
        if role not in ("user", "assistant", "toolResult", "custom"):
            raise ValueError(f"Entry {target_id} does not contribute editable model content")
        if (
            normalized is not None
            and role in ("assistant", "toolResult")
            and isinstance(normalized.content, str)
        ):
            normalized = normalized.model_copy(
                update={"content": [TextContent(text=normalized.content)]}
            )
        return self._append(
            ContextEditEntry(**self._base(), target_id=target_id, replacement=normalized)
        )

    def append_model_change(self, provider: str, model_id: str) -> ModelChangeEntry:
        return self._append(ModelChangeEntry(**self._base(), provider=provider, model_id=model_id))

    def append_thinking_level_change(self, thinking_level: str) -> ThinkingLevelChangeEntry:
        return self._append(ThinkingLevelChangeEntry(**self._base(), thinking_level=thinking_level))

    def append_active_tools_change(self, names: Iterable[str]) -> ActiveToolsChangeEntry:
        return self._append(ActiveToolsChangeEntry(**self._base(), active_tool_names=list(names)))

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str | None,
        tokens_before: int,
        details: Any = None,
        from_hook: bool | None = None,
        usage: Usage | None = None,
    ) -> CompactionEntry:
        """Record a compaction: in the context, ``summary`` replaces everything on the branch
        before ``first_kept_entry_id`` (``None``: everything, pi 1.6's retain-none).

        The replayed system message at this point is snapshotted on the entry (pi 1.6), so the
        context after it still starts with the system prompt and tools.
        """
        base = self._base()
        state = current_system_message(self.build_context().messages)
        snapshot = (
            None
            if state is None
            else state.model_copy(update={"timestamp": entry_ms(base["timestamp"])})
        )
        return self._append(
            CompactionEntry(
                **base,
                summary=summary,
                first_kept_entry_id=base["id"]
                if first_kept_entry_id is None
                else first_kept_entry_id,
                tokens_before=tokens_before,
                details=details,
                usage=usage,
                from_hook=from_hook,
                system_message=snapshot,
            )
        )

    def append_branch_summary(
        self,
        summary: str,
        from_id: str | None = None,
        details: Any = None,
        from_hook: bool | None = None,
        usage: Usage | None = None,
    ) -> BranchSummaryEntry:
        """Append the summary of an abandoned branch at the leaf.

        Navigation is ``set_leaf(target)`` then this; ``from_id`` defaults to the leaf (or
        ``"root"`` when the leaf is ``None``), as pi writes it.
        """
        if from_id is None:
            from_id = self._tree.leaf_id if self._tree.leaf_id is not None else "root"
        return self._append(
            BranchSummaryEntry(
                **self._base(),
                from_id=from_id,
                summary=summary,
                details=details,
                usage=usage,
                from_hook=from_hook,
            )
        )

    def append_custom(self, custom_type: str, data: Any = None) -> CustomEntry:
        """Extension state (not part of the context)."""
        return self._append(CustomEntry(**self._base(), custom_type=custom_type, data=data))

    def append_custom_message(
        self,
        custom_type: str,
        content: str | Sequence[UserContent],
        display: bool = True,
        details: Any = None,
    ) -> CustomMessageEntry:
        """Extension content that enters the context as a user message."""
        body = content if isinstance(content, str) else list(content)
        return self._append(
            CustomMessageEntry(
                **self._base(),
                custom_type=custom_type,
                content=body,
                display=display,
                details=details,
            )
        )

    def append_label(self, target_id: str, label: str | None) -> LabelEntry:
        """Label an entry; ``None`` or ``""`` clears its label. Written as given, as pi's
        ``appendLabelChange`` does: a label of white space is a label for pi too (an input
        box trims what the user typed first, as pi's label input does)."""
        self._tree.require(target_id)
        return self._append(LabelEntry(**self._base(), target_id=target_id, label=label))

    def append_session_info(self, name: str) -> SessionInfoEntry:
        """Name the session (trimmed; an empty name clears it)."""
        return self._append(SessionInfoEntry(**self._base(), name=name.strip()))


def _replacement(value: object) -> ContextEditReplacement | None:
    """A context edit's replacement from ``None``, content, ``{"content": …}`` or the model."""
    if value is None or isinstance(value, ContextEditReplacement):
        return value
    raw = value if isinstance(value, Mapping) else {"content": value}
    content = raw.get("content")
    if not isinstance(content, str | list | tuple):
        raise ValueError("A context edit replacement must be None or string/list content")
    try:
        return ContextEditReplacement.model_validate(
            {**raw, "content": content if isinstance(content, str) else list(content)}
        )
    except ValidationError as exc:
        raise ValueError(f"Invalid context edit replacement: {exc}") from None
