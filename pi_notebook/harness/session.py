"""``Session``: the conversation as an append-only tree of entries, with a movable leaf.

Every ``append_*`` adds a child of the current leaf and moves the leaf onto it; ``set_leaf``
moves the leaf back to any entry (persisted as a ``leaf`` entry, as pi's harness does), so the
next append starts a new branch. Nothing is ever rewritten or deleted. ``build_context`` walks
root → leaf and yields what the model sees (compaction and branch summaries applied).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import Field

from ..ai.types import AssistantMessage, PiModel, UserContent, UserMessage
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
from .storage import JsonlSessionStorage, SessionStorage

__all__ = ["ModelRef", "Session", "SessionContext", "SessionTreeNode"]

_E = TypeVar("_E", bound=SessionEntry)

StorageLike = SessionStorage | str | os.PathLike[str]


class ModelRef(PiModel):
    """Which model a branch last used: ``{"provider": …, "modelId": …}``."""

    provider: str
    model_id: str


class SessionContext(PiModel):
    """What the model sees at the leaf: messages, thinking level, model, active tools.

    ``active_tool_names`` is ``None`` when the branch never changed them (use the defaults).
    The messages are the session's own objects: treat them as read-only.
    """

    messages: list[HarnessMessage] = Field(default_factory=list)
    thinking_level: str = "off"
    model: ModelRef | None = None
    active_tool_names: list[str] | None = None


@dataclass(slots=True)
class SessionTreeNode:
    """One entry of :meth:`Session.get_tree`, its children (oldest first) and its label."""

    entry: SessionEntry
    children: list[SessionTreeNode] = field(default_factory=list)
    label: str | None = None


def _ms(timestamp: str) -> int:
    """Epoch ms of an entry timestamp; 0 for one that is not ISO (pi would get NaN)."""
    try:
        return iso_to_ms(timestamp)
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
        self, storage: SessionStorage, header: SessionHeader, entries: Iterable[SessionEntry]
    ) -> None:
        self._storage = storage
        self._header = header
        self._entries: list[SessionEntry] = []
        self._by_id: dict[str, SessionEntry] = {}
        self._children: dict[str, list[SessionEntry]] | None = None  # built on first use
        self._labels: dict[str, str] = {}
        self._name: str | None = None
        self._leaf_id: str | None = None
        self._index_all(entries)

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
        header, entries = store.load()
        return cls(store, header, entries)

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

    def _index_all(self, entries: Iterable[SessionEntry]) -> None:
        """Bulk :meth:`_index` for loading (the same rules, fewer lookups per entry)."""
        self._entries = list(entries)
        by_id, labels = self._by_id, self._labels
        leaf_id, name = self._leaf_id, self._name
        for entry in self._entries:
            by_id[entry.id] = entry
            if type(entry) is LeafEntry:
                leaf_id = entry.target_id
                continue
            leaf_id = entry.id
            if type(entry) is LabelEntry:
                if entry.label:
                    labels[entry.target_id] = entry.label
                else:
                    labels.pop(entry.target_id, None)
            elif type(entry) is SessionInfoEntry:
                name = (entry.name or "").strip() or None
        self._leaf_id, self._name = leaf_id, name

    def _index(self, entry: SessionEntry) -> None:
        self._entries.append(entry)
        self._by_id[entry.id] = entry
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
        if self._children is not None and entry.parent_id is not None:
            self._children.setdefault(entry.parent_id, []).append(entry)

    def _new_id(self) -> str:
        while (entry_id := new_id()) in self._by_id:  # pragma: no cover - 74 random bits
            pass
        return entry_id

    def _append(self, entry: _E) -> _E:
        self._storage.append(entry)
        self._index(entry)
        return entry

    def _require(self, entry_id: str) -> SessionEntry:
        entry = self._by_id.get(entry_id)
        if entry is None:
            raise ValueError(f"Entry {entry_id} not found in session {self.id}")
        return entry

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
        return self._append(MessageEntry(**self._base(), message=message))

    def append_model_change(self, provider: str, model_id: str) -> ModelChangeEntry:
        return self._append(ModelChangeEntry(**self._base(), provider=provider, model_id=model_id))

    def append_thinking_level_change(self, thinking_level: str) -> ThinkingLevelChangeEntry:
        return self._append(ThinkingLevelChangeEntry(**self._base(), thinking_level=thinking_level))

    def append_active_tools_change(self, names: Iterable[str]) -> ActiveToolsChangeEntry:
        return self._append(ActiveToolsChangeEntry(**self._base(), active_tool_names=list(names)))

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str,
        tokens_before: int,
        details: Any = None,
        from_hook: bool | None = None,
    ) -> CompactionEntry:
        """Record a compaction: in the context, ``summary`` replaces everything on the branch
        before ``first_kept_entry_id``."""
        return self._append(
            CompactionEntry(
                **self._base(),
                summary=summary,
                first_kept_entry_id=first_kept_entry_id,
                tokens_before=tokens_before,
                details=details,
                from_hook=from_hook,
            )
        )

    def append_branch_summary(
        self,
        summary: str,
        from_id: str | None = None,
        details: Any = None,
        from_hook: bool | None = None,
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
        """Label an entry; ``None`` or ``""`` clears its label."""
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
        return None if self._leaf_id is None else self._by_id.get(self._leaf_id)

    def set_leaf(self, entry_id: str | None) -> LeafEntry | None:
        """Move the leaf; the next append becomes a child of ``entry_id`` (a root for ``None``).

        Persisted as a ``leaf`` entry, so a reopened session resumes here. Moving to where the
        leaf already is writes nothing and returns ``None``.
        """
        if entry_id is not None and isinstance(self._require(entry_id), LeafEntry):
            raise ValueError(f"Entry {entry_id} is a leaf move, not a position in the tree")
        if entry_id == self._leaf_id:
            return None
        return self._append(LeafEntry(**self._base(), target_id=entry_id))

    # --- reading ---------------------------------------------------------------------------------

    def get_entry(self, entry_id: str) -> SessionEntry | None:
        return self._by_id.get(entry_id)

    def get_entries(self) -> list[SessionEntry]:
        """Every entry in append order (labels, session info and leaf moves included)."""
        return list(self._entries)

    def get_label(self, entry_id: str) -> str | None:
        return self._labels.get(entry_id)

    @property
    def labels(self) -> dict[str, str]:
        """Every current label, ``{entry id: label}`` (a copy; e.g. to find an entry by label)."""
        return dict(self._labels)

    def _path_to(self, entry_id: str | None) -> list[SessionEntry]:
        get = self._by_id.get
        path: list[SessionEntry] = []
        append = path.append
        left = len(self._by_id)  # more steps than entries: the parent ids go round in a cycle
        entry = None if entry_id is None else get(entry_id)
        while entry is not None:
            append(entry)
            parent = entry.parent_id
            if parent is None:
                break
            entry = get(parent)
            left -= 1
            if left < 0:
                raise SessionFileError(str(self.path or "<memory>"), None, "cycle in parent ids")
        path.reverse()
        return path

    def get_branch(self, from_id: str | None = None) -> list[SessionEntry]:
        """The entries from the root to ``from_id`` (default: the leaf), oldest first."""
        if from_id is not None:
            self._require(from_id)
            return self._path_to(from_id)
        return self._path_to(self._leaf_id)

    def get_children(self, entry_id: str) -> list[SessionEntry]:
        """Direct children of an entry in append order (leaf moves are not children)."""
        if self._children is None:
            children: dict[str, list[SessionEntry]] = {}
            for entry in self._entries:
                if entry.parent_id is not None and not isinstance(entry, LeafEntry):
                    children.setdefault(entry.parent_id, []).append(entry)
            self._children = children
        return list(self._children.get(entry_id, ()))

    def get_tree(self) -> list[SessionTreeNode]:
        """The whole tree: roots first, children sorted by timestamp, labels resolved.

        Leaf moves are navigation records, not nodes. An entry whose parent is missing is
        returned as a root.
        """
        nodes: dict[str, SessionTreeNode] = {}
        roots: list[SessionTreeNode] = []
        for entry in self._entries:
            if isinstance(entry, LeafEntry):
                continue
            node = SessionTreeNode(entry, [], self._labels.get(entry.id))
            nodes[entry.id] = node
        for node in nodes.values():
            parent_id = node.entry.parent_id
            parent = None if parent_id in (None, node.entry.id) else nodes.get(parent_id)
            (parent.children if parent is not None else roots).append(node)
        for node in nodes.values():
            if len(node.children) > 1:
                node.children.sort(key=lambda child: _ms(child.entry.timestamp))
        return roots

    # --- context ---------------------------------------------------------------------------------

    def build_context(self) -> SessionContext:
        """What the model sees at the leaf (pi's ``buildSessionContext``).

        Thinking level, model and active tools are the last ones set on the branch (an assistant
        message counts as a model choice). With a compaction on the branch the messages are its
        summary, then the branch from ``first_kept_entry_id`` up to the compaction, then what
        follows it. Messages come from message entries, custom-message entries and non-empty
        branch summaries; other entries contribute none.
        """
        path = self._path_to(self._leaf_id)
        thinking_level = "off"
        model_source: ModelChangeEntry | AssistantMessage | None = None
        active_tools: list[str] | None = None
        compaction_at = -1
        for index, entry in enumerate(path):
            if type(entry) is MessageEntry:
                if type(entry.message) is AssistantMessage:
                    model_source = entry.message
            elif type(entry) is ThinkingLevelChangeEntry:
                thinking_level = entry.thinking_level
            elif type(entry) is ModelChangeEntry:
                model_source = entry
            elif type(entry) is ActiveToolsChangeEntry:
                active_tools = entry.active_tool_names
            elif type(entry) is CompactionEntry:
                compaction_at = index

        messages: list[HarnessMessage] = []
        if compaction_at < 0:
            _collect(messages, path)
        else:
            compaction = path[compaction_at]
            assert isinstance(compaction, CompactionEntry)
            messages.append(
                CompactionSummaryMessage(
                    summary=compaction.summary,
                    tokens_before=compaction.tokens_before,
                    timestamp=_ms(compaction.timestamp),
                )
            )
            kept = path[:compaction_at]
            first = next(
                (i for i, e in enumerate(kept) if e.id == compaction.first_kept_entry_id),
                len(kept),
            )
            _collect(messages, kept[first:])
            _collect(messages, path[compaction_at + 1 :])

        model = None
        if isinstance(model_source, ModelChangeEntry):
            model = ModelRef(provider=model_source.provider, model_id=model_source.model_id)
        elif model_source is not None:
            model = ModelRef(provider=model_source.provider, model_id=model_source.model)
        return SessionContext.model_construct(
            messages=messages,
            thinking_level=thinking_level,
            model=model,
            active_tool_names=None if active_tools is None else list(active_tools),
        )

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
        return Session(store, header, copied)


def _collect(messages: list[HarnessMessage], entries: Sequence[SessionEntry]) -> None:
    """Append the context messages of ``entries`` (see :meth:`Session.build_context`)."""
    for entry in entries:
        if type(entry) is MessageEntry:
            messages.append(entry.message)
        elif isinstance(entry, CustomMessageEntry):
            messages.append(
                CustomMessage(
                    custom_type=entry.custom_type,
                    content=entry.content,
                    display=entry.display,
                    details=entry.details,
                    timestamp=_ms(entry.timestamp),
                )
            )
        elif isinstance(entry, BranchSummaryEntry) and entry.summary:
            messages.append(
                BranchSummaryMessage(
                    summary=entry.summary, from_id=entry.from_id, timestamp=_ms(entry.timestamp)
                )
            )
