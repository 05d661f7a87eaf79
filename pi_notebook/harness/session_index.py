"""A session's structure in plain lists: what walking the tree needs, without the entry objects.

A 100,000-entry session is 100,000 pydantic models, and reading ``id``, ``parent_id`` and
``type`` from each of them was most of what anything that walks the whole tree cost (60–70 % of
building the ``%tree`` widget, ``bench/tree_bench.py``): every read is a pointer chase into a
different object. :class:`SessionIndex` keeps those fields, and the timestamps, in lists in file
order, filled once when the session is loaded and then one entry at a time as it is appended;
the session's own walks (the path to the leaf, children) and the tree pages read the lists.

Positions are indexes into the session's entries in file order (``entries[position]``). A leaf
move (an entry of type ``leaf``) is navigation, not a node of the tree: an entry parented at one
hangs under the move's own parent (:meth:`SessionIndex.tree_parent_id`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import compress, count, islice, repeat
from operator import attrgetter, eq, ge, ne
from typing import TYPE_CHECKING, cast

from .entries import is_system_entry
from .entry_list import EntryList

if TYPE_CHECKING:
    from .entries import SessionEntry

__all__ = ["LEAF_TYPE", "MARKED_TYPES", "NO_POSITION", "SessionIndex"]

LEAF_TYPE = "leaf"
"""The ``type`` of a leaf move."""
MARKED_TYPES = frozenset({"label", "session_info", "context_edit"})
"""Entries that change how others read (labels, the name, context edits): their positions
are kept (:attr:`SessionIndex.marks`), so that finding them needs no scan."""
NO_POSITION = -1
"""No entry: a root's tree parent, an unknown parent, a leaf move's own."""

_ID, _PARENT_ID, _TYPE, _TIMESTAMP = map(attrgetter, ("id", "parent_id", "type", "timestamp"))


class SessionIndex:
    """``ids``, ``parent_ids``, ``types`` and ``timestamps`` of every entry in file order, the
    ``positions`` of the ids, and ``entries`` themselves (the session's own list). All of it is
    the session's and read-only for everyone else; it grows as the session does."""

    __slots__ = (
        "_chain",
        "_leaves",
        "_tree_parents",
        "entries",
        "ids",
        "marks",
        "parent_ids",
        "positions",
        "systems",
        "timestamps",
        "types",
    )

    def __init__(self, entries: Sequence[SessionEntry]) -> None:
        self.entries = entries if isinstance(entries, EntryList) else EntryList(entries)
        self.ids: list[str] = []
        self.parent_ids: list[str | None] = []
        self.types: list[str] = []
        self.timestamps: list[str | None] = []
        self.positions: dict[str, int] = {}
        """Each id's position (an id given twice: its last entry, as ``get_entry`` finds it)."""
        self.marks: list[int] = []
        """Positions of the entries of :data:`MARKED_TYPES`, in file order."""
        self.systems: list[int] = []
        """Positions of the system messages, in file order (a context replays them). A line
        that turns out to be damaged when read is among them: readers check what they read."""
        self._tree_parents: list[int] = []
        self._leaves: set[int] = set()
        self._chain = 0
        """The entries before this position form one chain from the root: the first has no
        parent, each other one's parent is the entry just before it (what a conversation
        without branches is), so the path to any of them is a ``range``."""
        self.extend(entries)

    @classmethod
    def from_fields(
        cls,
        entries: EntryList,
        ids: list[str],
        parent_ids: list[str | None],
        types: list[str],
        timestamps: list[str | None],
        positions: dict[str, int],
        parent_positions: list[int],
        systems: list[int],
    ) -> SessionIndex:
        """The index of ``entries`` from their fields, collected as they were decoded (the
        lists are taken, not copied): ``parent_positions`` holds each parent's position when
        it came earlier in the file (else :data:`NO_POSITION`), from which the tree parents
        are made at once; ``systems`` the system messages' positions."""
        index = cls(EntryList())
        index.entries, index.ids, index.parent_ids = entries, ids, parent_ids
        index.types, index.timestamps, index.positions = types, timestamps, positions
        index.systems = systems
        entries.hold_messages(ids, parent_ids, timestamps)
        new = range(len(ids))
        if ids and parent_ids[0] is None:
            breaks = compress(count(1), map(ne, islice(parent_positions, 1, None), count()))
            index._chain = next(breaks, len(ids))
        index.marks.extend(compress(new, map(MARKED_TYPES.__contains__, types)))
        leaves = index._leaves
        leaves.update(compress(new, map(eq, types, repeat(LEAF_TYPE))))
        if leaves:
            for position in list(compress(new, map(leaves.__contains__, parent_positions))):
                parent_positions[position] = index._tree_parent_position(position)
            for position in leaves:
                parent_positions[position] = NO_POSITION
        index._tree_parents = parent_positions
        return index

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def moves(self) -> int:
        """How many entries are leaf moves."""
        return len(self._leaves)

    def extend(self, entries: Sequence[SessionEntry]) -> None:
        """Take entries the session's list gained (a load: all of them, read field by field in
        one C-level pass each, as the per-entry Python work is the whole cost)."""
        if not entries:
            return
        start = len(self.ids)
        # A pass per field, not one zip(*map(attrgetter(...))): its 100k tuples made the
        # garbage collector scan the whole loaded session, doubling Session.open.
        ids = list(map(_ID, entries))
        types = list(map(_TYPE, entries))
        self.ids.extend(ids)
        self.parent_ids.extend(map(_PARENT_ID, entries))
        self.types.extend(types)
        self.timestamps.extend(map(_TIMESTAMP, entries))
        new = range(start, start + len(ids))
        positions = self.positions
        again = list(map(positions.get, ids))  # an id given twice re-points its children
        if again.count(None) != len(again):
            self._chain = min(self._chain, *(p + 1 for p in again if p is not None))
        positions.update(zip(ids, new, strict=True))
        if self._chain == start:
            self._extend_chain()
        self.marks.extend(compress(new, map(MARKED_TYPES.__contains__, types)))
        self._leaves.update(compress(new, map(eq, types, repeat(LEAF_TYPE))))
        self.systems.extend(compress(new, map(is_system_entry, entries)))

    def _extend_chain(self) -> None:
        chain, parent_ids = self._chain, self.parent_ids
        if chain == 0:
            if not parent_ids or parent_ids[0] is not None:
                return
            chain = 1
        # map() with dict.get runs in C (a None parent id is no key either)
        lookup = cast("Callable[[str | None], int | None]", self.positions.get)
        ups = map(lookup, islice(parent_ids, chain, None))
        self._chain = next(compress(count(chain), map(ne, ups, count(chain - 1))), len(parent_ids))

    def add(self, entry: SessionEntry) -> None:
        """Take one appended entry."""
        position = len(self.ids)
        again = self.positions.get(entry.id)
        if again is not None and again < self._chain:  # re-points its children
            self._chain = again + 1
        self.positions[entry.id] = position
        self.ids.append(entry.id)
        self.parent_ids.append(entry.parent_id)
        self.types.append(entry.type)
        self.timestamps.append(entry.timestamp)
        if entry.type == LEAF_TYPE:
            self._leaves.add(position)
        elif entry.type in MARKED_TYPES:
            self.marks.append(position)
        elif is_system_entry(entry):
            self.systems.append(position)
        if self._chain == position:  # a conversation goes on: the chain with it
            parent = entry.parent_id
            if position == 0 if parent is None else self.positions.get(parent) == position - 1:
                self._chain = position + 1

    def _tree_parent_position(self, position: int) -> int:
        """One entry's :attr:`tree_parents` value (the bulk way is :meth:`_resolve_tree_parents`,
        which the tests hold to this)."""
        try:
            parent_id = self.tree_parent_id(position)
        except RecursionError:
            return NO_POSITION
        parent = NO_POSITION if parent_id is None else self.positions.get(parent_id, NO_POSITION)
        return parent if parent < position else NO_POSITION

    def path(self, position: int | None) -> list[int] | None:
        """The positions from the root to ``position`` (oldest first); ``None`` when the parent
        ids go round in a cycle."""
        walked: list[int] = []
        get, parent_ids, chain = self.positions.get, self.parent_ids, self._chain
        left = len(self.positions)  # more steps than entries: a cycle
        while position is not None and position >= chain:
            walked.append(position)
            parent = parent_ids[position]
            if parent is None:
                break
            position = get(parent)
            left -= 1
            if left < 0:
                return None
        else:
            if position is not None:  # the rest is the chain from the root
                path = list(range(position + 1))
                path += reversed(walked)
                return path
        walked.reverse()
        return walked

    def tree_parent_id(self, position: int) -> str | None:
        """The parent of an entry in the tree: leaf moves are passed through (an entry pi
        appended after one hangs under the move's own parent); ``None`` for a leaf move itself.
        Raises ``RecursionError`` when leaf moves are parented in a cycle."""
        types = self.types
        if types[position] == LEAF_TYPE:
            return None
        parent_id = self.parent_ids[position]
        get, parent_ids = self.positions.get, self.parent_ids
        steps = len(types)
        while parent_id is not None:
            parent = get(parent_id)
            if parent is None or types[parent] != LEAF_TYPE:
                break
            parent_id = parent_ids[parent]
            steps -= 1
            if steps < 0:
                raise RecursionError("the parent ids of leaf moves go round in a cycle")
        return parent_id

    def tree_parents(self) -> list[int]:
        """Each entry's :meth:`tree_parent_id` as a position, always an earlier one: the tree
        pages' input. :data:`NO_POSITION` for a root, a leaf move, a parent that is unknown,
        later in the file (only a hand-made file has one) or in a cycle of leaf moves.

        Made on first use (a session opened for a run needs none, and building it is a
        noticeable part of opening a large file), then kept up to date, in the same list, for
        the entries added since the last call.
        """
        out = self._tree_parents
        done, count = len(out), len(self.ids)
        if count - done < 64:  # a live session's few new entries
            out.extend(map(self._tree_parent_position, range(done, count)))
        else:
            self._resolve_tree_parents(done, count)
        return out

    def _resolve_tree_parents(self, done: int, count: int) -> None:
        """:meth:`tree_parents` for many new entries: C-level passes, plus a step for each entry
        under or of a leaf move (the tests hold it to :meth:`_tree_parent_position`)."""
        out = self._tree_parents
        get = self.positions.get
        # map() with dict.get runs in C (a None parent id is no key either)
        lookup = cast("Callable[[str | None, int], int]", get)
        found = list(map(lookup, self.parent_ids[done:count], repeat(NO_POSITION)))
        leaves = self._leaves
        if leaves:
            under = list(compress(range(len(found)), map(leaves.__contains__, found)))
            for offset in under:  # hangs under a leaf move's own parent
                try:
                    parent_id = self.tree_parent_id(done + offset)
                except RecursionError:
                    parent_id = None
                found[offset] = NO_POSITION if parent_id is None else get(parent_id, NO_POSITION)
            for position in leaves:
                if position >= done:
                    found[position - done] = NO_POSITION
        later = list(compress(range(len(found)), map(ge, found, range(done, count))))
        for offset in later:
            found[offset] = NO_POSITION
        out.extend(found)
