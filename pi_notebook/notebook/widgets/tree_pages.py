"""The session tree's shape, kept in the kernel so the widget is sent only the rows it shows.

A 100,000-entry session is 100,000 tree rows; the widget's state holds one bounded page of them
(the top and the rows around the current leaf) and the front end asks for the rest by display
index as it scrolls (see ``tree_view``). Three layers, each O(n) in flat lists, no recursion:

- :class:`TreeIndex`: every entry as a node, by file position (``ids``, tree ``parents`` as
  positions, what kind of node), labels and context-edit flags; read incrementally from the
  session's structure index (plain lists: no entry object, no JSON dump, 20× dearer still).
- :class:`Shape`: the shown nodes for one "all entries" setting, bookkeeping entries skipped
  (their children hang from the nearest shown ancestor), as first-child / many-children tables.
- :class:`Layout`: the display order under a set of folded nodes, as *runs* (chains drawn at one
  depth), so display row ``i`` is a bisect away and a folded subtree is one row with a count.

A row's text (:func:`~.tree_rows.node_row`) is built only when a row is sent
or searched, and cached.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ...harness.session_index import LEAF_TYPE, NO_POSITION
from .tree_rows import META_TYPES, EntryRow, entry_row

if TYPE_CHECKING:
    from ...harness.entries import SessionEntry
    from ...harness.session_index import SessionIndex

__all__ = [
    "BRANCHING",
    "FOLDED",
    "FORK",
    "LAST",
    "LEAF_ONLY",
    "NO",
    "NOT_SHOWN",
    "PATH",
    "Layout",
    "Run",
    "Shape",
    "TreeIndex",
    "side_branches",
    "text_lines",
]

NO = NO_POSITION
"""No node (a root's parent, a node without children)."""
LEAF_ONLY = frozenset({LEAF_TYPE})
"""The entry types never shown: leaf moves are navigation, not nodes."""
NOT_SHOWN = META_TYPES | LEAF_ONLY
"""The entry types hidden unless "all entries" is on: bookkeeping, and leaf moves."""
FORK, LAST, BRANCHING, FOLDED, PATH = 1, 2, 4, 8, 16
"""Bits of a display row: drawn under a branch point, the last child there, a branch point
itself (it gets a fold toggle), folded, on the current branch (root → leaf)."""


class TreeIndex:
    """Every entry of a session as a node, numbered by its position in the file: the session's
    structure index (:class:`~pi_notebook.harness.session_index.SessionIndex`) read as it is,
    its lists shared, no entry object touched but for the rows that are sent. Leaf moves are
    navigation, not nodes: never shown (their children hang under the move's target)."""

    def __init__(self) -> None:
        self.source: SessionIndex | None = None
        """The session's index this one reads (only its first :attr:`count` positions: the
        session may be ahead until the next :meth:`update`)."""
        self.entries: Sequence[SessionEntry] = []
        self.ids: list[str] = []
        self.types: list[str] = []
        self.parents: list[int] = []
        """The tree parent's position (always earlier); :data:`NO` for a root."""
        self.index: dict[str, int] = {}
        """Each id's position (ask :meth:`node`: it only answers for what was read)."""
        self.labels: dict[str, str] = {}
        self.flags: dict[int, str] = {}
        """``edited``/``omitted`` by node, from the latest context edit targeting it."""
        self.version = 0
        self.count = 0
        """Positions read: the nodes are ``range(count)``, leaf moves included."""
        self._moves = 0
        self._marks = 0
        self._rows: dict[int, EntryRow] = {}

    def __len__(self) -> int:
        """The node entries read (leaf moves are not nodes)."""
        return self.count - self._moves

    def node(self, entry_id: str) -> int | None:
        """The node of an entry id, ``None`` when it is unknown or not read yet."""
        node = self.index.get(entry_id)
        return node if node is not None and node < self.count else None

    def update(self, source: SessionIndex) -> bool | None:
        """Read what ``source`` gained since the last update. True when something was added,
        False when nothing was, ``None`` when ``source`` is another session's index (replaced:
        start over with a new index)."""
        if self.source is None:
            self.source = source
            self.entries, self.ids, self.types = source.entries, source.ids, source.types
            self.index = source.positions
        elif source is not self.source:
            return None
        count = len(source)
        if count == self.count:
            return False
        # The session's lists as they are, no pass over the nodes: reading the fields from
        # 100k pydantic entries took 60-70 % of a build (bench/tree_bench.py).
        self.parents = source.tree_parents()
        self.count, self._moves = count, source.moves
        marks, entries = source.marks, self.entries
        for position in marks[self._marks :]:
            self._bookkeeping(entries[position])
        self._marks = len(marks)
        self.version += 1
        return True

    def _bookkeeping(self, entry: Any) -> None:
        if entry.type == "label":
            if entry.label:
                self.labels[str(entry.target_id)] = str(entry.label)
            else:
                self.labels.pop(str(entry.target_id), None)
        elif entry.type == "context_edit":
            node = self.node(str(entry.target_id))
            if node is not None:
                self.flags[node] = "omitted" if entry.replacement is None else "edited"

    def row(self, node: int) -> EntryRow:
        """The node's row (built on first use, then cached), its edit flag applied."""
        row = self._rows.get(node)
        if row is None:
            row = self._rows[node] = entry_row(self.entries[node])
        flag = self.flags.get(node)
        return row if flag is None else (*row[:7], flag)

    def rows(self) -> list[EntryRow]:
        """Every row, parents as ids (leaf moves resolved)."""
        out = []
        for node in range(self.count):
            if self.types[node] == LEAF_TYPE:
                continue
            row = self.row(node)
            parent = self.parents[node]
            out.append((row[0], None if parent == NO else self.ids[parent], *row[2:]))
        return out

    def branch(self, node: int) -> set[int]:
        """The node and its ancestors (hidden ones included). A parent always comes earlier
        in the file, so the walk ends."""
        path: list[int] = []
        append, parents = path.append, self.parents
        while node != NO:
            append(node)
            node = parents[node]
        return set(path)


class Shape:
    """The shown nodes: with ``show_meta`` every node, else bookkeeping entries left out."""

    def __init__(self, index: TreeIndex, show_meta: bool) -> None:
        self.show_meta = show_meta
        self.anc: list[int] = []
        """The nearest shown ancestor-or-self of each node."""
        self.parent: list[int] = []
        self.first: list[int] = []
        self.many: dict[int, list[int]] = {}
        self.roots: list[int] = []
        self.count = 0
        self.extend(index)

    def extend(self, index: TreeIndex) -> range:
        """Take the nodes the index gained since (a live session grows); returns them."""
        start, count = len(self.anc), index.count
        parents, types = index.parents, index.types
        hidden = LEAF_ONLY if self.show_meta else NOT_SHOWN
        grow = count - start
        anc, shown_parent, first = self.anc, self.parent, self.first
        anc.extend([NO] * grow)
        shown_parent.extend([NO] * grow)
        first.extend([NO] * grow)
        many, roots = self.many, self.roots
        shown = 0
        for node in range(start, count):
            parent = parents[node]
            up = anc[parent] if parent != NO else NO
            if types[node] not in hidden:
                anc[node] = node
                shown += 1
                shown_parent[node] = up
                if up == NO:
                    roots.append(node)
                elif first[up] == NO:
                    first[up] = node
                elif (kids := many.get(up)) is None:
                    many[up] = [first[up], node]
                else:
                    kids.append(node)
            else:
                anc[node] = up
        self.count += shown
        return range(start, count)

    def children(self, node: int) -> list[int]:
        kids = self.many.get(node)
        if kids is not None:
            return kids
        return [] if self.first[node] == NO else [self.first[node]]

    def size(self, node: int) -> int:
        """Shown nodes in the subtree of ``node``, itself included."""
        total, stack = 0, [node]
        first, many = self.first, self.many
        while stack:
            current = stack.pop()
            total += 1
            kids = many.get(current)
            if kids is not None:
                stack.extend(kids)
            elif first[current] != NO:
                stack.append(first[current])
        return total


class Run(NamedTuple):
    """Nodes drawn one under the other at one depth: a head (a root or a branch point's child)
    and its single-child chain; ``fork``/``last`` describe the head."""

    nodes: list[int]
    depth: int
    fork: bool
    last: bool


class Layout:
    """The display order of a :class:`Shape` with ``folded`` nodes' subtrees left out: depth-first,
    one level of indent per branch point (long chains do not drift right)."""

    def __init__(self, shape: Shape, folded: Iterable[int] = ()) -> None:
        self.shape = shape
        self.folded = {node for node in folded if shape.first[node] != NO}
        self.runs: list[Run] = []
        self.starts: list[int] = []
        self.pos: dict[int, int] = {}
        """Display index of each run head (other nodes: via their head)."""
        self._head: dict[int, int] = {}  # run index by head node
        self._tail: dict[int, int] = {}  # run index by last node (a leaf usually is one)
        first, many, folded_set = shape.first, shape.many, self.folded
        roots = shape.roots
        stack = [(roots[i], 0, len(roots) > 1, i == len(roots) - 1) for i in range(len(roots))]
        stack.reverse()
        total = 0
        while stack:
            head, depth, fork, last = stack.pop()
            nodes = [head]
            node = head
            while node not in many and node not in folded_set and (child := first[node]) != NO:
                nodes.append(child)
                node = child
            self._head[head] = len(self.runs)
            self.starts.append(total)
            self._tail[node] = len(self.runs)
            self.runs.append(Run(nodes, depth, fork, last))
            total += len(nodes)
            kids = many.get(node)
            if kids is not None and node not in folded_set:
                end = len(kids) - 1
                stack.extend((kids[j], depth + 1, True, j == end) for j in range(end, -1, -1))
        self.total = total
        self._sizes: dict[int, int] = {}

    def append(self, node: int) -> bool:
        """Take a node just added to the shape, in place, when it only extends a chain (a live
        run appending under the leaf) or is hidden; False when the layout must be rebuilt."""
        shape = self.shape
        if shape.anc[node] != node:
            return True  # hidden bookkeeping: no row
        parent = shape.parent[node]
        run = self._tail.get(parent) if parent != NO else None
        if run is None or parent in self.folded or shape.first[parent] != node:
            return False
        del self._tail[parent]
        self.runs[run].nodes.append(node)
        self._tail[node] = run
        starts = self.starts
        for later in range(run + 1, len(starts)):
            starts[later] += 1
        self.total += 1
        return True

    def node_at(self, position: int) -> tuple[Run, int]:
        """The run holding display row ``position`` and the row's place in it."""
        run = bisect_right(self.starts, position) - 1
        return self.runs[run], position - self.starts[run]

    def position(self, node: int) -> int | None:
        """The display index of a shown node, ``None`` when a fold hides it."""
        shape = self.shape
        if node in self._tail:
            run = self._tail[node]
            return self.starts[run] + len(self.runs[run].nodes) - 1
        offset = 0
        current = node
        while current not in self._head:  # climb the chain to its head
            parent = shape.parent[current]
            if parent == NO or shape.first[parent] != current or parent in shape.many:
                return None
            if parent in self.folded:
                return None
            current = parent
            offset += 1
        run = self._head[current]
        return self.starts[run] + offset

    def hidden(self, node: int) -> int:
        """Shown nodes a fold at ``node`` hides."""
        if node not in self._sizes:
            self._sizes[node] = self.shape.size(node) - 1
        return self._sizes[node]

    def rows(self, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
        """``(node, depth, bits, hidden)`` of display rows ``start`` to ``end`` (clamped); the
        ``PATH`` bit is the caller's."""
        end = min(end, self.total)
        if start >= end:
            return
        run_index = bisect_right(self.starts, start) - 1
        offset = start - self.starts[run_index]
        position = start
        many, folded = self.shape.many, self.folded
        while position < end:
            run = self.runs[run_index]
            nodes = run.nodes
            head_bits = (FORK if run.fork else 0) | (LAST if run.last else 0)
            while offset < len(nodes) and position < end:
                node = nodes[offset]
                bits = LAST if offset else head_bits
                if node in many:
                    bits |= BRANCHING
                hidden = 0
                if node in folded:
                    bits |= FOLDED
                    hidden = self.hidden(node)
                yield node, run.depth, bits, hidden
                offset += 1
                position += 1
            run_index += 1
            offset = 0


def side_branches(shape: Shape, path: set[int]) -> set[int]:
    """The children of branch points that are off ``path`` and have children of their own:
    folding them leaves the current branch and one row per side branch."""
    folded = set()
    for kids in shape.many.values():
        for child in kids:
            if child not in path and shape.first[child] != NO:
                folded.add(child)
    return folded


def text_lines(shape: Shape) -> list[tuple[str, int]]:
    """``(prefix, node)`` of every shown node as the text rendering draws it: ``├─``/``└─`` at
    branch points, ``│`` down the side branches, chains at one indent."""
    first, many = shape.first, shape.many
    out: list[tuple[str, int]] = []
    stack: list[tuple[int, str, str]] = [(root, "", "") for root in reversed(shape.roots)]
    while stack:
        node, head, prefix = stack.pop()
        out.append((head, node))
        while node not in many and (child := first[node]) != NO:
            node = child
            out.append((prefix, node))
        kids = many.get(node)
        if kids is None:
            continue
        for j in range(len(kids) - 1, -1, -1):
            last = j == len(kids) - 1
            stack.append(
                (kids[j], prefix + ("└─ " if last else "├─ "), prefix + ("   " if last else "│  "))
            )
    return out
