"""The ``anthropic-messages`` provider over a real loopback socket: request shape, stream parsing,
errors, retries and aborts (the llama.cpp variant of the protocol included)."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
from typing import Any

import pytest

from pi_notebook.ai import (
    AbortController,
    AssistantMessage,
    AssistantMessageEventStream,
    Context,
    ImageContent,
    MessageBuilder,
    Model,
    ModelCost,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    stream,
)
from pi_notebook.ai.overflow import is_context_overflow
from pi_notebook.ai.providers.anthropic_messages import AnthropicStreamParser
from pi_notebook.ai.providers.anthropic_request import (
    convert_messages,
    messages_url,
    normalize_tool_call_id,
    thinking_budget,
)
from tests.loopback import LoopbackServer, Reply, sse_chunks

KEY = "sk-ant-api03-secret-test-key"
MODEL = Model(
    id="claude-test",
    api="anthropic-messages",
    provider="anthropic",
    reasoning=True,
    input=["text", "image"],
    cost=ModelCost(input=3, output=15, cache_read=0.3, cache_write=3.75),
    context_window=200_000,
    max_tokens=64_000,
)
CTX = Context(system_prompt="Be brief.", messages=[UserMessage(content="hi")])


# --- wire fixtures -------------------------------------------------------------------------------


def message_start(
    input_tokens: int = 10, cache_read: int = 0, cache_write: int = 0, *, slim: bool = False
) -> dict[str, Any]:
    usage: dict[str, Any] = {"input_tokens": input_tokens, "output_tokens": 1}
    if not slim:
        usage |= {
            "cache_creation_input_tokens": cache_write,
            "cache_read_input_tokens": cache_read,
            "cache_creation": {"ephemeral_5m_input_tokens": cache_write},
            "service_tier": "standard",
        }
    message = {
        "id": "chatcmpl-7" if slim else "msg_01abc",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    return {"type": "message_start", "message": message}


def start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: int, payload: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": payload}


def text(index: int, value: str) -> dict[str, Any]:
    return delta(index, {"type": "text_delta", "text": value})


def args(index: int, fragment: str) -> dict[str, Any]:
    return delta(index, {"type": "input_json_delta", "partial_json": fragment})


def stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def message_delta(reason: str | None, output_tokens: int = 5, **usage: int) -> dict[str, Any]:
    return {
        "type": "message_delta",
        "delta": {"stop_reason": reason, "stop_sequence": None},
        "usage": {"output_tokens": output_tokens, **usage},
    }


MESSAGE_STOP = {"type": "message_stop"}
PING = {"type": "ping"}
TEXT_START = {"type": "text", "text": ""}


def text_reply(*parts: str, reason: str = "end_turn") -> list[dict[str, Any]]:
    return [
        message_start(),
        start(0, TEXT_START),
        *[text(0, p) for p in parts],
        stop(0),
        message_delta(reason),
        MESSAGE_STOP,
    ]


def wire(events: list[dict[str, Any]]) -> bytes:
    return b"".join(sse_chunks(events, event_names=True))


def split_randomly(data: bytes, seed: int, max_size: int = 9) -> list[bytes]:
    rng = random.Random(seed)
    chunks, i = [], 0
    while i < len(data):
        size = rng.randint(1, max_size)
        chunks.append(data[i : i + size])
        i += size
    return chunks


async def run(
    server: LoopbackServer, context: Context = CTX, model: Model = MODEL, **options: Any
) -> tuple[list[Any], AssistantMessage]:
    options.setdefault("api_key", KEY)
    s = stream(model.model_copy(update={"base_url": server.url}), context, **options)
    events = [e async for e in s]
    return events, await s.result()


def types(events: list[Any]) -> list[str]:
    return [e.type for e in events]


# --- replies -------------------------------------------------------------------------------------


async def test_text_reply_request_headers_and_usage() -> None:
    async with LoopbackServer() as server:
        events = [
            message_start(input_tokens=100, cache_read=50, cache_write=20),
            PING,
            start(0, TEXT_START),
            text(0, "Hello"),
            text(0, ", world"),
            stop(0),
            message_delta("end_turn", output_tokens=30, input_tokens=100),
            MESSAGE_STOP,
        ]
        server.add(Reply.sse(sse_chunks(events, event_names=True)))
        received, message = await run(server)
    assert types(received) == [
        "start",
        "text_start",
        "text_delta",
        "text_delta",
        "text_end",
        "done",
    ]
    assert message.text == "Hello, world" and message.stop_reason == "stop"
    assert message.response_id == "msg_01abc" and message.response_model is None
    assert (message.api, message.provider, message.model) == (
        "anthropic-messages",
        "anthropic",
        "claude-test",
    )
    # message_delta usage is cumulative: input is overwritten, never summed
    usage = message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (100, 30, 50, 20)
    assert usage.total_tokens == 200
    assert usage.cost.total == pytest.approx((100 * 3 + 30 * 15 + 50 * 0.3 + 20 * 3.75) / 1e6)
    request = server.requests[0]
    assert (request.method, request.path) == ("POST", "/v1/messages")
    assert request.headers["x-api-key"] == KEY and "authorization" not in request.headers
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.headers["anthropic-beta"] == "fine-grained-tool-streaming-2025-05-14"
    assert request.json()["stream"] is True


async def test_thinking_with_signature_then_text() -> None:
    signature = "EqQBCkYIBRgCKkB+/sig==" * 3
    events = [
        message_start(),
        start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(0, {"type": "thinking_delta", "thinking": "Let me "}),
        delta(0, {"type": "thinking_delta", "thinking": "think."}),
        delta(0, {"type": "signature_delta", "signature": signature[:20]}),
        delta(0, {"type": "signature_delta", "signature": signature[20:]}),
        stop(0),
        start(1, TEXT_START),
        text(1, "42"),
        stop(1),
        message_delta("end_turn"),
        MESSAGE_STOP,
    ]
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks(events, event_names=True)))
        received, message = await run(server, reasoning="medium")
    assert types(received)[:5] == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_delta",
        "thinking_end",
    ]
    thinking, answer = message.content
    assert isinstance(thinking, ThinkingContent) and isinstance(answer, TextContent)
    assert thinking.thinking == "Let me think." and thinking.thinking_signature == signature
    assert answer.text == "42"
    beta = server.requests[0].headers["anthropic-beta"].split(",")
    assert "interleaved-thinking-2025-05-14" in beta


async def test_redacted_thinking_keeps_its_data_as_signature() -> None:
    events = [
        message_start(),
        start(0, {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}),
        stop(0),
        start(1, TEXT_START),
        text(1, "ok"),
        stop(1),
        message_delta("end_turn"),
        MESSAGE_STOP,
    ]
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks(events, event_names=True)))
        received, message = await run(server)
    assert types(received)[1:3] == ["thinking_start", "thinking_end"]
    redacted = message.content[0]
    assert isinstance(redacted, ThinkingContent) and redacted.redacted is True
    assert redacted.thinking_signature == "EmwKAhgBEgy3va3pzix/LafPsn4a"
    assert redacted.thinking == "[Reasoning redacted]"
    assert message.text == "ok"


def fragments(raw: str, seed: int) -> list[str]:
    rng = random.Random(seed)
    out, i = [""], 0  # the first delta may be empty
    while i < len(raw):
        size = rng.randint(1, 4)
        out.append(raw[i : i + size])
        i += size
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_parallel_tool_calls_with_fragments_split_anywhere(seed: int) -> None:
    first = {"path": 'dir/"quoted" caf\u00e9 \\ tab\t.txt', "lines": [1, 2]}
    second = {"query": "emoji \U0001f600 and \u00e9", "limit": None}
    # ensure_ascii gives \u escapes that the random fragments split in the middle
    raw_first, raw_second = json.dumps(first), json.dumps(second, ensure_ascii=False)
    events = [
        message_start(),
        start(0, TEXT_START),
        text(0, "Using two tools."),
        stop(0),
        start(1, {"type": "tool_use", "id": "toolu_01", "name": "read", "input": {}}),
        start(2, {"type": "tool_use", "id": "toolu_02", "name": "search", "input": {}}),
    ]
    pending = [(1, f) for f in fragments(raw_first, seed)] + [
        (2, f) for f in fragments(raw_second, seed + 10)
    ]
    # interleave the two calls' fragments, each call's order kept
    rng = random.Random(seed)
    ones = [p for p in pending if p[0] == 1]
    twos = [p for p in pending if p[0] == 2]
    while ones or twos:
        source = ones if (ones and (not twos or rng.random() < 0.5)) else twos
        index, fragment = source.pop(0)
        events.append(args(index, fragment))
    events += [stop(1), stop(2), message_delta("tool_use"), MESSAGE_STOP]
    async with LoopbackServer() as server:
        server.add(Reply.sse(split_randomly(wire(events), seed)))
        received, message = await run(server)
    assert message.stop_reason == "toolUse"
    calls = message.tool_calls
    assert [(c.id, c.name) for c in calls] == [("toolu_01", "read"), ("toolu_02", "search")]
    assert calls[0].arguments == first and calls[1].arguments == second
    assert all(c.parse_error is None for c in calls)
    streamed = {1: "", 2: ""}
    for event in received:
        if event.type == "toolcall_delta":
            streamed[event.content_index] += event.delta
    assert streamed == {1: raw_first, 2: raw_second}
    ends = [e for e in received if e.type == "toolcall_end"]
    assert [e.tool_call.arguments for e in ends] == [first, second]


async def test_tool_without_arguments_has_empty_input() -> None:
    events = [
        message_start(),
        start(0, {"type": "tool_use", "id": "toolu_9", "name": "now", "input": {}}),
        stop(0),
        message_delta("tool_use"),
        MESSAGE_STOP,
    ]
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks(events, event_names=True)))
        received, message = await run(server)
    assert types(received) == ["start", "toolcall_start", "toolcall_end", "done"]
    assert message.tool_calls == [ToolCall(id="toolu_9", name="now", arguments={})]
    assert message.stop_reason == "toolUse"


async def test_invalid_final_tool_json_sets_parse_error_and_ends_normally() -> None:
    events = [
        message_start(),
        start(0, {"type": "tool_use", "id": "toolu_1", "name": "write", "input": {}}),
        args(0, '{"path": "a.txt", "content": "cut off by max_tok'),
        stop(0),
        message_delta("max_tokens"),
        MESSAGE_STOP,
    ]
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks(events, event_names=True)))
        received, message = await run(server)
    assert received[-1].type == "done" and message.stop_reason == "length"
    call = message.tool_calls[0]
    assert call.parse_error is not None and "invalid JSON" in call.parse_error
    assert call.raw_arguments == '{"path": "a.txt", "content": "cut off by max_tok'
    assert call.arguments.get("path") == "a.txt"


async def test_ping_unknown_events_and_server_tool_blocks_are_skipped() -> None:
    events = [
        PING,
        message_start(),
        {"type": "brand_new_event", "index": 0, "payload": [1, 2]},
        start(0, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search"}),
        args(0, '{"query": "x"}'),
        stop(0),
        start(1, {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}),
        stop(1),
        PING,
        start(2, {"type": "text", "text": "", "citations": None}),
        text(2, "Found it."),
        delta(2, {"type": "citations_delta", "citation": {"type": "web_search_result_location"}}),
        stop(2),
        message_delta("end_turn"),
        PING,
        MESSAGE_STOP,
    ]
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks(events, event_names=True)))
        received, message = await run(server)
    assert types(received) == ["start", "text_start", "text_delta", "text_end", "done"]
    assert received[1].content_index == 0
    assert message.content == [TextContent(text="Found it.")]


@pytest.mark.parametrize("seed", range(4))
async def test_event_and_data_lines_split_across_chunks_with_crlf(seed: int) -> None:
    events = text_reply("caf\u00e9 ", "\u2028line\u2029", " \U0001f600 done")
    data = wire(events).replace(b"\n", b"\r\n")
    chunks = split_randomly(data, seed, max_size=5)
    # and one split exactly between CR and LF
    cr = data.index(b"\r\n") + 1
    chunks = [data[:cr], data[cr : cr + 3], *split_randomly(data[cr + 3 :], seed, max_size=5)]
    async with LoopbackServer() as server:
        server.add(Reply.sse(chunks))
        _received, message = await run(server)
    assert message.stop_reason == "stop"
    assert message.text == "caf\u00e9 \u2028line\u2029 \U0001f600 done"


async def test_events_without_event_lines_and_type_only_in_event_line() -> None:
    # dispatch is on the JSON type; a payload without a type borrows the event: name
    chunks = [
        b"data: " + json.dumps(message_start()).encode() + b"\n\n",
        b"event: content_block_start\ndata: "
        + json.dumps({"index": 0, "content_block": TEXT_START}).encode()
        + b"\n\n",
        b"event: ping\ndata: " + json.dumps(text(0, "x")).encode() + b"\n\n",
        *sse_chunks([stop(0), message_delta("end_turn"), MESSAGE_STOP]),
    ]
    async with LoopbackServer() as server:
        server.add(Reply.sse(chunks))
        _received, message = await run(server)
    assert message.text == "x" and message.stop_reason == "stop"


async def test_error_event_after_200_keeps_partial_content() -> None:
    events = [
        message_start(input_tokens=42),
        start(0, TEXT_START),
        text(0, "Partial answ"),
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    ]
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks(events, event_names=True), hang=True))
        received, message = await run(server)
    assert received[-1].type == "error" and received[-1].reason == "error"
    assert message.stop_reason == "error"
    assert message.error_message == "Overloaded (overloaded_error)"
    assert message.text == "Partial answ" and message.usage.input == 42
    assert len(server.requests) == 1  # not retried: content was already streamed


@pytest.mark.parametrize("truncate", [True, False])
async def test_stream_ending_before_message_stop_is_an_error(truncate: bool) -> None:
    events = [message_start(input_tokens=7), start(0, TEXT_START), text(0, "Half a sen")]
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks(events, event_names=True), truncate=truncate))
        received, message = await run(server)
    assert received[-1].type == "error" and message.stop_reason == "error"
    assert message.error_message is not None and "truncated" in message.error_message
    assert message.text == "Half a sen" and message.usage.input == 7


async def test_overloaded_529_is_retried_then_succeeds() -> None:
    async with LoopbackServer() as server:
        overloaded = {
            "type": "error",
            "error": {"type": "overloaded_error", "message": "Overloaded"},
            "request_id": "req_1",
        }
        server.add(
            Reply.json(529, overloaded, headers={"retry-after-ms": "10"}),
            Reply.sse(sse_chunks(text_reply("after retry"), event_names=True)),
        )
        _received, message = await run(server)
    assert message.text == "after retry" and message.stop_reason == "stop"
    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body


async def test_401_is_not_retried_and_the_key_is_redacted() -> None:
    body = {
        "type": "error",
        "error": {"type": "authentication_error", "message": f"invalid x-api-key {KEY}"},
    }
    async with LoopbackServer() as server:
        server.add(Reply.json(401, body))
        received, message = await run(server)
    assert types(received) == ["error"]
    assert len(server.requests) == 1
    error = message.error_message or ""
    assert error.startswith("HTTP 401: invalid x-api-key")
    assert "authentication_error" in error and "check the API key" in error
    assert KEY not in error


async def test_abort_mid_stream_disconnects_and_keeps_partial() -> None:
    controller = AbortController()
    events = [message_start(input_tokens=12), start(0, TEXT_START), text(0, "Once upon")]
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks(events, event_names=True), hang=True))
        s = stream(
            MODEL.model_copy(update={"base_url": server.url}),
            CTX,
            api_key=KEY,
            signal=controller.signal,
        )
        seen = []
        async for event in s:
            seen.append(event.type)
            if event.type == "text_delta":
                controller.abort()
        message = await s.result()
        await asyncio.wait_for(server.disconnected.wait(), timeout=5)
    assert seen[-1] == "error"
    assert message.stop_reason == "aborted" and message.error_message == "Request was aborted"
    assert message.text == "Once upon" and message.usage.input == 12


async def test_missing_api_key_is_an_error_event(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_OAUTH_TOKEN", raising=False)
    s = stream(MODEL.model_copy(update={"base_url": "https://api.anthropic.com"}), CTX)
    events = [e async for e in s]
    assert types(events) == ["error"]
    error = events[0].error.error_message
    assert "No API key" in error and "ANTHROPIC_API_KEY" in error


async def test_key_from_environment_and_oauth_bearer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_OAUTH_TOKEN", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    async with LoopbackServer() as server:
        server.add(
            Reply.sse(sse_chunks(text_reply("a"), event_names=True)),
            Reply.sse(sse_chunks(text_reply("b"), event_names=True)),
        )
        await run(server, api_key=None)
        await run(server, api_key="sk-ant-oat01-token")
    env, oauth = server.requests
    assert env.headers["x-api-key"] == "sk-ant-from-env"
    assert oauth.headers["authorization"] == "Bearer sk-ant-oat01-token"
    assert "x-api-key" not in oauth.headers
    assert "oauth-2025-04-20" in oauth.headers["anthropic-beta"]


async def test_base_url_ending_in_v1_is_accepted() -> None:
    assert messages_url("https://api.anthropic.com") == "https://api.anthropic.com/v1/messages"
    assert messages_url("https://proxy.example/anthropic/v1/") == (
        "https://proxy.example/anthropic/v1/messages"
    )
    assert messages_url("") == "https://api.anthropic.com/v1/messages"
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks(text_reply("ok"), event_names=True)))
        model = MODEL.model_copy(update={"base_url": server.url + "/v1"})
        message = await stream(model, CTX, api_key=KEY).result()
    assert message.text == "ok" and server.requests[0].path == "/v1/messages"


async def test_llama_cpp_variant() -> None:
    # llama.cpp: no input key on tool_use start, no cache fields, chatcmpl ids, no ping
    events = [
        message_start(input_tokens=175, slim=True),
        start(0, {"type": "tool_use", "id": "call_Kx9", "name": "get_weather"}),
        args(0, ""),
        args(0, '{"city"'),
        args(0, ': "Paris"}'),
        stop(0),
        message_delta("tool_use", output_tokens=29),
        MESSAGE_STOP,
    ]
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks(events, event_names=True)))
        local = MODEL.model_copy(update={"provider": "llama.cpp", "cost": ModelCost()})
        # a loopback server needs no key
        _received, message = await run(server, model=local, api_key=None)
    assert message.tool_calls == [
        ToolCall(id="call_Kx9", name="get_weather", arguments={"city": "Paris"})
    ]
    assert message.response_id == "chatcmpl-7"
    assert message.usage.model_dump(exclude={"cost"}) == Usage(
        input=175, output=29, total_tokens=204
    ).model_dump(exclude={"cost"})
    assert "x-api-key" not in server.requests[0].headers


# --- the request body ----------------------------------------------------------------------------

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg"
)


def assistant(*content: Any, stop_reason: str = "toolUse") -> AssistantMessage:
    return AssistantMessage(
        content=list(content),
        api="anthropic-messages",
        provider="anthropic",
        model="claude-test",
        stop_reason=stop_reason,  # type: ignore[arg-type]
    )


CONVERSATION = Context(
    system_prompt="You are helpful.",
    tools=[
        Tool(
            name="read",
            description="Read a file",
            parameters={"type": "object", "properties": {"path": {"type": "string"}}},
        )
    ],
    messages=[
        UserMessage(
            content=[
                TextContent(text="Look at this"),
                ImageContent(data=PNG, mime_type="image/png"),
            ]
        ),
        assistant(
            ThinkingContent(thinking="I should read both.", thinking_signature="sig-1"),
            ThinkingContent(
                thinking="[Reasoning redacted]", thinking_signature="opaque", redacted=True
            ),
            TextContent(text="Reading."),
            TextContent(text="  "),
            ToolCall(id="toolu_a", name="read", arguments={"path": "a.txt"}),
            ToolCall(id="toolu_b", name="read", arguments={"path": "b.png"}),
        ),
        ToolResultMessage(
            tool_call_id="toolu_a", tool_name="read", content=[TextContent(text="alpha")]
        ),
        ToolResultMessage(
            tool_call_id="toolu_b",
            tool_name="read",
            content=[ImageContent(data=PNG, mime_type="image/png")],
            is_error=True,
        ),
        UserMessage(content="Also: be quick."),
        UserMessage(content=""),
    ],
)


async def request_body(context: Context, model: Model = MODEL, **options: Any) -> dict[str, Any]:
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks(text_reply("ok"), event_names=True)))
        _received, message = await run(server, context, model, **options)
    assert message.stop_reason == "stop", message.error_message
    body: dict[str, Any] = server.requests[0].json()
    return body


async def test_request_body_messages_system_tools_and_cache_breakpoints() -> None:
    body = await request_body(CONVERSATION, temperature=0.2, metadata={"user_id": "u-1"})
    ephemeral = {"type": "ephemeral"}
    assert body["model"] == "claude-test" and body["stream"] is True
    assert body["max_tokens"] == 64_000 // 3
    assert body["temperature"] == 0.2 and "thinking" not in body
    assert body["metadata"] == {"user_id": "u-1"}
    assert body["system"] == [
        {"type": "text", "text": "You are helpful.", "cache_control": ephemeral}
    ]
    assert body["tools"] == [
        {
            "name": "read",
            "description": "Read a file",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
        }
    ]
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Look at this"}, image]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "I should read both.", "signature": "sig-1"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_a", "name": "read", "input": {"path": "a.txt"}},
                {"type": "tool_use", "id": "toolu_b", "name": "read", "input": {"path": "b.png"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_a",
                    "is_error": False,
                    "content": "alpha",
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_b",
                    "is_error": True,
                    "content": [image],
                },
                {"type": "text", "text": "Also: be quick.", "cache_control": ephemeral},
            ],
        },
    ]
    roles = [m["role"] for m in body["messages"]]
    assert all(a != b for a, b in itertools.pairwise(roles))


async def test_steering_after_tool_results_and_long_cache_retention() -> None:
    context = Context(
        messages=[
            UserMessage(content="go"),
            assistant(ToolCall(id="t1", name="f", arguments={})),
            ToolResultMessage(tool_call_id="t1", tool_name="f", content=[TextContent(text="r")]),
            UserMessage(content="steering note"),
        ]
    )
    body = await request_body(context, cache_retention="long")
    assert "system" not in body
    last = body["messages"][-1]["content"]
    assert [b["type"] for b in last] == ["tool_result", "text"]
    assert last[-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert "cache_control" not in last[0]


def test_tool_result_blocks_open_the_merged_user_turn() -> None:
    messages: list[Any] = [
        assistant(ToolCall(id="t1", name="f", arguments={})),
        UserMessage(content="typed while the tool ran"),
        ToolResultMessage(tool_call_id="t1", tool_name="f", content=[]),
    ]
    turns = convert_messages(messages)
    assert [t["role"] for t in turns] == ["assistant", "user"]
    assert turns[1]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "is_error": False},
        {"type": "text", "text": "typed while the tool ran"},
    ]


async def test_replay_of_another_models_turn() -> None:
    # foreign thinking becomes text, foreign tool-call ids are normalised on call and result
    foreign = AssistantMessage(
        content=[
            ThinkingContent(thinking="hmm", thinking_signature='{"id": "rs_1"}'),
            ToolCall(id="call_1|fc_" + "x" * 80, name="f", arguments={"a": 1}),
        ],
        api="openai-responses",
        provider="openai",
        model="gpt-5",
        stop_reason="toolUse",
    )
    call_id = foreign.tool_calls[0].id
    context = Context(
        messages=[
            UserMessage(content="go"),
            foreign,
            ToolResultMessage(tool_call_id=call_id, tool_name="f", content=[TextContent(text="1")]),
        ]
    )
    body = await request_body(context)
    replayed, answer = body["messages"][1]["content"], body["messages"][2]["content"]
    assert replayed[0] == {"type": "text", "text": "hmm"}
    new_id = replayed[1]["id"]
    assert new_id == normalize_tool_call_id(call_id) and len(new_id) <= 64
    assert answer[0]["tool_use_id"] == new_id


async def test_cache_retention_none_sends_no_cache_control() -> None:
    body = await request_body(CTX, cache_retention="none")
    assert "cache_control" not in json.dumps(body)


async def test_thinking_budget_in_the_body_and_no_temperature() -> None:
    body = await request_body(CTX, reasoning="medium", temperature=0.5, max_tokens=4000)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert body["max_tokens"] == 4000 + 8192
    assert "temperature" not in body
    # xhigh clamps to high; the sum is capped by the model's limit
    body = await request_body(CTX, reasoning="xhigh", max_tokens=60_000)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 16384}
    assert body["max_tokens"] == 64_000
    # models that cannot think get no thinking block (and keep their temperature)
    plain = MODEL.model_copy(update={"reasoning": False})
    body = await request_body(CTX, plain, reasoning="high", temperature=0.5)
    assert "thinking" not in body and body["temperature"] == 0.5
    custom = await request_body(CTX, thinking_budgets={"low": 3000}, reasoning="low")
    assert custom["thinking"]["budget_tokens"] == 3000


def test_thinking_budget_math() -> None:
    assert thinking_budget("minimal", 1000, 64_000) == (2024, 1024)
    assert thinking_budget("low", 1000, 64_000) == (3048, 2048)
    assert thinking_budget("high", 60_000, 64_000) == (64_000, 16384)
    assert thinking_budget("xhigh", 1000, 64_000) == thinking_budget("high", 1000, 64_000)
    # the model's limit leaves no room beyond the budget: keep 1024 tokens for the answer
    assert thinking_budget("high", 8000, 8192) == (8192, 8192 - 1024)
    assert thinking_budget("medium", 100, 512) == (512, 0)
    assert thinking_budget("low", 1000, 64_000, {"low": 4096}) == (5096, 4096)
    with pytest.raises(ValueError, match="off"):
        thinking_budget("off", 1000, 64_000)


def test_tool_call_ids_are_normalised() -> None:
    assert normalize_tool_call_id("toolu_01-ABC") == "toolu_01-ABC"
    assert normalize_tool_call_id("call_1|fc_2.x") == "call_1_fc_2_x"
    assert normalize_tool_call_id("") == "_"
    long_a, long_b = "a" * 70 + "1", "a" * 70 + "2"
    na, nb = normalize_tool_call_id(long_a), normalize_tool_call_id(long_b)
    assert len(na) == len(nb) == 64 and na != nb
    assert na == normalize_tool_call_id(long_a)


# --- the parser alone (no I/O) -------------------------------------------------------------------


async def parse(events: list[dict[str, Any]]) -> AssistantMessage:
    out = AssistantMessageEventStream()
    parser = AnthropicStreamParser(MessageBuilder(MODEL, out))
    for event in events:
        parser.feed(event)
    parser.finish()
    assert parser.finished
    return await out.result()


@pytest.mark.parametrize(
    ("reason", "stop_reason", "fragment"),
    [
        ("end_turn", "stop", None),
        ("pause_turn", "stop", None),
        ("stop_sequence", "stop", None),
        ("max_tokens", "length", None),
        ("tool_use", "toolUse", None),
        ("refusal", "error", "refused"),
        ("sensitive", "error", "safety"),
        ("model_context_window_exceeded", "error", "exceeds the context window"),
        ("something_new", "error", "something_new"),
    ],
)
async def test_stop_reason_mapping(reason: str, stop_reason: str, fragment: str | None) -> None:
    message = await parse(text_reply("partial", reason=reason))
    assert message.stop_reason == stop_reason and message.text == "partial"
    if fragment is None:
        assert message.error_message is None
    else:
        assert fragment in (message.error_message or "")


async def test_malformed_events_become_an_error() -> None:
    message = await parse([message_start(), {"type": "content_block_start", "index": 0}])
    assert message.stop_reason == "error"
    assert "Malformed 'content_block_start'" in (message.error_message or "")
    out = AssistantMessageEventStream()
    parser = AnthropicStreamParser(MessageBuilder(MODEL, out))
    parser.feed_data('{"type": "message_start", "mess')
    assert parser.finished
    assert "Invalid JSON" in ((await out.result()).error_message or "")


async def test_events_after_the_end_are_ignored_and_missing_stop_reason_is_stop() -> None:
    events = [message_start(), start(0, TEXT_START), text(0, "a"), stop(0), MESSAGE_STOP]
    message = await parse([*events, start(1, TEXT_START), text(1, "late")])
    assert message.stop_reason == "stop" and message.text == "a"


async def test_context_overflow_errors_are_recognisable() -> None:
    too_long = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 213462 tokens > 200000 maximum",
        },
    }
    async with LoopbackServer() as server:
        server.add(Reply.json(400, too_long))
        _received, rejected = await run(server)
    assert len(server.requests) == 1 and rejected.error_message is not None
    assert rejected.error_message.startswith("HTTP 400: prompt is too long")
    cut_off = await parse(text_reply("partial", reason="model_context_window_exceeded"))
    assert is_context_overflow(rejected) and is_context_overflow(cut_off)


THINKING_START = {"type": "thinking", "thinking": ""}
TEXT_DELTA_X = {"type": "text_delta", "text": "x"}

ODD_DELTAS: dict[str, list[dict[str, Any]]] = {
    "plain": [text(0, "a"), text(0, ""), text(0, "é😀")],
    "into a thinking block": [delta(1, {"type": "text_delta", "text": "x"})],
    "unknown index": [text(7, "x"), text(-1, "x")],
    "bool index": [{"type": "content_block_delta", "index": True, "delta": TEXT_DELTA_X}],
    "float index": [{"type": "content_block_delta", "index": 0.0, "delta": TEXT_DELTA_X}],
    "text not a string": [delta(0, {"type": "text_delta", "text": 5})],
    "text missing": [delta(0, {"type": "text_delta"})],
    "delta not an object": [{"type": "content_block_delta", "index": 0, "delta": "x"}],
    "index missing": [{"type": "content_block_delta", "delta": TEXT_DELTA_X}],
    "extra fields": [{**text(0, "b"), "extra": {"n": 1}}],
}


@pytest.mark.parametrize("case", list(ODD_DELTAS))
async def test_json_text_gives_the_events_parsed_dicts_give(case: str) -> None:
    """``feed_data`` takes a text delta on a short path; whatever the delta looks like, the events
    and the reply are those of the general path (``feed`` on the parsed event)."""
    events = [
        message_start(),
        start(0, TEXT_START),
        start(1, THINKING_START),
        *ODD_DELTAS[case],
        text(0, "z"),
        stop(0),
        stop(1),
        message_delta("end_turn"),
        MESSAGE_STOP,
    ]

    async def dumped(feed_json: bool) -> list[Any]:
        out = AssistantMessageEventStream()
        parser = AnthropicStreamParser(MessageBuilder(MODEL, out))
        for event in events:
            if feed_json:
                parser.feed_data(json.dumps(event), str(event.get("type", "")))
            else:
                parser.feed(event)
        parser.finish()
        received = [e async for e in out]
        reply = (await out.result()).model_dump(mode="json", exclude={"timestamp"})
        fields = {"partial", "message", "error"}
        return [*(e.model_dump(mode="json", exclude=fields) for e in received), reply]

    general, short = await dumped(False), await dumped(True)
    assert short == general
    reply = general[-1]
    if reply["stop_reason"] == "error":  # a delta that breaks the rules ends the reply
        assert reply["error_message"].startswith("Malformed 'content_block_delta'")
    else:  # the others are applied or skipped, and the stream goes on
        assert reply["stop_reason"] == "stop" and reply["content"][0]["text"].endswith("z")
