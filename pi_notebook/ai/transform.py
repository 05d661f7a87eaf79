"""Replay rules: turn a conversation into messages a given target model will accept.

Every provider applies ``transform_messages`` to the context's messages before it builds a request
(pi's ``transform-messages.ts``):

1. Images become text placeholders when the target model has no image input (a run of consecutive
   images becomes one placeholder).
2. Assistant messages produced by a *different* model (provider, api or id differ) lose what only
   their own provider understands: thinking becomes plain text (empty and redacted thinking is
   dropped), text signatures and Google ``thought_signature`` are removed, and tool-call ids are
   rewritten by ``normalize_tool_call_id`` (with the matching tool results rewritten too).
   Messages of the same model keep everything needed for replay.
3. Assistant messages that ended in ``error`` or ``aborted`` are dropped, together with any tool
   results answering their calls.
4. Tool calls left without a result (before the next assistant or user message, or at the end)
   get a synthetic error result "No result provided", so the request is valid.

The input messages are never mutated; changed messages are shallow copies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .types import (
    AssistantContent,
    AssistantMessage,
    ImageContent,
    Message,
    Model,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    now_ms,
)

__all__ = [
    "IMAGE_PLACEHOLDER",
    "NO_RESULT_TEXT",
    "TOOL_IMAGE_PLACEHOLDER",
    "is_same_model",
    "transform_messages",
]

IMAGE_PLACEHOLDER = "(image omitted: model does not support images)"
TOOL_IMAGE_PLACEHOLDER = "(tool image omitted: model does not support images)"
NO_RESULT_TEXT = "No result provided"


def is_same_model(message: AssistantMessage, model: Model) -> bool:
    """True when ``message`` was produced by ``model`` (same provider, api and id)."""
    return (message.provider, message.api, message.model) == (model.provider, model.api, model.id)


def _without_images(content: Sequence[Any], placeholder: str) -> list[Any] | None:
    """``content`` with each run of images replaced by one placeholder; ``None`` if unchanged."""
    if not any(isinstance(block, ImageContent) for block in content):
        return None
    out: list[Any] = []
    after_placeholder = False
    for block in content:
        if isinstance(block, ImageContent):
            if not after_placeholder:
                out.append(TextContent(text=placeholder))
            after_placeholder = True
            continue
        out.append(block)
        after_placeholder = isinstance(block, TextContent) and block.text == placeholder
    return out


def _foreign_block(
    block: AssistantContent,
    normalize: Callable[[str], str] | None,
    renamed: dict[str, str],
) -> AssistantContent | None:
    """One content block of another model's message, reduced to what any provider accepts."""
    if isinstance(block, ThinkingContent):
        if block.redacted or not block.thinking.strip():
            return None
        return TextContent(text=block.thinking)
    if isinstance(block, TextContent):
        return block if block.text_signature is None else TextContent(text=block.text)
    update: dict[str, Any] = {}
    if block.thought_signature is not None:
        update["thought_signature"] = None
    if normalize is not None:
        new_id = normalize(block.id)
        if new_id != block.id:
            renamed[block.id] = new_id
            update["id"] = new_id
    return block.model_copy(update=update) if update else block


def _own_block(block: AssistantContent) -> AssistantContent | None:
    """One content block of the target model's own message: kept, unless it is empty thinking
    with nothing to replay."""
    if (
        isinstance(block, ThinkingContent)
        and not block.redacted
        and not block.thinking_signature
        and not block.thinking.strip()
    ):
        return None
    return block


def _assistant(
    message: AssistantMessage,
    model: Model,
    normalize: Callable[[str], str] | None,
    renamed: dict[str, str],
) -> AssistantMessage:
    same = is_same_model(message, model)
    content: list[AssistantContent] = []
    for block in message.content:
        kept = _own_block(block) if same else _foreign_block(block, normalize, renamed)
        if kept is not None:
            content.append(kept)
    if len(content) == len(message.content) and all(
        a is b for a, b in zip(content, message.content, strict=True)
    ):
        return message
    return message.model_copy(update={"content": content})


def _synthetic_result(call: ToolCall) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        content=[TextContent(text=NO_RESULT_TEXT)],
        is_error=True,
        timestamp=now_ms(),
    )


def transform_messages(
    messages: Sequence[Message],
    model: Model,
    normalize_tool_call_id: Callable[[str], str] | None = None,
    *,
    keep_system: bool = False,
) -> list[Message]:
    """The messages to send to ``model``, following the replay rules of this module. System
    messages are dropped (``collapse_system_messages`` folded them into the prompt), unless
    ``keep_system`` (an API that takes them in mid-conversation: ``keep_system_messages``)."""
    supports_images = "image" in model.input
    renamed: dict[str, str] = {}  # original → normalised tool-call id, for the results
    dropped_calls: set[str] = set()
    pending: list[ToolCall] = []
    answered: set[str] = set()
    out: list[Message] = []

    held: list[SystemMessage] = []  # between a tool call and its result: sent after the results

    def close_pending() -> None:
        for call in pending:
            if call.id not in answered:
                out.append(_synthetic_result(call))
        pending.clear()
        answered.clear()
        out.extend(held)
        held.clear()

    for message in messages:
        if isinstance(message, AssistantMessage):
            close_pending()
            if message.stop_reason in ("error", "aborted"):
                dropped_calls.update(block.id for block in message.tool_calls)
                continue
            for call in message.tool_calls:
                dropped_calls.discard(call.id)
                renamed.pop(call.id, None)
            transformed = _assistant(message, model, normalize_tool_call_id, renamed)
            pending.extend(transformed.tool_calls)
            out.append(transformed)
        elif isinstance(message, ToolResultMessage):
            if message.tool_call_id in dropped_calls:
                continue
            update: dict[str, Any] = {}
            new_id = renamed.get(message.tool_call_id)
            if new_id is not None:
                update["tool_call_id"] = new_id
            if not supports_images:
                content = _without_images(message.content, TOOL_IMAGE_PLACEHOLDER)
                if content is not None:
                    update["content"] = content
            result = message.model_copy(update=update) if update else message
            answered.add(result.tool_call_id)
            out.append(result)
        elif isinstance(message, SystemMessage):
            if keep_system:  # one between a call and its results follows the results
                (held if pending else out).append(message)
        else:
            close_pending()
            if not supports_images and isinstance(message.content, list):
                content = _without_images(message.content, IMAGE_PLACEHOLDER)
                if content is not None:
                    message = message.model_copy(update={"content": content})
            out.append(message)
    close_pending()
    return out
