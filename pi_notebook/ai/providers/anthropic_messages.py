"""The ``anthropic-messages`` provider: Anthropic's Messages API (and compatible servers such as
llama.cpp's ``/v1/messages``), streamed over SSE.

``stream()`` builds the request (``anthropic_request``), posts it through the shared HTTP layer and
feeds every SSE event to ``AnthropicStreamParser``, a pure state machine that writes the reply
through a ``MessageBuilder``. The parser dispatches on the JSON ``type`` of each event, maps
Anthropic's block indices to our content indices (skipping block types we do not model), keeps
usage cumulative-by-overwrite, and owns every terminal transition: ``message_stop`` → ``done``,
an ``error`` event or a refusal → ``error``, end of input before ``message_stop`` → ``error``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import httpx

from ..builder import MessageBuilder, loads_json
from ..event_stream import AssistantMessageEventStream
from ..http import open_sse, resolve_api_key, stream_error
from ..options import StreamOptions
from ..producer import produce_stream
from ..transform import transform_messages
from ..types import Context, Model
from .anthropic_request import (
    build_payload,
    messages_url,
    normalize_tool_call_id,
    request_headers,
)

__all__ = ["AnthropicStreamParser", "map_stop_reason", "stream"]

_DONE_REASONS: dict[str, Literal["stop", "length", "toolUse"]] = {
    "end_turn": "stop",
    "pause_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "toolUse",
}

_USAGE_FIELDS = (
    ("input", "input_tokens"),
    ("output", "output_tokens"),
    ("cache_read", "cache_read_input_tokens"),
    ("cache_write", "cache_creation_input_tokens"),
)


def map_stop_reason(
    reason: str, model_id: str = "the model"
) -> tuple[Literal["stop", "length", "toolUse"] | None, str | None]:
    """``(our stop reason, None)`` for a normal end, ``(None, error message)`` otherwise."""
    mapped = _DONE_REASONS.get(reason)
    if mapped is not None:
        return mapped, None
    if reason == "refusal":
        return None, "The model refused to answer (stop_reason: refusal)"
    if reason == "sensitive":
        return None, "The response was stopped by the provider's safety filters (sensitive)"
    if reason == "model_context_window_exceeded":
        return None, (
            f"The conversation exceeds the context window of {model_id}; the answer was cut off "
            "(stop_reason: model_context_window_exceeded)"
        )
    return None, f"Unknown stop reason from the provider: {reason!r}"


def _str(value: Any, what: str) -> str:
    """``value`` if it is a string; a malformed event otherwise (``feed`` turns it into an error
    event: a number or an object here would break the reply's text later, where nothing can
    report it)."""
    if isinstance(value, str):
        return value
    raise TypeError(f"{what} is {type(value).__name__}, not a string")


def _opt_str(value: Any, what: str) -> str:
    return "" if value is None else _str(value, what)


class _Block:
    """One Anthropic content block we model: its kind, our content index, and scratch state."""

    __slots__ = ("content_index", "has_deltas", "initial_input", "kind", "signature")

    def __init__(
        self,
        kind: Literal["text", "thinking", "toolCall"],
        content_index: int,
        initial_input: dict[str, Any] | None = None,
    ) -> None:
        self.kind = kind
        self.content_index = content_index
        self.signature: list[str] = []
        self.has_deltas = False
        self.initial_input = initial_input


class AnthropicStreamParser:
    """Feeds parsed Anthropic stream events (dicts) into a ``MessageBuilder``.

    No I/O: call ``feed(event)`` per event and ``finish()`` at the end of the input. Once the
    builder has finished (``finished``), further events are ignored.
    """

    def __init__(self, builder: MessageBuilder) -> None:
        self._builder = builder
        self._blocks: dict[int, _Block] = {}
        self._usage = dict.fromkeys(("input", "output", "cache_read", "cache_write"), 0)
        self._stop_reason: str | None = None

    @property
    def finished(self) -> bool:
        return self._builder.finished

    def feed(self, event: Mapping[str, Any]) -> None:
        """Apply one event. A malformed event ends the reply with an ``error``."""
        if self._builder.finished:
            return
        kind = event.get("type")
        try:
            self._dispatch(kind, event)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            self._builder.fail(f"Malformed {kind!r} event in the Anthropic stream: {exc!r}")

    def feed_data(self, data: str, event_name: str = "") -> None:
        """Apply one SSE ``data`` payload (JSON); ``event_name`` fills in a missing ``type``."""
        builder = self._builder
        if builder.finished or not data.strip():
            return
        try:
            event = loads_json(data)
        except ValueError:
            builder.fail(f"Invalid JSON in the Anthropic stream: {data[:200]!r}")
            return
        if type(event) is not dict:
            builder.fail(f"Unexpected event in the Anthropic stream: {data[:200]!r}")
            return
        if event.get("type") == "content_block_delta":
            # A text delta into an open text block, spelled out: one per streamed token, and the
            # general path's four calls are a noticeable share of a parsed event
            # (bench.stream_bench --instructions). Anything else (a bool index, no text) takes
            # that path.
            delta = event.get("delta")
            index = event.get("index")
            if type(delta) is dict and type(index) is int and delta.get("type") == "text_delta":
                block = self._blocks.get(index)
                text = delta.get("text")
                if block is not None and block.kind == "text" and type(text) is str:
                    if text:
                        builder.text_delta(block.content_index, text)
                    return
        if "type" not in event and event_name:
            event["type"] = event_name
        self.feed(event)

    def finish(self, detail: str | None = None) -> None:
        """End of input: a stream that stopped before ``message_stop`` was cut off."""
        if self._builder.finished:
            return
        reason = f": {detail}" if detail else ""
        self._builder.fail(
            f"The response stream ended before message_stop (truncated response){reason}"
        )

    # --- events ----------------------------------------------------------------------------------

    def _dispatch(self, kind: Any, event: Mapping[str, Any]) -> None:
        match kind:
            case "content_block_delta":
                self._block_delta(event["index"], event["delta"])
            case "content_block_start":
                self._block_start(event["index"], event["content_block"])
            case "content_block_stop":
                self._block_stop(event["index"])
            case "message_start":
                self._message_start(event.get("message") or {})
            case "message_delta":
                delta = event.get("delta") or {}
                if delta.get("stop_reason"):
                    self._stop_reason = _str(delta["stop_reason"], "message_delta stop_reason")
                self._update_usage(event.get("usage"))
            case "message_stop":
                self._message_stop()
            case "error":
                self._builder.fail(str(stream_error(event)))
            case _:
                pass  # ping, and event types added after this was written

    def _message_start(self, message: Mapping[str, Any]) -> None:
        builder = self._builder
        response_id = message.get("id")
        if isinstance(response_id, str) and response_id:
            builder.response_id = response_id
        response_model = message.get("model")
        if isinstance(response_model, str) and response_model != builder.model.id:
            builder.response_model = response_model
        self._update_usage(message.get("usage"))
        builder.start()
        # Some servers (and replays) send whole blocks and the stop reason up front.
        stop_reason = message.get("stop_reason")
        if stop_reason is not None:
            self._stop_reason = _str(stop_reason, "message_start stop_reason")
        content = message.get("content")
        if isinstance(content, list):
            for index, block in enumerate(content):
                if isinstance(block, Mapping):
                    self._block_start(index, block)
                    self._block_stop(index)

    def _update_usage(self, usage: Mapping[str, Any] | None) -> None:
        # Usage is cumulative: each report overwrites the counts it carries.
        if not usage:
            return
        for ours, theirs in _USAGE_FIELDS:
            value = usage.get(theirs)
            if isinstance(value, int):
                self._usage[ours] = value
        self._builder.set_usage(**self._usage)

    def _block_start(self, index: int, block: Mapping[str, Any]) -> None:
        builder = self._builder
        match block.get("type"):
            case "text":
                text = _opt_str(block.get("text"), "a text block's text")
                ours = _Block("text", builder.text_start())
                if text:
                    builder.text_delta(ours.content_index, text)
            case "thinking":
                text = _opt_str(block.get("thinking"), "a thinking block's thinking")
                signature = _opt_str(block.get("signature"), "a thinking block's signature")
                ours = _Block("thinking", builder.thinking_start())
                if text:
                    builder.thinking_delta(ours.content_index, text)
                if signature:
                    ours.signature.append(signature)
            case "redacted_thinking":
                builder.redacted_thinking(_opt_str(block.get("data"), "redacted_thinking data"))
                self._blocks.pop(index, None)
                return
            case "tool_use":
                initial = block.get("input")
                ours = _Block(
                    "toolCall",
                    builder.toolcall_start(
                        str(block.get("id") or ""), str(block.get("name") or "")
                    ),
                    initial if isinstance(initial, dict) and initial else None,
                )
            case _:
                # server_tool_use, web_search_tool_result, …: not part of our message model
                self._blocks.pop(index, None)
                return
        self._blocks[index] = ours

    def _block_delta(self, index: int, delta: Mapping[str, Any]) -> None:
        block = self._blocks.get(index)
        if block is None:
            return
        builder = self._builder
        match delta.get("type"):
            case "text_delta" if block.kind == "text":
                if text := _str(delta["text"], "text_delta text"):
                    builder.text_delta(block.content_index, text)
            case "thinking_delta" if block.kind == "thinking":
                if text := _str(delta["thinking"], "thinking_delta thinking"):
                    builder.thinking_delta(block.content_index, text)
            case "signature_delta" if block.kind == "thinking":
                block.signature.append(_str(delta["signature"], "signature_delta signature"))
            case "input_json_delta" if block.kind == "toolCall":
                if fragment := _str(delta["partial_json"], "input_json_delta partial_json"):
                    block.has_deltas = True
                    builder.toolcall_delta(block.content_index, fragment)
            case _:
                pass  # citations_delta and deltas that do not fit the block

    def _block_stop(self, index: int) -> None:
        block = self._blocks.pop(index, None)
        if block is None:
            return
        builder = self._builder
        if block.kind == "text":
            builder.text_end(block.content_index)
        elif block.kind == "thinking":
            builder.thinking_end(block.content_index, signature="".join(block.signature) or None)
        elif block.has_deltas:
            builder.toolcall_end(block.content_index)
        else:
            # No input_json_delta at all: a tool without arguments (or a server that sent the
            # whole input up front).
            builder.toolcall_end(block.content_index, arguments=block.initial_input or {})

    def _message_stop(self) -> None:
        for index in list(self._blocks):
            self._block_stop(index)
        reason, error = map_stop_reason(self._stop_reason or "end_turn", self._builder.model.id)
        if reason is not None:
            self._builder.done(reason)
        else:
            self._builder.fail(error or "The provider ended the reply with an error")


def stream(model: Model, context: Context, options: StreamOptions) -> AssistantMessageEventStream:
    """Stream one reply of an ``anthropic-messages`` model. Never raises."""
    return produce_stream(model, options, lambda builder: _produce(builder, context, options))


async def _produce(builder: MessageBuilder, context: Context, options: StreamOptions) -> None:
    model = builder.model
    api_key = resolve_api_key(model, options, always_required=True)
    messages = transform_messages(context.messages, model, normalize_tool_call_id)
    payload = build_payload(model, context, options, messages)
    headers = request_headers(api_key, thinking="thinking" in payload)
    parser = AnthropicStreamParser(builder)
    url = messages_url(model.base_url)
    async with open_sse(model, options, url, headers, payload, api_key=api_key) as events:
        try:
            async for sse in events:
                parser.feed_data(sse.data, sse.event)
                if builder.finished:
                    return
        except httpx.TransportError as exc:
            parser.finish(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
            return
    parser.finish()
