"""Building the widgets' items from pi's message JSON: the transcript items, usage summaries and
previews of :mod:`.protocol`'s shapes, from messages given as pydantic models or dicts."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .protocol import (
    AssistantItem,
    Block,
    ImageData,
    NoteItem,
    Origin,
    ToolApproval,
    ToolResultItem,
    TranscriptItem,
    UsageSummary,
    UserItem,
)

__all__ = [
    "ARGS_PREVIEW_CHARS",
    "BUNDLE_ENTRY_CHARS",
    "DISPLAY_TYPES",
    "PROGRESS_CHARS",
    "RESULT_PREVIEW_CHARS",
    "add_usage",
    "args_text",
    "assistant_item",
    "clip",
    "content_images",
    "content_text",
    "context_tokens",
    "display_bundle",
    "message_json",
    "note_item",
    "tool_result_item",
    "transcript_item",
    "usage_summary",
    "user_item",
]

RESULT_PREVIEW_CHARS = 20_000
"""A tool result's text in state is cut here; the whole text is sent on request."""
ARGS_PREVIEW_CHARS = 20_000
PROGRESS_CHARS = 4_000
"""A running tool's progress shows the end of its latest update text."""
BUNDLE_ENTRY_CHARS = 2_000_000
"""A mime bundle entry larger than this is left out of the state (another type is shown)."""
DISPLAY_TYPES = (
    "text/html",
    "text/markdown",
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "image/svg+xml",
    "text/plain",
)


def message_json(message: object) -> dict[str, Any]:
    """pi's camelCase JSON of a message given as a pydantic model or already as a dict."""
    if isinstance(message, Mapping):
        return dict(message)
    dump = getattr(message, "model_dump", None)
    if callable(dump):
        data = dump(mode="json", by_alias=True, exclude_none=True)
        if isinstance(data, dict):
            return data
    raise TypeError(f"expected a message (pydantic model or dict), got {type(message).__name__}")


def usage_summary(usage: Mapping[str, Any] | None) -> UsageSummary:
    usage = usage or {}
    cost = usage.get("cost") or {}
    return {
        "input": int(usage.get("input") or 0),
        "output": int(usage.get("output") or 0),
        "cache_read": int(usage.get("cacheRead") or 0),
        "cache_write": int(usage.get("cacheWrite") or 0),
        "total_tokens": int(usage.get("totalTokens") or 0),
        "cost": float(cost.get("total") or 0.0) if isinstance(cost, Mapping) else 0.0,
    }


def add_usage(total: UsageSummary, more: UsageSummary) -> UsageSummary:
    return {
        "input": total["input"] + more["input"],
        "output": total["output"] + more["output"],
        "cache_read": total["cache_read"] + more["cache_read"],
        "cache_write": total["cache_write"] + more["cache_write"],
        "total_tokens": total["total_tokens"] + more["total_tokens"],
        "cost": total["cost"] + more["cost"],
    }


def context_tokens(usage: UsageSummary) -> int:
    """Tokens in the context after a reply (pi's ``calculateContextTokens``)."""
    return usage["total_tokens"] or (
        usage["input"] + usage["output"] + usage["cache_read"] + usage["cache_write"]
    )


def content_text(content: object) -> str:
    """The text of a message's content: a string, or the text blocks of a block list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(block.get("text", ""))
            for block in content
            if isinstance(block, Mapping) and block.get("type") == "text"
        )
    return ""


def content_images(content: object) -> list[ImageData]:
    if not isinstance(content, list):
        return []
    return [
        {"mime_type": str(block.get("mimeType", "image/png")), "data": str(block.get("data", ""))}
        for block in content
        if isinstance(block, Mapping) and block.get("type") == "image"
    ]


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… ({len(text) - limit:,} more characters)"


def args_text(arguments: object) -> str:
    """Tool-call arguments as pretty JSON (clipped)."""
    try:
        text = json.dumps(arguments, indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(arguments)
    return clip(text, ARGS_PREVIEW_CHARS)


def display_bundle(details: object) -> dict[str, str] | None:
    """The showable part of ``details["mime_bundle"]`` (string entries of known types, not huge)."""
    if not isinstance(details, Mapping):
        return None
    bundle = details.get("mime_bundle")
    if not isinstance(bundle, Mapping):
        return None
    shown = {
        mime: value
        for mime in DISPLAY_TYPES
        if isinstance(value := bundle.get(mime), str) and len(value) <= BUNDLE_ENTRY_CHARS
    }
    return shown or None


def user_item(message: Mapping[str, Any], item_id: str, origin: Origin = "prompt") -> UserItem:
    content = message.get("content")
    return {
        "kind": "user",
        "id": item_id,
        "text": content_text(content),
        "images": content_images(content),
        "origin": origin,
    }


def assistant_item(message: Mapping[str, Any], item_id: str) -> AssistantItem:
    blocks: list[Block] = []
    for block in message.get("content") or ():
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            blocks.append({"type": "text", "text": str(block.get("text", ""))})
        elif kind == "thinking":
            blocks.append(
                {
                    "type": "thinking",
                    "text": str(block.get("thinking", "")),
                    "redacted": bool(block.get("redacted")),
                }
            )
        elif kind == "toolCall":
            blocks.append(
                {
                    "type": "toolCall",
                    "id": str(block.get("id", "")),
                    "name": str(block.get("name", "")),
                    "args": args_text(block.get("arguments", {})),
                    "complete": True,
                }
            )
    provider, model = message.get("provider"), message.get("model")
    return {
        "kind": "assistant",
        "id": item_id,
        "blocks": blocks,
        "stop_reason": str(message.get("stopReason") or "stop"),
        "error_message": message.get("errorMessage"),
        "model": f"{provider}/{model}" if provider and model else str(model or ""),
        "usage": usage_summary(message.get("usage")),
    }


def tool_result_item(
    item_id: str,
    tool_call_id: str,
    tool_name: str,
    content: object,
    details: object,
    is_error: bool,
    duration_ms: int | None = None,
    approval: ToolApproval | None = None,
) -> tuple[ToolResultItem, str]:
    """The item, and the whole text (longer than the item's when it was cut)."""
    text = content_text(content)
    item: ToolResultItem = {
        "kind": "tool_result",
        "id": item_id,
        "tool_call_id": tool_call_id,
        "tool_name": tool_name,
        "is_error": is_error,
        "text": text[:RESULT_PREVIEW_CHARS],
        "text_length": len(text),
        "images": content_images(content),
        "mime_bundle": display_bundle(details),
        "duration_ms": duration_ms,
        "approval": approval,
    }
    return item, text


def note_item(message: Mapping[str, Any], item_id: str) -> NoteItem:
    role = str(message.get("role", "message"))
    if role == "bashExecution":
        title = f"$ {message.get('command', '')}"
        text = f"```\n{message.get('output', '')}\n```"
        if message.get("exitCode") not in (None, 0):
            text += f"\n\nexit code {message.get('exitCode')}"
    elif role == "custom":
        title = str(message.get("customType", "custom"))
        text = content_text(message.get("content"))
    elif role == "branchSummary":
        title, text = "Branch summary", str(message.get("summary", ""))
    elif role == "compactionSummary":
        title = f"Compaction summary ({int(message.get('tokensBefore') or 0):,} tokens before)"
        text = str(message.get("summary", ""))
    else:
        title, text = role, f"```json\n{json.dumps(message, indent=2, default=str)}\n```"
    return {"kind": "note", "id": item_id, "role": role, "title": title, "text": clip(text, 50_000)}


def transcript_item(message: Mapping[str, Any], item_id: str) -> TranscriptItem:
    """Any message as a transcript item (a tool result without timing or approval)."""
    role = message.get("role")
    if role == "user":
        return user_item(message, item_id)
    if role == "assistant":
        return assistant_item(message, item_id)
    if role == "toolResult":
        item, _ = tool_result_item(
            item_id,
            str(message.get("toolCallId", "")),
            str(message.get("toolName", "")),
            message.get("content"),
            message.get("details"),
            bool(message.get("isError")),
        )
        return item
    return note_item(message, item_id)
