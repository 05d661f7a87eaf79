"""A session as one standalone file to share: HTML or Markdown.

``export_session(session, "run.html")`` writes the current branch (``tree=True``: every branch)
with its messages, tool calls and results, images, usage and cost per reply, labels and
summaries. Nothing of it is fetched from elsewhere: images are inline data URIs, the styles are
in the page, and the page's Content-Security-Policy forbids scripts and outside requests.

No secrets: every text passes through a :class:`~pi_notebook.ai.redaction.Redactor` holding
the credentials of the environment (the providers' API key variables and any variable named
like a key, token, secret or password) and the model's credential headers, which also blanks
out user and password of URLs; values shaped like well-known API keys are blanked too. Tool
result ``details`` and custom entries' data are never exported (only what the model saw).

HTML is escaped everywhere; Markdown in messages is rendered by mistune with raw HTML escaped
and unsafe link schemes dropped.
"""

from __future__ import annotations

import base64
import binascii
import html
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from ..ai.models import PROVIDER_ENV_KEYS
from ..ai.redaction import REDACTED, Redactor
from ..ai.types import (
    AssistantMessage,
    ImageContent,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from .entries import (
    ActiveToolsChangeEntry,
    BranchSummaryEntry,
    CompactionEntry,
    ContextEditEntry,
    CustomMessageEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionEntry,
    ThinkingLevelChangeEntry,
    UsageEntry,
)
from .messages import (
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
)
from .session import Session

__all__ = ["ExportFormat", "environment_redactor", "export_session", "render_session"]

ExportFormat = Literal["html", "md"]

_KEY_SHAPES = re.compile(
    r"\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|AKIA[0-9A-Z]{16}"
    r"|AIza[0-9A-Za-z_\-]{30,}"
    r"|xox[abprs]-[A-Za-z0-9\-]{10,}"
    r"|hf_[A-Za-z0-9]{20,})"
)
"""Well-known API key shapes (OpenAI/Anthropic, GitHub, AWS, Google, Slack, Hugging Face):
blanked even when the key is not one this process knows."""
_CREDENTIAL_VARIABLE = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL", re.IGNORECASE)
_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


def environment_redactor(
    environ: Mapping[str, str] | None = None, headers: Mapping[str, str] | None = None
) -> Redactor:
    """The credentials of the environment: the providers' API key variables, any variable whose
    name says key/token/secret/password, and credential ``headers`` (e.g. a model's)."""
    env = os.environ if environ is None else environ
    names = {name for known in PROVIDER_ENV_KEYS.values() for name in known}
    secrets = [
        value
        for name, value in env.items()
        if value and (name in names or _CREDENTIAL_VARIABLE.search(name))
    ]
    return Redactor.for_request(api_keys=secrets, model_headers=headers)


@dataclass(frozen=True, slots=True)
class _Row:
    entry: SessionEntry
    depth: int
    branch: str | None
    """``"branch 2 of 3"`` where a branch starts (tree exports)."""
    current: bool
    """On the path to the session's leaf."""


def _rows(session: Session, tree: bool) -> list[_Row]:
    branch = session.get_branch()
    if not tree:
        return [_Row(entry, 0, None, True) for entry in branch]
    on_path = {entry.id for entry in branch}
    rows: list[_Row] = []
    roots = session.get_tree()
    stack = [
        (node, 0, f"branch {i + 1} of {len(roots)}" if len(roots) > 1 else None)
        for i, node in reversed(list(enumerate(roots)))
    ]
    while stack:  # depth-first, iterative: a long conversation is one deep chain
        node, depth, note = stack.pop()
        rows.append(_Row(node.entry, depth, note, node.entry.id in on_path))
        children = node.children
        if len(children) == 1:
            stack.append((children[0], depth, None))
        else:
            for i in reversed(range(len(children))):
                stack.append((children[i], depth + 1, f"branch {i + 1} of {len(children)}"))
    return rows


def _labels(session: Session) -> dict[str, str]:
    labels: dict[str, str] = {}
    for entry in session.get_entries():
        label = session.get_label(entry.id)
        if label:
            labels[entry.id] = label
    return labels


def _usage_text(usage: Usage) -> str:
    parts = [f"↑{usage.input:,} ↓{usage.output:,}"]
    if usage.cache_read or usage.cache_write:
        parts.append(f"cache {usage.cache_read:,}/{usage.cache_write:,}")
    parts.append(f"${usage.cost.total:.4f}")
    return " · ".join(parts)


def _time(timestamp: str | int | None) -> str:
    if timestamp is None:
        return ""
    try:
        if isinstance(timestamp, int):
            moment = datetime.fromtimestamp(timestamp / 1000, UTC)
        else:
            moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except (ValueError, OverflowError, OSError):
        return ""
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _image(block: ImageContent) -> tuple[str, str] | None:
    """``(mime type, base64)`` of an image safe to inline, else ``None``."""
    if block.mime_type not in _IMAGE_TYPES:
        return None
    data = "".join(block.data.split())
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return block.mime_type, data


def _json(value: Any) -> str:
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


# --- one entry as neutral parts ------------------------------------------------------------------


@dataclass(slots=True)
class _Part:
    kind: Literal["markdown", "code", "image", "details", "note", "error"]
    text: str = ""
    title: str = ""
    mime: str = ""


@dataclass(slots=True)
class _Item:
    role: str
    """``user``, ``assistant``, ``tool``, ``system``, ``summary``, ``custom``, ``note``…"""
    title: str
    meta: list[str]
    parts: list[_Part]


def _content_parts(
    content: str | Sequence[Any], text: Literal["markdown", "code"] = "markdown"
) -> list[_Part]:
    """Text blocks as ``text`` parts (prose is Markdown, tool output is shown as is), images
    inline (an image that cannot be inlined safely is named instead)."""
    if isinstance(content, str):
        return [_Part(text, content)]
    parts: list[_Part] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append(_Part(text, block.text))
        elif isinstance(block, ImageContent):
            image = _image(block)
            parts.append(
                _Part("image", image[1], mime=image[0])
                if image
                else _Part("note", f"(an image of type {block.mime_type} left out)")
            )
    return parts


def _item(entry: SessionEntry, names: dict[str, str]) -> _Item | None:
    """What an entry shows; ``None`` for bookkeeping (leaf moves, labels, extension state)."""
    if isinstance(entry, MessageEntry):
        return _message_item(entry.message, names)
    if isinstance(entry, CustomMessageEntry):
        if not entry.display:
            return None
        return _Item("custom", entry.custom_type, [], _content_parts(entry.content))
    if isinstance(entry, CompactionEntry):
        meta = [f"{entry.tokens_before:,} tokens before"]
        if entry.usage is not None:
            meta.append(_usage_text(entry.usage))
        return _Item("summary", "Compaction summary", meta, [_Part("markdown", entry.summary)])
    if isinstance(entry, BranchSummaryEntry):
        meta = [_usage_text(entry.usage)] if entry.usage is not None else []
        return _Item("summary", "Branch summary", meta, [_Part("markdown", entry.summary)])
    if isinstance(entry, ModelChangeEntry):
        return _Item("note", f"Model: {entry.provider}/{entry.model_id}", [], [])
    if isinstance(entry, ThinkingLevelChangeEntry):
        return _Item("note", f"Thinking level: {entry.thinking_level}", [], [])
    if isinstance(entry, ActiveToolsChangeEntry):
        return _Item("note", f"Tools: {', '.join(entry.active_tool_names) or 'none'}", [], [])
    if isinstance(entry, UsageEntry):
        text = f"Usage ({entry.kind}, {entry.provider}/{entry.model}): {_usage_text(entry.usage)}"
        return _Item("note", text, [], [])
    if isinstance(entry, ContextEditEntry):
        verb = "Hidden from the context" if entry.replacement is None else "Replaced in context"
        return _Item("note", f"{verb}: entry {entry.target_id}", [], [])
    return None


def _message_item(message: Any, names: dict[str, str]) -> _Item | None:
    if isinstance(message, UserMessage):
        return _Item("user", "User", [], _content_parts(message.content))
    if isinstance(message, AssistantMessage):
        return _assistant_item(message, names)
    if isinstance(message, ToolResultMessage):
        title = f"Result of {message.tool_name}" + (" (error)" if message.is_error else "")
        return _Item("tool", title, [], _content_parts(message.content, "code"))
    if isinstance(message, BashExecutionMessage):
        meta = [f"exit code {message.exit_code}"] if message.exit_code is not None else []
        shell = [_Part("code", f"$ {message.command}\n{message.output}")]
        return _Item("tool", "Shell", meta, shell)
    if isinstance(message, CustomMessage):
        if not message.display:
            return None
        return _Item("custom", message.custom_type, [], _content_parts(message.content))
    if isinstance(message, BranchSummaryMessage | CompactionSummaryMessage):
        return _Item("summary", "Summary", [], [_Part("markdown", message.summary)])
    if isinstance(message, SystemMessage):
        parts: list[_Part] = []
        text = message.content if isinstance(message.content, str) else ""
        if not isinstance(message.content, str):
            text = "".join(block.text for block in message.content)
        if text:
            parts.append(_Part("details", text, title="instructions"))
        for name, section in (message.sections or {}).items():
            parts.append(_Part("details", section or "(removed)", title=f"section {name}"))
        tools = [tool.name for tool in message.tools_added or ()]
        if tools:
            parts.append(_Part("note", f"tools added: {', '.join(tools)}"))
        return _Item("system", "System", [], parts)
    return None


def _assistant_item(message: AssistantMessage, names: dict[str, str]) -> _Item:
    parts: list[_Part] = []
    for block in message.content:
        if isinstance(block, TextContent):
            parts.append(_Part("markdown", block.text))
        elif isinstance(block, ThinkingContent):
            if block.thinking and not block.redacted:
                parts.append(_Part("details", block.thinking, title="thinking"))
        elif isinstance(block, ToolCall):
            names[block.id] = block.name
            parts.append(_Part("code", _json(block.arguments), title=f"call {block.name}"))
    if message.error_message:
        parts.append(_Part("error", message.error_message))
    meta = [f"{message.provider}/{message.model}", _usage_text(message.usage)]
    if message.stop_reason not in ("stop", "toolUse"):
        meta.append(message.stop_reason)
    return _Item("assistant", "Assistant", meta, parts)


# --- rendering -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Document:
    title: str
    facts: list[tuple[str, str]]
    rows: list[tuple[_Row, _Item, str | None]]
    """Each shown entry, what it shows and its label."""


def _document(session: Session, tree: bool, scrub: Callable[[str], str]) -> _Document:
    names: dict[str, str] = {}
    labels = _labels(session)
    shown: list[tuple[_Row, _Item, str | None]] = []
    branch_usage = Usage()
    for row in _rows(session, tree):
        item = _item(row.entry, names)
        if item is None:
            continue
        if row.current and isinstance(row.entry, MessageEntry):
            message = row.entry.message
            if isinstance(message, AssistantMessage):
                _add(branch_usage, message.usage)
        shown.append((row, _scrubbed(item, scrub), labels.get(row.entry.id)))
    totals = session.usage_totals()
    header = session.header
    facts = [
        ("Session", session.id),
        ("Started", _time(header.timestamp)),
        ("Exported", datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")),
        ("Shows", "every branch" if tree else "the current branch"),
        ("This branch", _usage_text(branch_usage)),
        (
            "Whole session",
            f"↑{totals.input:,} ↓{totals.output:,} · cache "
            f"{totals.cache_read:,}/{totals.cache_write:,} · ${totals.cost:.4f}",
        ),
    ]
    title = session.name or f"pi session {session.id[:8]}"
    return _Document(
        scrub(title),
        [(k, scrub(v)) for k, v in facts],
        [(row, item, scrub(label) if label else None) for row, item, label in shown],
    )


def _add(total: Usage, usage: Usage) -> None:
    total.input += usage.input
    total.output += usage.output
    total.cache_read += usage.cache_read
    total.cache_write += usage.cache_write
    total.cost.total += usage.cost.total


def _scrubbed(item: _Item, scrub: Callable[[str], str]) -> _Item:
    return _Item(
        item.role,
        scrub(item.title),
        [scrub(m) for m in item.meta],
        [
            part
            if part.kind == "image"
            else _Part(part.kind, scrub(part.text), scrub(part.title), part.mime)
            for part in item.parts
        ],
    )


_STYLE = """
:root { color-scheme: light dark; --fg: #1f2328; --bg: #ffffff; --muted: #656d76;
  --line: #d0d7de; --user: #ddf4ff; --tool: #f6f8fa; --error: #cf222e; --accent: #0969da; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --bg: #0d1117; --muted: #8d96a0;
  --line: #30363d; --user: #0c2d4a; --tool: #161b22; --error: #ff7b72; --accent: #4493f8; } }
body { font: 15px/1.5 system-ui, sans-serif; color: var(--fg); background: var(--bg);
  max-width: 920px; margin: 2rem auto; padding: 0 1rem; }
h1 { font-size: 1.5rem; margin-bottom: .25rem; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .1rem 1rem;
  color: var(--muted); font-size: .9rem; }
dl.facts dt { font-weight: 600; }
.entry { border: 1px solid var(--line); border-radius: 8px; padding: .5rem .9rem;
  margin: .6rem 0; }
.entry.user { background: var(--user); }
.entry.tool, .entry.system { background: var(--tool); }
.entry.note { border-style: dashed; color: var(--muted); font-size: .9rem; }
.entry.off-path { opacity: .75; }
.entry header { display: flex; flex-wrap: wrap; gap: .5rem; align-items: baseline;
  font-size: .85rem; color: var(--muted); }
.entry header .role { font-weight: 700; color: var(--fg); }
.label { background: var(--accent); color: #fff; border-radius: 10px; padding: 0 .5rem; }
.branch-start { margin-top: 1.2rem; font-size: .85rem; color: var(--accent); font-weight: 600; }
pre { background: var(--tool); border: 1px solid var(--line); border-radius: 6px;
  padding: .5rem; overflow-x: auto; white-space: pre-wrap; word-break: break-word; }
.call-name { font-family: ui-monospace, monospace; font-size: .85rem; }
.error { color: var(--error); }
img.inline { max-width: 100%; border: 1px solid var(--line); border-radius: 4px; }
table { border-collapse: collapse; } td, th { border: 1px solid var(--line); padding: .2rem .5rem; }
"""


def _markdown() -> Callable[[str], str]:
    import mistune

    render = mistune.create_markdown(escape=True, plugins=["table", "strikethrough", "task_lists"])

    def to_html(text: str) -> str:
        return str(render(text))

    return to_html


def _html(document: _Document) -> str:
    markdown = _markdown()
    esc = html.escape
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(document.title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{esc(document.title)}</h1>",
        '<dl class="facts">',
        *(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in document.facts),
        "</dl>",
        "<main>",
    ]
    for row, item, label in document.rows:
        indent = f' style="margin-left:{min(row.depth, 12) * 1.25}rem"' if row.depth else ""
        if row.branch:
            where = " (current)" if row.current else ""
            out.append(f'<div class="branch-start"{indent}>{esc(row.branch + where)}</div>')
        classes = f"entry {item.role}" + ("" if row.current else " off-path")
        out.append(f'<article class="{classes}" id="e-{esc(row.entry.id)}"{indent}>')
        header = [f'<span class="role">{esc(item.title)}</span>']
        header.append(f"<time>{esc(_time(row.entry.timestamp))}</time>")
        header += [f"<span>{esc(m)}</span>" for m in item.meta]
        if label:
            header.append(f'<span class="label">{esc(label)}</span>')
        out.append(f"<header>{' '.join(header)}</header>")
        for part in item.parts:
            out.append(_html_part(part, markdown))
        out.append("</article>")
    out.append("</main></body></html>")
    return "\n".join(out) + "\n"


def _html_part(part: _Part, markdown: Callable[[str], str]) -> str:
    esc = html.escape
    if part.kind == "markdown":
        return f'<div class="text">{markdown(part.text)}</div>'
    if part.kind == "code":
        title = f'<div class="call-name">{esc(part.title)}</div>' if part.title else ""
        return f"{title}<pre>{esc(part.text)}</pre>"
    if part.kind == "image":
        return f'<img class="inline" alt="image" src="data:{esc(part.mime)};base64,{part.text}">'
    if part.kind == "details":
        return f"<details><summary>{esc(part.title)}</summary><pre>{esc(part.text)}</pre></details>"
    if part.kind == "error":
        return f'<p class="error">{esc(part.text)}</p>'
    return f'<p class="note">{esc(part.text)}</p>'


def _fence(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _md(document: _Document) -> str:
    out = [f"# {document.title}", ""]
    out += [f"- **{k}:** {v}" for k, v in document.facts]
    out.append("")
    for row, item, label in document.rows:
        quote = "> " * min(row.depth, 6)
        lines: list[str] = []
        if row.branch:
            lines += [f"**{row.branch}{' (current)' if row.current else ''}**", ""]
        meta = " · ".join([_time(row.entry.timestamp), *item.meta])
        heading = f"### {item.title}" + (f" [{label}]" if label else "")
        lines += [heading, "", f"*{meta}*", ""]
        for part in item.parts:
            lines += _md_part(part)
        out += [f"{quote}{line}".rstrip() for line in lines]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _md_part(part: _Part) -> list[str]:
    if part.kind == "markdown":
        return [*part.text.splitlines(), ""]
    if part.kind in ("code", "details"):
        fence = _fence(part.text)
        title = [f"*{part.title}*", ""] if part.title else []
        return [*title, fence, *part.text.splitlines(), fence, ""]
    if part.kind == "image":
        return [f"![image](data:{part.mime};base64,{part.text})", ""]
    if part.kind == "error":
        return [f"**Error:** {part.text}", ""]
    return [f"*{part.text}*", ""]


def _scrubber(redactor: Redactor | None) -> Callable[[str], str]:
    chosen = redactor if redactor is not None else environment_redactor()

    def scrub(text: str) -> str:
        return _KEY_SHAPES.sub(REDACTED, chosen.scrub(text))

    return scrub


def render_session(
    session: Session,
    format: ExportFormat = "html",
    *,
    tree: bool = False,
    redactor: Redactor | None = None,
) -> str:
    """The export as a string (see :func:`export_session`)."""
    if format not in ("html", "md"):
        raise ValueError(f"format must be 'html' or 'md', not {format!r}")
    document = _document(session, tree, _scrubber(redactor))
    return _html(document) if format == "html" else _md(document)


def export_session(
    session: Session,
    path: str | os.PathLike[str],
    *,
    tree: bool = False,
    redactor: Redactor | None = None,
) -> Path:
    """Write the session's current branch (``tree``: every branch) to ``path``, HTML or
    Markdown by its suffix (``.html``/``.htm``, ``.md``/``.markdown``). ``redactor``: the
    secrets to blank out (default: the environment's credentials, see
    :func:`environment_redactor`). Returns the path written."""
    target = Path(path).expanduser()
    suffix = target.suffix.lower()
    if suffix in (".html", ".htm"):
        kind: ExportFormat = "html"
    elif suffix in (".md", ".markdown"):
        kind = "md"
    else:
        raise ValueError(f"export to .html or .md, not {target.name!r}")
    text = render_session(session, kind, tree=tree, redactor=redactor)
    target.write_text(text, encoding="utf-8")
    return target
