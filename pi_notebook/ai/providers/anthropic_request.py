"""The request side of the Anthropic Messages API: URL, headers and JSON body.

The body follows pi's conventions: the system prompt as text blocks, two prompt-cache breakpoints
(the system prompt and the last block of the last user message), strictly alternating
user/assistant turns with tool results merged into one user turn, thinking blocks replayed with
their signatures, and token-budget thinking with pi's default budgets.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ..options import StreamOptions
from ..thinking import DEFAULT_THINKING_BUDGETS, thinking_budget
from ..types import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    Model,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

__all__ = [
    "ANTHROPIC_VERSION",
    "DEFAULT_BASE_URL",
    "DEFAULT_THINKING_BUDGETS",
    "build_payload",
    "cache_control",
    "convert_messages",
    "convert_tools",
    "is_oauth_token",
    "messages_url",
    "normalize_tool_call_id",
    "request_headers",
    "thinking_budget",
]

DEFAULT_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"

_FINE_GRAINED_TOOL_STREAMING = "fine-grained-tool-streaming-2025-05-14"
_INTERLEAVED_THINKING = "interleaved-thinking-2025-05-14"
_OAUTH = "oauth-2025-04-20"
_TOOL_ID_INVALID = re.compile(r"[^A-Za-z0-9_-]")
_MAX_TOOL_ID = 64

Block = dict[str, Any]
WireMessage = dict[str, Any]


# --- URL and headers -----------------------------------------------------------------------------


def messages_url(base_url: str) -> str:
    """``{base}/v1/messages``; a base that already ends in ``/v1`` is accepted as well."""
    base = (base_url or DEFAULT_BASE_URL).rstrip("/")
    if base.endswith("/v1"):
        return base + "/messages"
    return base + "/v1/messages"


def is_oauth_token(api_key: str) -> bool:
    """Anthropic OAuth access tokens (Claude subscriptions) go in ``Authorization: Bearer``."""
    return api_key.startswith("sk-ant-oat")


def request_headers(api_key: str | None, *, thinking: bool) -> dict[str, str]:
    """Authentication, API version and beta flags for one request."""
    betas = [_FINE_GRAINED_TOOL_STREAMING]
    if thinking:
        betas.append(_INTERLEAVED_THINKING)
    headers = {"anthropic-version": ANTHROPIC_VERSION}
    if api_key and is_oauth_token(api_key):
        headers["authorization"] = f"Bearer {api_key}"
        betas.insert(0, _OAUTH)
    elif api_key:
        headers["x-api-key"] = api_key
    headers["anthropic-beta"] = ",".join(betas)
    return headers


# --- options -------------------------------------------------------------------------------------


def cache_control(retention: Literal["none", "short", "long"]) -> Block | None:
    """The ``cache_control`` marker for a cache-retention preference (``None`` = no caching)."""
    if retention == "none":
        return None
    if retention == "long":
        return {"type": "ephemeral", "ttl": "1h"}
    return {"type": "ephemeral"}


def normalize_tool_call_id(tool_call_id: str) -> str:
    """A tool-call id Anthropic accepts (``[A-Za-z0-9_-]{1,64}``), stable for a given input.

    Ids that are too long keep a prefix plus a short hash of the whole id, so two long ids that
    share their first 64 characters stay distinct.
    """
    clean = _TOOL_ID_INVALID.sub("_", tool_call_id) or "_"
    if len(clean) <= _MAX_TOOL_ID:
        return clean
    digest = hashlib.sha256(tool_call_id.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{clean[: _MAX_TOOL_ID - len(digest) - 1]}_{digest}"


# --- body ----------------------------------------------------------------------------------------


def build_payload(
    model: Model, context: Context, options: StreamOptions, messages: Sequence[Message]
) -> dict[str, Any]:
    """The JSON body of ``POST /v1/messages`` (``messages`` already prepared for replay)."""
    marker = cache_control(options.cache_retention)
    max_tokens = options.max_tokens or max(1, model.max_tokens // 3)
    payload: dict[str, Any] = {"model": model.id, "max_tokens": max_tokens}
    if context.system_prompt and context.system_prompt.strip():
        system: Block = {"type": "text", "text": _clean(context.system_prompt)}
        if marker is not None:
            system["cache_control"] = marker
        payload["system"] = [system]
    payload["messages"] = convert_messages(messages, marker)
    if context.tools:
        payload["tools"] = convert_tools(context.tools)
        tool_choice = options.extra.get("tool_choice")
        if isinstance(tool_choice, str):
            payload["tool_choice"] = {"type": tool_choice}
        elif isinstance(tool_choice, Mapping):
            payload["tool_choice"] = dict(tool_choice)
    level = options.reasoning
    thinking = level is not None and level != "off" and model.reasoning
    if thinking:
        assert level is not None
        payload["max_tokens"], budget = thinking_budget(
            level, max_tokens, model.max_tokens, options.thinking_budgets
        )
        payload["thinking"] = {"type": "enabled", "budget_tokens": budget}
    elif options.temperature is not None:
        payload["temperature"] = options.temperature
    user_id = (options.metadata or {}).get("user_id")
    if isinstance(user_id, str) and user_id:
        payload["metadata"] = {"user_id": user_id}
    payload["stream"] = True
    return payload


def convert_tools(tools: Sequence[Tool]) -> list[Block]:
    """Tools as Anthropic wants them: flat, the JSON Schema under ``input_schema``."""
    out: list[Block] = []
    for tool in tools:
        schema = dict(tool.parameters)
        schema.setdefault("type", "object")
        out.append({"name": tool.name, "description": tool.description, "input_schema": schema})
    return out


def convert_messages(messages: Sequence[Message], marker: Block | None = None) -> list[WireMessage]:
    """Our messages as strictly alternating Anthropic turns.

    Consecutive messages of one role are merged (tool results and a following user message become
    one user turn, ``tool_result`` blocks first); empty text is never sent; ``marker`` (a
    ``cache_control`` value) goes on the last block of the final user turn.
    """
    turns: list[WireMessage] = []
    for message in messages:
        if isinstance(message, UserMessage):
            _append(turns, "user", _user_blocks(message))
        elif isinstance(message, ToolResultMessage):
            _append(turns, "user", [_tool_result_block(message)])
        elif isinstance(message, AssistantMessage):
            _append(turns, "assistant", _assistant_blocks(message))
    for turn in turns:
        if turn["role"] == "user":
            # tool_result blocks must open the user turn that answers the tool calls
            turn["content"].sort(key=lambda block: block["type"] != "tool_result")
    if marker is not None and turns and turns[-1]["role"] == "user":
        turns[-1]["content"][-1]["cache_control"] = marker
    return turns


def _append(turns: list[WireMessage], role: str, blocks: list[Block]) -> None:
    if not blocks:
        return
    if turns and turns[-1]["role"] == role:
        turns[-1]["content"].extend(blocks)
    else:
        turns.append({"role": role, "content": blocks})


def _user_blocks(message: UserMessage) -> list[Block]:
    if isinstance(message.content, str):
        return [_text_block(message.content)] if message.content.strip() else []
    return _content_blocks(message.content)


def _content_blocks(content: Sequence[TextContent | ImageContent]) -> list[Block]:
    blocks: list[Block] = []
    for item in content:
        if isinstance(item, TextContent):
            if item.text.strip():
                blocks.append(_text_block(item.text))
        else:
            blocks.append(_image_block(item))
    return blocks


def _tool_result_block(message: ToolResultMessage) -> Block:
    block: Block = {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id,
        "is_error": message.is_error,
    }
    content = _content_blocks(message.content)
    if content and all(b["type"] == "text" for b in content):
        block["content"] = "\n".join(b["text"] for b in content)
    elif content:
        block["content"] = content
    return block


def _assistant_blocks(message: AssistantMessage) -> list[Block]:
    blocks: list[Block] = []
    for item in message.content:
        if isinstance(item, TextContent):
            if item.text.strip():
                blocks.append(_text_block(item.text))
        elif isinstance(item, ThinkingContent):
            signature = item.thinking_signature
            if item.redacted:
                if signature:
                    blocks.append({"type": "redacted_thinking", "data": signature})
            elif not item.thinking.strip():
                continue
            elif signature and signature.strip():
                blocks.append(
                    {"type": "thinking", "thinking": _clean(item.thinking), "signature": signature}
                )
            else:
                # Without its signature (e.g. an aborted stream) the API would reject the block.
                blocks.append(_text_block(item.thinking))
        elif isinstance(item, ToolCall):
            blocks.append(
                {"type": "tool_use", "id": item.id, "name": item.name, "input": item.arguments}
            )
    return blocks


def _text_block(text: str) -> Block:
    return {"type": "text", "text": _clean(text)}


def _image_block(image: ImageContent) -> Block:
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": image.mime_type, "data": image.data},
    }


def _clean(text: str) -> str:
    """``text`` without lone surrogates (UTF-8 cannot encode them; the API would reject them)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text
