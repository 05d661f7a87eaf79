"""The tree's search: every node's title and id, lower-cased, kept in one string.

A search matches shown entries whose title, label or id contains the query (case ignored).
Reading every title is what a search costs the first time (a 100k-entry session has 100k of
them); they are made once, from the entry objects (:func:`~.tree_rows.entry_title`, no JSON
dump), a chunk at a time so the event loop is never held for long, and kept for the next
searches as the session grows. The texts are joined with newlines into one string, so a search
is ``str.find`` (C speed) from match to match, and a bisect turns a match into its node.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from itertools import accumulate

from .tree_pages import TreeIndex
from .tree_rows import entry_title

__all__ = ["TreeSearch"]

_SEPARATORS = ("\n", "\x1f")
"""Between two nodes' texts, and between a title and its id: a query holding one is matched
node by node instead."""


class TreeSearch:
    """The searchable text of an index's nodes, made on demand."""

    def __init__(self, index: TreeIndex) -> None:
        self.index = index
        self._texts: list[str] = []
        """``"<title>\\x1f<id>"`` lower-cased, by node (empty for leaf moves)."""
        self._blob = ""
        self._starts: list[int] = []
        """Where each node's text starts in :attr:`_blob`."""
        self._joined = 0
        """Texts already in :attr:`_blob`."""

    @property
    def pending(self) -> int:
        """Nodes of the index whose text is not made yet."""
        return self.index.count - len(self._texts)

    def read(self, limit: int | None = None) -> int:
        """Make the texts of up to ``limit`` more nodes (all of them without a limit); returns
        how many are still to make."""
        index, texts = self.index, self._texts
        start = len(texts)
        end = index.count if limit is None else min(index.count, start + limit)
        entries, types, ids = index.entries, index.types, index.ids
        for node in range(start, end):
            if types[node] == "leaf":
                texts.append("")
            else:
                texts.append(f"{entry_title(entries[node])[1]}\x1f{ids[node]}".casefold())
        return index.count - end

    def find(self, query: str, shown: Callable[[int], bool]) -> list[int]:
        """Every shown node (file order) whose title, id or label holds ``query``, case
        ignored; the texts must be made (:meth:`read`)."""
        needle = query.strip().casefold()
        if not needle:
            return []
        found = self._in_texts(needle)
        index = self.index
        for entry_id, label in index.labels.items():
            if needle in label.casefold():
                node = index.node(entry_id)
                if node is not None:
                    found.add(node)
        return sorted(node for node in found if shown(node))

    def _in_texts(self, needle: str) -> set[int]:
        texts = self._texts
        if any(separator in needle for separator in _SEPARATORS):
            # spans a separator: only a node's own title or id can hold it
            return {node for node, text in enumerate(texts) if _own(needle, text)}
        self._join()
        blob, starts = self._blob, self._starts
        found: set[int] = set()
        last = len(starts) - 1
        position = blob.find(needle)
        while position >= 0:
            node = bisect_right(starts, position) - 1
            found.add(node)
            if node == last:
                break
            position = blob.find(needle, starts[node + 1])  # the next node's text on
        return found

    def _join(self) -> None:
        """Add the texts made since the last search to the joined string."""
        new = self._texts[self._joined :]
        if not new:
            return
        first = len(self._blob) + (1 if self._joined else 0)  # after the separating newline
        self._starts.extend(accumulate((len(text) + 1 for text in new[:-1]), initial=first))
        self._blob = "\n".join(new) if not self._joined else f"{self._blob}\n" + "\n".join(new)
        self._joined += len(new)


def _own(needle: str, text: str) -> bool:
    title, _, entry_id = text.partition("\x1f")
    return needle in title or needle in entry_id
