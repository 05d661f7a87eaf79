"""Context-overflow detection from provider error texts and from usage, as pi-ai 1.6 detects it
(every case recorded with pi's own ``isContextOverflow`` / ``isRecoverableLength`` in
``golden/pi-1.6/sessions/harness/overflow-cases.json`` is replayed)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pi_notebook.ai import AssistantMessage, Usage, is_context_overflow
from pi_notebook.ai.overflow import is_recoverable_length
from tests.paths import GOLDEN

PI_CASES: list[dict[str, Any]] = json.loads(
    (GOLDEN / "pi-1.6" / "sessions" / "harness" / "overflow-cases.json").read_text()
)
OURS_ONLY = {"HTTP 413: Request Entity Too Large"}
"""pi 1.6 counts any HTTP 413 as an overflow, matched on its own error prefixes; this package
words HTTP failures ``HTTP 413: …``, so that prefix counts too (pi's rule, our wording)."""


def failed(text: str) -> AssistantMessage:
    return AssistantMessage(
        api="x", provider="x", model="m", stop_reason="error", error_message=text
    )


@pytest.mark.parametrize(
    "text",
    [
        # Anthropic
        "HTTP 400: prompt is too long: 208000 tokens > 200000 maximum (invalid_request_error)",
        # OpenAI Chat Completions / vLLM / DeepSeek / OpenRouter
        "HTTP 400: This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 130000 tokens. (invalid_request_error)",
        "HTTP 400: Request too long (context_length_exceeded)",
        # OpenAI Responses
        "Your input exceeds the context window of this model. Please adjust your input.",
        # llama.cpp, exactly as our HTTP layer formats its HTTP 400
        "HTTP 400: request (631 tokens) exceeds the available context size (256 tokens), try "
        "increasing it (exceed_context_size_error)",
        # Google Gemini
        "HTTP 400: The input token count (1234567) exceeds the maximum number of tokens allowed "
        "(1048576). (INVALID_ARGUMENT)",
        # xAI
        "This model's maximum prompt length is 131072 but the request contains 140000 tokens.",
        # Groq
        "Please reduce the length of the messages or completion.",
        # Mistral
        "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum "
        "context length",
        # Bedrock, LM Studio, Copilot
        "Input is too long for requested model.",
        "The number of tokens to keep from the initial prompt is greater than the context length",
        "prompt token count of 140000 exceeds the limit of 128000",
    ],
)
def test_provider_overflow_errors_are_recognised(text: str) -> None:
    assert is_context_overflow(failed(text))


@pytest.mark.parametrize(
    "text",
    [
        "HTTP 401: Invalid API Key (authentication_error) — check the API key",
        "HTTP 429: Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, "
        "Requested 40000. (rate_limit_exceeded)",
        "HTTP 429: You exceeded your current quota (insufficient_quota)",
        # pi 1.6 no longer counts Anthropic's "max_tokens too large for the rest" as overflow
        "input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000",
        "Throttling error: Too many tokens, please wait before trying again.",
        "HTTP 500: The model produced output that does not match the expected format",
        "Request was aborted",
    ],
)
def test_other_errors_are_not_overflow(text: str) -> None:
    assert not is_context_overflow(failed(text))


def test_overflow_wording_only_counts_on_error_replies() -> None:
    message = AssistantMessage(
        api="x", provider="x", model="m", stop_reason="aborted", error_message="prompt is too long"
    )
    assert not is_context_overflow(message)


def test_silent_overflow_from_usage() -> None:
    def reply(input: int, cache_read: int, stop: str = "stop") -> AssistantMessage:
        return AssistantMessage(
            api="x",
            provider="x",
            model="m",
            stop_reason=stop,  # type: ignore[arg-type]
            usage=Usage(input=input, cache_read=cache_read),
        )

    assert is_context_overflow(reply(900, 200), context_window=1000)
    assert not is_context_overflow(reply(800, 200), context_window=1000)
    assert not is_context_overflow(reply(900, 200))  # window unknown
    assert not is_context_overflow(reply(900, 200, "toolUse"), context_window=1000)


def _message(recorded: dict[str, Any]) -> AssistantMessage:
    given = recorded["usage"]
    return AssistantMessage(
        api="x",
        provider=recorded["provider"],
        model="m",
        stop_reason=recorded["stopReason"],
        error_message=recorded["errorMessage"],
        usage=Usage(
            input=given.get("input", 0),
            output=given.get("output", 0),
            cache_read=given.get("cacheRead", 0),
            cache_write=given.get("cacheWrite", 0),
        ),
    )


@pytest.mark.parametrize(
    "case", PI_CASES, ids=[f"{i}-{c['message']['stopReason']}" for i, c in enumerate(PI_CASES)]
)
def test_every_case_is_judged_as_pi_16_judges_it(case: dict[str, Any]) -> None:
    message = _message(case["message"])
    ours_only = case["message"]["errorMessage"] in OURS_ONLY
    assert is_context_overflow(message) is (case["overflow"] or ours_only)
    in_window = is_context_overflow(message, case["contextWindow"])
    assert in_window is (case["overflowInWindow"] or ours_only)
    assert is_recoverable_length(message, case["maxTokens"]) is case["recoverableLength"]


def test_the_cases_cover_every_kind_of_overflow() -> None:
    assert len(PI_CASES) >= 60
    assert {c["overflow"] for c in PI_CASES} == {True, False}
    assert any(c["overflowInWindow"] and not c["overflow"] for c in PI_CASES)  # from usage
    assert any(c["recoverableLength"] for c in PI_CASES)
    recorded = {c["message"]["errorMessage"] for c in PI_CASES}
    assert recorded >= OURS_ONLY
