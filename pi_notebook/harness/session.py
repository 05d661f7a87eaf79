"""``Session``: the conversation as an append-only tree of entries, with a movable leaf.

Every ``append_*`` adds a child of the current leaf and moves the leaf onto it; ``set_leaf``
moves the leaf back to any entry, so the next append starts a new branch. Nothing is ever
rewritten or deleted. ``build_context`` walks root → leaf and yields what the model sees, as pi
1.6's ``buildSessionContext`` does (system messages, compaction checkpoints, branch summaries and
context edits applied).

A session is put together from parts that each hold one thing: the appends and the write path
(:mod:`.session_appends`), the tree with its labels, name and leaf
(:mod:`.session_tree`), the steps of the context (:mod:`.session_context`), what a fork copies
(:mod:`.session_fork`) and the usage totals (:mod:`.session_usage`). An opened file's entries
are kept as their lines until first read (:mod:`.entry_list`).

Leaf moves survive a reopen in pi 1.6 too. pi 1.6 has no ``leaf`` entry: it reads the last line
of a file as the leaf. ``set_leaf`` therefore writes a ``leaf`` entry (the 0.79 harness's record,
which pi 1.6 keeps as an unknown entry that adds nothing to the context) whose ``parentId`` is the
target itself, so pi walks from it to the target's branch. Older files whose leaf entries hang
under the previous leaf still open here at their ``targetId``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from .entries import (
    LeafEntry,
    SessionEntry,
    SessionHeader,
    iso_now,
    new_id,
)
from .entry_list import EntryList
from .layout import default_session_dir, session_file_name
from .session_appends import EntryWriter, SessionAppends, SessionWriteError
from .session_context import ModelRef, SessionContext, context_at
from .session_fork import forked_entries
from .session_index import SessionIndex
from .session_tree import SessionTree, SessionTreeNode
from .session_usage import USAGE_TYPES, UsageTotals, usage_totals
from .storage import JsonlSessionStorage, SessionStorage

__all__ = [
    "ModelRef",
    "Session",
    "SessionContext",
    "SessionTreeNode",
    "SessionWriteError",
    "UsageTotals",
]

StorageLike = SessionStorage | str | os.PathLike[str]


def _new_header(cwd: str, parent_session: str | None = None) -> SessionHeader:
    return SessionHeader(id=new_id(), timestamp=iso_now(), cwd=cwd, parent_session=parent_session)


def _storage(target: StorageLike, strict: bool = True) -> SessionStorage:
    if isinstance(target, SessionStorage):
        return target
    return JsonlSessionStorage(target, strict=strict)


class Session(SessionAppends):
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
            index = SessionIndex(EntryList(entries))
        elif index.entries is not entries:
            raise ValueError("the session index must be made of these entries (the same list)")
        self._tree = SessionTree(index, header.id, storage)
        self._writer = EntryWriter(storage, self._tree.add)

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

        Each line's JSON and structure are checked now; an entry is built when first read, and
        one whose content is not an entry is reported then, naming the file and line.
        ``strict=False`` skips malformed lines with a warning instead of raising
        :class:`~pi_notebook.harness.SessionFileError` (and keeps an entry whose content turns
        out unreadable as an unknown entry, with a warning); only for paths: a storage object
        keeps its own setting.
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
        return self._tree.name

    def __len__(self) -> int:
        return len(self._tree.entries)

    def __repr__(self) -> str:
        return f"<Session {self.id} entries={len(self)} leaf={self._tree.leaf_id}>"

    @property
    def index(self) -> SessionIndex:
        """The session's structure in plain lists (ids, parent ids, types, timestamps, the
        positions of the ids), for code that walks the whole tree: read-only."""
        return self._tree.index

    # --- the leaf --------------------------------------------------------------------------------

    @property
    def leaf_id(self) -> str | None:
        """The current position (``None``: before the first entry; the next append is a root)."""
        return self._tree.leaf_id

    @property
    def leaf_entry(self) -> SessionEntry | None:
        leaf_id = self._tree.leaf_id
        return None if leaf_id is None else self.get_entry(leaf_id)

    def set_leaf(self, entry_id: str | None) -> None:
        """Move the leaf; the next append becomes a child of ``entry_id`` (a root for ``None``).

        Nothing is written, as pi 1.6 writes nothing when it moves (``SessionManager.branch``):
        the entries appended next record the move. A reopened file resumes at its last line,
        here as in pi, so a move followed by nothing is not remembered. (Files that pi's 0.79
        harness or pi_notebook wrote before may hold ``leaf`` entries: they are still read.)
        """
        if entry_id is not None and isinstance(self._tree.require(entry_id), LeafEntry):
            raise ValueError(f"Entry {entry_id} is a leaf move, not a position in the tree")
        self._tree.leaf_id = entry_id

    # --- reading ---------------------------------------------------------------------------------

    def get_entry(self, entry_id: str) -> SessionEntry | None:
        return self._tree.get(entry_id)

    def get_entries(self) -> list[SessionEntry]:
        """Every entry in append order (labels, session info and leaf moves included)."""
        return list(self._tree.entries)

    def entries_of(self, *types: str) -> list[SessionEntry]:
        """The entries of these ``type`` values in append order, reading no other entry (e.g.
        ``entries_of("custom")`` for extension state in a long session)."""
        return self._tree.of_types(*types)

    def get_label(self, entry_id: str) -> str | None:
        return self._tree.labels.get(entry_id)

    @property
    def labels(self) -> dict[str, str]:
        """Every current label, ``{entry id: label}`` (a copy; e.g. to find an entry by label)."""
        return dict(self._tree.labels)

    def get_branch(self, from_id: str | None = None) -> list[SessionEntry]:
        """The entries from the root to ``from_id`` (default: the leaf), oldest first."""
        if from_id is not None:
            self._tree.require(from_id)
            return self._tree.path_to(from_id)
        return self._tree.path_to(self._tree.leaf_id)

    def get_children(self, entry_id: str) -> list[SessionEntry]:
        """Direct children of an entry in append order (leaf moves are not children)."""
        return self._tree.children(entry_id)

    def get_tree(self) -> list[SessionTreeNode]:
        """The whole tree: roots first, children sorted by timestamp, labels resolved.

        Leaf moves are navigation records, not nodes. An entry whose parent is missing is
        returned as a root.
        """
        return self._tree.nodes()

    def usage_totals(self) -> UsageTotals:
        """Tokens and cost over every entry, compacted history and other branches included
        (what was billed; pi's ``getSessionStats``)."""
        return usage_totals(self._tree.of_types(*USAGE_TYPES))

    # --- context ---------------------------------------------------------------------------------

    def build_context(self) -> SessionContext:
        """What the model sees at the leaf (pi 1.6's ``buildSessionContext``, same messages in the
        same order): :func:`~pi_notebook.harness.session_context.build_context` of this
        session's entries at its leaf, which says how the context is made.
        """
        tree = self._tree
        return context_at(tree.index, tree.path_positions(tree.leaf_id))

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
        copied = forked_entries(self._tree, entry_id, position)
        store = _storage(target)
        header = _new_header(self.cwd, None if self.path is None else str(self.path))
        store.create(header, copied)
        forked = Session(store, header, copied)
        if entry_id is None:
            forked.set_leaf(self._tree.leaf_id)  # where this one stands (a move is not written)
        return forked
