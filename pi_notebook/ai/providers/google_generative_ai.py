"""Google Gemini (``api="google-generative-ai"``):
``POST {base_url}/models/{model}:streamGenerateContent?alt=sse``.

The API key travels in the ``x-goog-api-key`` header, never in the URL (URLs end up in logs).
The conversation becomes ``contents`` of role ``user`` / ``model``; tool results are
``functionResponse`` parts (a run of them shares one user turn, images follow as ``inlineData``).
Gemini's opaque ``thoughtSignature`` is kept on the block it arrived with (text →
``text_signature``, thought → ``thinking_signature``, function call → ``thought_signature``) and
sent back only to the same model.

Each SSE event is a whole ``GenerateContentResponse`` holding only the *new* parts. There is no
end-of-stream marker: the stream ends at EOF, and one that ended without a ``finishReason`` was
cut short. ``GeminiStreamParser`` is the state machine over those parsed payloads.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

import httpx

from ..builder import MessageBuilder, loads_json
from ..event_stream import AssistantMessageEventStream
from ..http import ProviderError, open_sse, resolve_api_key
from ..models import clamp_thinking_level
from ..options import StreamOptions
from ..producer import produce_stream
from ..thinking import DEFAULT_THINKING_BUDGETS, budget_for, thinking_budget
from ..transform import is_same_model, transform_messages
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
    "DEFAULT_BASE_URL",
    "DEFAULT_THINKING_BUDGETS",
    "GeminiStreamParser",
    "build_payload",
    "convert_messages",
    "convert_tools",
    "stream",
    "stream_url",
    "thinking_config",
]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
SKIP_SIGNATURE = "skip_thought_signature_validator"
"""Google's documented stand-in for a missing signature on Gemini 3 function calls."""

_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")

Part = dict[str, Any]
Content = dict[str, Any]


# --- request -------------------------------------------------------------------------------------


def stream_url(model: Model) -> str:
    """``{base}/models/{id}:streamGenerateContent?alt=sse`` (without ``alt=sse`` Gemini streams
    one big JSON array instead of server-sent events)."""
    base = (model.base_url or DEFAULT_BASE_URL).rstrip("/")
    model_id = model.id.removeprefix("models/")
    return f"{base}/models/{quote(model_id, safe='-._~')}:streamGenerateContent?alt=sse"


def _signature(signature: str | None) -> str | None:
    """A replayable thought signature (base64, as the API demands), or ``None``."""
    if signature and len(signature) % 4 == 0 and _BASE64.match(signature):
        return signature
    return None


def _with_signature(part: Part, signature: str | None) -> Part:
    if signature:
        part["thoughtSignature"] = signature
    return part


def _inline(image: ImageContent) -> Part:
    return {"inlineData": {"mimeType": image.mime_type, "data": image.data}}


def _user_content(message: UserMessage) -> Content | None:
    if isinstance(message.content, str):
        return {"role": "user", "parts": [{"text": message.content}]}
    parts: list[Part] = [
        {"text": block.text} if isinstance(block, TextContent) else _inline(block)
        for block in message.content
    ]
    return {"role": "user", "parts": parts} if parts else None


def _model_content(model: Model, message: AssistantMessage) -> Content | None:
    same = is_same_model(message, model)
    gemini_3 = "gemini-3" in model.id.lower()
    parts: list[Part] = []
    for block in message.content:
        if isinstance(block, TextContent):
            signature = _signature(block.text_signature) if same else None
            if block.text.strip() or signature:
                parts.append(_with_signature({"text": block.text}, signature))
        elif isinstance(block, ThinkingContent):
            # transform_messages already turned other models' thinking into text.
            signature = _signature(block.thinking_signature) if same else None
            if block.thinking.strip() or signature:
                part = {"thought": True, "text": block.thinking}
                parts.append(_with_signature(part, signature))
        elif isinstance(block, ToolCall):
            signature = _signature(block.thought_signature) if same else None
            if signature is None and gemini_3:
                signature = SKIP_SIGNATURE
            call = {"functionCall": {"name": block.name, "args": block.arguments}}
            parts.append(_with_signature(call, signature))
    return {"role": "model", "parts": parts} if parts else None


def _tool_result_parts(message: ToolResultMessage) -> list[Part]:
    text = "\n".join(b.text for b in message.content if isinstance(b, TextContent))
    images = [b for b in message.content if isinstance(b, ImageContent)]
    if not text and images:
        text = "(see attached image)"
    response = {"error": text} if message.is_error else {"output": text}
    parts: list[Part] = [{"functionResponse": {"name": message.tool_name, "response": response}}]
    parts.extend(_inline(image) for image in images)
    return parts


def convert_messages(model: Model, messages: Sequence[Message]) -> list[Content]:
    """Gemini ``contents`` for ``messages`` (already transformed for replay)."""
    contents: list[Content] = []
    tool_turn: Content | None = None  # the user turn collecting a run of tool results
    for message in messages:
        if isinstance(message, ToolResultMessage):
            if tool_turn is None:
                tool_turn = {"role": "user", "parts": []}
                contents.append(tool_turn)
            tool_turn["parts"].extend(_tool_result_parts(message))
            continue
        tool_turn = None
        if isinstance(message, UserMessage):
            content = _user_content(message)
        elif isinstance(message, AssistantMessage):
            content = _model_content(model, message)
        else:  # a system message: transform_messages already dropped them
            continue
        if content is not None:
            contents.append(content)
    return contents


def convert_tools(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """One ``functionDeclarations`` tool; parameters as full JSON Schema (``parametersJsonSchema``
    accepts everything pydantic emits, which the OpenAPI-subset ``parameters`` field does not)."""
    declarations = [
        {"name": t.name, "description": t.description, "parametersJsonSchema": t.parameters}
        for t in tools
    ]
    return [{"functionDeclarations": declarations}]


def thinking_config(
    model: Model, options: StreamOptions
) -> tuple[dict[str, Any] | None, int | None]:
    """``(thinkingConfig, maxOutputTokens)`` for ``options.reasoning``.

    A level mapped in ``model.thinking_level_map`` is sent as ``thinkingLevel`` (Gemini 3);
    otherwise as a token budget (``ai.thinking``: ``options.thinking_budgets`` over pi's defaults;
    ``xhigh`` and ``max`` use ``high``). As for every budget provider, the output limit grows by
    the budget, capped at the model's maximum, keeping at least ``MIN_OUTPUT_TOKENS`` for the
    answer. Without a level no thinking settings are sent (the model's default applies).
    """
    max_tokens = options.max_tokens
    if not model.reasoning or options.reasoning is None:
        return None, max_tokens
    level = clamp_thinking_level(model, options.reasoning)
    if level == "off":
        return None, max_tokens
    mapped = (model.thinking_level_map or {}).get(level)
    if mapped:
        return {"thinkingLevel": mapped, "includeThoughts": True}, max_tokens
    if max_tokens is None:
        budget = budget_for(level, options.thinking_budgets)
    else:
        max_tokens, budget = thinking_budget(
            level, max_tokens, model.max_tokens, options.thinking_budgets
        )
    return {"thinkingBudget": budget, "includeThoughts": True}, max_tokens


def build_payload(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """The JSON body of ``streamGenerateContent``."""
    messages = transform_messages(context.messages, model)
    payload: dict[str, Any] = {"contents": convert_messages(model, messages)}
    if context.system_prompt:
        payload["systemInstruction"] = {"parts": [{"text": context.system_prompt}]}
    if context.tools:
        payload["tools"] = convert_tools(context.tools)
    config: dict[str, Any] = {}
    thinking, max_tokens = thinking_config(model, options)
    if max_tokens is not None:
        config["maxOutputTokens"] = max_tokens
    if options.temperature is not None:
        config["temperature"] = options.temperature
    if thinking is not None:
        config["thinkingConfig"] = thinking
    if config:
        payload["generationConfig"] = config
    return payload


# --- response ------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Block:
    """The open text or thinking block that new text parts of the same kind extend."""

    kind: Literal["text", "thinking"]
    index: int
    signature: str | None = None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


class GeminiStreamParser:
    """Turns ``GenerateContentResponse`` payloads (parsed JSON dicts) into the reply's events.

    Pure: no I/O. ``feed`` each payload in order, then ``finish`` at end of stream, which decides
    the stop reason from the last ``finishReason`` (and fails a stream that never sent one).
    """

    def __init__(self, builder: MessageBuilder) -> None:
        self.builder = builder
        self._block: _Block | None = None
        self._call_ids: set[str] = set()
        self._finish_reason: str | None = None
        self._finish_message: str | None = None

    @property
    def finished(self) -> bool:
        return self.builder.finished

    def feed(self, chunk: Mapping[str, Any]) -> None:
        if self.finished:
            return
        error = chunk.get("error")
        if error is not None:
            self._fail_with(_mapping(error) or {"message": str(error)})
            return
        response_id = chunk.get("responseId")
        if isinstance(response_id, str) and response_id and self.builder.response_id is None:
            self.builder.response_id = response_id
        candidates = chunk.get("candidates")
        candidate = _mapping(candidates[0]) if isinstance(candidates, list) and candidates else {}
        parts = _mapping(candidate.get("content")).get("parts")
        if isinstance(parts, list):
            for part in parts:
                self._on_part(_mapping(part))
        reason = candidate.get("finishReason")
        if isinstance(reason, str) and reason:
            self._finish_reason = reason
            message = candidate.get("finishMessage")
            self._finish_message = message if isinstance(message, str) else None
        usage = chunk.get("usageMetadata")
        if isinstance(usage, Mapping):
            self._set_usage(usage)
        blocked = _mapping(chunk.get("promptFeedback")).get("blockReason")
        if blocked and not candidate:
            self._close_block()
            self.builder.fail(f"Gemini blocked the prompt ({blocked})")

    def finish(self) -> None:
        """End of stream: map the last ``finishReason`` to the stop reason."""
        if self.finished:
            return
        self._close_block()
        reason = self._finish_reason
        if reason is None:
            self.builder.fail("The Gemini stream ended without a finishReason (truncated)")
        elif reason == "STOP":
            self.builder.done("toolUse" if self._call_ids else "stop")
        elif reason == "MAX_TOKENS":
            self.builder.done("length")
        else:
            detail = f": {self._finish_message}" if self._finish_message else ""
            self._fail(f"Gemini stopped with finishReason {reason}{detail}")

    # --- parts -----------------------------------------------------------------------------------

    def _on_part(self, part: Mapping[str, Any]) -> None:
        signature = part.get("thoughtSignature")
        signature = signature if isinstance(signature, str) and signature else None
        text = part.get("text")
        if isinstance(text, str):
            self._on_text(text, "thinking" if part.get("thought") is True else "text", signature)
        call = part.get("functionCall")
        if isinstance(call, Mapping):
            self._on_call(call, signature)

    def _on_text(self, text: str, kind: Literal["text", "thinking"], signature: str | None) -> None:
        block = self._block
        if block is None or block.kind != kind:
            if not text and signature is None:
                return  # an empty part opens nothing
            self._close_block()
            index = self.builder.text_start() if kind == "text" else self.builder.thinking_start()
            block = self._block = _Block(kind, index)
        if signature is not None:
            block.signature = signature  # later parts of a block may omit it: keep the last one
        if text:
            if kind == "text":
                self.builder.text_delta(block.index, text)
            else:
                self.builder.thinking_delta(block.index, text)

    def _on_call(self, call: Mapping[str, Any], signature: str | None) -> None:
        self._close_block()
        name = call.get("name")
        name = name if isinstance(name, str) else ""
        arguments = call.get("args")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ProviderError(
                f"Gemini sent functionCall args that are not an object: {arguments!r}"
            )
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id or call_id in self._call_ids:
            call_id = f"call_{secrets.token_hex(8)}"
        self._call_ids.add(call_id)
        index = self.builder.toolcall_start(call_id, name)
        self.builder.open_block(index).signature = signature
        self.builder.toolcall_delta(index, json.dumps(arguments, ensure_ascii=False))
        self.builder.toolcall_end(index, arguments)

    def _close_block(self) -> None:
        block, self._block = self._block, None
        if block is None:
            return
        if block.kind == "text":
            self.builder.text_end(block.index, block.signature)
        else:
            self.builder.thinking_end(block.index, block.signature)

    # --- usage and errors ------------------------------------------------------------------------

    def _set_usage(self, usage: Mapping[str, Any]) -> None:
        cached = _int(usage.get("cachedContentTokenCount"))
        # The results of tools Gemini ran itself (search, code execution) are input too:
        # totalTokenCount counts them.
        prompt = _int(usage.get("promptTokenCount")) + _int(usage.get("toolUsePromptTokenCount"))
        self.builder.set_usage(
            input=max(0, prompt - cached),
            output=_int(usage.get("candidatesTokenCount")) + _int(usage.get("thoughtsTokenCount")),
            cache_read=cached,
        )

    def _fail_with(self, error: Mapping[str, Any]) -> None:
        self._close_block()
        message = error.get("message") or json.dumps(dict(error))
        status = error.get("status") or error.get("code")
        self._fail(f"{message} ({status})" if status else str(message))

    def _fail(self, message: str) -> None:
        self.builder.fail(message)  # scrubbed of the request's credentials there


# --- entry point ---------------------------------------------------------------------------------


def stream(model: Model, context: Context, options: StreamOptions) -> AssistantMessageEventStream:
    """Stream one reply of a Gemini model. Never raises."""

    async def body(builder: MessageBuilder) -> None:
        api_key = resolve_api_key(model, options)
        payload = build_payload(model, context, options)
        headers = {"x-goog-api-key": api_key} if api_key else {}
        url = stream_url(model)
        parser = GeminiStreamParser(builder)
        async with open_sse(model, options, url, headers, payload, api_key=api_key) as events:
            builder.start()
            try:
                async for sse in events:
                    data = sse.data.strip()
                    if not data:
                        continue
                    try:
                        chunk = loads_json(data)
                    except ValueError:
                        raise ProviderError(f"Malformed event from Gemini: {data[:200]}") from None
                    if not isinstance(chunk, dict):
                        raise ProviderError("Malformed event from Gemini: not a JSON object")
                    parser.feed(chunk)
                    if parser.finished:
                        return
            except httpx.TransportError as exc:
                raise ProviderError(
                    f"The connection broke mid-stream: {exc or type(exc).__name__}"
                ) from None
        parser.finish()

    return produce_stream(model, options, body)
