"""The session tree's shape, kept in the kernel so the widget is sent only the rows it shows.

A 100,000-entry session is 100,000 tree rows; the widget's state holds one bounded page of them
(the top and the rows around the current leaf) and the front end asks for the rest by display
index as it scrolls (see ``tree_view``). Three layers, each O(n) in flat lists, no recursion:

- :class:`TreeIndex`: every node entry in file order (``ids``, tree ``parents`` as indexes, the
  bookkeeping flag), labels and context-edit flags; read incrementally from the session's
  entries, touching only ``id``/``parent_id``/``type`` (no JSON dump: that is 20× dearer).
- :class:`Shape`: the shown nodes for one "all entries" setting, bookkeeping entries skipped
  (their children hang from the nearest shown ancestor), as first-child / many-children tables.
- :class:`Layout`: the display order under a set of folded nodes, as *runs* (chains drawn at one
  depth), so display row ``i`` is a bisect away and a folded subtree is one row with a count.

A row's text (:func:`~pi_notebook.notebook.tree_rows.node_row`) is built only when a row is sent
or searched, and cached.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from itertools import compress
from operator import attrgetter
from typing import Any, NamedTuple

from ..harness.entries import SessionEntry
from .tree_rows import META_TYPES, EntryRow, node_row
from .widget_protocol import message_json

__all__ = [
    "BRANCHING",
    "FOLDED",
    "FORK",
    "LAST",
    "NO",
    "PATH",
    "Layout",
    "Run",
    "Shape",
    "TreeIndex",
    "side_branches",
    "text_lines",
]

_FIELDS = attrgetter("id", "parent_id", "type")
NO = -1
"""No node (a root's parent, a node without children)."""
FORK, LAST, BRANCHING, FOLDED, PATH = 1, 2, 4, 8, 16
"""Bits of a display row: drawn under a branch point, the last child there, a branch point
itself (it gets a fold toggle), folded, on the current branch (root → leaf)."""


class TreeIndex:
    """Every node entry of a session in file order (leaf moves are navigation, not nodes: an
    entry parented at one hangs under the move's target)."""

    def __init__(self) -> None:
        self.entries: list[SessionEntry] = []
        self.ids: list[str] = []
        self.parents: list[int] = []
        """The tree parent's index; :data:`NO` for a root, an unknown or a later parent."""
        self.meta: list[bool] = []
        self.index: dict[str, int] = {}
        self.labels: dict[str, str] = {}
        self.flags: dict[int, str] = {}
        """``edited``/``omitted`` by node, from the latest context edit targeting it."""
        self.version = 0
        self._moves: dict[str, str | None] = {}
        self._read = 0
        self._last_id = ""
        self._rows: dict[int, EntryRow] = {}

    def __len__(self) -> int:
        return len(self.ids)

    def update(self, entries: Sequence[SessionEntry]) -> bool | None:
        """Take the entries after those already read. True when something was added, False
        when nothing was, ``None`` when ``entries`` no longer extend what was read (the session
        was replaced or rewritten: start over with a new index)."""
        read = self._read
        if read > len(entries) or (read and entries[read - 1].id != self._last_id):
            return None
        if read == len(entries):
            return False
        # One C-level pass over the new entries and comprehensions after it: the per-entry
        # Python work is the whole cost of reading a 100k-entry session (each field read is a
        # pydantic attribute), so each field is read once.
        batch: Sequence[SessionEntry] = entries[read:]
        new_ids, parents_given, kinds = zip(*map(_FIELDS, batch), strict=True)
        parent_ids: Sequence[str | None] = parents_given
        moves = self._moves
        if "leaf" in kinds:  # navigation records: remembered, not nodes
            keep = [k != "leaf" for k in kinds]
            moves.update((i, p) for i, p, k in zip(new_ids, parent_ids, keep, strict=True) if not k)
            batch = list(compress(batch, keep))
            new_ids = tuple(compress(new_ids, keep))
            parent_ids = list(compress(parent_ids, keep))
            kinds = tuple(compress(kinds, keep))
        if batch:
            first = len(self.ids)
            index = self.index
            index.update(zip(new_ids, range(first, first + len(new_ids)), strict=True))
            get = index.get
            if moves:
                parent_ids = [self._through_moves(p) if p in moves else p for p in parent_ids]
            self.parents.extend(
                [
                    NO if p is None else (q if (q := get(p, NO)) < position else NO)
                    for position, p in enumerate(parent_ids, first)
                ]
            )
            self.ids.extend(new_ids)
            self.meta.extend([kind in META_TYPES for kind in kinds])
            self.entries.extend(batch)
            if "label" in kinds or "context_edit" in kinds:
                for position, kind in enumerate(kinds, first):
                    if kind == "label" or kind == "context_edit":
                        self._bookkeeping(self.entries[position])
        self._read = len(entries)
        self._last_id = entries[-1].id
        self.version += 1
        return True

    def _through_moves(self, parent: str | None) -> str | None:
        for _ in range(len(self._moves) + 1):
            if parent not in self._moves:
                break
            parent = self._moves[parent]
        return parent

    def _bookkeeping(self, entry: Any) -> None:
        target = str(entry.target_id)
        if entry.type == "label":
            if entry.label:
                self.labels[target] = str(entry.label)
            else:
                self.labels.pop(target, None)
            return
        node = self.index.get(target)
        if node is not None:
            self.flags[node] = "omitted" if entry.replacement is None else "edited"

    def row(self, node: int) -> EntryRow:
        """The node's row (built on first use, then cached), its edit flag applied."""
        row = self._rows.get(node)
        if row is None:
            row = self._rows[node] = node_row(message_json(self.entries[node]))
        flag = self.flags.get(node)
        return row if flag is None else (*row[:7], flag)

    def rows(self) -> list[EntryRow]:
        """Every row, parents as ids (leaf moves resolved)."""
        out = []
        for node in range(len(self.ids)):
            row = self.row(node)
            parent = self.parents[node]
            out.append((row[0], None if parent == NO else self.ids[parent], *row[2:]))
        return out

    def branch(self, node: int) -> set[int]:
        """The node and its ancestors (hidden ones included)."""
        path: set[int] = set()
        parents = self.parents
        while node != NO and node not in path:
            path.add(node)
            node = parents[node]
        return path


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
        start, count = len(self.anc), len(index.ids)
        parents, meta, show_meta = index.parents, index.meta, self.show_meta
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
            if show_meta or not meta[node]:
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
