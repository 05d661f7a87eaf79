"""The Gemini provider over a real loopback socket: text, thoughts, function calls, usage, every
finish reason, errors, retries, abort, and the request body of a multi-turn conversation."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from pi_notebook.ai import (
    AbortController,
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    ModelCost,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    stream,
)
from pi_notebook.ai.events import AssistantMessageEvent, ToolCallDeltaEvent, ToolCallEndEvent
from pi_notebook.ai.options import StreamOptions
from pi_notebook.ai.providers.google_generative_ai import thinking_config
from tests.loopback import LoopbackServer, Reply, sse_chunks

KEY = "AIza-test-secret-4242"
CTX = Context(system_prompt="Be brief.", messages=[UserMessage(content="hi")])
SIG_A = "c2lnbmF0dXJlLWE="  # base64, as Gemini's signatures are
SIG_B = "c2lnLWI="


def make_model(server: LoopbackServer, **fields: Any) -> Model:
    values: dict[str, Any] = {
        "id": "gemini-test",
        "api": "google-generative-ai",
        "provider": "google",
        "base_url": server.url + "/v1beta",
        "input": ["text", "image"],
        "cost": ModelCost(input=1, output=4, cache_read=0.25),
        "max_tokens": 65_536,
        **fields,
    }
    return Model(**values)


def chunk(
    *parts: dict[str, Any],
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    payload: dict[str, Any] = {
        "candidates": [candidate],
        "modelVersion": "gemini-test-001",
        "responseId": "resp-g1",
        **extra,
    }
    if usage is not None:
        payload["usageMetadata"] = usage
    return payload


USAGE = {
    "promptTokenCount": 100,
    "candidatesTokenCount": 30,
    "thoughtsTokenCount": 12,
    "cachedContentTokenCount": 40,
    "totalTokenCount": 142,
}


async def run(
    model: Model, context: Context = CTX, **options: Any
) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    s = stream(model, context, api_key=KEY, **options)
    events = [e async for e in s]
    return events, await s.result()


async def test_text_reply_usage_and_request() -> None:
    body = sse_chunks(
        [
            chunk({"text": "Hel"}, usage={"promptTokenCount": 100}),
            chunk({"text": "lo wörld"}),
            chunk({"text": "!"}, finish="STOP", usage=USAGE),
        ]
    )
    joined = b"".join(body)
    async with LoopbackServer() as server:
        server.add(Reply.sse([joined[:30], joined[30:101], joined[101:]]))
        events, result = await run(make_model(server), max_tokens=256, temperature=0.5)
    assert [e.type for e in events] == [
        "start",
        "text_start",
        "text_delta",
        "text_delta",
        "text_delta",
        "text_end",
        "done",
    ]
    assert result.content == [TextContent(text="Hello wörld!")]
    assert result.stop_reason == "stop" and result.response_id == "resp-g1"
    usage = result.usage
    assert (usage.input, usage.cache_read, usage.output, usage.total_tokens) == (60, 40, 42, 142)
    assert usage.cost.total == pytest.approx((60 * 1 + 42 * 4 + 40 * 0.25) / 1e6)

    request = server.requests[0]
    assert request.path == "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
    assert request.headers["x-goog-api-key"] == KEY
    assert KEY not in request.path
    assert request.json() == {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "generationConfig": {"maxOutputTokens": 256, "temperature": 0.5},
    }


async def test_thoughts_text_and_signatures() -> None:
    body = sse_chunks(
        [
            chunk({"text": "Let me ", "thought": True, "thoughtSignature": SIG_A}),
            chunk({"text": "think.", "thought": True}),
            chunk({"text": "The answer"}),
            chunk({"text": " is 4."}, {"text": "", "thoughtSignature": SIG_B}),
            chunk(finish="STOP", usage=USAGE),
        ]
    )
    async with LoopbackServer() as server:
        server.add(Reply.sse(body))
        model = make_model(server, reasoning=True)
        events, result = await run(model, reasoning="medium", max_tokens=1000)
    assert [e.type for e in events if "delta" not in e.type] == [
        "start",
        "thinking_start",
        "thinking_end",
        "text_start",
        "text_end",
        "done",
    ]
    assert result.content == [
        ThinkingContent(thinking="Let me think.", thinking_signature=SIG_A),
        TextContent(text="The answer is 4.", text_signature=SIG_B),
    ]
    config = server.requests[0].json()["generationConfig"]
    assert config == {
        "maxOutputTokens": 9192,
        "thinkingConfig": {"thinkingBudget": 8192, "includeThoughts": True},
    }


async def test_multiple_function_calls_get_unique_ids() -> None:
    body = sse_chunks(
        [
            chunk({"text": "Let me check."}),
            chunk(
                {
                    "functionCall": {"name": "weather", "args": {"city": "Paris"}, "id": "fc-1"},
                    "thoughtSignature": SIG_A,
                },
                {"functionCall": {"name": "weather", "args": {"city": "Rome"}}},
            ),
            chunk(
                {"functionCall": {"name": "time", "args": {"tz": "CET"}, "id": "fc-1"}},
                {"functionCall": {"name": "noop"}},
                finish="STOP",
                usage=USAGE,
            ),
        ]
    )
    async with LoopbackServer() as server:
        server.add(Reply.sse(body))
        events, result = await run(make_model(server))
    assert result.stop_reason == "toolUse"
    calls = result.tool_calls
    assert [(c.name, c.arguments) for c in calls] == [
        ("weather", {"city": "Paris"}),
        ("weather", {"city": "Rome"}),
        ("time", {"tz": "CET"}),
        ("noop", {}),
    ]
    ids = [c.id for c in calls]
    assert ids[0] == "fc-1" and len(set(ids)) == 4 and all(ids)
    assert calls[0].thought_signature == SIG_A and calls[1].thought_signature is None
    # Each call is start + one delta with the JSON text + end, the text block closed before.
    deltas = [e.delta for e in events if isinstance(e, ToolCallDeltaEvent)]
    assert [json.loads(d) for d in deltas] == [c.arguments for c in calls]
    ends = [e.tool_call for e in events if isinstance(e, ToolCallEndEvent)]
    assert ends == calls
    assert [e.type for e in events][1:4] == ["text_start", "text_delta", "text_end"]


@pytest.mark.parametrize(
    ("finish", "stop_reason", "error"),
    [
        ("MAX_TOKENS", "length", None),
        ("SAFETY", "error", "Gemini stopped with finishReason SAFETY: unsafe"),
        ("MALFORMED_FUNCTION_CALL", "error", "Gemini stopped with finishReason"),
    ],
)
async def test_finish_reasons(finish: str, stop_reason: str, error: str | None) -> None:
    candidate_extra = {"finishMessage": "unsafe"} if finish == "SAFETY" else {}
    last = chunk(finish=finish, usage=USAGE)
    last["candidates"][0].update(candidate_extra)
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks([chunk({"text": "partial"}), last])))
        _, result = await run(make_model(server))
    assert result.stop_reason == stop_reason
    assert result.text == "partial" and result.usage.output == 42
    if error is None:
        assert result.error_message is None
    else:
        assert (result.error_message or "").startswith(error)


async def test_blocked_prompt_is_an_error() -> None:
    blocked = {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": USAGE}
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks([blocked])))
        _, result = await run(make_model(server))
    assert result.stop_reason == "error"
    assert result.error_message == "Gemini blocked the prompt (PROHIBITED_CONTENT)"


async def test_error_payload_after_200_keeps_partial() -> None:
    error = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks([chunk({"text": "so far"}), error])))
        events, result = await run(make_model(server))
    assert [e.type for e in events][-2:] == ["text_end", "error"]
    assert result.stop_reason == "error"
    assert result.error_message == "The model is overloaded. (UNAVAILABLE)"
    assert result.text == "so far"


async def test_truncated_streams_are_errors() -> None:
    body = sse_chunks([chunk({"text": "half"}, usage={"promptTokenCount": 5})])
    async with LoopbackServer() as server:
        server.add(Reply.sse(body), Reply.sse(body, truncate=True))
        _, clean_eof = await run(make_model(server))
        _, cut = await run(make_model(server))
    assert clean_eof.stop_reason == "error" and clean_eof.text == "half"
    assert "without a finishReason" in (clean_eof.error_message or "")
    assert clean_eof.usage.input == 5
    assert cut.stop_reason == "error" and cut.text == "half"
    assert "mid-stream" in (cut.error_message or "")


async def test_malformed_payload_is_an_error() -> None:
    async with LoopbackServer() as server:
        server.add(Reply.sse([b"data: [1, 2\n\n"]))
        _, result = await run(make_model(server))
    assert result.stop_reason == "error"
    assert "Malformed event" in (result.error_message or "")


async def test_429_is_retried_after_retry_after() -> None:
    exhausted = {"error": {"code": 429, "message": "Quota", "status": "RESOURCE_EXHAUSTED"}}
    async with LoopbackServer() as server:
        server.add(
            Reply.json(429, exhausted, headers={"retry-after": "0.01"}),
            Reply.sse(sse_chunks([chunk({"text": "ok"}, finish="STOP")])),
        )
        _, result = await run(make_model(server))
    assert result.stop_reason == "stop" and result.text == "ok"
    assert len(server.requests) == 2


async def test_401_is_not_retried_and_the_key_stays_out() -> None:
    denied = {
        "error": {"code": 401, "message": f"API key {KEY} invalid", "status": "UNAUTHENTICATED"}
    }
    async with LoopbackServer() as server:
        server.add(Reply.json(401, denied))
        events, result = await run(make_model(server))
    assert [e.type for e in events] == ["error"]
    assert len(server.requests) == 1
    message = result.error_message or ""
    assert "HTTP 401" in message and "API key" in message
    assert KEY not in message and KEY not in result.model_dump_json()


async def test_missing_key_for_google_and_none_needed_for_a_custom_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    async with LoopbackServer() as server:
        hosted = make_model(server).model_copy(
            update={"base_url": "https://generativelanguage.googleapis.com/v1beta"}
        )
        result = await stream(hosted, CTX).result()
        assert result.stop_reason == "error"
        assert "GEMINI_API_KEY" in (result.error_message or "")
        assert server.requests == []

        server.add(Reply.sse(sse_chunks([chunk({"text": "proxied"}, finish="STOP")])))
        proxied = make_model(server, provider="gemini-proxy")
        result = await stream(proxied, CTX).result()
    assert result.text == "proxied"
    assert "x-goog-api-key" not in server.requests[0].headers


async def test_abort_mid_stream_keeps_partial_and_closes_connection() -> None:
    controller = AbortController()
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks([chunk({"text": "Once upon"})]), hang=True))
        s = stream(make_model(server), CTX, api_key=KEY, signal=controller.signal)
        types = []
        async for event in s:
            types.append(event.type)
            if event.type == "text_delta":
                controller.abort()
        await asyncio.wait_for(server.disconnected.wait(), 5)
    result = await s.result()
    assert types[-1] == "error"
    assert result.stop_reason == "aborted" and result.text == "Once upon"
    assert result.error_message == "Request was aborted"


async def test_request_body_of_a_multi_turn_conversation() -> None:
    image = ImageContent(data="aGVsbG8=", mime_type="image/png")
    own = {"api": "google-generative-ai", "provider": "google", "model": "gemini-test"}
    context = Context(
        system_prompt="You are terse.",
        tools=[
            Tool(
                name="read",
                description="Read a file",
                parameters={"type": "object", "properties": {"path": {"type": "string"}}},
            )
        ],
        messages=[
            UserMessage(content=[TextContent(text="What is in this?"), image]),
            AssistantMessage(
                **own,
                stop_reason="toolUse",
                content=[
                    ThinkingContent(thinking="Read both.", thinking_signature=SIG_A),
                    TextContent(text="Reading.", text_signature=SIG_B),
                    ToolCall(
                        id="c1", name="read", arguments={"path": "a.png"}, thought_signature=SIG_A
                    ),
                    ToolCall(id="c2", name="read", arguments={"path": "missing"}),
                ],
            ),
            ToolResultMessage(tool_call_id="c1", tool_name="read", content=[image]),
            ToolResultMessage(
                tool_call_id="c2",
                tool_name="read",
                content=[TextContent(text="No such file")],
                is_error=True,
            ),
            # Another provider's turn: thinking becomes text and no signature is sent.
            AssistantMessage(
                api="anthropic-messages",
                provider="anthropic",
                model="claude",
                stop_reason="toolUse",
                content=[
                    ThinkingContent(thinking="Hmm.", thinking_signature="anthropic-sig"),
                    ToolCall(id="toolu_1", name="read", arguments={"path": "b"}),
                ],
            ),
            ToolResultMessage(tool_call_id="toolu_1", tool_name="read", content=[]),
            # An aborted turn is not replayed.
            AssistantMessage(**own, stop_reason="aborted", content=[TextContent(text="Wai")]),
            UserMessage(content="Thanks"),
        ],
    )
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks([chunk({"text": "ok"}, finish="STOP")])))
        model = make_model(server, reasoning=True)
        await run(model, context, temperature=0.1)
    body = server.requests[0].json()
    inline = {"inlineData": {"mimeType": "image/png", "data": "aGVsbG8="}}
    assert body["systemInstruction"] == {"parts": [{"text": "You are terse."}]}
    assert body["generationConfig"] == {"temperature": 0.1}
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "read",
                    "description": "Read a file",
                    "parametersJsonSchema": {
                        "type": "object",
                        "properties": {"path": {"type": "string"}},
                    },
                }
            ]
        }
    ]
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "What is in this?"}, inline]},
        {
            "role": "model",
            "parts": [
                {"thought": True, "text": "Read both.", "thoughtSignature": SIG_A},
                {"text": "Reading.", "thoughtSignature": SIG_B},
                {
                    "functionCall": {"name": "read", "args": {"path": "a.png"}},
                    "thoughtSignature": SIG_A,
                },
                {"functionCall": {"name": "read", "args": {"path": "missing"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "read",
                        "response": {"output": "(see attached image)"},
                    }
                },
                inline,
                {"functionResponse": {"name": "read", "response": {"error": "No such file"}}},
            ],
        },
        {
            "role": "model",
            "parts": [{"text": "Hmm."}, {"functionCall": {"name": "read", "args": {"path": "b"}}}],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "read", "response": {"output": ""}}}],
        },
        {"role": "user", "parts": [{"text": "Thanks"}]},
    ]


async def test_replayed_reply_round_trips_signatures() -> None:
    body = sse_chunks(
        [
            chunk({"text": "Plan.", "thought": True, "thoughtSignature": SIG_A}),
            chunk(
                {
                    "functionCall": {"name": "read", "args": {"path": "x"}},
                    "thoughtSignature": SIG_B,
                },
                finish="STOP",
            ),
        ]
    )
    async with LoopbackServer() as server:
        server.add(Reply.sse(body), Reply.sse(sse_chunks([chunk({"text": "x"}, finish="STOP")])))
        model = make_model(server, reasoning=True)
        _, reply = await run(model)
        call = reply.tool_calls[0]
        result = ToolResultMessage(
            tool_call_id=call.id, tool_name="read", content=[TextContent(text="X")]
        )
        follow_up = Context(messages=[UserMessage(content="go"), reply, result])
        await run(model, follow_up)
        # The same reply sent to another Gemini model carries no signatures.
        server.add(Reply.sse(sse_chunks([chunk({"text": "y"}, finish="STOP")])))
        await run(make_model(server, id="gemini-other"), follow_up)
    own_turn = server.requests[1].json()["contents"][1]
    assert own_turn == {
        "role": "model",
        "parts": [
            {"thought": True, "text": "Plan.", "thoughtSignature": SIG_A},
            {"functionCall": {"name": "read", "args": {"path": "x"}}, "thoughtSignature": SIG_B},
        ],
    }
    foreign_turn = server.requests[2].json()["contents"][1]
    assert foreign_turn == {
        "role": "model",
        "parts": [{"text": "Plan."}, {"functionCall": {"name": "read", "args": {"path": "x"}}}],
    }


def test_thinking_config() -> None:
    plain = Model(id="g", api="google-generative-ai", provider="google", max_tokens=20_000)
    thinker = plain.model_copy(update={"reasoning": True})
    gemini_3 = thinker.model_copy(
        update={
            "thinking_level_map": {"minimal": "low", "low": "low", "medium": "high", "high": "high"}
        }
    )
    assert thinking_config(plain, StreamOptions(reasoning="high", max_tokens=100)) == (None, 100)
    assert thinking_config(thinker, StreamOptions(max_tokens=100)) == (None, 100)
    assert thinking_config(thinker, StreamOptions(reasoning="xhigh")) == (
        {"thinkingBudget": 16384, "includeThoughts": True},
        None,
    )
    custom = StreamOptions(reasoning="low", thinking_budgets={"low": 500}, max_tokens=1000)
    assert thinking_config(thinker, custom) == (
        {"thinkingBudget": 500, "includeThoughts": True},
        1500,
    )
    # The output limit is capped by the model; the budget shrinks to leave room for the answer.
    tight = StreamOptions(reasoning="high", max_tokens=10_000)
    assert thinking_config(thinker, tight) == (
        {"thinkingBudget": 16384, "includeThoughts": True},
        20_000,
    )
    tiny = thinker.model_copy(update={"max_tokens": 4096})
    assert thinking_config(tiny, tight) == ({"thinkingBudget": 3072, "includeThoughts": True}, 4096)
    assert thinking_config(gemini_3, StreamOptions(reasoning="medium")) == (
        {"thinkingLevel": "high", "includeThoughts": True},
        None,
    )
