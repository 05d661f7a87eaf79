"""Context-overflow detection: did a reply fail (or silently degrade) because the prompt no longer
fits the model's context window? The harness compacts and retries when it did.

Providers word the error differently, so the error text is matched against one pattern per known
wording. Servers that truncate silently are caught by their usage instead: a successful reply whose
prompt (uncached + cached tokens) is larger than the window.
"""

from __future__ import annotations

import re

from .types import AssistantMessage

__all__ = ["OVERFLOW_PATTERNS", "is_context_overflow"]

OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        # Anthropic: "prompt is too long: 208000 tokens > 200000 maximum", and
        # "input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000".
        r"prompt is too long",
        r"exceed context limit",
        # OpenAI Chat Completions (also vLLM, DeepSeek, OpenRouter, Together, Fireworks):
        # "This model's maximum context length is 128000 tokens. However, your messages resulted
        # in …"; code "context_length_exceeded". Responses API: "exceeds the context window".
        r"maximum context length",
        r"context[_ ]length[_ ]exceeded",
        r"exceeds the context window",
        # llama.cpp server: HTTP 400 "request (631 tokens) exceeds the available context size
        # (256 tokens), try increasing it", type "exceed_context_size_error".
        r"exceeds the available context size",
        r"exceed_context_size_error",
        # Google Gemini: "The input token count (1234567) exceeds the maximum number of tokens
        # allowed (1048576)."
        r"exceeds the maximum number of tokens",
        r"input token count.*exceeds the maximum",
        # xAI: "This model's maximum prompt length is 131072 but the request contains … tokens."
        r"maximum prompt length is \d+",
        # Groq: "Please reduce the length of the messages or completion."
        r"reduce the length of the messages",
        # Mistral: "Prompt contains 40000 tokens … too large for model with 32768 maximum
        # context length".
        r"too large for model with \d+ maximum context length",
        # Amazon Bedrock: "Input is too long for requested model."
        r"input is too long for requested model",
        # LM Studio: "… tokens to keep from the initial prompt is greater than the context length".
        r"greater than the context length",
        # GitHub Copilot: "prompt token count of 140000 exceeds the limit of 128000".
        r"exceeds the limit of \d+",
        # Generic wordings of gateways and smaller providers.
        r"context window (?:size )?exceeded",
        r"token limit exceeded",
    )
)
"""Error texts meaning "the prompt does not fit the context window"."""

_RATE_LIMIT = re.compile(
    r"rate[ _-]?limit|tokens per (?:min|minute|day)|\b(?:TPM|TPD)\b|quota", re.IGNORECASE
)
"""Throughput limits ("Request too large … on tokens per min (TPM)") mention tokens and limits too,
but compacting would not help them."""


def is_context_overflow(message: AssistantMessage, context_window: int | None = None) -> bool:
    """True if ``message`` failed because its prompt overflowed the model's context window, or
    (when ``context_window`` is given) succeeded with more prompt tokens than the window holds."""
    if message.stop_reason == "error" and message.error_message:
        text = message.error_message
        if any(p.search(text) for p in OVERFLOW_PATTERNS) and not _RATE_LIMIT.search(text):
            return True
    if context_window and message.stop_reason == "stop":
        usage = message.usage
        return usage.input + usage.cache_read > context_window
    return False
