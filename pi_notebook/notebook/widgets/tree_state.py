"""The session tree's view state in the kernel: the tree read from the session (:mod:`.tree_pages`),
which subtrees are folded, whether bookkeeping entries show, and the pages and display rows built
from the resulting layout. Knows nothing of widgets; the tree view syncs what it builds."""

from __future__ import annotations

from typing import Any

from ...harness.session_index import SessionIndex
from .tree_pages import NO, PATH, Layout, Shape, TreeIndex, side_branches, text_lines
from .tree_search import TreeSearch

__all__ = ["TreeState"]


class TreeState:
    """One session's tree as displayed, ``page_rows`` rows to a synced page.

    ``layout_number`` grows whenever the page's rows change, across :meth:`reset` too: the
    front end drops the rows it fetched for an older number.
    """

    def __init__(self, page_rows: int) -> None:
        self.page_rows = page_rows
        self.layout_number = 0
        self._paged: Layout | None = None  # the layout of the page last built
        self._last_page: dict[str, Any] = {}
        self.reset()

    index: TreeIndex
    search: TreeSearch
    folded: set[int]
    show_meta: bool
    leaf: str
    """The current leaf's entry id (``""``: none)."""
    name: str
    """The session's name (``""``: none)."""

    def reset(self) -> None:
        """Forget the tree (another session, or this one replaced)."""
        self.index = TreeIndex()
        self.search = TreeSearch(self.index)
        self._path_key: tuple[int, str] | None = None
        self._path_nodes: set[int] = set()
        self._path_leaf = NO
        self._shape: Shape | None = None
        self._layout: Layout | None = None
        self.folded = set()
        self.show_meta = False
        self.leaf = ""
        self.name = ""

    def read(self, structure: SessionIndex) -> bool | None:
        """Take what the session's index gained: True when nodes were added, False for none,
        None when the session was replaced (the state was reset and read it again)."""
        changed = self.index.update(structure)
        if changed is None:
            self.reset()
            self.index.update(structure)
            return None
        if changed:
            self._grow()
        return changed

    def _grow(self) -> None:
        """Extend the shape and layout with the new nodes in place when they only continue a
        chain (what a live run does); anything else rebuilds them on the next use."""
        shape, layout = self._shape, self._layout
        if shape is None or shape.show_meta != self.show_meta:
            self._shape = self._layout = None
            return
        added = shape.extend(self.index)
        if layout is not None and not all(layout.append(node) for node in added):
            self._layout = None

    def shape(self) -> Shape:
        if self._shape is None or self._shape.show_meta != self.show_meta:
            self._shape = Shape(self.index, self.show_meta)
        return self._shape

    def layout(self) -> Layout:
        if self._layout is None:
            self._layout = Layout(self.shape(), self.folded)
            self.folded = set(self._layout.folded)
        return self._layout

    def relayout(self) -> None:
        """The layout is rebuilt on its next use (folds or the shown entries changed)."""
        self._layout = None

    # --- folds -----------------------------------------------------------------------------------

    def fold(self, node: int, folded: bool) -> bool:
        """Fold (or unfold) the subtree under a node's nearest shown ancestor; False when a
        fold hides it all."""
        shown = self.shape().anc[node]
        if shown == NO:
            return False
        if folded:
            self.folded.add(shown)
        else:
            self.folded.discard(shown)
        self.relayout()
        return True

    def fold_side_branches(self) -> None:
        self.folded = side_branches(self.shape(), self.path())
        self.relayout()

    def fold_big_tree(self) -> bool:
        """Fold the side branches of a tree bigger than a page (one row each, with their
        size): the current branch is what one came for. True when it did."""
        if self.shape().count <= self.page_rows:
            return False
        self.fold_side_branches()
        return True

    def set_show_meta(self, show: bool) -> bool:
        if show == self.show_meta:
            return False
        self.show_meta = show
        self._shape = None
        self.relayout()
        return True

    def unfold_to(self, node: int) -> bool:
        """Unfold every folded ancestor of a node; True when one was folded."""
        shape = self.shape()
        current = shape.parent[shape.anc[node]] if shape.anc[node] != NO else NO
        changed = False
        while current != NO:
            if current in self.folded:
                self.folded.discard(current)
                changed = True
            current = shape.parent[current]
        if changed:
            self.relayout()
        return changed

    # --- rows and pages --------------------------------------------------------------------------

    def path(self) -> set[int]:
        """The current branch's nodes (cached: a page, a fold and a fetch all ask)."""
        key = (self.index.version, self.leaf)
        if self._path_key != key:
            index = self.index
            leaf = index.node(self.leaf)
            old = self._path_nodes
            if leaf is None:
                path: set[int] = set()
            elif self._path_leaf in old and self._path_leaf != NO:
                # the leaf moved down from the old one (a run went on): add the steps
                steps: list[int] = []
                current = leaf
                while current != NO and current not in old and len(steps) < 64:
                    steps.append(current)
                    current = index.parents[current]
                if current == self._path_leaf:
                    old.update(steps)
                    path = old
                else:
                    path = index.branch(leaf)
            else:
                path = index.branch(leaf)
            self._path_key, self._path_nodes = key, path
            self._path_leaf = NO if leaf is None else leaf
        return self._path_nodes

    def position(self, node: int) -> int | None:
        """The display index of a node (of its nearest shown ancestor), None when folded away."""
        layout = self.layout()
        shown = layout.shape.anc[node]
        return None if shown == NO else layout.position(shown)

    def _leaf_position(self, layout: Layout) -> int:
        leaf = self.index.node(self.leaf)
        if leaf is None or layout.shape.anc[leaf] == NO:
            return -1
        position = layout.position(layout.shape.anc[leaf])
        return -1 if position is None else position

    def rows(self, start: int, end: int) -> list[list[Any]]:
        """Display rows ``start`` to ``end`` of the layout, as the wire has them."""
        layout = self.layout()
        index = self.index
        path = self.path()
        labels = index.labels
        out: list[list[Any]] = []
        for node, depth, bits, hidden in layout.rows(max(0, start), end):
            row = index.row(node)
            if node in path:
                bits |= PATH
            out.append([row[0], *row[2:], labels.get(row[0], ""), depth, bits, hidden])
        return out

    def page(self) -> dict[str, Any]:
        """The synced page: the whole layout when it fits, else its first rows and the rows
        around the current leaf."""
        layout = self.layout()
        total, size = layout.total, self.page_rows
        leaf = self._leaf_position(layout)
        if total <= size:
            segments = [[0, self.rows(0, total)]]
        else:
            head = size // 8
            low = max(head, (leaf if leaf >= 0 else total) - (size - head) * 3 // 4)
            high = min(total, low + size - head)
            low = max(head, high - (size - head))
            segments = [[0, self.rows(0, head)]]
            segments.append([low, self.rows(low, high)])
        page = {
            "layout": self.layout_number,
            "total": total,
            "entries": len(self.index),
            "leaf_index": leaf,
            "show_meta": self.show_meta,
            "segments": segments,
        }
        if layout is not self._paged or page != self._last_page:
            # another layout, or rows that changed: the front end drops the rows it fetched
            self.layout_number += 1
            page["layout"] = self.layout_number
            self._paged, self._last_page = layout, dict(page)
        return page

    def matches(self, query: str, limit: int) -> tuple[list[list[Any]], int]:
        """Shown entries matching ``query`` among the titles searched so far: up to ``limit``
        as ``[id, kind, title, label]``, and how many matched."""
        index, anc = self.index, self.shape().anc
        nodes = self.search.find(query, lambda node: anc[node] == node)
        matches = []
        for node in nodes[:limit]:
            row = index.row(node)
            matches.append([row[0], row[2], row[3], index.labels.get(row[0], "")])
        return matches, len(nodes)

    # --- text ------------------------------------------------------------------------------------

    def text_lines(self) -> tuple[list[tuple[str, int]], int]:
        """The tree as text lines ``(prefix, node)`` with bookkeeping entries hidden, and the
        node that stands for the current leaf (``NO``: none)."""
        shape = Shape(self.index, False) if self.show_meta else self.shape()
        leaf = self.index.node(self.leaf)
        return text_lines(shape), NO if leaf is None else shape.anc[leaf]
