"""The ``openai-completions`` provider: OpenAI's Chat Completions API and every server that copies
it (llama.cpp, vLLM, Ollama, LM Studio, OpenRouter, Groq, DeepSeek, …), streamed over SSE.

``stream()`` builds the request (``openai_completions_request``), posts it through the shared HTTP
layer and feeds each SSE payload to ``CompletionsStreamParser``: a pure state machine over parsed
chunks that writes the reply through a ``MessageBuilder``. It is tolerant where servers differ:

- reasoning text under ``reasoning_content``, ``reasoning`` or ``reasoning_text`` (the first
  non-empty key of a chunk only: some servers send the same text twice);
- tool calls accumulated by ``index``; without ``index``, a new ``id`` opens a call and an id-less
  fragment continues the last one; a reused index with a new id is a new call; names may arrive
  late or split; several calls may share a chunk; arguments are raw JSON text split anywhere;
- ``content`` as a string, or as a list of text and thinking parts (Mistral);
- usage on a ``choices: []`` chunk, on every chunk, or under ``choices[0].usage``; reasoning
  tokens inside ``completion_tokens`` (OpenAI) or on top of them (xAI), told apart by the total;
- ``finish_reason`` is advice: tool calls present means tool use, whatever it says.

It is strict where success would be a lie: an ``{"error": …}`` payload after HTTP 200 and a stream
that ends without ``[DONE]`` and without a ``finish_reason`` both end the reply with an error that
keeps the partial content.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from contextlib import aclosing
from typing import Any, Literal

import httpx

from ..builder import MessageBuilder, loads_json
from ..event_stream import AssistantMessageEventStream
from ..http import ProviderError, open_sse, resolve_api_key, stream_error
from ..options import StreamOptions
from ..producer import produce_stream
from ..types import Context, Model
from .openai_completions_request import (
    REASONING_KEYS,
    build_payload,
    completions_url,
    resolve_compat,
)

__all__ = [
    "TRUNCATED_MESSAGE",
    "CompletionsStreamParser",
    "map_finish_reason",
    "output_tokens",
    "stream",
]

TRUNCATED_MESSAGE = "The stream ended unexpectedly (no finish_reason and no [DONE]): truncated"

_FINISH_REASONS: dict[str, Literal["stop", "length"]] = {
    "stop": "stop",
    "end": "stop",
    "eos": "stop",
    "stop_sequence": "stop",
    "end_turn": "stop",
    "tool_calls": "stop",
    "function_call": "stop",
    "length": "length",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
}
_ERROR_FINISH_REASONS = frozenset({"content_filter", "error"})


def map_finish_reason(
    finish_reason: str | None, has_tool_calls: bool
) -> tuple[Literal["stop", "length", "toolUse"] | None, str | None]:
    """``(stop reason, None)``, or ``(None, error message)`` for a reason that means failure.

    Tool calls decide tool use (servers say ``stop`` with calls, or ``tool_calls`` without any);
    unknown reasons are a normal stop."""
    if finish_reason in _ERROR_FINISH_REASONS:
        return None, f"Provider finish_reason: {finish_reason}"
    if has_tool_calls:
        return "toolUse", None
    return _FINISH_REASONS.get(finish_reason or "stop", "stop"), None


def _part_texts(value: Any) -> list[str]:
    """The non-empty texts of a part's nested content: a string, or a list of text parts."""
    if isinstance(value, str):
        return [value] if value else []
    if not isinstance(value, list):
        return []
    texts: list[str] = []
    for item in value:
        text = (
            item
            if isinstance(item, str)
            else item.get("text")
            if isinstance(item, Mapping)
            else None
        )
        if isinstance(text, str) and text:
            texts.append(text)
    return texts


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def output_tokens(usage: Mapping[str, Any]) -> int:
    """Output tokens, reasoning included. OpenAI's ``completion_tokens`` include the reasoning
    tokens; xAI's do not (``completion_tokens_details.reasoning_tokens`` come on top). The total
    tells them apart: it is prompt + completion + reasoning only when reasoning is extra."""
    completion = _count(usage.get("completion_tokens"))
    details = usage.get("completion_tokens_details")
    reasoning = _count(details.get("reasoning_tokens")) if isinstance(details, Mapping) else 0
    if reasoning:
        prompt = _count(usage.get("prompt_tokens"))
        total = _count(usage.get("total_tokens"))
        if total == prompt + completion + reasoning and total != prompt + completion:
            return completion + reasoning
    return completion


class _Call:
    """A tool call being accumulated: our content index and the id/name seen so far."""

    __slots__ = ("content_index", "id", "name")

    def __init__(self, content_index: int, id: str, name: str) -> None:
        self.content_index = content_index
        self.id = id
        self.name = name


class CompletionsStreamParser:
    """Turns Chat Completions chunks into builder calls. No I/O: fixtures drive it directly.

    Feed SSE payloads with ``feed_data`` (or parsed chunks with ``feed``), then call ``finish()``;
    errors (mid-stream error payloads, truncation, invalid JSON) are raised as ``ProviderError``
    after the partial content was written, so the caller's failure path keeps it.
    """

    def __init__(self, builder: MessageBuilder) -> None:
        self._builder = builder
        self._text: int | None = None
        self._thinking: int | None = None
        self._calls: list[_Call] = []
        self._by_index: dict[int, _Call] = {}
        self.finish_reason: str | None = None
        self.saw_done = False
        self._need_id = True
        """No chunk has given the response id yet."""
        self._served_by: Any = None
        """The last chunk's ``model``: only a change can change the reply's ``response_model``."""

    # --- input -----------------------------------------------------------------------------------

    def feed_data(self, data: str, event: str = "") -> bool:
        """One SSE payload. Returns True at ``[DONE]`` (stop reading there)."""
        stripped = data.strip()
        if stripped.startswith("[DONE]"):
            self.saw_done = True
            return True
        if not stripped:
            return False
        try:
            chunk = loads_json(stripped)
        except ValueError:
            if event == "error":
                raise stream_error({"message": stripped[:500]}) from None
            raise ProviderError(
                f"The provider sent invalid JSON in the stream: {stripped[:200]!r}"
            ) from None
        if type(chunk) is not dict:
            raise ProviderError(f"The provider sent a non-object chunk: {stripped[:200]!r}")
        if event == "error" and "error" not in chunk:
            chunk = {"error": chunk}
        self.feed(chunk)
        return False

    def feed(self, chunk: Mapping[str, Any]) -> None:
        """One parsed ``chat.completion.chunk`` (or an error payload)."""
        builder = self._builder
        if chunk.get("error"):
            raise stream_error(chunk)
        # Set before ``start``: the builder's snapshots read these when a partial is materialised.
        # The checks run when they can change something, not on every chunk.
        if self._need_id and isinstance(chunk.get("id"), str):
            builder.response_id = chunk["id"]
            self._need_id = False
        served_by = chunk.get("model")
        if served_by != self._served_by:
            self._served_by = served_by
            if builder.response_model is None and isinstance(served_by, str) and served_by:
                builder.response_model = served_by if served_by != builder.model.id else None
        if not builder.started:
            builder.start()
        # ``type(x) is dict`` first: parsed JSON is plain dicts, and an ABC isinstance check
        # costs a Python-level call (this runs once per streamed chunk).
        usage = chunk.get("usage")
        choices = chunk.get("choices")
        choice = (
            choices[0] if (type(choices) is list or isinstance(choices, list)) and choices else None
        )
        if type(choice) is dict or (choice is not None and isinstance(choice, Mapping)):
            delta = choice.get("delta")
            if type(delta) is dict and len(delta) == 1 and type(delta.get("content")) is str:
                # ``{"content": "…"}``, spelled out: nearly every chunk of a reply is one, and
                # ``_delta`` looks up five keys first (bench.stream_bench --instructions)
                if text := delta["content"]:
                    if self._text is None:
                        self._content(text)
                    else:
                        builder.text_delta(self._text, text)
            elif type(delta) is dict or (delta is not None and isinstance(delta, Mapping)):
                self._delta(delta)
            if usage is None or not isinstance(usage, Mapping):
                usage = choice.get("usage")
            reason = choice.get("finish_reason")
            if isinstance(reason, str) and reason:
                self.finish_reason = reason
        if type(usage) is dict or (usage is not None and isinstance(usage, Mapping)):
            self._usage(usage)

    # --- delta -----------------------------------------------------------------------------------

    def _delta(self, delta: Mapping[str, Any]) -> None:
        for key in REASONING_KEYS:
            value = delta.get(key)
            if isinstance(value, str) and value:
                self._reasoning(key, value)
                break
        for key in ("content", "refusal"):
            value = delta.get(key)
            if isinstance(value, str):
                if value:
                    self._content(value)
            elif isinstance(value, list):
                self._content_parts(value)
        fragments = delta.get("tool_calls")
        if isinstance(fragments, list):
            for fragment in fragments:
                if isinstance(fragment, Mapping):
                    self._tool_fragment(fragment)

    def _content_parts(self, parts: list[Any]) -> None:
        """``content`` as a list of parts (Mistral's reasoning models): ``{"type": "text",
        "text": …}`` and ``{"type": "thinking", "thinking": [{"type": "text", "text": …}, …]}``
        (or a plain string)."""
        for part in parts:
            if isinstance(part, str):
                if part:
                    self._content(part)
                continue
            if not isinstance(part, Mapping):
                continue
            kind = part.get("type")
            if kind == "thinking":
                for thought in _part_texts(part.get("thinking")):
                    self._reasoning(None, thought)
            elif kind == "text" or (kind is None and "text" in part):
                text = part.get("text")
                if isinstance(text, str) and text:
                    self._content(text)

    def _close_text_and_thinking(self) -> None:
        if self._text is not None:
            self._builder.text_end(self._text)
            self._text = None
        if self._thinking is not None:
            self._builder.thinking_end(self._thinking)
            self._thinking = None

    def _reasoning(self, key: str | None, text: str) -> None:
        if self._thinking is None:
            self._close_text_and_thinking()
            self._thinking = self._builder.thinking_start(signature=key)
        self._builder.thinking_delta(self._thinking, text)

    def _content(self, text: str) -> None:
        if self._text is None:
            self._close_text_and_thinking()
            self._text = self._builder.text_start()
        self._builder.text_delta(self._text, text)

    def _find_call(self, index: Any, call_id: str) -> _Call | None:
        if isinstance(index, int) and not isinstance(index, bool):
            call = self._by_index.get(index)
            if call is not None and call_id and call.id and call_id != call.id:
                return None  # all calls on one index, told apart by their ids
            return call
        if call_id:
            return next((c for c in reversed(self._calls) if c.id == call_id), None)
        return self._calls[-1] if self._calls else None

    def _tool_fragment(self, fragment: Mapping[str, Any]) -> None:
        index = fragment.get("index")
        raw_id = fragment.get("id")
        call_id = raw_id if isinstance(raw_id, str) else ""
        function = fragment.get("function")
        if not isinstance(function, Mapping):
            function = {}
        name = function.get("name")
        name = name if isinstance(name, str) else ""
        arguments = function.get("arguments")
        if isinstance(arguments, Mapping | list):
            arguments = json.dumps(arguments)  # a few servers send an object, not JSON text
        call = self._find_call(index, call_id)
        if call is None:
            self._close_text_and_thinking()
            content_index = self._builder.toolcall_start(call_id, name)
            call = _Call(content_index, call_id, name)
            self._calls.append(call)
            if isinstance(index, int) and not isinstance(index, bool):
                self._by_index[index] = call
        else:
            block = self._builder.open_block(call.content_index)
            if call_id and not call.id:
                call.id = block.id = call_id
            if name and name != call.name:
                # late (first seen now) or split across fragments
                call.name = block.name = call.name + name
        if isinstance(arguments, str) and arguments:
            self._builder.toolcall_delta(call.content_index, arguments)

    # --- usage -----------------------------------------------------------------------------------

    def _usage(self, usage: Mapping[str, Any]) -> None:
        details = usage.get("prompt_tokens_details")
        details = details if isinstance(details, Mapping) else {}
        cache_read = _count(details.get("cached_tokens"))
        cache_write = _count(details.get("cache_write_tokens"))
        prompt = _count(usage.get("prompt_tokens"))
        self._builder.set_usage(
            input=max(0, prompt - cache_read - cache_write),
            output=output_tokens(usage),
            cache_read=cache_read,
            cache_write=cache_write,
        )

    # --- end -------------------------------------------------------------------------------------

    def finish(self, detail: str | None = None) -> None:
        """The input ended (``detail`` says why, if the connection broke): emit the terminal
        event, or raise ``ProviderError`` when the stream was cut before its end."""
        builder = self._builder
        if self.finish_reason is None and not self.saw_done:
            message = TRUNCATED_MESSAGE + (f" ({detail})" if detail else "")
            raise ProviderError(message)
        for call in self._calls:
            if not call.id:
                call.id = f"call_{uuid.uuid4().hex[:24]}"
                builder.open_block(call.content_index).id = call.id
        reason, error = map_finish_reason(self.finish_reason, bool(self._calls))
        builder.start()
        if reason is None:
            builder.end_open_blocks()
            builder.fail(error or "The provider ended the reply with an error")
        else:
            builder.done(reason)


# --- entry point ---------------------------------------------------------------------------------


def stream(model: Model, context: Context, options: StreamOptions) -> AssistantMessageEventStream:
    """Stream one reply of an ``openai-completions`` model. Never raises."""
    return produce_stream(model, options, lambda builder: _produce(builder, context, options))


async def _produce(builder: MessageBuilder, context: Context, options: StreamOptions) -> None:
    model = builder.model
    api_key = resolve_api_key(model, options)
    compat = resolve_compat(model)
    payload = build_payload(model, context, options, compat)
    headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
    url = completions_url(model.base_url)
    parser = CompletionsStreamParser(builder)
    async with (
        open_sse(model, options, url, headers, payload, api_key=api_key) as events,
        aclosing(events),  # type: ignore[type-var]
    ):
        try:
            async for sse in events:
                if parser.feed_data(sse.data, sse.event):
                    break
        except httpx.TransportError as exc:
            parser.finish(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
            return
    parser.finish()
