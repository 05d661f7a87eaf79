"""``Session``: the conversation as an append-only tree of entries, with a movable leaf.

Every ``append_*`` adds a child of the current leaf and moves the leaf onto it; ``set_leaf``
moves the leaf back to any entry, so the next append starts a new branch. Nothing is ever
rewritten or deleted. ``build_context`` walks root → leaf and yields what the model sees, as pi
1.6's ``buildSessionContext`` does (system messages, compaction checkpoints, branch summaries and
context edits applied).

Leaf moves survive a reopen in pi 1.6 too. pi 1.6 has no ``leaf`` entry: it reads the last line
of a file as the leaf. ``set_leaf`` therefore writes a ``leaf`` entry (the 0.79 harness's record,
which pi 1.6 keeps as an unknown entry that adds nothing to the context) whose ``parentId`` is the
target itself, so pi walks from it to the target's branch. Older files whose leaf entries hang
under the previous leaf still open here at their ``targetId``.

A write that fails (read-only file, disk full) loses nothing the model said: message, summary and
usage entries stay in memory (``unsaved_entries``) and are written before the next entry, or by
``flush()``; the append raises :class:`SessionWriteError` saying what was not saved, and
``write_error`` keeps it. Other entries (settings, labels, moves) are refused as before.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress, count, repeat
from operator import attrgetter, eq
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import Field, ValidationError

from ..ai.system_message import current_system_message, system_message_text
from ..ai.types import (
    AssistantMessage,
    Content,
    PiModel,
    SystemMessage,
    TextContent,
    Tool,
    ToolReference,
    ToolResultMessage,
    Usage,
    UserContent,
    UserMessage,
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
    LeafEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionEntry,
    SessionHeader,
    SessionInfoEntry,
    ThinkingLevelChangeEntry,
    UsageEntry,
    iso_now,
    iso_to_ms,
    new_id,
)
from .jsonl import SessionFileError
from .layout import default_session_dir, session_file_name
from .messages import (
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    HarnessMessage,
)
from .session_index import LEAF_TYPE, SessionIndex
from .storage import JsonlSessionStorage, SessionStorage

__all__ = [
    "ModelRef",
    "Session",
    "SessionContext",
    "SessionTreeNode",
    "SessionWriteError",
    "UsageTotals",
]

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


StorageLike = SessionStorage | str | os.PathLike[str]


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


@dataclass(slots=True)
class SessionTreeNode:
    """One entry of :meth:`Session.get_tree`, its children (oldest first) and its label."""

    entry: SessionEntry
    children: list[SessionTreeNode] = field(default_factory=list)
    label: str | None = None


def _ms(timestamp: str | None) -> int:
    """Epoch ms of an entry timestamp; 0 for one that is missing or not ISO (pi gets NaN)."""
    try:
        return iso_to_ms(timestamp) if timestamp else 0
    except ValueError:
        return 0


def _new_header(cwd: str, parent_session: str | None = None) -> SessionHeader:
    return SessionHeader(id=new_id(), timestamp=iso_now(), cwd=cwd, parent_session=parent_session)


def _storage(target: StorageLike, strict: bool = True) -> SessionStorage:
    if isinstance(target, SessionStorage):
        return target
    return JsonlSessionStorage(target, strict=strict)


class Session:
    """A persistent session tree. Make one with :meth:`create`, :meth:`create_in` or :meth:`open`.

    Appends write through to the storage before the in-memory tree changes, so a failed write
    leaves the session as it was.
    """

    def __init__(
        self,
        storage: SessionStorage,
        header: SessionHeader,
        entries: Iterable[SessionEntry],
        index: SessionIndex | None = None,
    ) -> None:
        self._storage = storage
        self._header = header
        if index is None:
            self._entries: list[SessionEntry] = list(entries)
            self._ix = SessionIndex(self._entries)
        elif index.entries is entries:  # made with them (``SessionStorage.load_indexed``)
            self._entries, self._ix = index.entries, index
        else:
            raise ValueError("the session index must be made of these entries (the same list)")
        self._children: dict[str, list[int]] | None = None  # positions, built on first use
        self._unsaved: list[SessionEntry] = []
        self.write_error: SessionWriteError | None = None
        """The last failed write while entries are still unsaved (``None`` once all are on disk)."""
        self._labels: dict[str, str] = {}
        self._name: str | None = None
        self._leaf_id: str | None = None
        self._index_all()

    # --- construction ----------------------------------------------------------------------------

    @classmethod
    def create(
        cls, storage: StorageLike, cwd: str | None = None, *, parent_session: str | None = None
    ) -> Session:
        """A new, empty session in ``storage`` (a storage object, or the path of a new file)."""
        store = _storage(storage)
        cwd = os.getcwd() if cwd is None else cwd
        header = _new_header(cwd, parent_session)
        store.create(header)
        return cls(store, header, ())

    @classmethod
    def create_in(
        cls, directory: str | os.PathLike[str] | None = None, cwd: str | None = None
    ) -> Session:
        """A new session file named as pi names them, in ``directory``.

        The default directory is pi-coding-agent's own for ``cwd`` (see
        :func:`~pi_notebook.harness.layout.default_session_dir`), so ``pi`` lists the session.
        """
        cwd = os.getcwd() if cwd is None else cwd
        header = _new_header(cwd)
        folder = default_session_dir(cwd) if directory is None else Path(directory)
        store = JsonlSessionStorage(folder / session_file_name(header.id, header.timestamp))
        store.create(header)
        return cls(store, header, ())

    @classmethod
    def open(cls, source: StorageLike, *, strict: bool = True) -> Session:
        """Load a session file (pi-coding-agent's, pi harness's or ours) or a storage object.

        ``strict=False`` skips malformed lines with a warning instead of raising
        :class:`~pi_notebook.harness.SessionFileError` (only for paths; a storage object keeps
        its own setting).
        """
        store = _storage(source, strict)
        header, entries, index = store.load_indexed()
        return cls(store, header, entries, index)

    # --- identity --------------------------------------------------------------------------------

    @property
    def id(self) -> str:
        return self._header.id

    @property
    def header(self) -> SessionHeader:
        return self._header

    @property
    def cwd(self) -> str:
        return self._header.cwd

    @property
    def storage(self) -> SessionStorage:
        return self._storage

    @property
    def path(self) -> Path | None:
        """The session file (``None`` for an in-memory session)."""
        return self._storage.path

    @property
    def name(self) -> str | None:
        """The display name: the latest ``session_info`` entry's, ``None`` if unset or cleared."""
        return self._name

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"<Session {self.id} entries={len(self._entries)} leaf={self._leaf_id}>"

    # --- the index -------------------------------------------------------------------------------

    @property
    def index(self) -> SessionIndex:
        """The session's structure in plain lists (ids, parent ids, types, timestamps, the
        positions of the ids), for code that walks the whole tree: read-only."""
        return self._ix

    def _index_all(self) -> None:
        """Bulk :meth:`_index` for loading: the structure was read by :class:`SessionIndex`;
        only labels, names and the last entry need the entry objects."""
        entries = self._entries
        labels, name = self._labels, self._name
        for position in self._ix.marks:  # labels, names, context edits: the rest stays cold
            entry = entries[position]
            if type(entry) is LabelEntry:
                if entry.label:
                    labels[entry.target_id] = entry.label
                else:
                    labels.pop(entry.target_id, None)
            elif type(entry) is SessionInfoEntry:
                name = (entry.name or "").strip() or None
        if entries:
            last = entries[-1]
            self._leaf_id = last.target_id if type(last) is LeafEntry else last.id
        self._name = name

    def _index(self, entry: SessionEntry) -> None:
        self._entries.append(entry)
        self._ix.add(entry)
        if isinstance(entry, LeafEntry):
            self._leaf_id = entry.target_id
            return
        self._leaf_id = entry.id
        if isinstance(entry, LabelEntry):
            if entry.label:
                self._labels[entry.target_id] = entry.label
            else:
                self._labels.pop(entry.target_id, None)
        elif isinstance(entry, SessionInfoEntry):
            self._name = (entry.name or "").strip() or None
        if self._children is not None:
            position = len(self._entries) - 1
            parent_id = self._tree_parent_id(position)
            if parent_id is not None:
                self._children.setdefault(parent_id, []).append(position)

    def _new_id(self) -> str:
        while (entry_id := new_id()) in self._ix.positions:  # pragma: no cover - 74 random bits
            pass
        return entry_id

    def _append(self, entry: _E) -> _E:
        try:
            self._write_unsaved()
            self._storage.append(entry)
        except OSError as exc:
            if not isinstance(entry, _KEPT_ON_FAILURE):
                raise self._write_failed(exc) from exc
            self._index(entry)
            self._unsaved.append(entry)
            raise self._write_failed(exc) from exc
        self._index(entry)
        return entry

    def _write_unsaved(self) -> None:
        unsaved = self._unsaved
        while unsaved:
            self._storage.append(unsaved[0])
            unsaved.pop(0)
        self.write_error = None

    def _write_failed(self, exc: OSError) -> SessionWriteError:
        if isinstance(exc, SessionWriteError):
            exc = exc.cause if isinstance(exc.cause, OSError) else exc
        error = SessionWriteError(str(self.path or "<memory>"), exc, self._unsaved)
        if self._unsaved:
            self.write_error = error
        return error

    @property
    def unsaved_entries(self) -> list[SessionEntry]:
        """Entries kept in memory whose write failed (oldest first); empty when all are saved."""
        return list(self._unsaved)

    def flush(self) -> int:
        """Write the entries a failed write left in memory; returns how many were written.

        Raises :class:`SessionWriteError` (with what is still unsaved) if the storage still fails.
        """
        count = len(self._unsaved)
        try:
            self._write_unsaved()
        except OSError as exc:
            raise self._write_failed(exc) from exc
        return count

    def _require(self, entry_id: str) -> SessionEntry:
        position = self._ix.positions.get(entry_id)
        if position is None:
            raise ValueError(f"Entry {entry_id} not found in session {self.id}")
        return self._entries[position]

    def _base(self) -> dict[str, Any]:
        return {"id": self._new_id(), "parent_id": self._leaf_id, "timestamp": iso_now()}

    # --- appending -------------------------------------------------------------------------------

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
        target = self._require(target_id)
        if not any(entry.id == target_id for entry in self._path_to(self._leaf_id)):
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
            else state.model_copy(update={"timestamp": _ms(base["timestamp"])})
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
            from_id = self._leaf_id if self._leaf_id is not None else "root"
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
        self._require(target_id)
        return self._append(LabelEntry(**self._base(), target_id=target_id, label=label))

    def append_session_info(self, name: str) -> SessionInfoEntry:
        """Name the session (trimmed; an empty name clears it)."""
        return self._append(SessionInfoEntry(**self._base(), name=name.strip()))

    # --- the leaf --------------------------------------------------------------------------------

    @property
    def leaf_id(self) -> str | None:
        """The current position (``None``: before the first entry; the next append is a root)."""
        return self._leaf_id

    @property
    def leaf_entry(self) -> SessionEntry | None:
        return None if self._leaf_id is None else self.get_entry(self._leaf_id)

    def set_leaf(self, entry_id: str | None) -> None:
        """Move the leaf; the next append becomes a child of ``entry_id`` (a root for ``None``).

        Nothing is written, as pi 1.6 writes nothing when it moves (``SessionManager.branch``):
        the entries appended next record the move. A reopened file resumes at its last line,
        here as in pi, so a move followed by nothing is not remembered. (Files that pi's 0.79
        harness or pi_notebook wrote before may hold ``leaf`` entries: they are still read.)
        """
        if entry_id is not None and isinstance(self._require(entry_id), LeafEntry):
            raise ValueError(f"Entry {entry_id} is a leaf move, not a position in the tree")
        self._leaf_id = entry_id

    # --- reading ---------------------------------------------------------------------------------

    def get_entry(self, entry_id: str) -> SessionEntry | None:
        position = self._ix.positions.get(entry_id)
        return None if position is None else self._entries[position]

    def get_entries(self) -> list[SessionEntry]:
        """Every entry in append order (labels, session info and leaf moves included)."""
        return list(self._entries)

    def get_label(self, entry_id: str) -> str | None:
        return self._labels.get(entry_id)

    @property
    def labels(self) -> dict[str, str]:
        """Every current label, ``{entry id: label}`` (a copy; e.g. to find an entry by label)."""
        return dict(self._labels)

    def _path_positions(self, entry_id: str | None) -> list[int]:
        """The positions from the root to ``entry_id``, walked in the index's lists."""
        start = None if entry_id is None else self._ix.positions.get(entry_id)
        positions = self._ix.path(start)
        if positions is None:
            raise SessionFileError(str(self.path or "<memory>"), None, "cycle in parent ids")
        return positions

    def _path_to(self, entry_id: str | None) -> list[SessionEntry]:
        """Root → ``entry_id``, walked in the index's lists (no entry object is read)."""
        return list(map(self._entries.__getitem__, self._path_positions(entry_id)))

    def get_branch(self, from_id: str | None = None) -> list[SessionEntry]:
        """The entries from the root to ``from_id`` (default: the leaf), oldest first."""
        if from_id is not None:
            self._require(from_id)
            return self._path_to(from_id)
        return self._path_to(self._leaf_id)

    def _tree_parent_id(self, position: int) -> str | None:
        """The parent shown in the tree: leaf moves are not nodes (an entry pi appended after
        one hangs under the leaf move's own parent); ``None`` for a leaf move itself."""
        try:
            return self._ix.tree_parent_id(position)
        except RecursionError:
            raise SessionFileError(
                str(self.path or "<memory>"), None, "cycle in parent ids"
            ) from None

    def get_children(self, entry_id: str) -> list[SessionEntry]:
        """Direct children of an entry in append order (leaf moves are not children)."""
        if self._children is None:
            children: dict[str, list[int]] = {}
            parent_of = self._tree_parent_id
            for position in range(len(self._entries)):
                parent_id = parent_of(position)
                if parent_id is not None:
                    children.setdefault(parent_id, []).append(position)
            self._children = children
        entries = self._entries
        return [entries[position] for position in self._children.get(entry_id, ())]

    def get_tree(self) -> list[SessionTreeNode]:
        """The whole tree: roots first, children sorted by timestamp, labels resolved.

        Leaf moves are navigation records, not nodes. An entry whose parent is missing is
        returned as a root.
        """
        nodes: dict[str, SessionTreeNode] = {}
        where: dict[str, int] = {}
        roots: list[SessionTreeNode] = []
        ids, types = self._ix.ids, self._ix.types
        for position, entry in enumerate(self._entries):
            if types[position] == LEAF_TYPE:
                continue
            entry_id = ids[position]
            nodes[entry_id] = SessionTreeNode(entry, [], self._labels.get(entry_id))
            where[entry_id] = position
        for entry_id, node in nodes.items():
            parent_id = self._tree_parent_id(where[entry_id])
            parent = None if parent_id in (None, entry_id) else nodes.get(parent_id)
            (parent.children if parent is not None else roots).append(node)
        stamps = self._ix.timestamps
        for node in nodes.values():
            if len(node.children) > 1:
                node.children.sort(key=lambda child: _ms(stamps[where[child.entry.id]]))
        return roots

    # --- context ---------------------------------------------------------------------------------

    def build_context(self) -> SessionContext:
        """What the model sees at the leaf (pi 1.6's ``buildSessionContext``, same messages in the
        same order).

        Thinking level, model and active tools are the last ones set on the branch (an assistant
        message counts as a model choice). Without a compaction the messages are those of the
        branch's message, custom-message and non-empty branch-summary entries (system messages
        included). With one, only the newest counts: its system-message checkpoint and summary,
        then the branch from ``first_kept_entry_id`` up to it (system messages left out: the
        checkpoint replaces them), then everything after it. The latest context edit of each
        target among those entries hides or replaces its content. ``system_prompt``, ``tools``
        and ``tool_names`` replay the system messages of the result.
        """
        # Walked in the index's lists: the entries' types say where the settings, the
        # compaction and the edits are, so a long branch of messages is read in C-level passes
        # (only the messages and the few entries that matter are touched).
        positions = self._path_positions(self._leaf_id)
        entries = self._entries
        kinds = list(map(self._ix.types.__getitem__, positions))
        present = set(kinds)
        thinking = self._last_of(positions, kinds, present, ThinkingLevelChangeEntry)
        tools_change = self._last_of(positions, kinds, present, ActiveToolsChangeEntry)
        at = self._last_at(positions, kinds, present, CompactionEntry)
        thinking_level = "off" if thinking is None else thinking.thinking_level
        active_tools = None if tools_change is None else tools_change.active_tool_names
        model_source = self._model_source(positions, kinds)
        edited = "context_edit" in present and any(
            type(entries[p]) is ContextEditEntry for p in _where(positions, kinds, "context_edit")
        )

        messages: list[HarnessMessage]
        if at < 0:
            edits = self._edits(positions, kinds) if edited else None
            messages = self._messages(positions, kinds, present, edits)
        else:
            compaction = entries[positions[at]]
            assert isinstance(compaction, CompactionEntry)
            kept = positions[:at]
            kept_ids = list(map(self._ix.ids.__getitem__, kept))
            first = compaction.first_kept_entry_id
            kept = kept[kept_ids.index(first) if first in kept_ids else len(kept) :]
            kept = [p for p in kept if not _is_system(entries[p])]
            after = positions[at + 1 :]
            context = kept + after
            context_kinds = list(map(self._ix.types.__getitem__, context))
            edits = self._edits(context, context_kinds) if edited else None
            edit = None if edits is None else edits.get(compaction.id)
            messages = []
            if edit is None or edit.replacement is not None:  # (a compaction is not editable)
                if compaction.system_message is not None:
                    messages.append(compaction.system_message)
                messages.append(
                    CompactionSummaryMessage(
                        summary=compaction.summary,
                        tokens_before=compaction.tokens_before,
                        timestamp=_ms(compaction.timestamp),
                    )
                )
            messages += self._messages(context, context_kinds, set(context_kinds), edits)

        model = None
        if isinstance(model_source, ModelChangeEntry):
            model = ModelRef(provider=model_source.provider, model_id=model_source.model_id)
        elif model_source is not None:
            model = ModelRef(provider=model_source.provider, model_id=model_source.model)
        system_prompt: str | None = None
        tools: list[Tool] | None = None
        message_types = list(map(type, messages))
        if SystemMessage in message_types:
            systems = {t for t in set(message_types) if issubclass(t, SystemMessage)}
            state = current_system_message(
                compress(messages, map(systems.__contains__, message_types))
            )
            if state is not None:
                system_prompt = system_message_text(state)
                tools = list(state.tools_added or ())
        return SessionContext.model_construct(
            messages=messages,
            thinking_level=thinking_level,
            model=model,
            active_tool_names=None if active_tools is None else list(active_tools),
            system_prompt=system_prompt,
            tools=tools,
            tool_names=None if tools is None else [tool.name for tool in tools],
        )

    def _last_at(
        self, positions: list[int], kinds: list[str], present: set[str], cls: type[Any]
    ) -> int:
        """Where on the path the last entry of class ``cls`` is (-1: none)."""
        kind = _KIND[cls]
        if kind not in present:
            return -1
        entries, backwards, last = self._entries, kinds[::-1], len(kinds) - 1
        found = backwards.index(kind)
        while type(entries[positions[last - found]]) is not cls:
            try:
                found = backwards.index(kind, found + 1)
            except ValueError:
                return -1
        return last - found

    def _last_of(
        self, positions: list[int], kinds: list[str], present: set[str], cls: type[_E]
    ) -> _E | None:
        at = self._last_at(positions, kinds, present, cls)
        return None if at < 0 else self._entries[positions[at]]  # type: ignore[return-value]

    def _model_source(
        self, positions: list[int], kinds: list[str]
    ) -> ModelChangeEntry | AssistantMessage | None:
        """The last model choice on the path: a model change, or an assistant message."""
        entries = self._entries
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

    def _edits(self, positions: list[int], kinds: list[str]) -> dict[str, ContextEditEntry]:
        """The latest context edit of each target among the entries at ``positions``."""
        entries = self._entries
        return _edits(entries[p] for p in _where(positions, kinds, "context_edit"))

    def _messages(
        self,
        positions: list[int],
        kinds: list[str],
        present: set[str],
        edits: Mapping[str, ContextEditEntry] | None,
    ) -> list[HarnessMessage]:
        """The context messages of the entries at ``positions`` (see :meth:`build_context`)."""
        entries = self._entries
        if "custom_message" in present or "branch_summary" in present:
            messages: list[HarnessMessage] = []
            _collect(messages, [entries[p] for p in positions], edits)
            return messages
        chosen = positions if present == {"message"} else _where(positions, kinds, "message")
        chosen_entries = list(map(entries.__getitem__, chosen))
        if set(map(type, chosen_entries)) - {MessageEntry}:  # (only a hand-made entry list)
            messages = []
            _collect(messages, [entries[p] for p in positions], edits)
            return messages
        messages = list(map(_MESSAGE, chosen_entries))
        if not edits:
            return messages
        ids = self._ix.ids
        hits = list(compress(count(), map(edits.__contains__, map(ids.__getitem__, chosen))))
        if not hits:
            return messages
        edited: list[HarnessMessage] = []
        done = 0
        for at in hits:
            edited += messages[done:at]
            edit = edits[ids[chosen[at]]]
            if edit.replacement is not None:
                edited.append(_edited(messages[at], edit))
            done = at + 1
        edited += messages[done:]
        return edited

    def usage_totals(self) -> UsageTotals:
        """Tokens and cost over every entry, compacted history and other branches included
        (what was billed; pi's ``getSessionStats``)."""
        totals = UsageTotals()
        for entry in self._entries:
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

    def _relabel(self, path: list[SessionEntry]) -> list[LabelEntry]:
        """Label entries that give ``path``'s entries, in a copy of ``path``, their labels here.

        The copy carries the label entries on the path itself (its parent chain runs through
        them); labels set or cleared elsewhere in the tree are re-created after the last entry.
        """
        copied: dict[str, str] = {}
        for entry in path:
            if isinstance(entry, LabelEntry):
                if entry.label:
                    copied[entry.target_id] = entry.label
                else:
                    copied.pop(entry.target_id, None)
        parent = path[-1].id if path else None
        fresh: list[LabelEntry] = []
        for entry in path:
            label = self._labels.get(entry.id)
            if label != copied.get(entry.id):
                relabel = LabelEntry(
                    id=self._new_id(),
                    parent_id=parent,
                    timestamp=iso_now(),
                    target_id=entry.id,
                    label=label,
                )
                fresh.append(relabel)
                parent = relabel.id
        return fresh

    # --- forking ---------------------------------------------------------------------------------

    def fork(
        self,
        target: StorageLike,
        entry_id: str | None = None,
        position: Literal["before", "at"] = "before",
    ) -> Session:
        """A new session (at ``target``: a new file's path or a storage) holding part of this one.

        No ``entry_id``: every entry. ``position="at"``: the branch from the root to
        ``entry_id``. ``position="before"`` (default): ``entry_id`` must be a user message; the
        branch up to its parent is copied, so the message can be sent again differently.
        Copied entries keep their labels (fresh label entries are appended where the labels
        were set off the copied branch). The new header names this session's file as
        ``parentSession``.
        """
        if entry_id is None:
            copied = list(self._entries)
        else:
            entry = self._require(entry_id)
            if position == "before":
                if not (isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage)):
                    raise ValueError(
                        f"fork before entry {entry_id} needs a user message (it is a {entry.type})"
                    )
                path = self._path_to(entry.parent_id)
            elif position == "at":
                path = self._path_to(entry_id)
            else:
                raise ValueError(f"position must be 'before' or 'at', not {position!r}")
            copied = [*path, *self._relabel(path)]
        store = _storage(target)
        header = _new_header(self.cwd, None if self.path is None else str(self.path))
        store.create(header, copied)
        forked = Session(store, header, copied)
        if entry_id is None:
            forked.set_leaf(self._leaf_id)  # where this one stands (a move is not written)
        return forked


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


_MESSAGE = attrgetter("message")
_KIND: dict[type[Any], str] = {
    ThinkingLevelChangeEntry: "thinking_level_change",
    ActiveToolsChangeEntry: "active_tools_change",
    CompactionEntry: "compaction",
}
"""The ``type`` of the entry classes whose last one on a path :meth:`Session._last_at` finds."""


def _where(positions: list[int], kinds: list[str], kind: str) -> list[int]:
    """The positions whose entry is of type ``kind``."""
    return list(compress(positions, map(eq, kinds, repeat(kind))))


def _is_system(entry: SessionEntry) -> bool:
    return isinstance(entry, MessageEntry) and type(entry.message) is SystemMessage


def _edits(entries: Iterable[SessionEntry]) -> dict[str, ContextEditEntry]:
    """The latest context edit of each target among ``entries``."""
    return {e.target_id: e for e in entries if isinstance(e, ContextEditEntry)}


def _edited(message: HarnessMessage, edit: ContextEditEntry) -> HarnessMessage:
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


def _collect(
    messages: list[HarnessMessage],
    entries: Sequence[SessionEntry],
    edits: Mapping[str, ContextEditEntry] | None = None,
) -> None:
    """Append the context messages of ``entries`` (see :meth:`Session.build_context`)."""
    for entry in entries:
        message: HarnessMessage
        if isinstance(entry, MessageEntry):
            message = entry.message
        elif isinstance(entry, CustomMessageEntry):
            message = CustomMessage(
                custom_type=entry.custom_type,
                content=entry.content,
                display=entry.display,
                details=entry.details,
                timestamp=_ms(entry.timestamp),
            )
        elif isinstance(entry, BranchSummaryEntry) and entry.summary:
            message = BranchSummaryMessage(
                summary=entry.summary, from_id=entry.from_id, timestamp=_ms(entry.timestamp)
            )
        else:
            continue
        if edits is not None and (edit := edits.get(entry.id)) is not None:
            if edit.replacement is None:
                continue
            message = _edited(message, edit)
        messages.append(message)
