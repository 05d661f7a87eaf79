"""The session-tree widget: the whole tree of a :class:`~pi_notebook.harness.Session`.

Nodes travel as a compact table (:data:`~pi_notebook.notebook.widget_protocol.NodeRow`) in two
traits: ``nodes`` (the bulk) and ``tail`` (rows added since). :meth:`TreeView.refresh` reads
only the entries appended since the last read and syncs just ``tail`` (plus the leaf and labels
when they moved); ``tail`` is folded into ``nodes`` when it grows long or on :meth:`resync`.
Clicking a node asks the kernel for its messages (a ``select`` request answered through the
``selected_id``/``selected_detail`` traits, so a saved notebook keeps the selection).

Actions call callbacks the owner sets (``on_navigate(entry_id, summarize)``,
``on_fork(entry_id)``, ``on_label(entry_id, text)``, ``on_compact()``); they run on the
kernel's event loop, even while a run streams, and the tree refreshes when they finish.
"""

from __future__ import annotations

import asyncio
import html
import json
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, TypeAlias

import traitlets

from ..harness import Session
from .coalesce import Coalescer, Scheduler
from .widget_base import Callback, PiWidget, module_loader
from .widget_protocol import (
    NodeDetail,
    NodeKind,
    NodeRow,
    TranscriptItem,
    TreeControls,
    clip,
    content_text,
    message_json,
    note_item,
    transcript_item,
    usage_summary,
)

__all__ = ["CONTENT_TRAITS", "EntryRow", "TreeView", "entry_detail", "node_row", "short_id"]

EntryRow: TypeAlias = tuple[str, str | None, NodeKind, str, str, int, float, str]
"""A node row with its parent as an entry id (the wire's ``NodeRow`` has the parent's index)."""

TITLE_CHARS = 120
FALLBACK_LINES = 400
"""Lines of the tree in its text/HTML fallback (a 20,000-entry tree would store ~6 MB)."""
META_KINDS = frozenset({"label", "session_info", "custom", "active_tools", "usage"})
"""Bookkeeping entries: hidden in the text rendering (and by default in the widget). pi hides
``usage`` entries from its tree too."""
EDIT_FLAGS = {"edited": "edited in context", "omitted": "hidden from context"}
"""Flags a context edit puts on its target, and how the text rendering shows them."""
CONTENT_TRAITS = (
    "nodes",
    "tail",
    "labels",
    "leaf_id",
    "session_name",
    "selected_id",
    "selected_detail",
    "controls",
    "busy",
    "notice",
)
"""The tree's synced traits that carry the session (``resync`` re-sends these)."""
_QUIET_EVENTS = frozenset(
    {"message_start", "message_update", "tool_execution_start", "tool_execution_update"}
)


def short_id(entry_id: str) -> str:
    """The part of an entry id worth showing: its last 8 characters. (Ids are time-ordered
    UUIDv7 strings, so neighbouring entries share their first 8; ``%fork`` accepts this.)"""
    return entry_id[-8:]


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"
    return ""


def _names(tools: Any) -> str:
    return ", ".join(str(tool.get("name", "")) for tool in tools or () if isinstance(tool, Mapping))


def _system_title(message: Mapping[str, Any]) -> str:
    """A system message in one line: its text, section patches and tool changes."""
    parts = []
    text = _first_line(content_text(message.get("content")))
    if text:
        parts.append(text)
    sections = message.get("sections")
    if isinstance(sections, Mapping) and sections:
        changes = [f"-{name}" if value is None else str(name) for name, value in sections.items()]
        parts.append("sections " + ", ".join(changes))
    added, removed = _names(message.get("toolsAdded")), _names(message.get("toolsRemoved"))
    if added or removed:
        tools = ([f"+{added}"] if added else []) + ([f"-{removed}"] if removed else [])
        parts.append("tools " + " ".join(tools))
    return "system: " + (" · ".join(parts) or "(empty)")


def _system_text(message: Mapping[str, Any]) -> str:
    """A system message for the detail pane: its text, each section patch, the tool changes."""
    parts = []
    text = content_text(message.get("content"))
    if text:
        parts.append(text)
    sections = message.get("sections")
    for name, value in sections.items() if isinstance(sections, Mapping) else ():
        parts.append(
            f"[section {name}: removed]" if value is None else f"[section {name}]\n{value}"
        )
    for tool in message.get("toolsAdded") or ():
        if isinstance(tool, Mapping):
            parts.append(f"[tool added] {tool.get('name', '')}: {tool.get('description', '')}")
    removed = _names(message.get("toolsRemoved"))
    if removed:
        parts.append(f"[tools removed] {removed}")
    return "\n\n".join(parts) or "(an empty system message)"


def _message_row(entry_id: str, parent: str | None, message: Mapping[str, Any]) -> EntryRow:
    role = message.get("role")
    if role == "system":
        return (entry_id, parent, "system", _system_title(message), "", 0, 0.0, "")
    if role == "user":
        content = message.get("content")
        title = _first_line(content_text(content)) or "[image]"
        return (entry_id, parent, "user", title, "", 0, 0.0, "")
    if role == "assistant":
        blocks = [b for b in message.get("content") or () if isinstance(b, Mapping)]
        text = _first_line(
            "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
        )
        calls = [str(b.get("name", "")) for b in blocks if b.get("type") == "toolCall"]
        stop = message.get("stopReason")
        flag = stop if stop in ("error", "aborted") else ""
        if not text:
            if calls:
                text = "→ " + ", ".join(calls)
            elif stop == "error":
                text = f"error: {_first_line(str(message.get('errorMessage') or ''))}"
            elif stop == "aborted":
                text = "(stopped)"
            else:
                text = "(thinking only)" if blocks else "(empty reply)"
        elif calls:
            text = f"{text} → {', '.join(calls)}"
        usage = usage_summary(message.get("usage"))
        tokens = usage["total_tokens"] or usage["input"] + usage["output"]
        provider, model = message.get("provider"), message.get("model")
        name = f"{provider}/{model}" if provider and model else str(model or "")
        return (entry_id, parent, "assistant", text, name, tokens, usage["cost"], flag)
    if role == "toolResult":
        name = str(message.get("toolName", "tool"))
        first = _first_line(content_text(message.get("content")))
        flag = "error" if message.get("isError") else ""
        return (
            entry_id,
            parent,
            "tool_result",
            f"{name}: {first}" if first else name,
            "",
            0,
            0.0,
            flag,
        )
    if role == "bashExecution":
        return (
            entry_id,
            parent,
            "message",
            f"$ {_first_line(str(message.get('command', '')))}",
            "",
            0,
            0.0,
            "",
        )
    if role == "custom":
        text = _first_line(content_text(message.get("content")))
        title = f"{message.get('customType', 'custom')}: {text}"
        return (entry_id, parent, "message", title, "", 0, 0.0, "")
    summary = _first_line(str(message.get("summary", "")))
    return (
        entry_id,
        parent,
        "message",
        f"{role}: {summary}" if summary else str(role),
        "",
        0,
        0.0,
        "",
    )


def node_row(entry: Mapping[str, Any]) -> EntryRow:
    """The tree row of one session entry, given as pi's JSON."""
    entry_id = str(entry.get("id", ""))
    parent = entry.get("parentId")
    parent = None if parent is None else str(parent)
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        return _message_row(entry_id, parent, message if isinstance(message, Mapping) else {})
    title: str
    node_kind: NodeKind
    model = ""
    if kind == "model_change":
        model = f"{entry.get('provider', '')}/{entry.get('modelId', '')}"
        node_kind, title = "model_change", f"model → {model}"
    elif kind == "thinking_level_change":
        node_kind, title = "thinking_change", f"thinking → {entry.get('thinkingLevel', '')}"
    elif kind == "active_tools_change":
        names = entry.get("activeToolNames") or []
        node_kind, title = "active_tools", "tools: " + (", ".join(map(str, names)) or "none")
    elif kind == "compaction":
        before = int(entry.get("tokensBefore") or 0)
        node_kind, title = "compaction", f"compaction · {before:,} tokens summarized"
    elif kind == "branch_summary":
        node_kind = "branch_summary"
        title = f"branch summary: {_first_line(str(entry.get('summary', '')))}"
    elif kind == "custom":
        node_kind, title = "custom", f"custom: {entry.get('customType', '')}"
    elif kind == "custom_message":
        text = _first_line(content_text(entry.get("content")))
        node_kind, title = "custom_message", f"{entry.get('customType', 'custom')}: {text}"
    elif kind == "label":
        label = entry.get("label")
        target = short_id(str(entry.get("targetId", "")))
        node_kind = "label"
        title = f"label “{label}” → {target}" if label else f"label cleared → {target}"
    elif kind == "session_info":
        node_kind, title = "session_info", f"name: {entry.get('name') or '(cleared)'}"
    elif kind == "context_edit":
        target = short_id(str(entry.get("targetId", "")))
        replacement = entry.get("replacement")
        node_kind = "context_edit"
        if isinstance(replacement, Mapping):
            text = _first_line(content_text(replacement.get("content")))
            title = f"edit → {target}: {text}" if text else f"edit → {target}"
        else:
            title = f"edit → {target}: hidden from context"
    elif kind == "usage":
        usage = usage_summary(entry.get("usage"))
        model = f"{entry.get('provider', '')}/{entry.get('model', '')}"
        note = entry.get("note")
        title = f"usage: {entry.get('kind', '')}" + (f" ({note})" if note else "")
        tokens = usage["total_tokens"] or usage["input"] + usage["output"]
        return (entry_id, parent, "usage", title, model, tokens, usage["cost"], "")
    else:
        node_kind, title = "other", str(kind)
    return (entry_id, parent, node_kind, title[: TITLE_CHARS + 40], model, 0, 0.0, "")


def entry_detail(entry: Mapping[str, Any]) -> NodeDetail:
    """What the detail pane shows for an entry (given as pi's JSON)."""
    row = node_row(entry)
    entry_id = row[0]
    kind = str(entry.get("type", ""))
    items: list[TranscriptItem] = []
    text = ""
    message = entry.get("message")
    if kind == "message" and isinstance(message, Mapping) and message.get("role") == "system":
        text = clip(_system_text(message), 50_000)
    elif kind == "message" and isinstance(message, Mapping):
        items.append(transcript_item(message, entry_id))
    elif kind == "compaction":
        message = {"role": "compactionSummary", **entry}
        items.append(note_item(message, entry_id))
    elif kind == "branch_summary":
        items.append(note_item({"role": "branchSummary", **entry}, entry_id))
    elif kind == "custom_message":
        items.append(note_item({**entry, "role": "custom"}, entry_id))
    else:
        text = clip(json.dumps(entry, indent=2, ensure_ascii=False, default=str), 50_000)
    return {
        "id": entry_id,
        "type": kind,
        "timestamp": str(entry.get("timestamp", "")),
        "title": row[3],
        "model": row[4],
        "tokens": row[5],
        "cost": row[6],
        "items": items,
        "text": text,
    }


class TreeView(PiWidget):
    """The session tree of ``session``; call :meth:`refresh` (or feed :meth:`handle` with the
    harness's events) as the session grows."""

    module_name = "session_tree"
    _esm = module_loader("session_tree")

    content_traits = CONTENT_TRAITS

    nodes: traitlets.List[Any] = traitlets.List().tag(sync=True)
    tail: traitlets.List[Any] = traitlets.List().tag(sync=True)
    labels = traitlets.Dict().tag(sync=True)
    leaf_id = traitlets.Unicode("").tag(sync=True)
    session_name = traitlets.Unicode("").tag(sync=True)
    selected_id = traitlets.Unicode("").tag(sync=True)
    selected_detail = traitlets.Dict().tag(sync=True)
    controls = traitlets.Dict().tag(sync=True)
    busy = traitlets.Unicode("").tag(sync=True)

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
        tail_limit: int = 256,
    ) -> None:
        if tail_limit < 1:
            raise ValueError(f"tail_limit must be at least 1, got {tail_limit!r}")
        self._tail_limit = tail_limit
        self._sync = Coalescer(
            self._flush, interval=sync_interval, clock=clock, scheduler=scheduler
        )
        self._session = session
        self._version = 0
        self._busy_count = 0
        self._reset()
        self._read_session()
        self._base = len(self._rows)
        # The whole tree goes out with the comm's opening message.
        super().__init__(
            nodes=[list(row) for row in self._wire],
            labels=dict(self._labels),
            leaf_id=self._leaf,
            session_name=self._name,
            controls=dict(self._controls()),
        )
        self._sync.flush()  # the marks made while reading: values already current, sends nothing
        self._connect(loop)

    # --- owner API -------------------------------------------------------------------------------

    @property
    def session(self) -> Session:
        return self._session

    @session.setter
    def session(self, session: Session) -> None:
        """Show another session (``%session new``/``open``): the tree is rebuilt."""
        self._session = session
        self._reset()
        self.selected_id = ""
        self.selected_detail = {}
        self.refresh()
        self._fold_tail()

    def refresh(self) -> None:
        """Read what the session gained since the last read (cheap: only new entries are
        summarised) and sync the changes, throttled."""
        self._channel.bind()
        self._read_session()

    def _read_session(self) -> None:
        entries = self._session.get_entries()
        known = self._entries_read
        if known > len(entries) or (known and entries[known - 1].id != self._last_entry_id):
            self._reset()  # the session was replaced or rewritten: start over
            known = 0
        for entry in entries[known:]:
            self._take(message_json(entry))
        if len(entries) > known:
            self._entries_read = len(entries)
            self._last_entry_id = entries[-1].id
        leaf = self._session.leaf_id or ""
        if leaf != self._leaf:
            self._leaf = leaf
            self._sync.mark("leaf_id")
        name = self._session.name or ""
        if name != self._name:
            self._name = name
            self._sync.mark("session_name")

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
        """Read the session, fold ``tail`` into ``nodes``, then :meth:`PiWidget.resync`."""
        self.refresh()
        self._fold_tail()
        super().resync(full=full)

    @property
    def rows(self) -> list[EntryRow]:
        """Every node row, in file order, parents as ids (``nodes + tail`` hold them with
        parents as row indexes)."""
        return list(self._rows)

    # --- the node table --------------------------------------------------------------------------

    _rows: list[EntryRow]
    _wire: list[NodeRow]
    _index: dict[str, int]
    _base: int
    _labels: dict[str, str]
    _entries_read: int
    _last_entry_id: str
    _leaf: str
    _name: str

    def _reset(self) -> None:
        self._rows = []
        self._wire = []  # the rows as sent: parents as indexes
        self._index = {}
        self._base = 0  # rows[:base] are in `nodes`, the rest in `tail`
        self._labels = {}
        self._entries_read = 0
        self._last_entry_id = ""
        self._leaf = ""
        self._name = ""
        self._moves: dict[str, str | None] = {}  # leaf-move id -> its parent
        self._sync.mark("nodes", "tail", "labels", "leaf_id", "session_name")

    def _take(self, entry: Mapping[str, Any]) -> None:
        kind = entry.get("type")
        if kind == "leaf":  # a navigation record, not a node: what pi hangs under it is ours
            parent_id = entry.get("parentId")
            self._moves[str(entry.get("id", ""))] = None if parent_id is None else str(parent_id)
            return
        if kind == "label":
            target = str(entry.get("targetId", ""))
            label = entry.get("label")
            if label:
                self._labels[target] = str(label)
            else:
                self._labels.pop(target, None)
            self._sync.mark("labels")
        row = node_row(entry)
        if row[1] in self._moves:
            row = (row[0], self._through_moves(row[1]), *row[2:])
        parent = None if row[1] is None else self._index.get(row[1])
        if kind == "context_edit":
            self._mark_edited(str(entry.get("targetId", "")), entry.get("replacement") is None)
        self._index[row[0]] = len(self._rows)
        self._rows.append(row)
        self._wire.append((row[0], parent, *row[2:]))
        self._version += 1
        if len(self._rows) - self._base > self._tail_limit:
            self._fold_tail()
        else:
            self._sync.mark("tail")

    def _through_moves(self, parent: str | None) -> str | None:
        for _ in range(len(self._moves) + 1):
            if parent not in self._moves:
                break
            parent = self._moves[parent]
        return parent

    def _mark_edited(self, target: str, hidden: bool) -> None:
        """Flag the target of a context edit (the latest edit in the file sets the flag)."""
        index = self._index.get(target)
        if index is None:
            return
        flag = "omitted" if hidden else "edited"
        self._rows[index] = (*self._rows[index][:7], flag)
        self._wire[index] = (*self._wire[index][:7], flag)
        self._sync.mark("nodes" if index < self._base else "tail")

    def _fold_tail(self) -> None:
        if self._base != len(self._rows):
            self._base = len(self._rows)
            self._sync.mark("nodes", "tail")

    def _flush(self, names: frozenset[str]) -> None:
        with self.hold_sync():
            if "nodes" in names:
                self.nodes = [list(row) for row in self._wire[: self._base]]
            if "tail" in names:
                self.tail = [list(row) for row in self._wire[self._base :]]
            if "labels" in names:
                self.labels = dict(self._labels)
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

    # --- front-end requests (on the event loop) --------------------------------------------------

    def _dispatch(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        entry_id = message.get("id")
        if kind in ("select", "navigate", "fork", "label") and (
            not isinstance(entry_id, str) or self._session.get_entry(entry_id) is None
        ):
            self._set_notice(f"The session has no entry {entry_id!r} (was it replaced?).")
            return
        if kind == "select":
            self.select(entry_id)
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
        elif kind == "dismiss_notice":
            self.notice = ""
        else:
            self._set_notice(f"Ignored an unknown widget request {kind!r}.")

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

    # --- text fallbacks --------------------------------------------------------------------------

    def tree_lines(self) -> list[str]:
        """The tree as text lines: indentation only at branch points, bookkeeping entries
        hidden, the current leaf marked with ``*``."""
        return list(_tree_lines(self._rows, self._labels, self._leaf))

    def tree_text(self) -> str:
        """The text fallback: at most :data:`FALLBACK_LINES` lines of the tree (its first and
        its newest), since a saved notebook stores it twice (text and HTML) per view."""
        head = f"Session “{self._name}”" if self._name else "Session"
        leaf = f" · current {short_id(self._leaf)}" if self._leaf else ""
        lines = self.tree_lines()
        if len(lines) > FALLBACK_LINES:
            first = FALLBACK_LINES // 8
            last = FALLBACK_LINES - first
            left_out = len(lines) - FALLBACK_LINES
            gap = f"… {left_out:,} more lines (the widget shows the whole tree)"
            lines = [*lines[:first], gap, *lines[-last:]]
        return "\n".join([f"{head} · {len(self._rows)} entries{leaf}", *lines])

    def tree_html(self) -> str:
        return (
            '<pre class="pi-tree-static" style="font-size:12px;line-height:1.4">'
            f"{html.escape(self.tree_text())}</pre>"
        )

    def _fallbacks(self) -> tuple[str, str]:
        return self.tree_text(), self.tree_html()


_KIND_PREFIX = {"user": "user: ", "assistant": "assistant: ", "tool_result": "tool ", "message": ""}


def _tree_lines(rows: Iterable[EntryRow], labels: Mapping[str, str], leaf: str) -> Iterable[str]:
    rows = list(rows)
    by_id = {row[0]: row for row in rows}
    shown: dict[str, str | None] = {}  # hidden id -> nearest shown ancestor

    def shown_parent(parent: str | None) -> str | None:
        seen = 0
        path: list[str] = []
        while parent is not None and parent in by_id and seen <= len(by_id):
            if parent in shown:
                parent = shown[parent]
                break
            if by_id[parent][2] not in META_KINDS:
                break
            path.append(parent)
            parent = by_id[parent][1]
            seen += 1
        for hidden in path:
            shown[hidden] = parent
        return parent if parent in by_id else None

    children: dict[str | None, list[EntryRow]] = {}
    for row in rows:
        if row[2] in META_KINDS:
            continue
        parent = shown_parent(row[1])
        children.setdefault(None if parent == row[0] else parent, []).append(row)
    leaf_shown = leaf if leaf in by_id and by_id[leaf][2] not in META_KINDS else shown_parent(leaf)
    # (row, this line's prefix, the prefix of the lines below it in the same chain)
    stack: list[tuple[EntryRow, str, str]] = [
        (root, "", "") for root in reversed(children.get(None, []))
    ]
    while stack:
        row, head, prefix = stack.pop()
        label = labels.get(row[0])
        marks = (f"  [{label}]" if label else "") + ("  *current" if row[0] == leaf_shown else "")
        if row[7] in EDIT_FLAGS:
            marks = f"  ({EDIT_FLAGS[row[7]]}){marks}"
        yield f"{head}{short_id(row[0])} {_KIND_PREFIX.get(row[2], '')}{row[3]}{marks}"
        kids = children.get(row[0], [])
        if len(kids) == 1:
            stack.append((kids[0], prefix, prefix))
            continue
        for index in range(len(kids) - 1, -1, -1):
            last = index == len(kids) - 1
            stack.append(
                (
                    kids[index],
                    prefix + ("└─ " if last else "├─ "),
                    prefix + ("   " if last else "│  "),
                )
            )
