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
from .tree_pages import Layout
from .tree_rows import EDIT_FLAGS, EntryRow, entry_detail, node_row, short_id
from .tree_state import TreeState

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
        self._sync = Coalescer(
            self._flush, interval=sync_interval, clock=clock, scheduler=scheduler
        )
        self._session = session
        self._tree = TreeState(page_rows)
        self._version = 0
        self._busy_count = 0
        self._searches: set[asyncio.Task[None]] = set()
        with self._sync.hold():
            self._reset()
            self._read_session()
            self._fold_big_tree()
            # The first page goes out with the comm's opening message.
            super().__init__(
                page=self._tree.page(),
                leaf_id=self._tree.leaf,
                session_name=self._tree.name,
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
        kind = getattr(event, "type", None)
        if kind not in _QUIET_EVENTS:
            self.refresh()
        if kind == "agent_end":  # no cell may run after it to refresh the fallback
            self._refresh_fallback()

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
        return self._tree.index.rows()

    def display_rows(self, start: int = 0, end: int | None = None) -> list[list[Any]]:
        """Display rows ``start`` to ``end`` of the current layout, as a ``rows`` reply has
        them: ``[id, kind, title, model, tokens, cost, flag, label, depth, bits, hidden]``."""
        return self._tree.rows(start, self._tree.layout().total if end is None else end)

    def position(self, entry_id: str) -> int | None:
        """The display index of an entry (of its nearest shown ancestor for a hidden one), or
        ``None`` when a fold hides it."""
        node = self._tree.index.node(entry_id)
        return None if node is None else self._tree.position(node)

    @property
    def folded_ids(self) -> list[str]:
        """The entries whose subtrees are folded, in file order."""
        return [self._tree.index.ids[node] for node in sorted(self._tree.folded)]

    def fold(self, entry_id: str, folded: bool = True) -> None:
        """Fold (or unfold) the subtree under an entry, as its toggle does."""
        node = self._tree.index.node(entry_id)
        if node is None:
            raise KeyError(entry_id)
        if self._tree.fold(node, folded):
            self._sync.mark("page")

    def fold_side_branches(self) -> None:
        """Fold every side branch off the current branch."""
        self._tree.fold_side_branches()
        self._sync.mark("page")

    def show_meta(self, show: bool) -> None:
        """Show bookkeeping entries (labels, names, usage…) or hide them, as "all entries"."""
        if self._tree.set_show_meta(show):
            self._sync.mark("page")

    def reveal(self, entry_id: str) -> int | None:
        """Unfold what hides an entry; its display index (of its nearest shown ancestor)."""
        node = self._tree.index.node(entry_id)
        if node is None:
            return None
        if self._tree.unfold_to(node):
            self._sync.mark("page")
        return self.position(entry_id)

    def search(self, query: str, limit: int = SEARCH_MATCHES) -> tuple[list[list[Any]], int]:
        """Shown entries whose title, label or id contains ``query`` (case ignored): up to
        ``limit`` as ``[id, kind, title, label]``, and how many matched."""
        self._tree.search.read()
        return self._tree.matches(query, limit)

    # --- reading the session -------------------------------------------------------------------

    def _reset(self) -> None:
        self._tree.reset()
        self._sync.mark("page", "leaf_id", "session_name")

    def _read_session(self) -> None:
        tree = self._tree
        with self._sync.hold():
            changed = tree.read(self._session.index)
            if changed is None:  # the session was replaced: it was read again from the start
                self._sync.mark("leaf_id", "session_name")
            if changed is None or changed:
                self._version += 1
                self._sync.mark("page")
            leaf = self._session.leaf_id or ""
            if leaf != tree.leaf:
                tree.leaf = leaf
                self._version += 1
                self._sync.mark("leaf_id", "page")
            name = self._session.name or ""
            if name != tree.name:
                tree.name = name
                self._version += 1
                self._sync.mark("session_name")

    def _fold_big_tree(self) -> None:
        if self._tree.fold_big_tree():
            self._sync.mark("page")

    def _current_layout(self) -> Layout:
        return self._tree.layout()

    def _flush(self, names: frozenset[str]) -> None:
        with self.hold_sync():
            if "page" in names:
                self.page = self._tree.page()
            if "leaf_id" in names:
                self.leaf_id = self._tree.leaf
            if "session_name" in names:
                self.session_name = self._tree.name
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
        while self._tree.search.read(SEARCH_CHUNK):
            await asyncio.sleep(0)  # making 100k titles never holds the loop for long
        matches, total = self._tree.matches(query, SEARCH_MATCHES)
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
        layout = self._tree.layout_number
        self.send({"type": "rows", "layout": layout, "start": start, "rows": rows})

    def _answer_reveal(self, entry_id: str) -> None:
        position = self.reveal(entry_id)
        self.select(entry_id)
        self._sync.flush()
        if position is None:
            return
        start = max(0, position - 40)
        rows = self.display_rows(start, position + 40)
        layout = self._tree.layout_number
        self.send({"type": "rows", "layout": layout, "start": start, "rows": rows})
        self.send({"type": "revealed", "layout": layout, "id": entry_id, "index": position})

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

    def _line(self, prefix: str, node: int, leaf_shown: int) -> str:
        row = self._tree.index.row(node)
        label = self._tree.index.labels.get(row[0])
        marks = (f"  [{label}]" if label else "") + ("  *current" if node == leaf_shown else "")
        if row[7] in EDIT_FLAGS:
            marks = f"  ({EDIT_FLAGS[row[7]]}){marks}"
        return f"{prefix}{short_id(row[0])} {_KIND_PREFIX.get(row[2], '')}{row[3]}{marks}"

    def tree_lines(self) -> list[str]:
        """The tree as text lines: indentation only at branch points, bookkeeping entries
        hidden, the current leaf marked with ``*``."""
        lines, leaf = self._tree.text_lines()
        return [self._line(prefix, node, leaf) for prefix, node in lines]

    def tree_text(self) -> str:
        """The text fallback: at most :data:`FALLBACK_LINES` lines of the tree (its first and
        its newest), since a saved notebook stores it twice (text and HTML) per view."""
        name, leaf_id = self._tree.name, self._tree.leaf
        head = f"Session “{name}”" if name else "Session"
        leaf = f" · current {short_id(leaf_id)}" if leaf_id else ""
        lines, shown = self._tree.text_lines()
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
        return "\n".join([f"{head} · {len(self._tree.index)} entries{leaf}", *text])

    def tree_html(self) -> str:
        return (
            '<pre class="pi-tree-static" style="font-size:12px;line-height:1.4">'
            f"{html.escape(self.tree_text())}</pre>"
        )

    def _fallbacks(self) -> tuple[str, str]:
        return self.tree_text(), self.tree_html()
