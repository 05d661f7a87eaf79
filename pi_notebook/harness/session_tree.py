"""The tree of a session's entries: where each entry is, its parent and children, the path from
the root, labels, the name and the leaf.

:class:`SessionTree` reads the structure from the session's
:class:`~pi_notebook.harness.session_index.SessionIndex` (plain lists), so walking the tree reads
no entry; entries are read (and built from their lines, :mod:`.entry_list`) only when a walk
returns them. A leaf move (an entry of type ``leaf``) is navigation, not a node: an entry
parented at one hangs under the move's own parent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .entries import LabelEntry, LeafEntry, SessionEntry, SessionInfoEntry, iso_to_ms, new_id
from .entry_list import EntryList, SessionFileError
from .session_index import LEAF_TYPE, SessionIndex
from .storage import SessionStorage

__all__ = ["SessionTree", "SessionTreeNode", "entry_ms"]


@dataclass(slots=True)
class SessionTreeNode:
    """One entry of :meth:`Session.get_tree`, its children (oldest first) and its label."""

    entry: SessionEntry
    children: list[SessionTreeNode] = field(default_factory=list)
    label: str | None = None


def entry_ms(timestamp: str | None) -> int:
    """Epoch ms of an entry timestamp; 0 for one that is missing or not ISO (pi gets NaN)."""
    try:
        return iso_to_ms(timestamp) if timestamp else 0
    except ValueError:
        return 0


class SessionTree:
    """A session's entries as a tree, with its labels, name and leaf; grows with :meth:`add`.

    ``owner`` names the session in errors (its id), ``storage`` its file.
    """

    __slots__ = ("_children", "entries", "index", "labels", "leaf_id", "name", "owner", "storage")

    def __init__(self, index: SessionIndex, owner: str, storage: SessionStorage) -> None:
        self.index = index
        self.entries: EntryList = index.entries
        self.owner = owner
        self.storage = storage
        self.labels: dict[str, str] = {}
        self.name: str | None = None
        self.leaf_id: str | None = None
        self._children: dict[str, list[int]] | None = None  # positions, built on first use
        self._read_marks()

    @property
    def source(self) -> str:
        """The session file as errors name it."""
        return str(self.storage.path or "<memory>")

    def _read_marks(self) -> None:
        """Labels, the name and the leaf of a loaded session: from the few entries that set
        them (labels, names and leaf moves are read at open; the rest stays unread)."""
        entries, index = self.entries, self.index
        labels, name = self.labels, self.name
        for position in index.marks:
            entry = entries[position]
            if type(entry) is LabelEntry:
                if entry.label:
                    labels[entry.target_id] = entry.label
                else:
                    labels.pop(entry.target_id, None)
            elif type(entry) is SessionInfoEntry:
                name = (entry.name or "").strip() or None
        if index.ids:
            last = entries[-1] if index.types[-1] == LEAF_TYPE else None
            self.leaf_id = last.target_id if type(last) is LeafEntry else index.ids[-1]
        self.name = name

    def add(self, entry: SessionEntry) -> None:
        """Take an appended entry: it becomes the leaf (a leaf move moves the leaf to its
        target)."""
        self.entries.append(entry)
        self.index.add(entry)
        if isinstance(entry, LeafEntry):
            self.leaf_id = entry.target_id
            return
        self.leaf_id = entry.id
        if isinstance(entry, LabelEntry):
            if entry.label:
                self.labels[entry.target_id] = entry.label
            else:
                self.labels.pop(entry.target_id, None)
        elif isinstance(entry, SessionInfoEntry):
            self.name = (entry.name or "").strip() or None
        if self._children is not None:
            position = len(self.entries) - 1
            parent_id = self.tree_parent_id(position)
            if parent_id is not None:
                self._children.setdefault(parent_id, []).append(position)

    def new_id(self) -> str:
        while (entry_id := new_id()) in self.index.positions:  # pragma: no cover - 74 bits
            pass
        return entry_id

    def get(self, entry_id: str) -> SessionEntry | None:
        position = self.index.positions.get(entry_id)
        return None if position is None else self.entries[position]

    def require(self, entry_id: str) -> SessionEntry:
        position = self.index.positions.get(entry_id)
        if position is None:
            raise ValueError(f"Entry {entry_id} not found in session {self.owner}")
        return self.entries[position]

    def of_types(self, *types: str) -> list[SessionEntry]:
        """The entries of these types in file order (no other entry is read)."""
        wanted = set(types)
        kinds = self.index.types
        return self.entries.take([p for p in range(len(kinds)) if kinds[p] in wanted])

    def path_positions(self, entry_id: str | None) -> list[int]:
        """The positions from the root to ``entry_id``, walked in the index's lists."""
        start = None if entry_id is None else self.index.positions.get(entry_id)
        positions = self.index.path(start)
        if positions is None:
            raise SessionFileError(self.source, None, "cycle in parent ids")
        return positions

    def path_to(self, entry_id: str | None) -> list[SessionEntry]:
        """Root → ``entry_id`` (only the entries on the path are read)."""
        return self.entries.take(self.path_positions(entry_id))

    def tree_parent_id(self, position: int) -> str | None:
        """The parent shown in the tree: leaf moves are not nodes (an entry pi appended after
        one hangs under the leaf move's own parent); ``None`` for a leaf move itself."""
        try:
            return self.index.tree_parent_id(position)
        except RecursionError:
            raise SessionFileError(self.source, None, "cycle in parent ids") from None

    def children(self, entry_id: str) -> list[SessionEntry]:
        """Direct children of an entry in append order (leaf moves are not children)."""
        if self._children is None:
            children: dict[str, list[int]] = {}
            parent_of = self.tree_parent_id
            for position in range(len(self.entries)):
                parent_id = parent_of(position)
                if parent_id is not None:
                    children.setdefault(parent_id, []).append(position)
            self._children = children
        return self.entries.take(self._children.get(entry_id, ()))

    def nodes(self) -> list[SessionTreeNode]:
        """The whole tree: roots first, children sorted by timestamp, labels resolved. Leaf
        moves are not nodes; an entry whose parent is missing is a root."""
        nodes: dict[str, SessionTreeNode] = {}
        where: dict[str, int] = {}
        roots: list[SessionTreeNode] = []
        ids, types = self.index.ids, self.index.types
        for position, entry in enumerate(self.entries):
            if types[position] == LEAF_TYPE:
                continue
            entry_id = ids[position]
            nodes[entry_id] = SessionTreeNode(entry, [], self.labels.get(entry_id))
            where[entry_id] = position
        for entry_id, node in nodes.items():
            parent_id = self.tree_parent_id(where[entry_id])
            parent = None if parent_id in (None, entry_id) else nodes.get(parent_id)
            (parent.children if parent is not None else roots).append(node)
        stamps = self.index.timestamps
        for node in nodes.values():
            if len(node.children) > 1:
                node.children.sort(key=lambda child: entry_ms(stamps[where[child.entry.id]]))
        return roots
