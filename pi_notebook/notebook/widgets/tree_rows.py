"""One session entry as the tree shows it: its row (kind, one-line title, model, tokens, cost,
flag) and its detail (the messages the detail pane renders). Pure functions of pi's JSON, and
:func:`entry_title`, the same kind and title read from the entry objects for the search (which
reads every title once: a JSON dump per entry made that seconds, bench/tree_bench.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from .items import clip, content_text, note_item, transcript_item, usage_summary
from .protocol import NodeDetail, NodeKind, TranscriptItem

if TYPE_CHECKING:
    from ...harness.entries import SessionEntry

__all__ = [
    "EDIT_FLAGS",
    "META_KINDS",
    "META_TYPES",
    "EntryRow",
    "entry_detail",
    "entry_row",
    "entry_title",
    "meta_type",
    "node_row",
    "short_id",
]

EntryRow: TypeAlias = tuple[str, str | None, NodeKind, str, str, int, float, str]
"""``(id, parent id, kind, title, model, tokens, cost, flag)`` of one entry."""

TITLE_CHARS = 120
META_KINDS = frozenset({"label", "session_info", "custom", "active_tools", "usage"})
"""Bookkeeping entries: hidden in the text rendering (and by default in the widget). pi hides
``usage`` entries from its tree too."""
META_TYPES = frozenset({"label", "session_info", "custom", "active_tools_change", "usage"})
"""The entry ``type`` values whose rows are :data:`META_KINDS` (known without building a row)."""
EDIT_FLAGS = {"edited": "edited in context", "omitted": "hidden from context"}
"""Flags a context edit puts on its target, and how the text rendering shows them."""


def meta_type(entry_type: str) -> bool:
    """Whether an entry of this ``type`` is bookkeeping (hidden unless asked for)."""
    return entry_type in META_TYPES


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


def _user_title(text: str) -> str:
    return _first_line(text) or "[image]"


def _assistant_title(
    text: str, calls: list[str], stop: object, error: str, has_blocks: bool
) -> str:
    """A reply in one line: its text, the tools it calls, or what it ended with."""
    line = _first_line(text)
    if line:
        return f"{line} → {', '.join(calls)}" if calls else line
    if calls:
        return "→ " + ", ".join(calls)
    if stop == "error":
        return f"error: {_first_line(error)}"
    if stop == "aborted":
        return "(stopped)"
    return "(thinking only)" if has_blocks else "(empty reply)"


def _tool_title(name: str, text: str) -> str:
    first = _first_line(text)
    return f"{name}: {first}" if first else name


def _message_row(entry_id: str, parent: str | None, message: Mapping[str, Any]) -> EntryRow:
    role = message.get("role")
    if role == "system":
        return (entry_id, parent, "system", _system_title(message), "", 0, 0.0, "")
    if role == "user":
        title = _user_title(content_text(message.get("content")))
        return (entry_id, parent, "user", title, "", 0, 0.0, "")
    if role == "assistant":
        blocks = [b for b in message.get("content") or () if isinstance(b, Mapping)]
        stop = message.get("stopReason")
        flag = stop if stop in ("error", "aborted") else ""
        text = _assistant_title(
            "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text"),
            [str(b.get("name", "")) for b in blocks if b.get("type") == "toolCall"],
            stop,
            str(message.get("errorMessage") or ""),
            bool(blocks),
        )
        usage = usage_summary(message.get("usage"))
        tokens = usage["total_tokens"] or usage["input"] + usage["output"]
        provider, model = message.get("provider"), message.get("model")
        name = f"{provider}/{model}" if provider and model else str(model or "")
        return (entry_id, parent, "assistant", text, name, tokens, usage["cost"], flag)
    if role == "toolResult":
        title = _tool_title(
            str(message.get("toolName", "tool")), content_text(message.get("content"))
        )
        flag = "error" if message.get("isError") else ""
        return (entry_id, parent, "tool_result", title, "", 0, 0.0, flag)
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


def entry_row(entry: SessionEntry) -> EntryRow:
    """:func:`node_row` of an entry object. Its fields are plain values, so a Python-mode dump
    serves (a JSON-mode one costs 4× as much; the tests hold the two rows equal)."""
    data = entry.model_dump(by_alias=True, exclude_none=True)
    return node_row(data)


def _text_of(content: Any) -> str:
    """:func:`~.items.content_text` of a model's content (a string or blocks)."""
    if isinstance(content, str):
        return content
    return "\n".join(block.text for block in content if block.type == "text")


def entry_title(entry: SessionEntry) -> tuple[NodeKind, str]:
    """``(kind, title)`` of an entry, as :func:`node_row` makes them, read from the entry's
    attributes for the messages (far cheaper than a JSON dump); other entries are few and
    go through :func:`entry_row`. ``tests/notebook/test_tree_search.py`` holds them equal."""
    if entry.type == "message":
        message: Any = getattr(entry, "message", None)
        role = getattr(message, "role", None)
        if role == "user":
            return "user", _user_title(_text_of(message.content))
        if role == "assistant":
            blocks = message.content
            return "assistant", _assistant_title(
                "\n".join(block.text for block in blocks if block.type == "text"),
                [block.name for block in blocks if block.type == "toolCall"],
                message.stop_reason,
                message.error_message or "",
                bool(blocks),
            )
        if role == "toolResult":
            return "tool_result", _tool_title(message.tool_name, _text_of(message.content))
        if role == "bashExecution":
            return "message", f"$ {_first_line(message.command)}"
        if role == "custom":
            return "message", f"{message.custom_type}: {_first_line(_text_of(message.content))}"
    row = entry_row(entry)
    return row[2], row[3]


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
