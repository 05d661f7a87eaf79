"""The faux provider: a scripted, in-process model for tests and demos.

``register_faux_provider()`` registers a fresh API and returns a ``FauxProvider``. Queue replies
with ``set_responses`` / ``append_responses``; each model call consumes one step, either an
``AssistantMessage`` or a callable ``(context, options, state, model)`` returning one (or an
awaitable of one). Replies stream like a real provider: text in chunks of a few tokens, tool-call
arguments as JSON fragments, optionally paced at ``tokens_per_second`` in real time.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import random
import secrets
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from .builder import MessageBuilder
from .event_stream import AssistantMessageEventStream
from .models import register_model, unregister_model
from .options import ResponseInfo, StreamOptions
from .producer import describe_error, produce_stream
from .registry import register_api_provider, unregister_api_providers
from .types import (
    AssistantContent,
    AssistantMessage,
    Context,
    Model,
    ModelCost,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
)

__all__ = [
    "FauxProvider",
    "FauxState",
    "FauxStep",
    "faux_assistant_message",
    "faux_text",
    "faux_thinking",
    "faux_tool_call",
    "register_faux_provider",
]


@dataclass
class FauxState:
    """Shared with response factories: how many calls the provider has served."""

    call_count: int = 0


FauxFactory: TypeAlias = Callable[
    [Context, StreamOptions, FauxState, Model], AssistantMessage | Awaitable[AssistantMessage]
]
FauxStep: TypeAlias = AssistantMessage | FauxFactory


def _unique(prefix: str) -> str:
    return f"{prefix}:{int(time.time() * 1000)}:{secrets.token_hex(5)}"


def faux_text(text: str) -> TextContent:
    return TextContent(text=text)


def faux_thinking(text: str) -> ThinkingContent:
    return ThinkingContent(thinking=text)


def faux_tool_call(name: str, arguments: dict[str, Any], id: str | None = None) -> ToolCall:
    return ToolCall(id=id or _unique("tool"), name=name, arguments=arguments)


def faux_assistant_message(
    content: str | AssistantContent | Iterable[AssistantContent],
    stop_reason: StopReason | None = None,
    error_message: str | None = None,
    *,
    response_id: str | None = None,
    timestamp: int | None = None,
) -> AssistantMessage:
    """A scripted reply; ``stop_reason`` defaults to ``toolUse`` with tool calls, else ``stop``."""
    if isinstance(content, str):
        blocks: list[AssistantContent] = [TextContent(text=content)]
    elif isinstance(content, TextContent | ThinkingContent | ToolCall):
        blocks = [content]
    else:
        blocks = list(content)
    if stop_reason is None:
        stop_reason = "toolUse" if any(isinstance(b, ToolCall) for b in blocks) else "stop"
    extra: dict[str, Any] = {} if timestamp is None else {"timestamp": timestamp}
    return AssistantMessage(
        content=blocks,
        api="faux",
        provider="faux",
        model="faux-1",
        stop_reason=stop_reason,
        error_message=error_message,
        response_id=response_id,
        **extra,
    )


def _estimate_tokens(text: str) -> int:
    return (len(text) + 3) // 4


def _serialise_context(context: Context) -> str:
    parts: list[str] = []
    if context.system_prompt:
        parts.append(f"system: {context.system_prompt}")
    for message in context.messages:
        parts.append(f"{message.role}: {json.dumps(message.to_json_dict().get('content'))}")
    if context.tools:
        parts.append(json.dumps([t.to_json_dict() for t in context.tools]))
    return "\n".join(parts)


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class _Pacer:
    """Real-time pacing against a fixed schedule: a sleep that overruns is made up by the next
    chunks, so the achieved rate matches the requested one (sleeping per chunk drifts slow)."""

    def __init__(self) -> None:
        self._due = time.monotonic()

    async def wait(self, seconds: float) -> None:
        self._due += seconds
        await asyncio.sleep(max(0.0, self._due - time.monotonic()))


@dataclass
class FauxProvider:
    """Handle of one registered faux API. See the module docstring."""

    api: str
    provider: str
    models: list[Model]
    tokens_per_second: float | None = None
    token_size: tuple[int, int] = (3, 5)
    state: FauxState = field(default_factory=FauxState)
    _queue: deque[FauxStep] = field(default_factory=deque)
    _prompts: dict[str, str] = field(default_factory=dict)

    def get_model(self, model_id: str | None = None) -> Model:
        if model_id is None:
            return self.models[0]
        for model in self.models:
            if model.id == model_id:
                return model
        raise KeyError(f"faux provider has no model {model_id!r}")

    def set_responses(self, steps: Iterable[FauxStep]) -> None:
        self._queue = deque(steps)

    def append_responses(self, steps: Iterable[FauxStep]) -> None:
        self._queue.extend(steps)

    @property
    def pending_response_count(self) -> int:
        return len(self._queue)

    @property
    def call_count(self) -> int:
        return self.state.call_count

    def unregister(self) -> None:
        unregister_api_providers(self.api)
        for model in self.models:
            unregister_model(model.provider, model.id)

    # --- the stream function ---------------------------------------------------------------------

    def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream:
        return produce_stream(model, options, lambda b: self._produce(b, context, options))

    async def _produce(self, out: MessageBuilder, context: Context, options: StreamOptions) -> None:
        model = out.model
        self.state.call_count += 1
        if options.on_response is not None:
            result = options.on_response(ResponseInfo(status=200, headers={}), model)
            if inspect.isawaitable(result):
                await result
        if not self._queue:
            out.fail("No more faux responses queued")
            return
        step = self._queue.popleft()
        if isinstance(step, AssistantMessage):
            reply = step
        else:
            try:
                produced = step(context, options, self.state, model)
                reply = await produced if inspect.isawaitable(produced) else produced
            except Exception as exc:
                out.fail(describe_error(exc))
                return
        out.response_id = reply.response_id
        prompt = _serialise_context(context)
        pacer = _Pacer()
        await self._pace(0, pacer)
        out.start()
        output_chars = 0
        for block in reply.content:
            if isinstance(block, TextContent):
                index = out.text_start()
                for chunk in self._chunks(block.text):
                    await self._pace(len(chunk), pacer)
                    out.text_delta(index, chunk)
                output_chars += len(block.text)
                out.text_end(index, signature=block.text_signature)
            elif isinstance(block, ThinkingContent):
                index = out.thinking_start()
                for chunk in self._chunks(block.thinking):
                    await self._pace(len(chunk), pacer)
                    out.thinking_delta(index, chunk)
                output_chars += len(block.thinking)
                out.thinking_end(index, signature=block.thinking_signature)
            else:
                index = out.toolcall_start(block.id, block.name)
                raw = json.dumps(block.arguments)
                for chunk in self._chunks(raw):
                    await self._pace(len(chunk), pacer)
                    out.toolcall_delta(index, chunk)
                output_chars += len(raw)
                out.toolcall_end(index, arguments=block.arguments)
        self._set_usage(out, prompt, output_chars, options)
        reason = reply.stop_reason
        if reason == "error" or reason == "aborted":
            out.fail(reply.error_message or "Faux error", aborted=reason == "aborted")
        elif reason == "stop" or reason == "length" or reason == "toolUse":
            out.done(reason)
        else:
            out.fail(f"Faux provider cannot script a reply with stop reason {reason!r}")

    def _set_usage(
        self, out: MessageBuilder, prompt: str, output_chars: int, options: StreamOptions
    ) -> None:
        prompt_tokens = _estimate_tokens(prompt)
        uncached, cache_read, cache_write = prompt_tokens, 0, 0
        if options.session_id and options.cache_retention != "none":
            previous = self._prompts.get(options.session_id, "")
            cache_read = _estimate_tokens(prompt[: _common_prefix(previous, prompt)])
            cache_write = max(0, prompt_tokens - cache_read)
            uncached = 0  # every prompt token is read from or written to the simulated cache
            self._prompts[options.session_id] = prompt
        out.set_usage(
            input=uncached,
            output=(output_chars + 3) // 4,
            cache_read=cache_read,
            cache_write=cache_write,
        )

    def _chunks(self, text: str) -> Iterable[str]:
        i = 0
        while i < len(text):
            size = random.randint(*self.token_size) * 4
            yield text[i : i + size]
            i += size

    async def _pace(self, chars: int, clock: _Pacer | None = None) -> None:
        """One hand-off per chunk; with ``tokens_per_second``, wait until the chunk is due."""
        if clock is None or not self.tokens_per_second:
            await asyncio.sleep(0)
            return
        await clock.wait(max(chars, 4) / 4 / self.tokens_per_second)


def register_faux_provider(
    *,
    api: str | None = None,
    provider: str = "faux",
    models: Iterable[Model] | None = None,
    tokens_per_second: float | None = None,
    token_size: tuple[int, int] = (3, 5),
    responses: Iterable[FauxStep] = (),
) -> FauxProvider:
    """Register a new faux API and return its handle (``unregister()`` removes it)."""
    api = api or _unique("faux")
    if models is None:
        model_list = [
            Model(
                id="faux-1",
                name="Faux Model",
                api=api,
                provider=provider,
                base_url="",
                reasoning=True,
                input=["text", "image"],
                cost=ModelCost(),
                context_window=128_000,
                max_tokens=16_384,
            )
        ]
    else:
        model_list = [m.model_copy(update={"api": api, "provider": provider}) for m in models]
    handle = FauxProvider(
        api=api,
        provider=provider,
        models=model_list,
        tokens_per_second=tokens_per_second,
        token_size=token_size,
    )
    handle.set_responses(responses)
    register_api_provider(api, handle.stream, source_id=api)
    for model in model_list:
        register_model(model)  # so parse_model("faux/faux-1") and %model find it
    return handle
