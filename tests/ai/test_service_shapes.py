"""Streams in the shapes real services send, over a real loopback server.

The payloads copy the structure of recorded streams of each service: Mistral's reasoning models
(``delta.content`` as a list of parts), xAI's and OpenAI's usage (reasoning tokens on top of, or
inside, ``completion_tokens``), Gemini's ``toolUsePromptTokenCount``, and Anthropic-compatible
servers that put whole content blocks and the stop reason in ``message_start``.
"""

from __future__ import annotations

from typing import Any

import pytest

from pi_notebook.ai import (
    AssistantMessage,
    Context,
    Model,
    TextContent,
    ThinkingContent,
    ToolCall,
    UserMessage,
    stream,
)
from tests.loopback import LoopbackServer, Reply, sse_chunks

HELLO = Context(messages=[UserMessage(content="What is 2+2?")])


async def reply_of(model: Model, chunks: list[bytes], **options: Any) -> AssistantMessage:
    async with LoopbackServer() as server:
        server.add(Reply.sse(chunks))
        model = model.model_copy(update={"base_url": server.url + model.base_url})
        return await stream(model, HELLO, api_key="k-test", **options).result()


# --- Mistral -------------------------------------------------------------------------------------

MISTRAL = Model(
    id="magistral-medium-2509", api="openai-completions", provider="mistral", base_url="/v1"
)


def mistral_chunk(content: Any, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "b7a1",
        "object": "chat.completion.chunk",
        "created": 1760000000,
        "model": "magistral-medium-2509",
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}],
        **extra,
    }


async def test_mistral_content_parts_keep_the_thinking_and_the_answer() -> None:
    chunks = sse_chunks(
        [
            {
                "id": "b7a1",
                "object": "chat.completion.chunk",
                "model": "magistral-medium-2509",
                "choices": [
                    {
                        "index": 0,
                        "delta": {"role": "assistant", "content": ""},
                        "finish_reason": None,
                    }
                ],
            },
            mistral_chunk([{"type": "thinking", "thinking": [{"type": "text", "text": "Two "}]}]),
            mistral_chunk(
                [{"type": "thinking", "thinking": [{"type": "text", "text": "plus two."}]}]
            ),
            mistral_chunk([{"type": "text", "text": "It is "}]),
            mistral_chunk("4."),
            mistral_chunk(
                "",
                "stop",
                usage={"prompt_tokens": 12, "completion_tokens": 20, "total_tokens": 32},
            ),
        ],
        done=True,
    )
    reply = await reply_of(MISTRAL, chunks)
    assert reply.stop_reason == "stop", reply.error_message
    assert [type(b) for b in reply.content] == [ThinkingContent, TextContent]
    assert reply.content[0].thinking == "Two plus two."  # type: ignore[union-attr]
    assert reply.content[1].text == "It is 4."  # type: ignore[union-attr]
    assert (reply.usage.input, reply.usage.output) == (12, 20)


async def test_mistral_parts_in_one_chunk_and_a_plain_string_thinking() -> None:
    parts = [
        {"type": "thinking", "thinking": "hmm"},
        {"type": "text", "text": "done"},
        {"type": "reference", "reference_ids": [1]},
    ]
    chunks = sse_chunks([mistral_chunk(parts, "stop")], done=True)
    reply = await reply_of(MISTRAL, chunks)
    assert [
        (b.type, getattr(b, "thinking", None) or getattr(b, "text", None)) for b in reply.content
    ] == [("thinking", "hmm"), ("text", "done")]


# --- usage: xAI vs OpenAI ------------------------------------------------------------------------


def usage_chunk(usage: dict[str, Any]) -> dict[str, Any]:
    return {"id": "u", "object": "chat.completion.chunk", "choices": [], "usage": usage}


@pytest.mark.parametrize(
    ("provider", "usage", "output"),
    [
        # xAI: completion_tokens leave the reasoning out; the total shows it.
        (
            "xai",
            {
                "prompt_tokens": 30,
                "completion_tokens": 8,
                "total_tokens": 238,
                "prompt_tokens_details": {"cached_tokens": 6},
                "completion_tokens_details": {"reasoning_tokens": 200},
            },
            208,
        ),
        # OpenAI: completion_tokens include the reasoning tokens.
        (
            "openai",
            {
                "prompt_tokens": 30,
                "completion_tokens": 208,
                "total_tokens": 238,
                "prompt_tokens_details": {"cached_tokens": 6},
                "completion_tokens_details": {"reasoning_tokens": 200},
            },
            208,
        ),
        # no total: trust completion_tokens
        (
            "other",
            {
                "prompt_tokens": 30,
                "completion_tokens": 8,
                "prompt_tokens_details": {"cached_tokens": 6},
                "completion_tokens_details": {"reasoning_tokens": 200},
            },
            8,
        ),
    ],
)
async def test_output_tokens_count_reasoning_once(
    provider: str, usage: dict[str, Any], output: int
) -> None:
    model = Model(id="grok-4", api="openai-completions", provider=provider, base_url="/v1")
    chunks = sse_chunks([mistral_chunk("4", "stop"), usage_chunk(usage)], done=True)
    reply = await reply_of(model, chunks)
    assert reply.usage.output == output
    assert reply.usage.input == 24 and reply.usage.cache_read == 6


# --- Gemini --------------------------------------------------------------------------------------


async def test_gemini_tool_use_prompt_tokens_are_input() -> None:
    model = Model(
        id="gemini-2.5-flash", api="google-generative-ai", provider="google", base_url="/v1beta"
    )
    chunks = sse_chunks(
        [
            {
                "candidates": [
                    {
                        "content": {"role": "model", "parts": [{"text": "Found it."}]},
                        "finishReason": "STOP",
                        "index": 0,
                    }
                ],
                "usageMetadata": {
                    "promptTokenCount": 10,
                    "toolUsePromptTokenCount": 340,
                    "candidatesTokenCount": 5,
                    "thoughtsTokenCount": 7,
                    "cachedContentTokenCount": 4,
                    "totalTokenCount": 362,
                },
                "modelVersion": "gemini-2.5-flash",
                "responseId": "r1",
            },
        ]
    )
    reply = await reply_of(model, chunks)
    assert reply.stop_reason == "stop"
    assert (reply.usage.input, reply.usage.output, reply.usage.cache_read) == (346, 12, 4)
    assert reply.usage.total_tokens == 362


# --- Anthropic -----------------------------------------------------------------------------------

ANTHROPIC = Model(id="claude-test", api="anthropic-messages", provider="anthropic", base_url="")


def start_with(content: list[dict[str, Any]], stop_reason: str | None) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 9, "output_tokens": 3},
        },
    }


async def test_anthropic_blocks_and_stop_reason_in_message_start_are_honoured() -> None:
    chunks = sse_chunks(
        [
            start_with(
                [
                    {"type": "text", "text": "Let me check."},
                    {"type": "tool_use", "id": "toolu_1", "name": "calc", "input": {"x": 2}},
                ],
                "tool_use",
            ),
            {"type": "message_stop"},
        ],
        event_names=True,
    )
    reply = await reply_of(ANTHROPIC, chunks)
    assert reply.stop_reason == "toolUse", reply.error_message
    assert reply.content[0].text == "Let me check."  # type: ignore[union-attr]
    call = reply.content[1]
    assert isinstance(call, ToolCall) and (call.id, call.name, call.arguments) == (
        "toolu_1",
        "calc",
        {"x": 2},
    )


async def test_anthropic_message_start_content_then_streamed_blocks() -> None:
    chunks = sse_chunks(
        [
            start_with([{"type": "text", "text": "A"}], None),
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "text", "text": ""},
            },
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "text_delta", "text": "B"},
            },
            {"type": "content_block_stop", "index": 1},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "max_tokens"},
                "usage": {"output_tokens": 5},
            },
            {"type": "message_stop"},
        ],
        event_names=True,
    )
    reply = await reply_of(ANTHROPIC, chunks)
    assert [b.text for b in reply.content] == ["A", "B"]  # type: ignore[union-attr]
    assert reply.stop_reason == "length"


@pytest.mark.parametrize(
    ("block", "delta"),
    [
        ({"type": "text", "text": ""}, {"type": "text_delta", "text": 5}),
        ({"type": "text", "text": ""}, {"type": "text_delta", "text": {"t": "x"}}),
        ({"type": "thinking", "thinking": ""}, {"type": "thinking_delta", "thinking": ["x"]}),
        ({"type": "thinking", "thinking": ""}, {"type": "signature_delta", "signature": 7}),
        (
            {"type": "tool_use", "id": "t", "name": "f", "input": {}},
            {"type": "input_json_delta", "partial_json": {"a": 1}},
        ),
        ({"type": "text", "text": 3}, None),
        ({"type": "thinking", "thinking": "", "signature": 1.5}, None),
    ],
)
async def test_anthropic_non_string_values_end_in_an_error_event(
    block: dict[str, Any], delta: dict[str, Any] | None
) -> None:
    events: list[dict[str, Any]] = [
        start_with([], None),
        {"type": "content_block_start", "index": 0, "content_block": block},
    ]
    if delta is not None:
        events.append({"type": "content_block_delta", "index": 0, "delta": delta})
    events += [{"type": "content_block_stop", "index": 0}, {"type": "message_stop"}]
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks(events, event_names=True)))
        model = ANTHROPIC.model_copy(update={"base_url": server.url})
        s = stream(model, HELLO, api_key="k-test")
        kinds = [event.type async for event in s]
        reply = await s.result()
    assert kinds[-1] == "error"
    assert reply.stop_reason == "error"
    assert "not a string" in (reply.error_message or "")
