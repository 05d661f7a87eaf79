"""An MCP ``CallToolResult`` in our message model.

Text stays text and images stay images (the model sees them); audio, embedded resources and
resource links become a short, bounded text rendering; ``structuredContent`` is kept in the tool
result's ``details`` (and shown to the model as JSON when the server sent no content blocks).
The SDK's types are read by their fields, so this module does not import the SDK.
"""

from __future__ import annotations

import json
from typing import Any

from ..agent.tools import AgentToolResult
from ..ai.types import ImageContent, TextContent

__all__ = ["MAX_RESOURCE_CHARS", "MAX_RESULT_CHARS", "to_tool_result"]

MAX_RESOURCE_CHARS = 4_000
"""An embedded text resource is cut to this many characters for the model."""
MAX_RESULT_CHARS = 50_000
"""All text of one result together is cut to this many characters."""


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters]"


def _size(data: str) -> str:
    return f"{len(data) * 3 // 4:,} bytes"


def _block(block: Any) -> TextContent | ImageContent:
    kind = getattr(block, "type", None)
    if kind == "text":
        return TextContent(text=str(block.text))
    if kind == "image":
        return ImageContent(data=str(block.data), mime_type=str(block.mime_type))
    if kind == "audio":
        return TextContent(text=f"[audio: {block.mime_type}, {_size(str(block.data))}]")
    if kind == "resource_link":
        parts = [f"[resource link: {block.name} <{block.uri}>"]
        if getattr(block, "mime_type", None):
            parts.append(f" ({block.mime_type})")
        if getattr(block, "description", None):
            parts.append(f" {block.description}")
        return TextContent(text=_cut("".join(parts), MAX_RESOURCE_CHARS) + "]")
    if kind == "resource":
        resource = block.resource
        mime = getattr(resource, "mime_type", None) or "unknown type"
        text = getattr(resource, "text", None)
        if text is not None:
            body = _cut(str(text), MAX_RESOURCE_CHARS)
            return TextContent(text=f"[resource <{resource.uri}> ({mime})]\n{body}")
        blob = str(getattr(resource, "blob", "") or "")
        return TextContent(text=f"[resource <{resource.uri}>: {mime}, {_size(blob)}]")
    dumped = block.model_dump(mode="json") if hasattr(block, "model_dump") else repr(block)
    return TextContent(text=_cut(f"[{kind or 'content'}: {json.dumps(dumped)}]", 2_000))


def to_tool_result(result: Any, server: str, tool: str) -> AgentToolResult:
    """``result`` (an SDK ``CallToolResult``) as an ``AgentToolResult``; ``isError`` makes it
    an error result with the same content.

    ``details`` is ``{"server", "tool"}`` plus ``structuredContent`` when the server sent it."""
    is_error = bool(getattr(result, "is_error", False))
    content = [_block(b) for b in getattr(result, "content", None) or ()]
    structured = getattr(result, "structured_content", None)
    if not content and structured is not None:
        content = [TextContent(text=json.dumps(structured, ensure_ascii=False, default=str))]
    budget = MAX_RESULT_CHARS
    bounded: list[TextContent | ImageContent] = []
    for block in content:
        if isinstance(block, TextContent):
            if budget <= 0:
                continue
            block = TextContent(text=_cut(block.text, budget))
            budget -= len(block.text)
        bounded.append(block)
    details: dict[str, Any] = {"server": server, "tool": tool}
    if structured is not None:
        details["structuredContent"] = structured
    if is_error and not bounded:
        bounded = [TextContent(text=f"{tool} on {server} reported an error without a message")]
    return AgentToolResult(content=bounded, details=details, is_error=is_error)
