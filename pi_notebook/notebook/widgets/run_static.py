"""The run view's static renditions: the run as plain text and as simple HTML (no scripts), what
a notebook shows where the widget cannot run (nbconvert without widget state, GitHub)."""

from __future__ import annotations

import html
from collections.abc import Sequence

from ...harness.budget import BUDGET_STOP_PREFIX
from .protocol import AssistantItem, BudgetMeterRow, RunStatus, TranscriptItem, UsageSummary

__all__ = ["budget_text", "run_html", "run_text"]

_STALL_WORDS = "waiting for the model"
"""Shown with the seconds of silence while the LLM layer reports a stall."""

_STATUS_WORDS = {
    "waiting": "waiting for the model",
    "streaming": "streaming",
    "running_tools": "running tools",
    "awaiting_approval": "waiting for approval",
    "done": "done",
    "aborted": "stopped",
    "error": "error",
}


def budget_text(rows: Sequence[BudgetMeterRow]) -> str:
    """Spending against caps in words: ``run $0.0123/$0.20, 3/15 turns; session …``."""
    scopes: dict[str, list[str]] = {}
    for row in rows:
        spent, cap = row["spent"], row["cap"]
        if row["kind"] == "cost":
            text = f"${spent:.4f}/${cap:.2f}"
        elif row["kind"] == "tokens":
            text = f"{int(spent):,}/{int(cap):,} tokens"
        else:
            text = f"{int(spent)}/{int(cap)} turns"
        scopes.setdefault(row["scope"], []).append(text)
    return "; ".join(f"{scope} {', '.join(parts)}" for scope, parts in scopes.items())


def _indent(text: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def _item_text(item: TranscriptItem) -> str:
    if item["kind"] == "user":
        label = {"steer": "steer", "follow_up": "follow-up"}.get(item["origin"], "user")
        return f"{label}: {item['text']}"
    if item["kind"] == "assistant":
        out: list[str] = []
        for block in item["blocks"]:
            if block["type"] == "text":
                out.append(block["text"])
            elif block["type"] == "thinking":
                out.append(f"[thinking: {len(block['text']):,} characters]")
            else:
                args = " ".join(block["args"].split())
                out.append(f"→ {block['name']}({args[:200]})")
        if item["stop_reason"] == "aborted":
            out.append("[stopped; partial reply kept]")
        elif item["stop_reason"] == "error":
            out.append(f"[error: {item['error_message'] or 'unknown'}]")
        body = "\n".join(out)
        return "assistant: " + body.lstrip() if body else "assistant: (no text)"
    if item["kind"] == "tool_result":
        status = "error" if item["is_error"] else "result"
        text = item["text"] if len(item["text"]) <= 2000 else item["text"][:2000] + " …"
        head = f"[{item['tool_name']} {status}]"
        return f"{head}\n{_indent(text)}" if text else head
    return f"[{item['title']}]\n{_indent(item['text'][:2000])}"


def _item_html(item: TranscriptItem) -> str:
    esc = html.escape
    pre = 'style="white-space:pre-wrap;margin:4px 0"'
    if item["kind"] == "user":
        return (
            '<div style="border-left:3px solid #1976d2;padding:2px 8px;margin:6px 0">'
            f"<div {pre}>{esc(item['text'])}</div></div>"
        )
    if item["kind"] == "assistant":
        parts: list[str] = []
        for block in item["blocks"]:
            if block["type"] == "text":
                parts.append(f"<div {pre}>{esc(block['text'])}</div>")
            elif block["type"] == "thinking":
                parts.append(
                    "<details><summary>Thinking</summary>"
                    f"<div {pre}>{esc(block['text'])}</div></details>"
                )
            else:
                parts.append(
                    f"<div><code>→ {esc(block['name'])}</code>"
                    f"<pre {pre}>{esc(block['args'][:4000])}</pre></div>"
                )
        if item["stop_reason"] in ("aborted", "error"):
            note = esc(_item_text(item).splitlines()[-1])
            parts.append(f'<div style="color:#b00020">{note}</div>')
        return f'<div style="margin:6px 0">{"".join(parts)}</div>'
    if item["kind"] == "tool_result":
        label = "error" if item["is_error"] else "result"
        return (
            f"<details><summary><code>{esc(item['tool_name'])}</code> {label}</summary>"
            f"<pre {pre}>{esc(item['text'][:20000])}</pre></details>"
        )
    return (
        f"<details><summary>{esc(item['title'])}</summary>"
        f"<pre {pre}>{esc(item['text'])}</pre></details>"
    )


def _stopped_without_usage(items: Sequence[TranscriptItem]) -> bool:
    """A reply was stopped before the provider reported its usage (the header says so rather
    than show ↑0 ↓0 · $0)."""
    for item in items:
        if (
            item["kind"] == "assistant"
            and item["stop_reason"] == "aborted"
            and not (item["error_message"] or "").startswith(BUDGET_STOP_PREFIX)
        ):
            usage = item["usage"]
            if usage is None or not (usage["input"] or usage["output"] or usage["cost"]):
                return True
    return False


def run_text(
    *,
    status: RunStatus,
    stalled_ms: int,
    model: str,
    usage: UsageSummary,
    budget: Sequence[BudgetMeterRow],
    items: Sequence[TranscriptItem],
    live: AssistantItem | None,
    error: str,
    notice: str,
) -> str:
    """The run as plain text: a header line, then each message (``live``: the reply in
    progress)."""
    u = usage
    spent = f"{u['input']:,} in / {u['output']:,} out · ${u['cost']:.4f}"
    if _stopped_without_usage(items):
        known = u["input"] or u["output"] or u["cost"]
        spent = f"{spent} · stopped reply: usage unknown" if known else "usage unknown: stopped"
    words = _STATUS_WORDS.get(status, status)
    if stalled_ms:
        words = f"{_STALL_WORDS} — {stalled_ms // 1000} s"
    lines = [
        f"pi run · {words}"
        + (f" · {model}" if model else "")
        + f" · {spent}"
        + (f" · budget {budget_text(budget)}" if budget else "")
    ]
    for item in items:
        lines.append(_item_text(item))
    if live is not None:
        lines.append(_item_text(live) + " …")
    if error:
        lines.append(f"! {error}")
    if notice:
        lines.append(f"! {notice}")
    return "\n".join(lines)


def run_html(head: str, items: Sequence[TranscriptItem], error: str) -> str:
    """The run as simple, static HTML under the text's header line ``head``."""
    esc = html.escape
    parts = [
        '<div class="pi-run-static" style="border:1px solid #ccc;border-radius:6px;'
        'padding:6px 10px;font-family:sans-serif;font-size:13px">',
        f'<div style="color:#666">{esc(head)}</div>',
    ]
    for item in items:
        parts.append(_item_html(item))
    if error:
        parts.append(f'<div style="color:#b00020">{esc(error)}</div>')
    parts.append("</div>")
    return "".join(parts)
