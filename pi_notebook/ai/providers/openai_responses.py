"""The OpenAI Responses API (``api="openai-responses"``): ``POST {base_url}/responses``.

The request replays the conversation as Responses input items: user messages, assistant text as
``message`` items carrying their original item id (kept in ``text_signature``), reasoning items
verbatim with their ``encrypted_content`` (kept whole, as JSON, in ``thinking_signature``), tool
calls as ``function_call`` items (our tool-call id is ``"<call_id>|<item id>"``) and tool results as
``function_call_output`` items, whose output may hold images. Nothing is stored server-side
(``store: false``).

The reply is read by ``ResponsesStreamParser``, a state machine over the parsed event dicts that
writes through a ``MessageBuilder``. Deltas are keyed by ``item_id`` / ``output_index`` when the
server sends them and fall back to the latest open item otherwise: llama.cpp's ``/v1/responses``
sends neither ``output_index`` nor ``sequence_number``, keys function-call deltas by ``call_id``,
and emits every ``output_item.done`` at the very end, so several items are open at once.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import httpx

from ..builder import MessageBuilder, loads_json, parse_tool_arguments
from ..event_stream import AssistantMessageEventStream
from ..http import ProviderError, open_sse, resolve_api_key
from ..models import clamp_thinking_level
from ..options import StreamOptions
from ..producer import produce_stream
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
    "ResponsesStreamParser",
    "build_payload",
    "convert_messages",
    "convert_tools",
    "decode_text_signature",
    "encode_text_signature",
    "reasoning_effort",
    "responses_url",
    "stream",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_MAX_ITEM_ID = 64
_INVALID_ID_CHARS = re.compile(r"[^A-Za-z0-9_-]")

Item = dict[str, Any]


# --- request -------------------------------------------------------------------------------------


def responses_url(model: Model) -> str:
    """``{base_url}/responses``; the base URL ends in ``/v1`` (``https://api.openai.com/v1``)."""
    return (model.base_url or DEFAULT_BASE_URL).rstrip("/") + "/responses"


def encode_text_signature(item_id: str, phase: str | None = None) -> str:
    """The ``text_signature`` of a text block from message item ``item_id`` (pi's v1 JSON form)."""
    payload: dict[str, Any] = {"v": 1, "id": item_id}
    if phase:
        payload["phase"] = phase
    return json.dumps(payload, separators=(",", ":"))


def decode_text_signature(signature: str | None) -> tuple[str | None, str | None]:
    """``(item_id, phase)`` from a ``text_signature``: pi's v1 JSON form or a bare item id."""
    if not signature:
        return None, None
    if signature.startswith("{"):
        try:
            data = json.loads(signature)
        except ValueError:
            data = None
        if isinstance(data, dict) and data.get("v") == 1 and isinstance(data.get("id"), str):
            phase = data.get("phase")
            return data["id"], phase if phase in ("commentary", "final_answer") else None
    return signature, None


def reasoning_effort(model: Model, options: StreamOptions) -> str | None:
    """The ``reasoning.effort`` to request, or ``None`` to send no reasoning settings.

    ``options.reasoning`` is clamped to the levels the model supports and mapped through
    ``model.thinking_level_map``; with no level, a mapped ``off`` value (``"none"`` on models that
    can switch reasoning off) is sent so that "off" really means off.
    """
    if not model.reasoning:
        return None
    mapping = model.thinking_level_map or {}
    if options.reasoning is None:
        return mapping.get("off")
    level = clamp_thinking_level(model, options.reasoning)
    if level == "off":
        return mapping.get("off")
    return mapping.get(level) or level


def _image_part(image: ImageContent) -> Item:
    return {
        "type": "input_image",
        "detail": "auto",
        "image_url": f"data:{image.mime_type};base64,{image.data}",
    }


def _user_item(message: UserMessage) -> Item | None:
    if isinstance(message.content, str):
        return {"role": "user", "content": [{"type": "input_text", "text": message.content}]}
    parts: list[Item] = []
    for block in message.content:
        if isinstance(block, TextContent):
            parts.append({"type": "input_text", "text": block.text})
        else:
            parts.append(_image_part(block))
    return {"role": "user", "content": parts} if parts else None


def _message_item_id(signature: str | None, ordinal: int) -> tuple[str, str | None]:
    item_id, phase = decode_text_signature(signature)
    if item_id is None:
        return f"msg_{ordinal}", None
    if len(item_id) > _MAX_ITEM_ID:
        return "msg_" + hashlib.sha256(item_id.encode()).hexdigest()[:32], phase
    return item_id, phase


def _reasoning_item(signature: str | None) -> Item | None:
    """The reasoning item stored in a thinking signature, or ``None`` if it holds none."""
    if not signature or not signature.startswith("{"):
        return None
    try:
        item = json.loads(signature)
    except ValueError:
        return None
    return item if isinstance(item, dict) and item.get("type") == "reasoning" else None


def _assistant_items(model: Model, message: AssistantMessage, ordinal: int) -> list[Item]:
    same_model = is_same_model(message, model)
    items: list[Item] = []
    reasoning_missing = False
    for block in message.content:
        if isinstance(block, ThinkingContent):
            reasoning = _reasoning_item(block.thinking_signature) if same_model else None
            if reasoning is None:
                reasoning_missing = True
            else:
                items.append(reasoning)
        elif isinstance(block, TextContent):
            item_id, phase = _message_item_id(block.text_signature if same_model else None, ordinal)
            item: Item = {
                "type": "message",
                "role": "assistant",
                "id": item_id,
                "status": "completed",
                "content": [{"type": "output_text", "text": block.text, "annotations": []}],
            }
            if phase:
                item["phase"] = phase
            items.append(item)
        elif isinstance(block, ToolCall):
            call_id, _, item_id = block.id.partition("|")
            call: Item = {
                "type": "function_call",
                "call_id": call_id,
                "name": block.name,
                "arguments": json.dumps(block.arguments, ensure_ascii=False),
            }
            # OpenAI pairs fc_ items with the reasoning item before them: send the item id only
            # when that reasoning is replayed too.
            if item_id and same_model and not reasoning_missing:
                call["id"] = item_id
            items.append(call)
    return items


def _tool_output_item(message: ToolResultMessage) -> Item:
    call_id = message.tool_call_id.partition("|")[0]
    text = "\n".join(b.text for b in message.content if isinstance(b, TextContent))
    images = [b for b in message.content if isinstance(b, ImageContent)]
    output: str | list[Item] = text
    if images:
        parts: list[Item] = [{"type": "input_text", "text": text}] if text else []
        output = parts + [_image_part(image) for image in images]
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def convert_messages(model: Model, messages: Sequence[Message]) -> list[Item]:
    """Responses ``input`` items for ``messages`` (already transformed for replay)."""
    items: list[Item] = []
    for ordinal, message in enumerate(messages):
        if isinstance(message, UserMessage):
            user = _user_item(message)
            if user is not None:
                items.append(user)
        elif isinstance(message, AssistantMessage):
            items.extend(_assistant_items(model, message, ordinal))
        elif isinstance(message, ToolResultMessage):
            items.append(_tool_output_item(message))
    return items


def convert_tools(tools: Sequence[Tool]) -> list[Item]:
    """Flat Responses function tools (not the nested Chat Completions shape)."""
    return [
        {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
            "strict": False,
        }
        for tool in tools
    ]


def _normalize_call_id(tool_call_id: str) -> str:
    """Another provider's tool-call id as a valid ``call_id`` (``[A-Za-z0-9_-]``, ≤ 64 chars)."""
    call_id, sep, item_id = tool_call_id.partition("|")
    return _INVALID_ID_CHARS.sub("_", call_id)[:_MAX_ITEM_ID] + sep + item_id


def build_payload(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """The JSON body of ``POST /responses``."""
    messages = transform_messages(context.messages, model, _normalize_call_id)
    payload: dict[str, Any] = {
        "model": model.id,
        "input": convert_messages(model, messages),
        "stream": True,
        "store": False,
    }
    if context.system_prompt:
        payload["instructions"] = context.system_prompt
    if options.max_tokens is not None:
        payload["max_output_tokens"] = options.max_tokens
    if options.temperature is not None:
        payload["temperature"] = options.temperature
    if context.tools:
        payload["tools"] = convert_tools(context.tools)
    if options.session_id:
        payload["prompt_cache_key"] = options.session_id
    if model.reasoning:
        # Reasoning items can only be replayed (store=false) with their encrypted content.
        payload["include"] = ["reasoning.encrypted_content"]
        effort = reasoning_effort(model, options)
        if effort is not None:
            payload["reasoning"] = {"effort": effort, "summary": "auto"}
    return payload


# --- response ------------------------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class _OpenItem:
    """One output item whose content block is still open."""

    kind: Literal["message", "function_call", "reasoning"]
    index: int
    """Its content index in the reply."""
    summary_parts: int = 0
    arguments: str | None = None
    """Complete argument text from ``function_call_arguments.done``."""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _message_text(item: Mapping[str, Any]) -> str | None:
    content = item.get("content")
    if not isinstance(content, list):
        return None
    parts = [_mapping(p) for p in content]
    return "".join(_text(p.get("text")) or _text(p.get("refusal")) for p in parts)


def _reasoning_text(item: Mapping[str, Any]) -> str | None:
    for key in ("summary", "content"):
        parts = item.get(key)
        if isinstance(parts, list) and parts:
            return "\n\n".join(_text(_mapping(p).get("text")) for p in parts)
    return None


def _error_text(error: Mapping[str, Any], fallback: str) -> str:
    message = _text(error.get("message")) or fallback
    code = error.get("code") or error.get("type")
    return f"{message} ({code})" if code else message


class ResponsesStreamParser:
    """Turns Responses stream events (parsed JSON dicts) into the reply's events.

    Pure: no I/O. ``feed`` each event in order, then ``finish`` at end of stream. After a
    terminal event (``response.completed`` / ``incomplete`` / ``failed`` or ``error``)
    ``finished`` is true and later events are ignored.
    """

    def __init__(self, builder: MessageBuilder) -> None:
        self.builder = builder
        self._by_key: dict[Any, _OpenItem] = {}
        self._open: list[_OpenItem] = []
        self._closed: set[str] = set()
        self._seen_items = False
        self._has_tool_calls = False

    @property
    def finished(self) -> bool:
        return self.builder.finished

    # --- driving ---------------------------------------------------------------------------------

    def feed(self, event: Mapping[str, Any]) -> None:
        if self.finished:
            return
        kind = event.get("type")
        if kind is None and "error" in event:
            kind = "error"  # a bare {"error": {...}} payload, as compatible servers send
        handler = self._handlers.get(kind) if isinstance(kind, str) else None
        if handler is not None:
            handler(self, event)

    def finish(self) -> None:
        """End of stream: without a terminal event the reply is truncated, an error."""
        if not self.finished:
            self._fail("The response stream ended before response.completed (truncated)")

    # --- item bookkeeping ------------------------------------------------------------------------

    def _register(self, item: _OpenItem, event: Mapping[str, Any], data: Mapping[str, Any]) -> None:
        self._seen_items = True
        self._open.append(item)
        for key in (data.get("id"), data.get("call_id")):
            if isinstance(key, str) and key:
                self._by_key[key] = item
        index = event.get("output_index")
        if isinstance(index, int):
            self._by_key[index] = item

    def _find(
        self, event: Mapping[str, Any], data: Mapping[str, Any] | None = None
    ) -> _OpenItem | None:
        """The open item an event is about, by item id / call id / output index. Only an event
        that carries none of these (llama.cpp's slim events may not) means the latest open item."""
        keys = [event.get("item_id"), event.get("output_index")]
        if data is not None:
            keys[:0] = [data.get("id"), data.get("call_id")]
        keys = [k for k in keys if k is not None and k != ""]
        if not keys:
            return self._open[-1] if self._open else None
        for key in keys:
            found = self._by_key.get(key)
            if found is not None:
                return found
        return None

    def _close(self, item: _OpenItem) -> None:
        self._open.remove(item)
        for key in [k for k, v in self._by_key.items() if v is item]:
            del self._by_key[key]
            if isinstance(key, str):
                self._closed.add(key)

    def _streamed(self, item: _OpenItem) -> str:
        return "".join(self.builder.open_block(item.index).chunks)

    # --- opening ---------------------------------------------------------------------------------

    def _open_item(self, event: Mapping[str, Any], data: Mapping[str, Any]) -> _OpenItem | None:
        kind = data.get("type")
        if kind == "message":
            item = _OpenItem("message", self.builder.text_start())
        elif kind == "reasoning":
            item = _OpenItem("reasoning", self.builder.thinking_start())
        elif kind == "function_call":
            call_id = _text(data.get("call_id")) or _text(data.get("id"))
            item_id = _text(data.get("id"))
            tool_id = f"{call_id}|{item_id}" if item_id and item_id != call_id else call_id
            index = self.builder.toolcall_start(tool_id, _text(data.get("name")))
            item = _OpenItem("function_call", index)
            self._has_tool_calls = True
            initial = _text(data.get("arguments"))
            if initial:
                self.builder.toolcall_delta(index, initial)
        else:
            return None  # built-in tool calls and other item types are not part of the reply
        self._register(item, event, data)
        return item

    def _on_item_added(self, event: Mapping[str, Any]) -> None:
        self._open_item(event, _mapping(event.get("item")))

    def _delta_target(
        self, event: Mapping[str, Any], kind: Literal["message", "reasoning"]
    ) -> _OpenItem:
        item = self._find(event)
        if item is None or item.kind != kind:
            # A delta without its output_item.added: open the item implicitly.
            data = {"type": kind, "id": event.get("item_id")}
            opened = self._open_item(event, data)
            assert opened is not None
            item = opened
        return item

    # --- deltas ----------------------------------------------------------------------------------

    def _on_text_delta(self, event: Mapping[str, Any]) -> None:
        delta = _text(event.get("delta"))
        if delta:
            self.builder.text_delta(self._delta_target(event, "message").index, delta)

    def _on_reasoning_delta(self, event: Mapping[str, Any]) -> None:
        delta = _text(event.get("delta"))
        if delta:
            self.builder.thinking_delta(self._delta_target(event, "reasoning").index, delta)

    def _on_summary_part(self, event: Mapping[str, Any]) -> None:
        item = self._delta_target(event, "reasoning")
        if item.summary_parts > 0:
            self.builder.thinking_delta(item.index, "\n\n")
        item.summary_parts += 1

    def _on_arguments_delta(self, event: Mapping[str, Any]) -> None:
        item = self._find(event)
        delta = _text(event.get("delta"))
        if item is not None and item.kind == "function_call" and delta:
            self.builder.toolcall_delta(item.index, delta)

    def _on_arguments_done(self, event: Mapping[str, Any]) -> None:
        item = self._find(event)
        arguments = event.get("arguments")
        if item is not None and item.kind == "function_call" and isinstance(arguments, str):
            item.arguments = arguments

    # --- closing ---------------------------------------------------------------------------------

    def _complete_text(
        self, item: _OpenItem, final: str | None, delta: Callable[[int, str], None]
    ) -> None:
        """Stream whatever the authoritative ``final`` text adds to what was streamed (a server
        may send the text only in the final item)."""
        if final is None:
            return
        streamed = self._streamed(item)
        if final != streamed and final.startswith(streamed):
            delta(item.index, final[len(streamed) :])

    def _finalise(self, item: _OpenItem, data: Mapping[str, Any] | None) -> None:
        """Close ``item``'s block; ``data`` is the authoritative final item when there is one."""
        self._close(item)
        builder = self.builder
        if item.kind == "message":
            signature = None
            if data is not None:
                self._complete_text(item, _message_text(data), builder.text_delta)
                item_id = _text(data.get("id"))
                phase = data.get("phase")
                if item_id:
                    signature = encode_text_signature(
                        item_id, phase if isinstance(phase, str) else None
                    )
            builder.text_end(item.index, signature)
        elif item.kind == "reasoning":
            signature = None
            if data is not None:
                self._complete_text(item, _reasoning_text(data), builder.thinking_delta)
                signature = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
            builder.thinking_end(item.index, signature)
        else:
            final = _text(data.get("arguments")) if data is not None else ""
            self._end_call(item, final or item.arguments)

    def _end_call(self, item: _OpenItem, final: str | None) -> None:
        """Close a function call; complete argument text from the server replaces the streamed
        text (when it parses; otherwise the streamed text and its parse error are kept)."""
        streamed = self._streamed(item)
        if final is None or final == streamed:
            self.builder.toolcall_end(item.index)
        elif final.startswith(streamed):
            self.builder.toolcall_delta(item.index, final[len(streamed) :])
            self.builder.toolcall_end(item.index)
        else:
            arguments, error = parse_tool_arguments(final)
            self.builder.toolcall_end(item.index, None if error else arguments)

    def _on_item_done(self, event: Mapping[str, Any]) -> None:
        data = _mapping(event.get("item"))
        item = self._find(event, data)
        if item is None or item.kind != data.get("type"):
            if data.get("id") in self._closed or data.get("call_id") in self._closed:
                return  # a repeated output_item.done
            item = self._open_item(event, data)
            if item is None:
                return
        self._finalise(item, data)

    def _close_all(self) -> None:
        for item in list(self._open):
            self._finalise(item, None)

    # --- terminal events -------------------------------------------------------------------------

    def _on_created(self, event: Mapping[str, Any]) -> None:
        response_id = _mapping(event.get("response")).get("id")
        if isinstance(response_id, str) and response_id:
            self.builder.response_id = response_id
        self.builder.start()

    def _set_usage(self, response: Mapping[str, Any]) -> None:
        usage = response.get("usage")
        if not isinstance(usage, Mapping):
            return
        cached = _int(_mapping(usage.get("input_tokens_details")).get("cached_tokens"))
        self.builder.set_usage(
            input=max(0, _int(usage.get("input_tokens")) - cached),
            output=_int(usage.get("output_tokens")),
            cache_read=cached,
        )

    def _on_terminal(self, event: Mapping[str, Any]) -> None:
        response = _mapping(event.get("response"))
        self._on_created(event)
        self._set_usage(response)
        if not self._seen_items:
            # A server that sends only the final response: take its output items.
            for data in response.get("output") or []:
                self._on_item_done({"item": data})
        self._close_all()
        status = response.get("status")
        kind = event.get("type")
        if status == "failed" or status == "cancelled" or kind == "response.failed":
            error = _mapping(response.get("error"))
            fallback = (
                "The response was cancelled" if status == "cancelled" else "The response failed"
            )
            self._fail(_error_text(error, fallback))
        elif status == "incomplete" or kind == "response.incomplete":
            reason = _text(_mapping(response.get("incomplete_details")).get("reason"))
            if reason == "content_filter":
                self._fail("The response was stopped by the content filter (content_filter)")
            else:
                self.builder.done("length")
        else:
            self.builder.done("toolUse" if self._has_tool_calls else "stop")

    def _on_error(self, event: Mapping[str, Any]) -> None:
        error = event.get("error")
        self._fail(_error_text(_mapping(error) if isinstance(error, Mapping) else event, "error"))

    def _fail(self, message: str) -> None:
        self.builder.fail(message)  # scrubbed of the request's credentials there

    _handlers: ClassVar[dict[str, Callable[[ResponsesStreamParser, Mapping[str, Any]], None]]] = {
        "response.created": _on_created,
        "response.in_progress": _on_created,
        "response.queued": _on_created,
        "response.output_item.added": _on_item_added,
        "response.output_item.done": _on_item_done,
        "response.output_text.delta": _on_text_delta,
        "response.refusal.delta": _on_text_delta,
        "response.reasoning_summary_part.added": _on_summary_part,
        "response.reasoning_summary_text.delta": _on_reasoning_delta,
        "response.reasoning_text.delta": _on_reasoning_delta,
        "response.function_call_arguments.delta": _on_arguments_delta,
        "response.function_call_arguments.done": _on_arguments_done,
        "response.completed": _on_terminal,
        "response.incomplete": _on_terminal,
        "response.failed": _on_terminal,
        "error": _on_error,
    }


# --- entry point ---------------------------------------------------------------------------------


def stream(model: Model, context: Context, options: StreamOptions) -> AssistantMessageEventStream:
    """Stream one reply of ``model`` from an OpenAI Responses endpoint. Never raises."""

    async def body(builder: MessageBuilder) -> None:
        api_key = resolve_api_key(model, options)
        payload = build_payload(model, context, options)
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        url = responses_url(model)
        parser = ResponsesStreamParser(builder)
        async with open_sse(model, options, url, headers, payload, api_key=api_key) as events:
            builder.start()
            try:
                async for sse in events:
                    data = sse.data.strip()
                    if not data:
                        continue
                    if data == "[DONE]":
                        break
                    try:
                        event = loads_json(data)
                    except ValueError:
                        raise ProviderError(f"Malformed event from {url}: {data[:200]}") from None
                    if not isinstance(event, dict):
                        raise ProviderError(f"Malformed event from {url}: not a JSON object")
                    if "type" not in event and sse.event != "message":
                        event["type"] = sse.event
                    parser.feed(event)
                    if parser.finished:
                        return
            except httpx.TransportError as exc:
                raise ProviderError(
                    f"The connection broke mid-stream: {exc or type(exc).__name__}"
                ) from None
        parser.finish()

    return produce_stream(model, options, body)
