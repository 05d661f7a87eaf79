"""The session-tree widget: a :class:`~pi_notebook.harness.Session` of any size, a page at a time.

The kernel keeps the tree's shape (:mod:`.tree_pages`) and the fold state; the front end is a
virtual list over ``page["total"]`` display rows. The synced ``page`` trait holds one bounded
page (the top rows and those around the current leaf), so the comm's opening message and a
saved notebook stay small whatever the session's size; every other row is fetched on demand
with a ``rows`` request, answered by a custom message (never stored in the notebook). Folding,
"all entries", search and "reveal" are requests too: the kernel changes the layout, re-sends
the page (its ``layout`` number tells the front end to drop rows of an older layout) and
answers. Clicking a node asks for its messages (``select``, answered through the
``selected_id``/``selected_detail`` traits, so a saved notebook keeps the selection).

Actions call callbacks the owner sets (``on_navigate(entry_id, summarize)``,
``on_fork(entry_id)``, ``on_label(entry_id, text)``, ``on_compact()``); they run on the
kernel's event loop, even while a run streams, and the tree refreshes when they finish. After
a move, the owner may offer a restore on the tree's card (:attr:`TreeView.restore_slot`, the
``restore`` trait; see ``restore_view``).
"""

from __future__ import annotations

import asyncio
import html
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import traitlets

from ...harness import Session
from .base import Callback, PiWidget, module_loader
from .coalesce import Coalescer, Scheduler
from .items import message_json
from .protocol import TreeControls
from .restore_view import CardSlot
from .tree_pages import NO, PATH, Layout, Shape, TreeIndex, side_branches, text_lines
from .tree_rows import EDIT_FLAGS, EntryRow, entry_detail, node_row, short_id
from .tree_search import TreeSearch

__all__ = [
    "CONTENT_TRAITS",
    "FETCH_ROWS",
    "PAGE_ROWS",
    "EntryRow",
    "TreeView",
    "entry_detail",
    "node_row",
    "short_id",
]

PAGE_ROWS = 300
"""Display rows in the synced page (~60 kB at most: titles are cut at ~160 characters)."""
FETCH_ROWS = 500
"""The most rows one ``rows`` request is answered with."""
SEARCH_MATCHES = 100
"""Matches a search sends (it counts them all)."""
SEARCH_CHUNK = 2_000
"""Titles a search makes between yields to the event loop (each is made once, see
``tree_search``)."""
FALLBACK_LINES = 400
"""Lines of the tree in its text/HTML fallback (a 20,000-entry tree would store ~6 MB)."""
CONTENT_TRAITS = (
    "page",
    "leaf_id",
    "session_name",
    "selected_id",
    "selected_detail",
    "controls",
    "busy",
    "notice",
    "restore",
)
"""The tree's synced traits that carry the session (``resync`` re-sends these)."""
_QUIET_EVENTS = frozenset(
    {"message_start", "message_update", "tool_execution_start", "tool_execution_update"}
)
_KIND_PREFIX = {"user": "user: ", "assistant": "assistant: ", "tool_result": "tool ", "message": ""}


class TreeView(PiWidget):
    """The session tree of ``session``; call :meth:`refresh` (or feed :meth:`handle` with the
    harness's events) as the session grows."""

    module_name = "session_tree"
    _esm = module_loader("session_tree")

    content_traits = CONTENT_TRAITS

    page = traitlets.Dict().tag(sync=True)
    leaf_id = traitlets.Unicode("").tag(sync=True)
    session_name = traitlets.Unicode("").tag(sync=True)
    selected_id = traitlets.Unicode("").tag(sync=True)
    selected_detail = traitlets.Dict().tag(sync=True)
    controls = traitlets.Dict().tag(sync=True)
    busy = traitlets.Unicode("").tag(sync=True)
    restore = traitlets.Dict().tag(sync=True)
    """The restore card a move offers (``RestoreCard``), ``{}`` for none."""

    on_navigate: Callback[Callable[[str, bool], object]] = Callback(
        "Called with (entry_id, summarize) for “Continue from here”."
    )
    on_fork: Callback[Callable[[str], object]] = Callback(
        "Called with the entry id for “Fork to new session”."
    )
    on_label: Callback[Callable[[str, str], object]] = Callback(
        "Called with (entry_id, text) to set a label; an empty text clears it."
    )
    on_compact: Callback[Callable[[], object]] = Callback("Called for “Compact”.")

    _BUSY_WORDS: ClassVar[Mapping[str, str]] = {
        "navigate": "moving to the selected entry…",
        "fork": "forking…",
        "label": "labelling…",
        "compact": "compacting…",
    }

    def __init__(
        self,
        session: Session,
        *,
        loop: asyncio.AbstractEventLoop | None = None,
        sync_interval: float = 0.05,
        clock: Callable[[], float] = time.monotonic,
        scheduler: Scheduler | None = None,
        page_rows: int = PAGE_ROWS,
    ) -> None:
        if page_rows < 10:
            raise ValueError(f"page_rows must be at least 10, got {page_rows!r}")
        self._page_rows = page_rows
        self._sync = Coalescer(
            self._flush, interval=sync_interval, clock=clock, scheduler=scheduler
        )
        self._session = session
        self._version = 0
        self._layout_number = 0
        self._paged: Layout | None = None  # the layout of the page last built
        self._last_page: dict[str, Any] = {}
        self._busy_count = 0
        self._searches: set[asyncio.Task[None]] = set()
        with self._sync.hold():
            self._reset()
            self._read_session()
            self._fold_big_tree()
            # The first page goes out with the comm's opening message.
            super().__init__(
                page=self._page(),
                leaf_id=self._leaf,
                session_name=self._name,
                controls=dict(self._controls()),
            )
            self._sync.discard()  # the marks made while reading: their values were just sent
        self.restore_slot = CardSlot(self._show_restore)
        self._connect(loop)

    def _show_restore(self, card: Mapping[str, Any]) -> None:
        self.restore = dict(card)

    # --- owner API -------------------------------------------------------------------------------

    @property
    def session(self) -> Session:
        return self._session

    @session.setter
    def session(self, session: Session) -> None:
        """Show another session (``%session new``/``open``): the tree is rebuilt."""
        self._session = session
        with self._sync.hold():
            self._reset()
            self.selected_id = ""
            self.selected_detail = {}
            self.refresh()
            self._fold_big_tree()

    def refresh(self) -> None:
        """Read what the session gained since the last read (cheap: only the new entries'
        ids and parents) and sync the page, throttled."""
        self._channel.bind()
        self._read_session()

    def handle(self, event: Any) -> None:
        """Refresh on agent or harness events that may have changed the session (subscribe it
        next to the run view); streaming deltas are ignored."""
        if getattr(event, "type", None) not in _QUIET_EVENTS:
            self.refresh()

    def select(self, entry_id: str | None) -> None:
        """Select a node (as a click does) and show its detail."""
        entry = self._session.get_entry(entry_id) if entry_id else None
        with self.hold_sync():
            self.selected_id = entry_id or ""
            self.selected_detail = dict(entry_detail(message_json(entry))) if entry else {}

    def resync(self, *, full: bool = False) -> None:
        """Read the session, then :meth:`PiWidget.resync`."""
        self.refresh()
        super().resync(full=full)

    @property
    def rows(self) -> list[EntryRow]:
        """Every node row, in file order, parents as ids (builds every title: for tests and
        small trees; the widget builds only the rows it sends)."""
        return self._index.rows()

    def display_rows(self, start: int = 0, end: int | None = None) -> list[list[Any]]:
        """Display rows ``start`` to ``end`` of the current layout, as a ``rows`` reply has
        them: ``[id, kind, title, model, tokens, cost, flag, label, depth, bits, hidden]``."""
        layout = self._current_layout()
        return self._wire_rows(layout, start, layout.total if end is None else end)

    def position(self, entry_id: str) -> int | None:
        """The display index of an entry (of its nearest shown ancestor for a hidden one), or
        ``None`` when a fold hides it."""
        node = self._index.node(entry_id)
        if node is None:
            return None
        layout = self._current_layout()
        shown = layout.shape.anc[node]
        return None if shown == NO else layout.position(shown)

    @property
    def folded_ids(self) -> list[str]:
        """The entries whose subtrees are folded, in file order."""
        return [self._index.ids[node] for node in sorted(self._folded)]

    def fold(self, entry_id: str, folded: bool = True) -> None:
        """Fold (or unfold) the subtree under an entry, as its toggle does."""
        node = self._index.node(entry_id)
        if node is None:
            raise KeyError(entry_id)
        shown = self._current_shape().anc[node]
        if shown == NO:
            return
        if folded:
            self._folded.add(shown)
        else:
            self._folded.discard(shown)
        self._relayout()

    def fold_side_branches(self) -> None:
        """Fold every side branch off the current branch."""
        shape = self._current_shape()
        self._folded = side_branches(shape, self._path())
        self._relayout()

    def show_meta(self, show: bool) -> None:
        """Show bookkeeping entries (labels, names, usage…) or hide them, as "all entries"."""
        if show != self._show_meta:
            self._show_meta = show
            self._shape = None
            self._relayout()

    def reveal(self, entry_id: str) -> int | None:
        """Unfold what hides an entry; its display index (of its nearest shown ancestor)."""
        node = self._index.node(entry_id)
        if node is None:
            return None
        shape = self._current_shape()
        current = shape.parent[shape.anc[node]] if shape.anc[node] != NO else NO
        changed = False
        while current != NO:
            if current in self._folded:
                self._folded.discard(current)
                changed = True
            current = shape.parent[current]
        if changed:
            self._relayout()
        return self.position(entry_id)

    def search(self, query: str, limit: int = SEARCH_MATCHES) -> tuple[list[list[Any]], int]:
        """Shown entries whose title, label or id contains ``query`` (case ignored): up to
        ``limit`` as ``[id, kind, title, label]``, and how many matched."""
        self._search.read()
        return self._matches(query, limit)

    def _matches(self, query: str, limit: int) -> tuple[list[list[Any]], int]:
        index, anc = self._index, self._current_shape().anc
        nodes = self._search.find(query, lambda node: anc[node] == node)
        matches = []
        for node in nodes[:limit]:
            row = index.row(node)
            matches.append([row[0], row[2], row[3], index.labels.get(row[0], "")])
        return matches, len(nodes)

    # --- the tree's shape ------------------------------------------------------------------------

    _index: TreeIndex
    _search: TreeSearch
    _shape: Shape | None
    _layout: Layout | None
    _folded: set[int]
    _show_meta: bool
    _leaf: str
    _name: str

    def _reset(self) -> None:
        self._index = TreeIndex()
        self._search = TreeSearch(self._index)
        self._path_key: tuple[int, str] | None = None
        self._path_nodes: set[int] = set()
        self._path_leaf = NO
        self._shape = None
        self._layout = None
        self._folded = set()
        self._show_meta = False
        self._leaf = ""
        self._name = ""
        self._sync.mark("page", "leaf_id", "session_name")

    def _read_session(self) -> None:
        structure = self._session.index
        with self._sync.hold():
            changed = self._index.update(structure)
            if changed is None:  # the session was replaced: start over
                self._reset()
                changed = self._index.update(structure)
            if changed:
                self._grow()
                self._version += 1
                self._sync.mark("page")
            leaf = self._session.leaf_id or ""
            if leaf != self._leaf:
                self._leaf = leaf
                self._version += 1
                self._sync.mark("leaf_id", "page")
            name = self._session.name or ""
            if name != self._name:
                self._name = name
                self._version += 1
                self._sync.mark("session_name")

    def _grow(self) -> None:
        """Extend the shape and layout with the new nodes in place when they only continue a
        chain (what a live run does); anything else rebuilds them on the next use."""
        shape, layout = self._shape, self._layout
        if shape is None or shape.show_meta != self._show_meta:
            self._shape = self._layout = None
            return
        added = shape.extend(self._index)
        if layout is not None and not all(layout.append(node) for node in added):
            self._layout = None

    def _current_shape(self) -> Shape:
        if self._shape is None or self._shape.show_meta != self._show_meta:
            self._shape = Shape(self._index, self._show_meta)
        return self._shape

    def _current_layout(self) -> Layout:
        if self._layout is None:
            self._layout = Layout(self._current_shape(), self._folded)
            self._folded = set(self._layout.folded)
        return self._layout

    def _relayout(self) -> None:
        self._layout = None
        self._sync.mark("page")

    def _fold_big_tree(self) -> None:
        """A tree bigger than a page opens with its side branches folded (one row each, with
        their size): the current branch is what one came for."""
        if self._current_shape().count > self._page_rows:
            self._folded = side_branches(self._current_shape(), self._path())
            self._relayout()

    def _path(self) -> set[int]:
        """The current branch's nodes (cached: a page, a fold and a fetch all ask)."""
        key = (self._index.version, self._leaf)
        if self._path_key != key:
            index = self._index
            leaf = index.node(self._leaf)
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

    def _leaf_position(self, layout: Layout) -> int:
        leaf = self._index.node(self._leaf)
        if leaf is None or layout.shape.anc[leaf] == NO:
            return -1
        position = layout.position(layout.shape.anc[leaf])
        return -1 if position is None else position

    def _wire_rows(self, layout: Layout, start: int, end: int) -> list[list[Any]]:
        index = self._index
        path = self._path()
        labels = index.labels
        out: list[list[Any]] = []
        for node, depth, bits, hidden in layout.rows(max(0, start), end):
            row = index.row(node)
            if node in path:
                bits |= PATH
            out.append([row[0], *row[2:], labels.get(row[0], ""), depth, bits, hidden])
        return out

    def _page(self) -> dict[str, Any]:
        """The synced page: the whole layout when it fits, else its first rows and the rows
        around the current leaf."""
        layout = self._current_layout()
        total, size = layout.total, self._page_rows
        leaf = self._leaf_position(layout)
        if total <= size:
            segments = [[0, self._wire_rows(layout, 0, total)]]
        else:
            head = size // 8
            low = max(head, (leaf if leaf >= 0 else total) - (size - head) * 3 // 4)
            high = min(total, low + size - head)
            low = max(head, high - (size - head))
            segments = [[0, self._wire_rows(layout, 0, head)]]
            segments.append([low, self._wire_rows(layout, low, high)])
        page = {
            "layout": self._layout_number,
            "total": total,
            "entries": len(self._index),
            "leaf_index": leaf,
            "show_meta": self._show_meta,
            "segments": segments,
        }
        if layout is not self._paged or page != self._last_page:
            # another layout, or rows that changed: the front end drops the rows it fetched
            self._layout_number += 1
            page["layout"] = self._layout_number
            self._paged, self._last_page = layout, dict(page)
        return page

    def _flush(self, names: frozenset[str]) -> None:
        with self.hold_sync():
            if "page" in names:
                self.page = self._page()
            if "leaf_id" in names:
                self.leaf_id = self._leaf
            if "session_name" in names:
                self.session_name = self._name
            if "controls" in names:
                self.controls = dict(self._controls())

    def _controls(self) -> TreeControls:
        return {
            "navigate": self.on_navigate is not None,
            "fork": self.on_fork is not None,
            "label": self.on_label is not None,
            "compact": self.on_compact is not None,
        }

    def _callbacks_changed(self) -> None:
        self._sync.mark("controls")

    # --- search ----------------------------------------------------------------------------------

    async def _search_async(self, query: str) -> None:
        while self._search.read(SEARCH_CHUNK):
            await asyncio.sleep(0)  # making 100k titles never holds the loop for long
        matches, total = self._matches(query, SEARCH_MATCHES)
        self.send({"type": "found", "query": query, "matches": matches, "total": total})

    def _start_search(self, query: str) -> None:
        for task in self._searches:
            task.cancel()  # a newer query replaces it
        loop = self._channel.loop
        if loop is None:
            matches, total = self.search(query)
            self.send({"type": "found", "query": query, "matches": matches, "total": total})
            return
        task = loop.create_task(self._search_async(query))
        self._searches.add(task)
        task.add_done_callback(self._searches.discard)

    # --- front-end requests (on the event loop) --------------------------------------------------

    def _dispatch(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        entry_id = message.get("id")
        if kind in ("select", "navigate", "fork", "label", "fold", "reveal") and (
            not isinstance(entry_id, str) or self._session.get_entry(entry_id) is None
        ):
            self._set_notice(f"The session has no entry {entry_id!r} (was it replaced?).")
            return
        assert entry_id is None or isinstance(entry_id, str)
        if kind == "rows":
            self._answer_rows(message)
        elif kind == "select" and entry_id:
            self.select(entry_id)
        elif kind == "fold" and entry_id:
            self.fold(entry_id, bool(message.get("folded", True)))
        elif kind == "fold_side":
            self.fold_side_branches()
        elif kind == "show_meta":
            self.show_meta(bool(message.get("show")))
        elif kind == "search":
            self._start_search(str(message.get("query", ""))[:200])
        elif kind == "reveal" and entry_id:
            self._answer_reveal(entry_id)
        elif kind == "navigate":
            self._act(
                kind,
                "Continue from here",
                self.on_navigate,
                entry_id,
                bool(message.get("summarize")),
            )
        elif kind == "fork":
            self._act(kind, "Fork", self.on_fork, entry_id)
        elif kind == "label":
            self._act(kind, "Label", self.on_label, entry_id, str(message.get("text", "")).strip())
        elif kind == "compact":
            self._act(kind, "Compact", self.on_compact)
        elif kind == "restore":
            problem = self.restore_slot.answer(message)
            if problem:
                self._set_notice(problem)
        elif kind == "dismiss_notice":
            self.notice = ""
        else:
            self._set_notice(f"Ignored an unknown widget request {kind!r}.")

    def _answer_rows(self, message: Mapping[str, Any]) -> None:
        start, end = message.get("start"), message.get("end")
        if not isinstance(start, int) or not isinstance(end, int) or start < 0:
            self._set_notice(f"Ignored a malformed rows request: {dict(message)!r:.200}")
            return
        self._sync.flush()  # a pending layout goes out first: the reply belongs to it
        end = min(end, start + FETCH_ROWS)
        rows = self.display_rows(start, end)
        self.send({"type": "rows", "layout": self._layout_number, "start": start, "rows": rows})

    def _answer_reveal(self, entry_id: str) -> None:
        position = self.reveal(entry_id)
        self.select(entry_id)
        self._sync.flush()
        if position is None:
            return
        start = max(0, position - 40)
        rows = self.display_rows(start, position + 40)
        self.send({"type": "rows", "layout": self._layout_number, "start": start, "rows": rows})
        self.send(
            {"type": "revealed", "layout": self._layout_number, "id": entry_id, "index": position}
        )

    def _act(
        self, kind: str, label: str, callback: Callable[..., object] | None, *args: object
    ) -> None:
        self._busy_count += 1
        self.busy = self._BUSY_WORDS[kind]
        self._channel.call(label, callback, *args, after=self._action_done)

    def _action_done(self) -> None:
        self._busy_count -= 1
        if self._busy_count == 0:
            self.busy = ""
        self.refresh()

    def close(self) -> None:
        for task in getattr(self, "_searches", ()):
            task.cancel()
        super().close()

    # --- text fallbacks --------------------------------------------------------------------------

    def _text_lines(self) -> list[tuple[str, int]]:
        return text_lines(Shape(self._index, False) if self._show_meta else self._current_shape())

    def _line(self, prefix: str, node: int, leaf_shown: int) -> str:
        row = self._index.row(node)
        label = self._index.labels.get(row[0])
        marks = (f"  [{label}]" if label else "") + ("  *current" if node == leaf_shown else "")
        if row[7] in EDIT_FLAGS:
            marks = f"  ({EDIT_FLAGS[row[7]]}){marks}"
        return f"{prefix}{short_id(row[0])} {_KIND_PREFIX.get(row[2], '')}{row[3]}{marks}"

    def _leaf_shown(self) -> int:
        leaf = self._index.node(self._leaf)
        if leaf is None:
            return NO
        shape = self._current_shape() if not self._show_meta else Shape(self._index, False)
        return shape.anc[leaf]

    def tree_lines(self) -> list[str]:
        """The tree as text lines: indentation only at branch points, bookkeeping entries
        hidden, the current leaf marked with ``*``."""
        leaf = self._leaf_shown()
        return [self._line(prefix, node, leaf) for prefix, node in self._text_lines()]

    def tree_text(self) -> str:
        """The text fallback: at most :data:`FALLBACK_LINES` lines of the tree (its first and
        its newest), since a saved notebook stores it twice (text and HTML) per view."""
        head = f"Session “{self._name}”" if self._name else "Session"
        leaf = f" · current {short_id(self._leaf)}" if self._leaf else ""
        lines = self._text_lines()
        shown = self._leaf_shown()
        if len(lines) > FALLBACK_LINES:
            first = FALLBACK_LINES // 8
            last = FALLBACK_LINES - first
            left_out = len(lines) - FALLBACK_LINES
            gap = f"… {left_out:,} more lines (the widget shows the whole tree)"
            text = [
                *(self._line(p, n, shown) for p, n in lines[:first]),
                gap,
                *(self._line(p, n, shown) for p, n in lines[-last:]),
            ]
        else:
            text = [self._line(p, n, shown) for p, n in lines]
        return "\n".join([f"{head} · {len(self._index)} entries{leaf}", *text])

    def tree_html(self) -> str:
        return (
            '<pre class="pi-tree-static" style="font-size:12px;line-height:1.4">'
            f"{html.escape(self.tree_text())}</pre>"
        )

    def _fallbacks(self) -> tuple[str, str]:
        return self.tree_text(), self.tree_html()
