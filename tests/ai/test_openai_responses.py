"""The OpenAI Responses provider over a real loopback socket: every event kind, errors, retries,
abort, llama.cpp's slim events, and the request body of a multi-turn conversation."""

from __future__ import annotations

import asyncio
import itertools
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
from pi_notebook.ai.events import (
    AssistantMessageEvent,
    ThinkingDeltaEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
)
from tests.loopback import LoopbackServer, Reply, sse_chunks

KEY = "sk-test-secret-4242"
CTX = Context(system_prompt="Be brief.", messages=[UserMessage(content="hi")])


def make_model(server: LoopbackServer, **fields: Any) -> Model:
    values: dict[str, Any] = {
        "id": "gpt-test",
        "api": "openai-responses",
        "provider": "openai",
        "base_url": server.url + "/v1",
        "input": ["text", "image"],
        "cost": ModelCost(input=2, output=8, cache_read=0.5),
        **fields,
    }
    return Model(**values)


_sequence = itertools.count()


def ev(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "sequence_number": next(_sequence), **fields}


def created(response_id: str = "resp_1") -> list[dict[str, Any]]:
    response = {"id": response_id, "object": "response", "status": "in_progress"}
    return [
        ev("response.created", response=response),
        ev("response.in_progress", response=response),
    ]


def completed(
    output: list[dict[str, Any]] | None = None,
    *,
    status: str = "completed",
    kind: str = "response.completed",
    usage: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    response = {
        "id": "resp_1",
        "status": status,
        "output": output or [],
        "usage": usage
        or {
            "input_tokens": 100,
            "input_tokens_details": {"cached_tokens": 40},
            "output_tokens": 20,
            "output_tokens_details": {"reasoning_tokens": 5},
            "total_tokens": 120,
        },
        **extra,
    }
    return ev(kind, response=response)


def message_events(item_id: str, pieces: list[str], index: int = 0) -> list[dict[str, Any]]:
    text = "".join(pieces)
    part = {"type": "output_text", "text": text, "annotations": []}
    item = {"id": item_id, "type": "message", "role": "assistant", "status": "completed"}
    keys = {"item_id": item_id, "output_index": index, "content_index": 0}
    return [
        ev("response.output_item.added", output_index=index, item={**item, "content": []}),
        ev("response.content_part.added", **keys, part={**part, "text": ""}),
        *[ev("response.output_text.delta", **keys, delta=p, logprobs=[]) for p in pieces],
        ev("response.output_text.done", **keys, text=text),
        ev("response.content_part.done", **keys, part=part),
        ev("response.output_item.done", output_index=index, item={**item, "content": [part]}),
    ]


async def run(
    model: Model, context: Context = CTX, **options: Any
) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    s = stream(model, context, api_key=KEY, **options)
    events = [e async for e in s]
    return events, await s.result()


async def test_text_reply_usage_and_request() -> None:
    async with LoopbackServer() as server:
        wire = [*created(), *message_events("msg_1", ["Hel", "lo ", "wörld"]), completed()]
        joined = b"".join(
            f"event: {e['type']}\ndata: {json.dumps(e, ensure_ascii=False)}\n\n".encode()
            for e in wire
        )
        # Split the network chunks inside a JSON object and inside a multi-byte character.
        cut = joined.index("ö".encode()) + 1
        server.add(Reply.sse([joined[:57], joined[57:cut], joined[cut:]]))
        events, result = await run(make_model(server), max_tokens=500, session_id="sess-9")
    assert [e.type for e in events] == [
        "start",
        "text_start",
        "text_delta",
        "text_delta",
        "text_delta",
        "text_end",
        "done",
    ]
    assert result.stop_reason == "stop" and result.response_id == "resp_1"
    assert result.content == [
        TextContent(text="Hello wörld", text_signature='{"v":1,"id":"msg_1"}')
    ]
    usage = result.usage
    assert (usage.input, usage.cache_read, usage.output, usage.total_tokens) == (60, 40, 20, 120)
    assert usage.cost.total == pytest.approx((60 * 2 + 20 * 8 + 40 * 0.5) / 1e6)

    request = server.requests[0]
    assert request.path == "/v1/responses"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.json() == {
        "model": "gpt-test",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        "stream": True,
        "store": False,
        "instructions": "Be brief.",
        "max_output_tokens": 500,
        "prompt_cache_key": "sess-9",
    }


async def test_reasoning_summary_parts_and_replay_signature() -> None:
    reasoning = {
        "id": "rs_1",
        "type": "reasoning",
        "summary": [
            {"type": "summary_text", "text": "First, think."},
            {"type": "summary_text", "text": "Then answer."},
        ],
        "encrypted_content": "gAAAA-opaque",
    }
    keys = {"item_id": "rs_1", "output_index": 0}
    events = [
        *created(),
        ev("response.output_item.added", output_index=0, item={**reasoning, "summary": []}),
        ev("response.reasoning_summary_part.added", **keys, summary_index=0, part={}),
        ev("response.reasoning_summary_text.delta", **keys, summary_index=0, delta="First, "),
        ev("response.reasoning_summary_text.delta", **keys, summary_index=0, delta="think."),
        ev("response.reasoning_summary_part.done", **keys, summary_index=0, part={}),
        ev("response.reasoning_summary_part.added", **keys, summary_index=1, part={}),
        ev("response.reasoning_summary_text.delta", **keys, summary_index=1, delta="Then answer."),
        ev("response.output_item.done", output_index=0, item=reasoning),
        *message_events("msg_2", ["42"], index=1),
        completed(),
    ]
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks(events, event_names=True)))
        model = make_model(server, reasoning=True)
        streamed, result = await run(model, reasoning="high")
    deltas = [e.delta for e in streamed if isinstance(e, ThinkingDeltaEvent)]
    assert deltas == ["First, ", "think.", "\n\n", "Then answer."]
    thinking, text = result.content
    assert isinstance(thinking, ThinkingContent) and isinstance(text, TextContent)
    assert thinking.thinking == "First, think.\n\nThen answer."
    assert json.loads(thinking.thinking_signature or "") == reasoning
    assert text.text == "42"
    body = server.requests[0].json()
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"]


async def test_parallel_tool_calls_with_split_arguments() -> None:
    def call(item_id: str, call_id: str, name: str, arguments: str = "") -> dict[str, Any]:
        return {
            "id": item_id,
            "type": "function_call",
            "call_id": call_id,
            "name": name,
            "arguments": arguments,
            "status": "in_progress",
        }

    a = {"item_id": "fc_a", "output_index": 0}
    b = {"item_id": "fc_b", "output_index": 1}
    events = [
        *created(),
        ev("response.output_item.added", output_index=0, item=call("fc_a", "call_a", "read")),
        ev("response.output_item.added", output_index=1, item=call("fc_b", "call_b", "grep")),
        ev("response.function_call_arguments.delta", **a, delta='{"pa'),
        ev("response.function_call_arguments.delta", **b, delta='{"pattern": "\\u00'),
        ev("response.function_call_arguments.delta", **a, delta='th": "a.py"}'),
        ev("response.function_call_arguments.delta", **b, delta='e9"'),
        # The complete text replaces what was streamed for b.
        ev("response.function_call_arguments.done", **b, arguments='{"pattern": "é", "n": 2}'),
        ev("response.function_call_arguments.done", **a, arguments='{"path": "a.py"}'),
        ev("response.output_item.done", output_index=0, item=call("fc_a", "call_a", "read", "")),
        ev("response.output_item.done", output_index=1, item=call("fc_b", "call_b", "grep", "")),
        completed(),
    ]
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks(events)))
        streamed, result = await run(make_model(server))
    assert result.stop_reason == "toolUse"
    assert result.tool_calls == [
        ToolCall(id="call_a|fc_a", name="read", arguments={"path": "a.py"}),
        ToolCall(id="call_b|fc_b", name="grep", arguments={"pattern": "é", "n": 2}),
    ]
    deltas = [(e.content_index, e.delta) for e in streamed if isinstance(e, ToolCallDeltaEvent)]
    assert deltas[:4] == [(0, '{"pa'), (1, '{"pattern": "\\u00'), (0, 'th": "a.py"}'), (1, 'e9"')]
    ends = [e.tool_call.id for e in streamed if isinstance(e, ToolCallEndEvent)]
    assert ends == ["call_a|fc_a", "call_b|fc_b"]


async def test_incomplete_is_length_with_usage_and_content_filter_is_error() -> None:
    async with LoopbackServer() as server:
        server.add(
            Reply.sse(
                sse_chunks(
                    [
                        *created(),
                        *message_events("msg_1", ["cut sh"]),
                        completed(
                            status="incomplete",
                            kind="response.incomplete",
                            incomplete_details={"reason": "max_output_tokens"},
                        ),
                    ]
                )
            ),
            Reply.sse(
                sse_chunks(
                    [
                        *created(),
                        completed(
                            status="incomplete",
                            kind="response.incomplete",
                            incomplete_details={"reason": "content_filter"},
                        ),
                    ]
                )
            ),
        )
        _, length = await run(make_model(server))
        _, filtered = await run(make_model(server))
    assert length.stop_reason == "length" and length.text == "cut sh"
    assert length.usage.output == 20
    assert filtered.stop_reason == "error"
    assert "content_filter" in (filtered.error_message or "")


async def test_failed_response_keeps_partial_content() -> None:
    failed = completed(
        status="failed",
        kind="response.failed",
        error={"code": "server_error", "message": "The model crashed"},
    )
    events = [
        *created(),
        ev("response.output_item.added", output_index=0, item={"id": "msg_1", "type": "message"}),
        ev("response.output_text.delta", item_id="msg_1", output_index=0, delta="partial"),
        failed,
    ]
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks(events)))
        streamed, result = await run(make_model(server))
    assert streamed[-1].type == "error"
    assert result.stop_reason == "error"
    assert result.error_message == "The model crashed (server_error)"
    assert result.text == "partial" and result.usage.input == 60


@pytest.mark.parametrize(
    "error",
    [
        ev("error", code="rate_limit_exceeded", message="Slow down", param=None),
        {"type": "error", "error": {"type": "rate_limit_exceeded", "message": "Slow down"}},
        {"error": {"code": "rate_limit_exceeded", "message": "Slow down"}},
    ],
)
async def test_error_event_after_200(error: dict[str, Any]) -> None:
    events = [
        *created(),
        *message_events("msg_1", ["so far"]),
        error,
        completed(),  # never read: the error is terminal
    ]
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks(events)))
        _, result = await run(make_model(server))
    assert result.stop_reason == "error"
    assert result.error_message == "Slow down (rate_limit_exceeded)"
    assert result.text == "so far"


async def test_truncated_streams_are_errors() -> None:
    body = sse_chunks([*created(), *message_events("msg_1", ["half"])[:3]])
    async with LoopbackServer() as server:
        server.add(Reply.sse(body), Reply.sse(body, truncate=True))
        _, clean_eof = await run(make_model(server))
        _, cut = await run(make_model(server))
    assert clean_eof.stop_reason == "error"
    assert "truncated" in (clean_eof.error_message or "")
    assert clean_eof.text == "half"
    assert cut.stop_reason == "error"
    assert "mid-stream" in (cut.error_message or "") and cut.text == "half"


async def test_malformed_event_data_is_an_error() -> None:
    async with LoopbackServer() as server:
        server.add(Reply.sse([*sse_chunks(created()), b"data: {not json\n\n"]))
        _, result = await run(make_model(server))
    assert result.stop_reason == "error"
    assert "Malformed event" in (result.error_message or "")


async def test_429_is_retried_after_retry_after() -> None:
    async with LoopbackServer() as server:
        server.add(
            Reply.json(
                429,
                {"error": {"message": "Rate limit", "code": "rate_limit_exceeded"}},
                headers={"retry-after": "0.01"},
            ),
            Reply.sse(sse_chunks([*created(), *message_events("msg_1", ["ok"]), completed()])),
        )
        _, result = await run(make_model(server))
    assert result.stop_reason == "stop" and result.text == "ok"
    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body


async def test_401_is_not_retried_and_the_key_stays_out() -> None:
    async with LoopbackServer() as server:
        server.add(
            Reply.json(401, {"error": {"message": f"Incorrect API key provided: {KEY}"}}),
        )
        streamed, result = await run(make_model(server))
    assert [e.type for e in streamed] == ["error"]
    assert len(server.requests) == 1
    message = result.error_message or ""
    assert "HTTP 401" in message and "API key" in message
    assert KEY not in message and KEY not in result.model_dump_json()


async def test_missing_key_for_hosted_provider_and_none_needed_locally(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    async with LoopbackServer() as server:
        hosted = make_model(server).model_copy(update={"base_url": "https://api.openai.com/v1"})
        result = await stream(hosted, CTX).result()
        assert result.stop_reason == "error"
        assert "OPENAI_API_KEY" in (result.error_message or "")
        assert server.requests == []

        server.add(
            Reply.sse(sse_chunks([*created(), *message_events("m", ["local"]), completed()]))
        )
        local = make_model(server, provider="llama-cpp")
        result = await stream(local, CTX).result()
    assert result.text == "local"
    assert "authorization" not in server.requests[0].headers


async def test_abort_mid_stream_keeps_partial_and_closes_connection() -> None:
    head = [
        *created(),
        ev("response.output_item.added", output_index=0, item={"id": "msg_1", "type": "message"}),
        ev("response.output_text.delta", item_id="msg_1", output_index=0, delta="Once upon"),
    ]
    controller = AbortController()
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks(head), hang=True))
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


async def test_unknown_events_and_builtin_tool_items_are_ignored() -> None:
    search = {"id": "ws_1", "type": "web_search_call", "status": "completed"}
    events = [
        *created(),
        ev("response.output_item.added", output_index=0, item=search),
        ev("response.web_search_call.searching", item_id="ws_1", output_index=0),
        ev("response.output_item.done", output_index=0, item=search),
        ev("response.something_new", payload={"x": 1}),
        *message_events("msg_1", ["found it"], index=1),
        completed(),
    ]
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks(events)))
        _, result = await run(make_model(server))
    assert result.stop_reason == "stop" and [b.type for b in result.content] == ["text"]
    assert result.text == "found it"


async def test_final_items_complete_what_was_not_streamed() -> None:
    # A server that streams nothing but the final response still yields the whole reply.
    output: list[dict[str, Any]] = [
        {
            "id": "msg_9",
            "type": "message",
            "content": [{"type": "output_text", "text": "all at once"}],
        },
        {
            "id": "fc_9",
            "type": "function_call",
            "call_id": "call_9",
            "name": "f",
            "arguments": "{}",
        },
    ]
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks([*created(), completed(output)])))
        _, result = await run(make_model(server))
    assert result.text == "all at once" and result.stop_reason == "toolUse"
    assert result.tool_calls == [ToolCall(id="call_9|fc_9", name="f", arguments={})]


async def test_llama_cpp_slim_events() -> None:
    # The shapes llama.cpp's server emits on /v1/responses: no sequence_number, no output_index,
    # function calls without an item id and keyed by call_id, every output_item.done at the end.
    reasoning_done = {
        "id": "rs_x",
        "summary": [],
        "type": "reasoning",
        "content": [{"text": "Need the weather.", "type": "reasoning_text"}],
        "encrypted_content": "",
    }
    message_part = {"type": "output_text", "annotations": [], "logprobs": [], "text": "Checking."}
    call_done = {
        "type": "function_call",
        "status": "completed",
        "arguments": '{"city": "Paris"}',
        "call_id": "fc_abc",
        "name": "get_weather",
    }
    response = {"id": "resp_x", "object": "response", "status": "in_progress"}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response},
        {"type": "response.in_progress", "response": response},
        {
            "type": "response.output_item.added",
            "item": {"id": "rs_x", "summary": [], "type": "reasoning", "content": [],
                     "encrypted_content": "", "status": "in_progress"},
        },
        {"type": "response.reasoning_text.delta", "delta": "Need the ", "item_id": "rs_x"},
        {"type": "response.reasoning_text.delta", "delta": "weather.", "item_id": "rs_x"},
        {
            "type": "response.output_item.added",
            "item": {"content": [], "id": "msg_x", "role": "assistant", "status": "in_progress",
                     "type": "message"},
        },
        {"type": "response.content_part.added", "item_id": "msg_x",
         "part": {"type": "output_text", "text": ""}},
        {"type": "response.output_text.delta", "item_id": "msg_x", "delta": "Checking."},
        {
            "type": "response.output_item.added",
            "item": {"arguments": "", "call_id": "fc_abc", "name": "get_weather",
                     "type": "function_call", "status": "in_progress"},
        },
        {"type": "response.function_call_arguments.delta", "delta": '{"city": ',
         "item_id": "fc_abc"},
        {"type": "response.function_call_arguments.delta", "delta": '"Paris"}',
         "item_id": "fc_abc"},
        {"type": "response.output_item.done", "item": reasoning_done},
        {"type": "response.output_text.done", "item_id": "msg_x", "text": "Checking."},
        {"type": "response.content_part.done", "item_id": "msg_x", "part": message_part},
        {
            "type": "response.output_item.done",
            "item": {"type": "message", "status": "completed", "id": "msg_x",
                     "content": [message_part], "role": "assistant"},
        },
        {"type": "response.output_item.done", "item": call_done},
        {
            "type": "response.completed",
            "response": {
                "id": "resp_x",
                "object": "response",
                "status": "completed",
                "model": "smollm2",
                "output": [reasoning_done, call_done],
                "usage": {"input_tokens": 37, "output_tokens": 14, "total_tokens": 51,
                          "input_tokens_details": {"cached_tokens": 36}},
            },
        },
    ]  # fmt: skip
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks(events, event_names=True)))
        local = make_model(server, provider="llama-cpp", id="smollm2", input=["text"])
        streamed, result = await run(local)

        assert result.stop_reason == "toolUse"
        assert (result.usage.input, result.usage.cache_read, result.usage.output) == (1, 36, 14)
        thinking, text, call = result.content
        assert isinstance(thinking, ThinkingContent) and thinking.thinking == "Need the weather."
        assert text == TextContent(text="Checking.", text_signature='{"v":1,"id":"msg_x"}')
        assert call == ToolCall(id="fc_abc", name="get_weather", arguments={"city": "Paris"})
        # Three blocks are open at once; each end event names its own block.
        ends = [(e.type, getattr(e, "content_index", None)) for e in streamed if "_end" in e.type]
        assert ends == [("thinking_end", 0), ("text_end", 1), ("toolcall_end", 2)]

        # The reply replays as llama.cpp expects it: a reasoning item with its content, a
        # function_call without an item id, and the output keyed by the call_id.
        follow_up = Context(
            messages=[
                UserMessage(content="Weather in Paris?"),
                result,
                ToolResultMessage(
                    tool_call_id="fc_abc",
                    tool_name="get_weather",
                    content=[TextContent(text="sunny")],
                ),
            ]
        )
        server.add(
            Reply.sse(sse_chunks([*created(), *message_events("m", ["Sunny."]), completed()]))
        )
        await run(local, follow_up)
    assert server.requests[1].json()["input"][1:] == [
        reasoning_done,
        {
            "type": "message",
            "role": "assistant",
            "id": "msg_x",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Checking.", "annotations": []}],
        },
        {
            "type": "function_call",
            "call_id": "fc_abc",
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
        },
        {"type": "function_call_output", "call_id": "fc_abc", "output": "sunny"},
    ]


async def test_request_body_of_a_multi_turn_conversation() -> None:
    reasoning_item = {
        "id": "rs_7",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "Look at the file."}],
        "encrypted_content": "gAAAA-7",
    }
    image = ImageContent(data="aGVsbG8=", mime_type="image/png")
    own = {"api": "openai-responses", "provider": "openai", "model": "gpt-test"}
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
                    ThinkingContent(
                        thinking="Look at the file.", thinking_signature=json.dumps(reasoning_item)
                    ),
                    TextContent(text="Reading.", text_signature='{"v":1,"id":"msg_7"}'),
                    ToolCall(id="call_7|fc_7", name="read", arguments={"path": "a.png"}),
                ],
            ),
            ToolResultMessage(
                tool_call_id="call_7|fc_7",
                tool_name="read",
                content=[TextContent(text="An image:"), image],
            ),
            # Another provider's turn: thinking becomes text, the id keeps only valid characters.
            AssistantMessage(
                api="anthropic-messages",
                provider="anthropic",
                model="claude",
                stop_reason="toolUse",
                content=[
                    ThinkingContent(thinking="Hmm.", thinking_signature="sig"),
                    ToolCall(id="toolu.01", name="read", arguments={"path": "b"}),
                ],
            ),
            ToolResultMessage(
                tool_call_id="toolu.01", tool_name="read", content=[TextContent(text="B")]
            ),
            AssistantMessage(**own, stop_reason="stop", content=[TextContent(text="Done.")]),
            UserMessage(content="Thanks"),
        ],
    )
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks([*created(), *message_events("m", ["ok"]), completed()])))
        model = make_model(server, reasoning=True)
        await run(model, context, reasoning="medium", temperature=0.2)
    body = server.requests[0].json()
    data_url = "data:image/png;base64,aGVsbG8="
    assert body["instructions"] == "You are terse."
    assert body["temperature"] == 0.2
    assert body["tools"] == [
        {
            "type": "function",
            "name": "read",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            "strict": False,
        }
    ]
    assert body["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert body["input"] == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is in this?"},
                {"type": "input_image", "detail": "auto", "image_url": data_url},
            ],
        },
        reasoning_item,
        {
            "type": "message",
            "role": "assistant",
            "id": "msg_7",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Reading.", "annotations": []}],
        },
        {
            "type": "function_call",
            "call_id": "call_7",
            "name": "read",
            "arguments": '{"path": "a.png"}',
            "id": "fc_7",
        },
        {
            "type": "function_call_output",
            "call_id": "call_7",
            "output": [
                {"type": "input_text", "text": "An image:"},
                {"type": "input_image", "detail": "auto", "image_url": data_url},
            ],
        },
        {
            "type": "message",
            "role": "assistant",
            "id": "msg_3",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Hmm.", "annotations": []}],
        },
        {
            "type": "function_call",
            "call_id": "toolu_01",
            "name": "read",
            "arguments": '{"path": "b"}',
        },
        {"type": "function_call_output", "call_id": "toolu_01", "output": "B"},
        {
            "type": "message",
            "role": "assistant",
            "id": "msg_5",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
        },
        {"role": "user", "content": [{"type": "input_text", "text": "Thanks"}]},
    ]


def test_reasoning_effort_follows_the_thinking_level_map() -> None:
    from pi_notebook.ai.options import StreamOptions
    from pi_notebook.ai.providers.openai_responses import reasoning_effort

    plain = Model(id="m", api="openai-responses", provider="openai")
    thinker = Model(id="t", api="openai-responses", provider="openai", reasoning=True)
    mapped = thinker.model_copy(
        update={"thinking_level_map": {"off": "none", "minimal": None, "xhigh": "xhigh"}}
    )
    assert reasoning_effort(plain, StreamOptions(reasoning="high")) is None
    assert reasoning_effort(thinker, StreamOptions()) is None
    assert reasoning_effort(thinker, StreamOptions(reasoning="xhigh")) == "high"
    assert reasoning_effort(mapped, StreamOptions()) == "none"
    assert reasoning_effort(mapped, StreamOptions(reasoning="minimal")) == "low"
    assert reasoning_effort(mapped, StreamOptions(reasoning="xhigh")) == "xhigh"
