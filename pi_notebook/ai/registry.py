"""The API registry and the entry points ``stream`` / ``complete`` / ``stream_simple`` /
``complete_simple``: dispatch on ``model.api`` to the provider that speaks that wire protocol."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from .event_stream import AssistantMessageEventStream
from .options import StreamOptions
from .system_message import collapse_system_messages, keep_system_messages
from .types import AssistantMessage, Context, Model, ThinkingLevel

__all__ = [
    "ApiProvider",
    "StreamFunction",
    "complete",
    "complete_simple",
    "get_api_provider",
    "register_api_provider",
    "stream",
    "stream_simple",
    "stream_simple_options",
    "unregister_api_providers",
]

StreamFunction = Callable[[Model, Context, StreamOptions], AssistantMessageEventStream]
"""A provider's entry point. It never raises: failures are ``error`` events in the stream."""


@dataclass(frozen=True, slots=True)
class ApiProvider:
    api: str
    stream: StreamFunction
    source_id: str | None = None


_providers: dict[str, ApiProvider] = {}

_BUILTIN_MODULES = {
    "openai-completions": "pi_notebook.ai.providers.openai_completions",
    "anthropic-messages": "pi_notebook.ai.providers.anthropic_messages",
    "openai-responses": "pi_notebook.ai.providers.openai_responses",
    "google-generative-ai": "pi_notebook.ai.providers.google_generative_ai",
}


def register_api_provider(api: str, stream: StreamFunction, source_id: str | None = None) -> None:
    """Register (or replace) the provider for ``api``."""
    _providers[api] = ApiProvider(api=api, stream=stream, source_id=source_id)


def unregister_api_providers(source_id: str) -> None:
    """Remove every provider registered with ``source_id``."""
    for api in [a for a, p in _providers.items() if p.source_id == source_id]:
        del _providers[api]


def get_api_provider(api: str) -> ApiProvider:
    provider = _providers.get(api)
    if provider is None and api in _BUILTIN_MODULES:
        module = importlib.import_module(_BUILTIN_MODULES[api])
        register_api_provider(api, module.stream, source_id="builtin")
        provider = _providers[api]
    if provider is None:
        raise ValueError(f"No API provider registered for api: {api}")
    return provider


def stream(model: Model, context: Context, **options: Any) -> AssistantMessageEventStream:
    """Stream one reply of ``model`` to ``context``.

    Raises only for an unknown ``model.api``; every other failure is an ``error`` event.
    """
    provider = get_api_provider(model.api)
    if _takes_system_messages_in_place(model):
        context = keep_system_messages(context)
    else:
        context = collapse_system_messages(context)  # pi 1.6 system messages → prompt and tools
    return provider.stream(model, context, StreamOptions.from_kwargs(options))


def _takes_system_messages_in_place(model: Model) -> bool:
    """Whether ``model`` gets pi 1.6 system messages in mid-conversation: on the Chat
    Completions API, when its compat says the server takes them (as pi-ai 1.6 decides)."""
    compat = model.compat
    return (
        model.api == "openai-completions"
        and compat is not None
        and compat.get("supportsMidConvoSystemMessages") is True
    )


async def complete(model: Model, context: Context, **options: Any) -> AssistantMessage:
    """The final message of ``stream(...)``."""
    return await stream(model, context, **options).result()


def stream_simple(
    model: Model, context: Context, *, reasoning: ThinkingLevel | None = None, **options: Any
) -> AssistantMessageEventStream:
    """``stream`` with one unified ``reasoning`` level (``off``/``None`` = no thinking) and a
    default output limit of ``min(model.max_tokens, 32000)``."""
    return stream_simple_options(
        model, context, StreamOptions.from_kwargs({**options, "reasoning": reasoning})
    )


def stream_simple_options(
    model: Model, context: Context, options: StreamOptions
) -> AssistantMessageEventStream:
    """``stream_simple`` for an options object, handed to the provider as it is (the agent loop's
    default stream function: one object from the loop to the HTTP request)."""
    if options.reasoning == "off" or options.max_tokens is None:
        options = replace(
            options,
            reasoning=None if options.reasoning == "off" else options.reasoning,
            max_tokens=min(model.max_tokens, 32_000)
            if options.max_tokens is None
            else options.max_tokens,
        )
    provider = get_api_provider(model.api)
    return provider.stream(model, collapse_system_messages(context), options)


async def complete_simple(
    model: Model, context: Context, *, reasoning: ThinkingLevel | None = None, **options: Any
) -> AssistantMessage:
    return await stream_simple(model, context, reasoning=reasoning, **options).result()
