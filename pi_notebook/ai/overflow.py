"""Context-overflow detection: did a reply fail (or silently degrade) because the prompt no longer
fits the model's context window? The harness compacts and retries when it did.

Providers word the error differently, so the error text is matched against one pattern per known
wording — pi-ai 1.6's list, checked against pi's own ``isContextOverflow`` on every case of
``tests/golden/pi-1.6/sessions/harness/overflow-cases.json``. Throughput limits mention tokens
too and are excluded. Servers that truncate silently are caught by their usage instead: a
successful reply whose prompt (uncached + cached tokens) is larger than the window, or a reply
cut off by the token limit with no output because the input filled the window.
"""

from __future__ import annotations

import re

from .types import AssistantMessage

__all__ = [
    "NON_OVERFLOW_PATTERNS",
    "OVERFLOW_PATTERNS",
    "is_context_overflow",
    "is_recoverable_length",
]

OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        # Anthropic "prompt is too long: 213462 tokens > 200000 maximum"; z.ai "Prompt too long"
        r"prompt (?:is )?too long",
        # z.ai (CN endpoint)
        r"prompt exceeds max length",
        # Anthropic request byte-size overflow (HTTP 413)
        r"request_too_large",
        # Amazon Bedrock
        r"input is too long for requested model",
        # OpenAI Completions and Responses: "Your input exceeds the context window of this model"
        r"exceeds the context window",
        # OpenAI-compatible proxies (LiteLLM): "… exceeds the model's maximum context length of
        # 131072 tokens", "Input length (265330) exceeds model's maximum context length (262144)"
        r"exceeds (?:the )?(?:model'?s )?maximum context length"
        r"(?: of [\d,]+ tokens?|\s*\([\d,]+\))",
        # LiteLLM pre-call check (ContextWindowExceededError)
        r"context window exceeded",
        # Google Gemini: "The input token count (1196265) exceeds the maximum number of tokens …"
        r"input token count.*exceeds the maximum",
        # xAI: "This model's maximum prompt length is 131072 but the request contains …"
        r"maximum prompt length is \d+",
        # Groq
        r"reduce the length of the messages",
        # OpenAI and OpenRouter: "… maximum context length is 128000 tokens. However, …"
        r"maximum context length is \d+ tokens",
        # OpenRouter/Poolside: "Input length X exceeds the maximum allowed input length of Y
        # tokens."
        r"exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?",
        # Together AI: "The input (X tokens) is longer than the model's context length (Y
        # tokens)."
        r"input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)",
        # GitHub Copilot: "prompt token count of 140000 exceeds the limit of 128000"
        r"exceeds the limit of \d+",
        # llama.cpp server: "… exceeds the available context size (256 tokens), try increasing it"
        r"exceeds the available context size",
        # LM Studio: "… tokens to keep from the initial prompt is greater than the context length"
        r"greater than the context length",
        # MiniMax
        r"context window exceeds limit",
        # Kimi For Coding: "Your request exceeded model token limit: X (requested: Y)"
        r"exceeded model token limit",
        # Mistral: "Prompt contains X tokens … too large for model with Y maximum context length"
        r"too large for model with \d+ maximum context length",
        # DS4 server
        r"prompt has [\d,]+ tokens?, but the configured context size is [\d,]+ tokens?",
        # z.ai: a finish reason surfaced as error text
        r"model_context_window_exceeded",
        # Ollama: "prompt too long; exceeded max context length by X tokens"
        r"prompt too long; exceeded (?:max )?context length",
        # DashScope / Qwen: "Range of input length should be [1, X]"
        r"range of input length should be",
        # generic
        r"context[_ ]length[_ ]exceeded",
        r"too many tokens",
        r"token limit exceeded",
        # HTTP 413 is a request-size overflow whatever the provider or body says: pi's
        # "<provider> API error (413):" and a bare "413 …", and this package's "HTTP 413: …"
        r"^(?:[\w -]+ API error \(413\):|413(?:\s|:|$)|HTTP 413\b)",
    )
)
"""Error texts meaning "the prompt does not fit the context window"."""

NON_OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        # Bedrock's human-readable prefixes of throttling / availability errors
        r"^(?:Throttling error|Service unavailable):",
        r"rate limit",
        r"too many requests",
    )
)
"""Errors that may mention tokens and limits but are not overflows: compacting would not help."""

_CEREBRAS_BODYLESS = re.compile(r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)", re.IGNORECASE)
"""Cerebras answers an overflow with a bare 400/413 and no body."""


def is_context_overflow(message: AssistantMessage, context_window: int | None = None) -> bool:
    """True if ``message`` failed because its prompt overflowed the model's context window, or
    (when ``context_window`` is given) succeeded with more prompt tokens than the window holds,
    or stopped at the token limit with no output because the input filled the window."""
    text = message.error_message
    if (
        message.stop_reason == "error"
        and text
        and not any(p.search(text) for p in NON_OVERFLOW_PATTERNS)
    ):
        if any(p.search(text) for p in OVERFLOW_PATTERNS):
            return True
        if message.provider == "cerebras" and _CEREBRAS_BODYLESS.search(text):
            return True
    if context_window:
        usage = message.usage
        prompt = usage.input + usage.cache_read
        if message.stop_reason == "stop" and prompt > context_window:
            return True
        if message.stop_reason == "length" and usage.output == 0:
            return prompt >= context_window * 0.99
    return False


def is_recoverable_length(message: AssistantMessage, desired_max_output: int) -> bool:
    """A ``length`` stop below the output limit the request wanted (``desired_max_output``, the
    model's own limit before any clamping): the context, not the limit, may have cut it short,
    so one compact-and-retry may help (pi-ai 1.6's ``isRecoverableLength``)."""
    return (
        message.stop_reason == "length"
        and desired_max_output > 0
        and message.usage.output < desired_max_output
    )
