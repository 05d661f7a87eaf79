"""The ``openai-completions`` provider over a real loopback HTTP server.

Tests named ``test_pitfall_NN_…`` cover the known pitfalls of Chat Completions streams (framing,
content, errors); the parser's tolerance of server deviations is tested on parsed chunks directly.
"""

from __future__ import annotations

import asyncio
import json
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
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    complete,
    get_api_provider,
    is_context_overflow,
    stream,
)
from pi_notebook.ai.http import ProviderError
from pi_notebook.ai.providers import openai_completions
from pi_notebook.ai.providers.openai_completions import TRUNCATED_MESSAGE, CompletionsStreamParser
from tests.loopback import LoopbackServer, Reply, sse_chunks

HELLO = Context(system_prompt="Be brief.", messages=[UserMessage(content="Say hello.")])


def local_model(server: LoopbackServer, **fields: Any) -> Model:
    return Model(
        id="smollm2",
        api="openai-completions",
        provider="custom",
        base_url=server.url + "/v1",
        **fields,
    )


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> Any:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "smollm2",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }
    body.update(extra)
    return body


def usage_chunk(prompt: int, completion: int, cached: int = 0) -> Any:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
            "completion_tokens_details": {"reasoning_tokens": 2},
        },
    }


def tool_fragment(index: int | None, arguments: str = "", **fields: Any) -> dict[str, Any]:
    fragment: dict[str, Any] = {"function": {"arguments": arguments}}
    if index is not None:
        fragment["index"] = index
    if "name" in fields:
        fragment["function"]["name"] = fields.pop("name")
    fragment.update(fields)
    return fragment


def text_stream(*pieces: str) -> list[Any]:
    return [
        chunk({"role": "assistant", "content": None}),
        *(chunk({"content": p}) for p in pieces),
        chunk(finish="stop"),
        usage_chunk(37, 14, cached=36),
    ]


async def run(
    model: Model, context: Context = HELLO, **options: Any
) -> tuple[list[Any], AssistantMessage]:
    events = stream(model, context, **options)
    seen = [event async for event in events]
    return seen, await events.result()


async def served(
    replies: list[Reply], context: Context = HELLO, **options: Any
) -> tuple[list[Any], AssistantMessage, LoopbackServer]:
    async with LoopbackServer() as server:
        server.add(*replies)
        events, message = await run(local_model(server), context, **options)
    return events, message, server


def types(events: list[Any]) -> list[str]:
    return [e.type for e in events]


async def parse(chunks: list[Any], *, done: bool = True) -> tuple[list[Any], AssistantMessage]:
    """Drive the parser directly with parsed chunks (no HTTP)."""
    events_stream = AssistantMessageEventStream()
    builder = MessageBuilder(Model(id="m", api="openai-completions", provider="x"), events_stream)
    parser = CompletionsStreamParser(builder)
    try:
        for item in chunks:
            parser.feed(item)
        parser.saw_done = done
        parser.finish()
    except ProviderError as exc:
        builder.fail(str(exc))
    events_stream.end()
    events = [e async for e in events_stream]
    return events, await events_stream.result()


# --- the happy paths -----------------------------------------------------------------------------


async def test_text_stream_events_usage_and_request() -> None:
    events, message, server = await served(
        [Reply.sse(sse_chunks(text_stream("Hello", ",", " world"), done=True))], max_tokens=60
    )
    assert types(events) == [
        "start",
        "text_start",
        "text_delta",
        "text_delta",
        "text_delta",
        "text_end",
        "done",
    ]
    assert message.stop_reason == "stop" and message.text == "Hello, world"
    assert events[-1].reason == "stop"
    assert message.response_id == "chatcmpl-1"
    usage = message.usage
    # input = prompt − cached; output = completion_tokens (reasoning tokens already inside)
    assert (usage.input, usage.cache_read, usage.output, usage.total_tokens) == (1, 36, 14, 51)
    request = server.requests[0]
    assert request.method == "POST" and request.path == "/v1/chat/completions"
    assert "authorization" not in request.headers  # a custom local endpoint needs no key
    assert request.json() == {
        "model": "smollm2",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Say hello."},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 60,
    }


async def test_reasoning_then_text_keeps_the_reasoning_key_as_signature() -> None:
    chunks = [
        chunk({"role": "assistant"}),
        chunk({"reasoning_content": "Let me"}),
        chunk({"reasoning_content": " think."}),
        chunk({"content": "Done."}),
        chunk(finish="stop"),
    ]
    events, message, _ = await served([Reply.sse(sse_chunks(chunks, done=True))])
    assert types(events) == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_end",
        "done",
    ]
    assert message.content == [
        ThinkingContent(thinking="Let me think.", thinking_signature="reasoning_content"),
        TextContent(text="Done."),
    ]


async def test_registry_lazily_imports_the_provider_and_complete_works() -> None:
    assert get_api_provider("openai-completions").stream is openai_completions.stream
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks(text_stream("ok"), done=True)))
        message = await complete(local_model(server), HELLO)
    assert message.text == "ok"


# --- request building ----------------------------------------------------------------------------


async def test_request_body_for_openai_with_history_tools_images_and_reasoning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    image = ImageContent(data="iVBORw0=", mime_type="image/png")
    async with LoopbackServer() as server:
        model = Model(
            id="gpt-5",
            api="openai-completions",
            provider="openai",
            base_url=server.url + "/v1/",
            reasoning=True,
            input=["text", "image"],
        )
        own = AssistantMessage(
            api=model.api,
            provider="openai",
            model="gpt-5",
            content=[
                ThinkingContent(thinking="plan", thinking_signature="reasoning"),
                TextContent(text="Checking."),
                ToolCall(id="call_1", name="weather", arguments={"city": "Rome"}),
                ToolCall(id="call_2", name="snap", arguments={}),
            ],
            stop_reason="toolUse",
        )
        foreign = AssistantMessage(
            api="anthropic-messages",
            provider="anthropic",
            model="claude",
            content=[
                ThinkingContent(thinking="private", thinking_signature="sig"),
                ToolCall(id="toolu_01|" + "x" * 60, name="weather", arguments={"city": "Oslo"}),
            ],
            stop_reason="toolUse",
        )
        context = Context(
            system_prompt="You are terse.",
            messages=[
                UserMessage(content=[TextContent(text="What is this?"), image]),
                own,
                ToolResultMessage(
                    tool_call_id="call_1",
                    tool_name="weather",
                    content=[TextContent(text="18°C")],
                ),
                ToolResultMessage(
                    tool_call_id="call_2",
                    tool_name="snap",
                    content=[image],
                ),
                foreign,
                ToolResultMessage(
                    tool_call_id="toolu_01|" + "x" * 60,
                    tool_name="weather",
                    content=[TextContent(text="2°C")],
                ),
            ],
            tools=[
                Tool(
                    name="weather",
                    description="Weather of a city",
                    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
                )
            ],
        )
        server.add(Reply.sse(sse_chunks(text_stream("ok"), done=True)))
        _, message = await run(
            model,
            context,
            api_key="sk-test-key",
            max_tokens=100,
            temperature=0.2,
            reasoning="high",
            tool_choice="auto",
        )
    assert message.stop_reason == "stop", message.error_message
    request = server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test-key"
    body = request.json()
    normalised = body["messages"][6]["tool_calls"][0]["id"]
    assert len(normalised) <= 40 and normalised.startswith("toolu_01")
    assert body == {
        "model": "gpt-5",
        "messages": [
            {"role": "developer", "content": "You are terse."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is this?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0="}},
                ],
            },
            {
                "role": "assistant",
                "content": "Checking.",
                "reasoning": "plan",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Rome"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "snap", "arguments": "{}"},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "18°C"},
            {"role": "tool", "tool_call_id": "call_2", "content": "(see attached image)"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Attached image(s) from tool result:"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0="}},
                ],
            },
            {
                "role": "assistant",
                "content": "private",
                "tool_calls": [
                    {
                        "id": normalised,
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": normalised, "content": "2°C"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "store": False,
        "max_completion_tokens": 100,
        "temperature": 0.2,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "weather",
                    "description": "Weather of a city",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                },
            }
        ],
        "tool_choice": "auto",
        "reasoning_effort": "high",
    }


async def test_compat_overrides_shape_the_request() -> None:
    async with LoopbackServer() as server:
        model = local_model(
            server,
            reasoning=True,
            compat={
                "supportsUsageInStreaming": False,
                "maxTokensField": "max_completion_tokens",
                "thinkingFormat": "qwen-chat-template",
                "requiresToolResultName": True,
                "requiresAssistantAfterToolResult": True,
            },
        )
        call = ToolCall(id="c1", name="f", arguments={})
        context = Context(
            messages=[
                UserMessage(content="go"),
                AssistantMessage(
                    api=model.api, provider=model.provider, model=model.id, content=[call]
                ),
                ToolResultMessage(tool_call_id="c1", tool_name="f", content=[]),
                UserMessage(content="and now?"),
            ]
        )
        server.add(Reply.sse(sse_chunks(text_stream("ok"), done=True)))
        await run(model, context, max_tokens=10, reasoning="low")
    body = server.requests[0].json()
    assert "stream_options" not in body
    assert body["max_completion_tokens"] == 10
    assert body["chat_template_kwargs"] == {"enable_thinking": True}
    assert [m["role"] for m in body["messages"]] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    assert body["messages"][1]["content"] is None
    assert body["messages"][2] == {"role": "tool", "tool_call_id": "c1", "content": "", "name": "f"}


async def test_bad_compat_value_is_a_clear_error() -> None:
    async with LoopbackServer() as server:
        model = local_model(server, compat={"maxTokensField": "max_output"})
        _, message = await run(model)
    assert message.stop_reason == "error"
    assert "compat.maxTokensField" in (message.error_message or "")
    assert server.requests == []


async def test_missing_key_for_a_hosted_provider_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    model = Model(
        id="llama",
        api="openai-completions",
        provider="groq",
        base_url="https://api.groq.com/openai/v1",
    )
    events, message = await run(model)
    assert types(events) == ["error"]
    assert (
        message.error_message == "No API key for provider 'groq': set GROQ_API_KEY or pass api_key="
    )


async def test_a_known_provider_on_this_machine_needs_no_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    async with LoopbackServer() as server:
        model = Model(id="gpt", api="openai-completions", provider="openai", base_url=server.url)
        server.add(Reply.sse(sse_chunks(text_stream("local"), done=True)))
        _, message = await run(model)
    assert message.text == "local"
    assert "authorization" not in server.requests[0].headers


async def test_key_from_the_environment_is_sent_and_never_leaks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GROQ_API_KEY", "gsk-secret-value")
    async with LoopbackServer() as server:
        model = Model(id="llama", api="openai-completions", provider="groq", base_url=server.url)
        server.add(Reply.json(400, {"error": {"message": "bad key gsk-secret-value"}}))
        _, message = await run(model)
    assert server.requests[0].headers["authorization"] == "Bearer gsk-secret-value"
    assert "gsk-secret-value" not in json.dumps(message.to_json_dict())


# --- pitfalls: framing ---------------------------------------------------------------------------


async def test_pitfall_01_lines_and_json_split_across_network_chunks() -> None:
    raw = b"".join(sse_chunks(text_stream("Hel", "lo"), done=True)).replace(b"\n", b"\r\n")
    # split inside JSON, between CR and LF, and one byte at a time in a region
    cuts = [5, 17, raw.index(b"\r\n") + 1, 60, *range(61, 90)]
    pieces = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    events, message, _ = await served([Reply.sse(pieces)])
    assert message.text == "Hello" and message.stop_reason == "stop"
    assert types(events).count("text_delta") == 2


@pytest.mark.parametrize("newline", [b"\r\n", b"\r"], ids=["crlf", "lone-cr"])
async def test_pitfall_02_crlf_and_lone_cr_line_endings(newline: bytes) -> None:
    raw = b"".join(sse_chunks(text_stream("a", "b"), done=True)).replace(b"\n", newline)
    _, message, _ = await served([Reply.sse([raw])])
    assert message.stop_reason == "stop" and message.text == "ab"


async def test_pitfall_03_unicode_line_separators_inside_json() -> None:
    text = "a\u2028b\u2029c\u0085d"
    raw = json.dumps(chunk({"content": text}), ensure_ascii=False).encode()
    body = [b"data: " + raw + b"\n\n", *sse_chunks([chunk(finish="stop")], done=True)]
    _, message, _ = await served([Reply.sse(body)])
    assert message.text == text and message.stop_reason == "stop"


async def test_pitfall_04_multibyte_utf8_split_across_chunks() -> None:
    raw = json.dumps(chunk({"content": "héllo 🌍"}), ensure_ascii=False).encode()
    cut = raw.index("🌍".encode()) + 2
    body = [b"data: " + raw[:cut], raw[cut:] + b"\n\n", *sse_chunks([chunk(finish="stop")])]
    _, message, _ = await served([Reply.sse(body)])
    assert message.text == "héllo 🌍" and message.stop_reason == "stop"


async def test_pitfall_05_keep_alive_comments() -> None:
    body = [b":\n\n"] * 5 + [b": OPENROUTER PROCESSING\n\n"]
    body += sse_chunks(text_stream("hi"), done=True)
    body.insert(8, b":\n\n")
    events, message, _ = await served([Reply.sse(body)])
    assert message.text == "hi" and types(events)[0] == "start"


async def test_pitfall_06_event_lines_added_by_a_proxy() -> None:
    body = [b"event: message\n" + c for c in sse_chunks(text_stream("x"), done=True)]
    body.insert(1, b"event: ping\ndata: {}\n\n")
    _, message, _ = await served([Reply.sse(body)])
    assert message.text == "x" and message.stop_reason == "stop"


async def test_pitfall_07_multiple_data_lines_in_one_event() -> None:
    raw = json.dumps(chunk({"content": "joined"}), indent=1)
    event = "".join(f"data: {line}\n" for line in raw.splitlines()) + "\n"
    body = [event.encode(), *sse_chunks([chunk(finish="stop")], done=True)]
    _, message, _ = await served([Reply.sse(body)])
    assert message.text == "joined"


async def test_pitfall_08_data_without_space_empty_data_id_and_retry_fields() -> None:
    raw = json.dumps(chunk({"content": "tight"}))
    body = [
        b"retry: 3000\nid: 7\ndata:\n\n",
        f"id: 8\ndata:{raw}\n\n".encode(),
        b"data:" + json.dumps(chunk(finish="stop")).encode() + b"\n\ndata:[DONE]\n\n",
    ]
    _, message, _ = await served([Reply.sse(body)])
    assert message.text == "tight" and message.stop_reason == "stop"


async def test_pitfall_09_very_long_lines() -> None:
    content = "x" * 400_000
    arguments = json.dumps({"path": "big.txt", "content": content})
    chunks = [
        chunk({"content": content}),
        chunk({"tool_calls": [tool_fragment(0, arguments, id="c1", name="write")]}),
        chunk(finish="tool_calls"),
    ]
    raw = b"".join(sse_chunks(chunks, done=True))
    pieces = [raw[i : i + 65_536] for i in range(0, len(raw), 65_536)]
    _, message, _ = await served([Reply.sse(pieces)])
    assert message.text == content
    assert message.tool_calls[0].arguments["content"] == content


async def test_pitfall_10_done_with_whitespace_ends_reading() -> None:
    body = sse_chunks(text_stream("fin"))
    body.append(b"data:  [DONE] \r\n\r\n")
    body.append(b"data: this is never read\n\n")
    events, message, _ = await served([Reply.sse(body, hang=True)])
    assert message.stop_reason == "stop" and message.text == "fin"
    assert types(events)[-1] == "done"


async def test_pitfall_10_eof_before_done_and_finish_reason_is_an_error() -> None:
    body = sse_chunks([chunk({"role": "assistant"}), chunk({"content": "Partial"})])
    events, message, _ = await served([Reply.sse(body)])
    assert types(events)[-1] == "error"
    assert message.stop_reason == "error"
    assert message.error_message == TRUNCATED_MESSAGE
    assert message.text == "Partial"


async def test_pitfall_10_connection_cut_mid_stream_is_an_error_keeping_content() -> None:
    body = [*sse_chunks([chunk({"content": "Partial"})]), b'data: {"choi']
    _events, message, server = await served([Reply.sse(body, truncate=True)])
    assert message.stop_reason == "error" and message.text == "Partial"
    assert (message.error_message or "").startswith(TRUNCATED_MESSAGE)
    assert len(server.requests) == 1  # never retried once content was streamed


async def test_pitfall_10_finish_reason_without_done_is_success() -> None:
    body = sse_chunks(text_stream("ok"))
    _, message, _ = await served([Reply.sse(body)])
    assert message.stop_reason == "stop" and message.usage.output == 14


# --- pitfalls: content ---------------------------------------------------------------------------


async def test_pitfall_11_and_12_parallel_tool_calls_split_anywhere_and_interleaved() -> None:
    first = '{"city": "Montr\\u00e9al", "note": "say \\"hi\\""}'
    second = '{"q": "caf\\u00e9 ☕", "n": 12.5}'
    chunks = [
        chunk({"role": "assistant", "content": ""}),
        chunk(
            {
                "tool_calls": [
                    tool_fragment(0, first[:3], id="call_a", type="function", name="weather"),
                    tool_fragment(1, "", id="call_b", type="function", name="search"),
                ]
            }
        ),
        chunk({"tool_calls": [tool_fragment(0, first[3:21])]}),  # ends inside "\u00"
        chunk({"tool_calls": [tool_fragment(1, second[:11])]}),  # ends inside "\u00"
        chunk({"tool_calls": [tool_fragment(0, first[21:40])]}),  # splits the \" escape
        chunk({"tool_calls": [tool_fragment(1, second[11:]), tool_fragment(0, first[40:])]}),
        chunk(finish="tool_calls"),
        usage_chunk(100, 40),
    ]
    raw = b"".join(sse_chunks(chunks, done=True))
    pieces = [raw[i : i + 7] for i in range(0, len(raw), 7)]
    events, message, _ = await served([Reply.sse(pieces)])
    assert message.stop_reason == "toolUse" and events[-1].reason == "toolUse"
    assert message.content == [
        ToolCall(id="call_a", name="weather", arguments={"city": "Montréal", "note": 'say "hi"'}),
        ToolCall(id="call_b", name="search", arguments={"q": "café ☕", "n": 12.5}),
    ]
    deltas = [e for e in events if e.type == "toolcall_delta"]
    assert "".join(e.delta for e in deltas if e.content_index == 0) == first
    assert "".join(e.delta for e in deltas if e.content_index == 1) == second
    # live partial arguments are a best-effort parse, never an exception
    partials = [e.partial.content[0].arguments for e in deltas if e.content_index == 0]
    assert partials[-1] == {"city": "Montréal", "note": 'say "hi"'}


async def test_pitfall_12_missing_index_uses_ids() -> None:
    chunks = [
        chunk({"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": '{"x"'}}]}),
        chunk({"tool_calls": [{"function": {"arguments": ": 1}"}}]}),
        chunk({"tool_calls": [{"id": "b", "function": {"name": "g", "arguments": "{}"}}]}),
        chunk({"tool_calls": [{"id": "a", "function": {"arguments": ""}}]}),
        chunk(finish="tool_calls"),
    ]
    _, message = await parse(chunks)
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("a", "f", {"x": 1}),
        ("b", "g", {}),
    ]


async def test_pitfall_12_all_calls_on_index_zero_with_different_ids() -> None:
    chunks = [
        chunk({"tool_calls": [tool_fragment(0, '{"n":', id="a", name="f")]}),
        chunk({"tool_calls": [tool_fragment(0, "1}")]}),
        chunk({"tool_calls": [tool_fragment(0, '{"n":', id="b", name="f")]}),
        chunk({"tool_calls": [tool_fragment(0, "2}")]}),
        chunk(finish="tool_calls"),
    ]
    _, message = await parse(chunks)
    assert [(c.id, c.arguments) for c in message.tool_calls] == [("a", {"n": 1}), ("b", {"n": 2})]


async def test_pitfall_12_name_late_or_split_and_id_repeated() -> None:
    chunks = [
        chunk({"tool_calls": [tool_fragment(0, '{"a":', id="c1")]}),
        chunk({"tool_calls": [tool_fragment(0, "", id="c1", name="get_")]}),
        chunk({"tool_calls": [tool_fragment(0, " 1}", name="weather")]}),
        chunk({"tool_calls": [tool_fragment(0, "", id="c1", name="get_weather")]}),
        chunk(finish="tool_calls"),
    ]
    _, message = await parse(chunks)
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("c1", "get_weather", {"a": 1})
    ]


async def test_pitfall_12_whole_calls_in_one_fragment_and_several_per_chunk() -> None:
    chunks = [
        chunk(
            {
                "tool_calls": [
                    tool_fragment(0, '{"a": 1}', id="x", name="f"),
                    tool_fragment(1, "", id="y", name="noargs"),
                    {"index": 2, "id": "z", "function": {"name": "obj", "arguments": {"k": [1]}}},
                ]
            },
            finish="tool_calls",
        ),
    ]
    _, message = await parse(chunks)
    assert [(c.name, c.arguments) for c in message.tool_calls] == [
        ("f", {"a": 1}),
        ("noargs", {}),
        ("obj", {"k": [1]}),
    ]


async def test_pitfall_12_calls_without_any_id_get_one() -> None:
    chunks = [chunk({"tool_calls": [tool_fragment(0, "{}", name="f")]}, finish="tool_calls")]
    _, message = await parse(chunks)
    assert message.tool_calls[0].id.startswith("call_")


async def test_pitfall_13_empty_deltas_open_no_blocks() -> None:
    chunks = [
        chunk({"role": "assistant", "content": None}),
        chunk({}),
        chunk({"content": ""}),
        chunk({"content": None, "tool_calls": []}),
        {"id": "chatcmpl-1", "choices": [{"index": 0}], "obfuscation": "abc"},
        chunk({"content": "real"}, obfuscation="xyz"),
        chunk(finish="stop"),
    ]
    events, message = await parse(chunks)
    assert types(events) == ["start", "text_start", "text_delta", "text_end", "done"]
    assert message.content == [TextContent(text="real")]


async def test_pitfall_13_no_content_at_all_still_starts_and_finishes() -> None:
    events, message = await parse([chunk({"role": "assistant"}), chunk(finish="stop")])
    assert types(events) == ["start", "done"] and message.content == []


async def test_pitfall_14_usage_only_chunk_with_empty_choices() -> None:
    chunks = [{"id": "x", "choices": []}, chunk({"content": "a"}, finish="stop")]
    chunks.append(usage_chunk(50, 5, cached=20))
    _, message = await parse(chunks)
    assert (message.usage.input, message.usage.cache_read, message.usage.output) == (30, 20, 5)


async def test_pitfall_15_usage_in_every_chunk_or_under_choices() -> None:
    every = [
        chunk({"content": "a"}, usage={"prompt_tokens": 9, "completion_tokens": 1}),
        chunk({"content": "b"}, usage={"prompt_tokens": 9, "completion_tokens": 2}),
        chunk(finish="stop", usage={"prompt_tokens": 9, "completion_tokens": 3}),
    ]
    _, message = await parse(every)
    assert (message.usage.input, message.usage.output) == (9, 3)
    nested = chunk({"content": "a"}, finish="stop")
    nested["choices"][0]["usage"] = {
        "prompt_tokens": 20,
        "completion_tokens": 4,
        "prompt_tokens_details": {"cached_tokens": 5, "cache_write_tokens": 10},
    }
    _, message = await parse([nested])
    usage = message.usage
    assert (usage.input, usage.cache_read, usage.cache_write, usage.output) == (5, 5, 10, 4)
    assert usage.total_tokens == 24


async def test_pitfall_15_no_usage_when_the_server_ignores_include_usage() -> None:
    _, message = await parse([chunk({"content": "a"}, finish="stop")])
    assert message.usage.total_tokens == 0 and message.stop_reason == "stop"


@pytest.mark.parametrize(
    ("finish", "calls", "expected"),
    [
        ("stop", True, "toolUse"),  # OpenAI with a named tool_choice, several compat servers
        ("tool_calls", False, "stop"),  # vLLM's empty tool_calls
        ("length", True, "toolUse"),  # truncated arguments are reported back to the model
        ("length", False, "length"),
        ("end", False, "stop"),
        ("eos", False, "stop"),
        ("something_new", False, "stop"),
        (None, True, "toolUse"),  # [DONE] without a finish_reason
    ],
)
async def test_pitfall_16_finish_reason_lies(
    finish: str | None, calls: bool, expected: str
) -> None:
    chunks = [chunk({"content": "x"})]
    if calls:
        chunks.append(chunk({"tool_calls": [tool_fragment(0, "{}", id="c", name="f")]}))
    chunks.append(chunk(finish=finish) if finish else chunk({}))
    events, message = await parse(chunks)
    assert message.stop_reason == expected
    assert events[-1].type == "done"


@pytest.mark.parametrize("finish", ["content_filter", "error"])
async def test_pitfall_16_error_finish_reasons(finish: str) -> None:
    events, message = await parse([chunk({"content": "x"}), chunk(finish=finish)])
    assert events[-1].type == "error" and message.stop_reason == "error"
    assert message.error_message == f"Provider finish_reason: {finish}"
    assert message.text == "x"
    assert "text_end" in types(events)


async def test_pitfall_16_finish_reason_on_a_chunk_with_content_processes_the_delta_first() -> None:
    chunks = [
        chunk({"content": "last words"}, finish="stop"),
        chunk({"tool_calls": [tool_fragment(0, '{"k": 1}', id="c", name="f")]}, finish="stop"),
    ]
    _, message = await parse(chunks)
    assert message.text == "last words" and message.tool_calls[0].arguments == {"k": 1}
    assert message.stop_reason == "toolUse"


async def test_pitfall_17_reasoning_under_two_keys_is_taken_once() -> None:
    chunks = [
        chunk({"reasoning_content": "abc", "reasoning": "abc"}),
        chunk({"reasoning": "def", "reasoning_text": "def"}),
        chunk({"reasoning_content": "", "reasoning_text": "ghi"}),
        chunk(finish="stop"),
    ]
    events, message = await parse(chunks)
    assert message.content == [
        ThinkingContent(thinking="abcdefghi", thinking_signature="reasoning_content")
    ]
    assert types(events).count("thinking_start") == 1


async def test_pitfall_20_invalid_tool_json_at_the_end_is_kept_for_an_error_result() -> None:
    chunks = [
        chunk(
            {
                "tool_calls": [
                    tool_fragment(
                        0, '{"path": "a.txt", "content": "unterminated', id="c", name="write"
                    )
                ]
            }
        ),
        chunk(finish="length"),
    ]
    events, message = await parse(chunks)
    call = message.tool_calls[0]
    assert message.stop_reason == "toolUse"
    assert call.parse_error and call.raw_arguments and call.raw_arguments.startswith('{"path"')
    assert call.arguments.get("path") == "a.txt"
    assert events[-2].type == "toolcall_end"


# --- pitfalls: errors ----------------------------------------------------------------------------


async def test_pitfall_21_mid_stream_error_after_http_200_keeps_partial_content() -> None:
    body = sse_chunks(
        [
            chunk({"role": "assistant", "content": None}),
            chunk({"content": "Hel"}),
            {
                "error": {
                    "code": 500,
                    "message": "The model produced output that does not match the expected "
                    "peg-native format",
                    "type": "server_error",
                }
            },
        ]
    )
    events, message, server = await served([Reply.sse(body)])
    assert types(events) == ["start", "text_start", "text_delta", "error"]
    assert message.stop_reason == "error" and message.text == "Hel"
    assert "does not match the expected peg-native format" in (message.error_message or "")
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "data", [b'{"message": "upstream overloaded"}', b"upstream overloaded, try later"]
)
async def test_pitfall_21_error_event_named_by_a_proxy(data: bytes) -> None:
    body = sse_chunks([chunk({"content": "a"})])
    body.append(b"event: error\ndata: " + data + b"\n\n")
    _, message, _ = await served([Reply.sse(body)])
    assert message.stop_reason == "error" and message.text == "a"
    assert "upstream overloaded" in (message.error_message or "")


async def test_pitfall_22_429_with_retry_after_then_success() -> None:
    rate_limited = Reply.json(
        429,
        {"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}},
        headers={"retry-after": "0.05"},
    )
    ok = Reply.sse(sse_chunks(text_stream("after wait"), done=True))
    events, message, server = await served([rate_limited, ok])
    assert message.text == "after wait" and len(server.requests) == 2
    assert types(events).count("start") == 1


async def test_pitfall_22_401_is_not_retried_and_says_so_clearly() -> None:
    unauthorized = Reply.json(
        401, {"error": {"message": "Invalid API Key", "type": "authentication_error", "code": 401}}
    )
    events, message, server = await served([unauthorized], api_key="sk-wrong-key")
    assert types(events) == ["error"] and len(server.requests) == 1
    assert message.stop_reason == "error"
    assert message.error_message == (
        "HTTP 401: Invalid API Key (authentication_error) — check the API key"
    )


async def test_pitfall_22_500_then_success() -> None:
    failing = Reply.json(500, {"error": {"message": "boom", "type": "server_error"}})
    ok = Reply.sse(sse_chunks(text_stream("recovered"), done=True))
    _, message, server = await served([failing, ok])
    assert message.text == "recovered" and len(server.requests) == 2


async def test_pitfall_24_non_json_error_body_is_kept() -> None:
    html = Reply(
        status=502, headers={"content-type": "text/html"}, chunks=[b"<h1>Bad gateway</h1>"]
    )
    _, message, _ = await served([html], max_retries=0)
    assert message.stop_reason == "error"
    assert "HTTP 502" in (message.error_message or "") and "Bad gateway" in (
        message.error_message or ""
    )


async def test_pitfall_25_llama_cpp_context_overflow_is_recognised() -> None:
    overflow = Reply.json(
        400,
        {
            "error": {
                "code": 400,
                "message": "request (631 tokens) exceeds the available context size (256 tokens), "
                "try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 631,
                "n_ctx": 256,
            }
        },
    )
    _, message, server = await served([overflow])
    assert message.stop_reason == "error" and len(server.requests) == 1
    assert is_context_overflow(message)


async def test_invalid_json_payload_is_an_error() -> None:
    body = [*sse_chunks([chunk({"content": "ok"})]), b"data: {not json\n\n"]
    _, message, _ = await served([Reply.sse(body)])
    assert message.stop_reason == "error" and message.text == "ok"
    assert "invalid JSON" in (message.error_message or "")


# --- abort ---------------------------------------------------------------------------------------


async def test_abort_mid_stream_closes_the_connection_at_once_and_keeps_partial_content() -> None:
    controller = AbortController()
    body = sse_chunks([chunk({"role": "assistant"}), chunk({"content": "Hel"})])
    async with LoopbackServer() as server:
        server.add(Reply.sse(body, hang=True))
        events_stream = stream(local_model(server), HELLO, signal=controller.signal)
        seen = []
        async for event in events_stream:
            seen.append(event)
            if event.type == "text_delta":
                controller.abort()
        message = await events_stream.result()
        await asyncio.wait_for(server.disconnected.wait(), timeout=1.0)
    assert types(seen) == ["start", "text_start", "text_delta", "error"]
    assert seen[-1].reason == "aborted"
    assert message.stop_reason == "aborted" and message.text == "Hel"
    assert message.error_message == "Request was aborted"


async def test_abort_before_the_request_sends_nothing() -> None:
    controller = AbortController()
    controller.abort()
    async with LoopbackServer() as server:
        events, message = await run(local_model(server), signal=controller.signal)
    assert types(events) == ["error"] and message.stop_reason == "aborted"
    assert server.requests == []


async def test_the_served_model_and_the_response_id_come_from_the_first_chunk_that_has_them() -> (
    None
):
    """The id is taken once; the served model is looked at again only when it changes, and a
    model named as requested ("m") leaves ``response_model`` unset until another one appears."""
    events, message = await parse(
        [
            {"choices": [{"delta": {"content": "a"}}], "model": "m"},
            {"id": "", "choices": [{"delta": {"content": "b"}}], "model": "m"},
            {"id": "chatcmpl-late", "choices": [{"delta": {"content": "c"}}], "model": "m-0613"},
            {"id": "x", "choices": [{"delta": {"content": "d"}}], "model": "m-0901"},
            {"choices": [{"delta": {"content": ""}, "finish_reason": "stop"}], "model": None},
        ]
    )
    assert message.response_id == "" and message.response_model == "m-0613"
    assert message.text == "abcd" and types(events).count("text_delta") == 4
    deltas = [e for e in events if e.type == "text_delta"]
    assert [e.partial.response_model for e in deltas] == [None, None, "m-0613", "m-0613"]


async def test_content_only_deltas_and_the_rest_open_and_close_the_same_blocks() -> None:
    """``{"content": …}`` alone is read on a short path; around reasoning, tool calls, refusals
    and a role the blocks open and close as the general rules say."""
    _events, message = await parse(
        [
            {"choices": [{"delta": {"role": "assistant", "content": ""}}]},
            {"choices": [{"delta": {"reasoning_content": "think"}}]},
            {"choices": [{"delta": {"content": "one"}}]},
            {"choices": [{"delta": {"content": None}}]},
            {"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c1", "function": {}}]}}]},
            {"choices": [{"delta": {"content": "two"}}]},
            {"choices": [{"delta": {"content": ""}}]},
            {"choices": [{"delta": {"refusal": "no"}}]},
            {"choices": [{"delta": {"content": "!"}}], "usage": None},
        ]
    )
    kinds = [
        (c.type, getattr(c, "text", None) or getattr(c, "thinking", None)) for c in message.content
    ]
    assert kinds == [("thinking", "think"), ("text", "one"), ("toolCall", None), ("text", "twono!")]
