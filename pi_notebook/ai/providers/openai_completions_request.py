"""Request side of the ``openai-completions`` provider: per-server quirks (``compat``) and the
Chat Completions request body built from a ``Context``.

Compat keys live in ``model.compat`` with pi's camelCase names (``maxTokensField``,
``supportsDeveloperRole``, ``supportsReasoningEffort``, ``reasoningEffortMap``,
``supportsUsageInStreaming``, ``supportsStore``, ``thinkingFormat``, ``requiresToolResultName``,
``requiresAssistantAfterToolResult``, ``requiresThinkingAsText``). Keys that are absent are guessed
from the provider name and the base URL: OpenAI itself gets ``max_completion_tokens``, ``store:
false`` and the ``developer`` role for reasoning models; everything else (llama.cpp, vLLM, Ollama,
hosted compat APIs) gets the conservative legacy spelling.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, Literal, TypeAlias
from urllib.parse import urlsplit

from ..models import clamp_thinking_level
from ..options import StreamOptions
from ..system_message import render_system_message_update, system_message_text
from ..transform import transform_messages
from ..types import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    Model,
    TextContent,
    ThinkingContent,
    Tool,
    ToolResultMessage,
    UserMessage,
)

__all__ = [
    "REASONING_KEYS",
    "CompletionsCompat",
    "build_payload",
    "completions_url",
    "convert_messages",
    "normalize_tool_call_id",
    "resolve_compat",
]

ThinkingFormat: TypeAlias = Literal["openai", "openrouter", "zai", "qwen", "qwen-chat-template"]

REASONING_KEYS: tuple[str, ...] = ("reasoning_content", "reasoning", "reasoning_text")
"""``delta`` keys carrying reasoning text on OpenAI-compatible servers, in order of preference.
A thinking block remembers its key in ``thinking_signature`` and is replayed under it."""

TOOL_RESULT_IMAGES_TEXT = "Attached image(s) from tool result:"
ASSISTANT_AFTER_TOOL_RESULT = "I have processed the tool results."


@dataclass(frozen=True, slots=True)
class CompletionsCompat:
    """How far a server follows OpenAI's Chat Completions API."""

    supports_store: bool = False
    supports_developer_role: bool = False
    supports_reasoning_effort: bool = True
    reasoning_effort_map: Mapping[str, str] | None = None
    supports_usage_in_streaming: bool = True
    max_tokens_field: Literal["max_completion_tokens", "max_tokens"] = "max_tokens"
    requires_tool_result_name: bool = False
    requires_assistant_after_tool_result: bool = False
    requires_thinking_as_text: bool = False
    thinking_format: ThinkingFormat = "openai"
    supports_mid_convo_system_messages: bool = False


_CAMEL_KEYS = {
    "supportsStore": "supports_store",
    "supportsDeveloperRole": "supports_developer_role",
    "supportsReasoningEffort": "supports_reasoning_effort",
    "reasoningEffortMap": "reasoning_effort_map",
    "supportsUsageInStreaming": "supports_usage_in_streaming",
    "maxTokensField": "max_tokens_field",
    "requiresToolResultName": "requires_tool_result_name",
    "requiresAssistantAfterToolResult": "requires_assistant_after_tool_result",
    "requiresThinkingAsText": "requires_thinking_as_text",
    "thinkingFormat": "thinking_format",
    "supportsMidConvoSystemMessages": "supports_mid_convo_system_messages",
}
_CHOICES: dict[str, tuple[str, ...]] = {
    "max_tokens_field": ("max_completion_tokens", "max_tokens"),
    "thinking_format": ("openai", "openrouter", "zai", "qwen", "qwen-chat-template"),
}


def _guess_compat(model: Model) -> CompletionsCompat:
    host = (urlsplit(model.base_url).hostname or "").lower()
    provider = model.provider

    def is_(name: str, domain: str) -> bool:
        return provider == name or host == domain or host.endswith("." + domain)

    openai = is_("openai", "openai.com")
    zai = is_("zai", "z.ai")
    mistral = is_("mistral", "mistral.ai")
    thinking_format: ThinkingFormat = "openai"
    if zai:
        thinking_format = "zai"
    elif is_("openrouter", "openrouter.ai"):
        thinking_format = "openrouter"
    return CompletionsCompat(
        supports_store=openai,
        supports_developer_role=openai,
        supports_reasoning_effort=not (zai or is_("xai", "x.ai")),
        max_tokens_field="max_completion_tokens" if openai else "max_tokens",
        requires_tool_result_name=mistral,
        requires_thinking_as_text=mistral,
        thinking_format=thinking_format,
    )


def resolve_compat(model: Model) -> CompletionsCompat:
    """``model.compat`` over the guess for its provider and base URL; a ``ValueError`` names any
    key with a value of the wrong type."""
    compat = _guess_compat(model)
    overrides: dict[str, Any] = {}
    defaults = {f.name: getattr(compat, f.name) for f in fields(compat)}
    for key, value in (model.compat or {}).items():
        name = _CAMEL_KEYS.get(key, key if key in defaults else "")
        if not name or value is None:
            continue  # other APIs' keys (routing, cache control, …) are not ours
        if name in _CHOICES:
            if value not in _CHOICES[name]:
                raise ValueError(
                    f"compat.{key} of model {model.ref} must be one of "
                    f"{', '.join(_CHOICES[name])}; got {value!r}"
                )
        elif name == "reasoning_effort_map":
            if not isinstance(value, Mapping):
                raise ValueError(f"compat.{key} of model {model.ref} must be a mapping")
        elif not isinstance(value, bool):
            raise ValueError(f"compat.{key} of model {model.ref} must be true or false")
        overrides[name] = value
    return replace(compat, **overrides)


def completions_url(base_url: str) -> str:
    if not base_url:
        raise ValueError("The model has no base_url to send the request to")
    return base_url.rstrip("/") + "/chat/completions"


_UNSAFE_ID_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def normalize_tool_call_id(tool_call_id: str) -> str:
    """A tool-call id OpenAI accepts (``[A-Za-z0-9_-]``, at most 40 characters), deterministic so
    the matching tool results get the same one. Responses-style ``call_id|item_id`` keeps the
    call id; long ids keep a prefix plus a short hash, so distinct ids stay distinct."""
    head = tool_call_id.split("|", 1)[0]
    clean = _UNSAFE_ID_CHARS.sub("_", head)
    if clean and len(clean) <= 40:
        return clean
    digest = hashlib.sha256(tool_call_id.encode()).hexdigest()[:8]
    return f"{clean[:31] or 'call'}_{digest}"


# --- messages ------------------------------------------------------------------------------------


def _data_url(image: ImageContent) -> dict[str, Any]:
    return {
        "type": "image_url",
        "image_url": {"url": f"data:{image.mime_type};base64,{image.data}"},
    }


def _user(message: UserMessage) -> dict[str, Any] | None:
    if isinstance(message.content, str):
        return {"role": "user", "content": message.content}
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            parts.append({"type": "text", "text": block.text})
        else:
            parts.append(_data_url(block))
    return {"role": "user", "content": parts} if parts else None


def _assistant(message: AssistantMessage, compat: CompletionsCompat) -> dict[str, Any] | None:
    text = "".join(b.text for b in message.content if isinstance(b, TextContent) and b.text.strip())
    thinking = [b for b in message.content if isinstance(b, ThinkingContent) and b.thinking.strip()]
    out: dict[str, Any] = {"role": "assistant", "content": None}
    if thinking and compat.requires_thinking_as_text:
        text = "\n\n".join([*(b.thinking for b in thinking), *([text] if text else [])])
    elif thinking and thinking[0].thinking_signature in REASONING_KEYS:
        out[thinking[0].thinking_signature] = "\n".join(b.thinking for b in thinking)
    if text:
        out["content"] = text
    calls = message.tool_calls
    if calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call in calls
        ]
    if not text and not calls:
        return None
    return out


def _tool_results(
    results: Sequence[ToolResultMessage], model: Model, compat: CompletionsCompat
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One ``tool`` message per result, plus the image parts Chat Completions cannot carry in a
    tool message (they go into a user message that follows)."""
    messages: list[dict[str, Any]] = []
    images: list[dict[str, Any]] = []
    for result in results:
        text = "\n".join(b.text for b in result.content if isinstance(b, TextContent))
        result_images = [b for b in result.content if isinstance(b, ImageContent)]
        message: dict[str, Any] = {
            "role": "tool",
            "tool_call_id": result.tool_call_id,
            "content": text or ("(see attached image)" if result_images else ""),
        }
        if compat.requires_tool_result_name:
            message["name"] = result.tool_name
        messages.append(message)
        if "image" in model.input:
            images.extend(_data_url(image) for image in result_images)
    return messages, images


def convert_messages(
    model: Model, context: Context, compat: CompletionsCompat
) -> list[dict[str, Any]]:
    """The ``messages`` array of a request: system prompt first, then the context's messages after
    the replay rules (``transform_messages``)."""
    out: list[dict[str, Any]] = []
    role = "developer" if model.reasoning and compat.supports_developer_role else "system"
    if context.system_prompt:
        out.append({"role": role, "content": context.system_prompt})
    messages: list[Message] = transform_messages(
        context.messages,
        model,
        normalize_tool_call_id,
        keep_system=compat.supports_mid_convo_system_messages,
    )
    last_role = ""
    i = 0
    while i < len(messages):
        message = messages[i]
        if isinstance(message, ToolResultMessage):
            j = i
            while j < len(messages) and isinstance(messages[j], ToolResultMessage):
                j += 1
            run: list[ToolResultMessage] = messages[i:j]  # type: ignore[assignment]
            tool_messages, images = _tool_results(run, model, compat)
            out.extend(tool_messages)
            last_role = "tool"
            if images:
                if compat.requires_assistant_after_tool_result:
                    out.append({"role": "assistant", "content": ASSISTANT_AFTER_TOOL_RESULT})
                out.append(
                    {"role": "user", "content": [{"type": "text", "text": TOOL_RESULT_IMAGES_TEXT}]}
                )
                out[-1]["content"].extend(images)
                last_role = "user"
            i = j
            continue
        converted: dict[str, Any] | None
        if isinstance(message, AssistantMessage):
            converted = _assistant(message, compat)
        elif isinstance(message, UserMessage):
            converted = _user(message)
            if (
                converted is not None
                and last_role == "tool"
                and compat.requires_assistant_after_tool_result
            ):
                out.append({"role": "assistant", "content": ASSISTANT_AFTER_TOOL_RESULT})
        else:  # a system message, in mid-conversation (keep_system_messages)
            text = system_message_text(message) if i == 0 else render_system_message_update(message)
            converted = {"role": role, "content": text} if text else None
        if converted is not None:
            out.append(converted)
            last_role = converted["role"]
        i += 1
    return out


# --- body ----------------------------------------------------------------------------------------


def _tool(tool: Tool) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }


def _reasoning_fields(
    model: Model, options: StreamOptions, compat: CompletionsCompat
) -> dict[str, Any]:
    """The body fields asking for (or turning off) reasoning, in the server's dialect."""
    if not model.reasoning:
        return {}
    level = options.reasoning
    enabled = level is not None and level != "off"
    fmt = compat.thinking_format
    if fmt == "zai":
        return {"thinking": {"type": "enabled" if enabled else "disabled"}}
    if fmt == "qwen":
        return {"enable_thinking": enabled}
    if fmt == "qwen-chat-template":
        return {"chat_template_kwargs": {"enable_thinking": enabled}}
    if not enabled or level is None:
        return {}
    if level == "max":  # pi 1.6's top level: sent only where the model maps it
        level = clamp_thinking_level(model, level)
    effort: str = level
    mapped = (compat.reasoning_effort_map or {}).get(level)
    if mapped is None and model.thinking_level_map:
        mapped = model.thinking_level_map.get(level)
    if mapped is not None:
        effort = mapped
    if fmt == "openrouter":
        return {"reasoning": {"effort": effort}}
    return {"reasoning_effort": effort} if compat.supports_reasoning_effort else {}


def build_payload(
    model: Model, context: Context, options: StreamOptions, compat: CompletionsCompat
) -> dict[str, Any]:
    """The JSON body of a streaming Chat Completions request."""
    payload: dict[str, Any] = {
        "model": model.id,
        "messages": convert_messages(model, context, compat),
        "stream": True,
    }
    if compat.supports_usage_in_streaming:
        payload["stream_options"] = {"include_usage": True}
    if compat.supports_store:
        payload["store"] = False
    if options.max_tokens:
        payload[compat.max_tokens_field] = options.max_tokens
    if options.temperature is not None:
        payload["temperature"] = options.temperature
    if context.tools:
        payload["tools"] = [_tool(tool) for tool in context.tools]
        tool_choice = options.extra.get("tool_choice")
        if tool_choice is not None:
            payload["tool_choice"] = tool_choice
    payload.update(_reasoning_fields(model, options, compat))
    return payload
