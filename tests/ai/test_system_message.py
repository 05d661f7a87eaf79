"""pi 1.6 system messages: the message model, the replay rules, and every provider folding them
into the prompt and tools of a real request (loopback HTTP)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import TypeAdapter

from pi_notebook.ai import (
    AssistantMessage,
    Context,
    Message,
    Model,
    SystemMessage,
    Tool,
    ToolCall,
    ToolReference,
    ToolResultMessage,
    UserMessage,
    collapse_system_messages,
    complete,
    current_system_message,
    current_tools,
    system_message_patch,
    system_message_text,
    transform_messages,
)
from tests.loopback import LoopbackServer, Reply, sse_chunks

MESSAGE = TypeAdapter(Message)


def _tool(name: str, description: str = "") -> Tool:
    return Tool(name=name, description=description or name)


def test_system_message_round_trips_pi_json_with_unknown_fields() -> None:
    raw = {
        "role": "system",
        "content": [{"type": "text", "text": "Be brief."}],
        "sections": {"cwd": "/tmp", "gone": None},
        "toolsAdded": [
            {"name": "read", "description": "d", "parameters": {"type": "object"}, "x": 1}
        ],
        "toolsRemoved": [{"name": "bash"}],
        "timestamp": 5,
        "futureField": {"kept": True},
    }
    message = MESSAGE.validate_python(raw)
    assert isinstance(message, SystemMessage)
    assert message.to_json_dict() == raw
    assert message.text == "Be brief."


def test_new_assistant_usage_and_tool_fields_round_trip() -> None:
    raw: dict[str, Any] = {
        "role": "assistant",
        "content": [
            {
                "type": "toolCall",
                "id": "c1",
                "name": "read",
                "arguments": {"path": "a"},
                "namespace": "mcp",
                "argumentsError": "bad",
            }
        ],
        "api": "faux",
        "provider": "faux",
        "model": "m",
        "responseModel": "m-2026",
        "responseId": "r1",
        "providerThinkingLevel": "high",
        "thinkingLevel": "max",
        "diagnostics": [{"type": "retry", "timestamp": 1}],
        "usage": {
            "input": 1,
            "output": 2,
            "cacheRead": 3,
            "cacheWrite": 4,
            "cacheWrite1h": 2,
            "reasoning": 1,
            "totalTokens": 10,
            "cost": {
                "input": 0.5,
                "output": 0.5,
                "cacheRead": 0.0,
                "cacheWrite": 0.0,
                "total": 1.0,
                "totalFromProvider": True,
            },
        },
        "stopReason": "deferred",
        "deferred": {"provider": "faux", "modelId": "m", "api": "faux", "id": "job-1"},
        "rawStopReason": "end_turn",
        "endTurn": True,
        "timestamp": 7,
        "durationMs": 12,
    }
    message = MESSAGE.validate_python(raw)
    assert isinstance(message, AssistantMessage)
    assert message.to_json_dict() == raw
    result = {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "read",
        "content": [],
        "usage": raw["usage"],
        "nestedCalls": {"calls": [{"id": "n", "name": "x", "status": "ok"}], "complete": True},
        "isError": False,
        "timestamp": 8,
        "durationMs": 3,
    }
    assert MESSAGE.validate_python(result).to_json_dict() == result


def test_replay_patches_sections_in_order_and_tools_removals_first() -> None:
    messages: list[Message] = [
        SystemMessage(
            content="Base.",
            sections={"a": "A1", "b": "B1"},
            tools_added=[_tool("read"), _tool("bash")],
            timestamp=1,
        ),
        UserMessage(content="hi", timestamp=2),
        SystemMessage(
            content="",
            sections={"a": "A2", "b": None, "c": "C1"},
            tools_added=[_tool("read", "new read"), _tool("edit")],
            tools_removed=[ToolReference(name="bash")],
            timestamp=3,
        ),
        SystemMessage(content="More.", tools_removed=[ToolReference(name="read")], timestamp=4),
        SystemMessage(content="", tools_added=[_tool("read")], timestamp=5),
    ]
    state = current_system_message(messages)
    assert state is not None
    assert state.content == "Base.\n\nMore."
    assert state.sections == {"a": "A2", "c": "C1"}  # "a" kept its place
    assert [t.name for t in state.tools_added or []] == ["edit", "read"]  # removed, re-added last
    assert state.timestamp == 1
    assert system_message_text(state) == "Base.\n\nMore.\n\nA2\n\nC1"
    assert [t.name for t in current_tools(messages)] == ["edit", "read"]
    redefined = current_tools(messages[:3])
    assert [(t.name, t.description) for t in redefined] == [("read", "new read"), ("edit", "edit")]
    assert current_system_message([UserMessage(content="x")]) is None


def test_collapse_folds_context_prompt_first_and_leaves_plain_contexts_alone() -> None:
    plain = Context(system_prompt="p", messages=[UserMessage(content="x")])
    assert collapse_system_messages(plain) is plain
    context = Context(
        system_prompt="Outer.",
        tools=[_tool("a")],
        messages=[
            SystemMessage(content="Inner.", tools_added=[_tool("b")]),
            UserMessage(content="x"),
        ],
    )
    folded = collapse_system_messages(context)
    assert folded.system_prompt == "Outer.\n\nInner."
    assert [t.name for t in folded.tools or []] == ["a", "b"]
    assert [m.role for m in folded.messages] == ["user"]
    assert len(context.messages) == 2  # the input is untouched


def test_transform_messages_drops_system_messages_or_keeps_them_in_order() -> None:
    model = Model(id="m", api="openai-completions", provider="p")
    out = transform_messages([SystemMessage(content="s"), UserMessage(content="u")], model)
    assert [m.role for m in out] == ["user"]
    # kept (an API that takes them in mid-conversation), as pi 1.6's transformMessages: one
    # between a call and its result follows the result
    kept = transform_messages(
        [SystemMessage(content="s"), UserMessage(content="u")], model, keep_system=True
    )
    assert [m.role for m in kept] == ["system", "user"]
    call = ToolCall(id="c1", name="f", arguments={})
    reply = AssistantMessage(api=model.api, provider="p", model="m", content=[call])
    result = ToolResultMessage(tool_call_id="c1", tool_name="f", content=[])
    kept = transform_messages(
        [reply, SystemMessage(content="later"), result], model, keep_system=True
    )
    assert [m.role for m in kept] == ["assistant", "toolResult", "system"]


def _text_sse(api: str) -> list[bytes]:
    if api == "openai-completions":
        return sse_chunks(
            [
                {"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": None}]},
                {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            ],
            done=True,
        )
    if api == "openai-responses":
        item = {"type": "message", "id": "m1", "role": "assistant", "content": []}
        done_item = {**item, "content": [{"type": "output_text", "text": "ok"}]}
        return sse_chunks(
            [
                {"type": "response.output_item.added", "output_index": 0, "item": item},
                {"type": "response.output_text.delta", "output_index": 0, "delta": "ok"},
                {"type": "response.output_item.done", "output_index": 0, "item": done_item},
                {"type": "response.completed", "response": {"id": "r", "status": "completed"}},
            ],
            event_names=True,
        )
    if api == "anthropic-messages":
        return sse_chunks(
            [
                {"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 1}}},
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": "ok"},
                },
                {"type": "content_block_stop", "index": 0},
                {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}},
                {"type": "message_stop"},
            ],
            event_names=True,
        )
    return sse_chunks(
        [{"candidates": [{"content": {"parts": [{"text": "ok"}]}, "finishReason": "STOP"}]}]
    )


def _prompt_and_tools(api: str, body: dict[str, Any]) -> tuple[str, list[str]]:
    if api == "openai-completions":
        prompt = body["messages"][0]["content"]
        tools = [t["function"]["name"] for t in body.get("tools", [])]
    elif api == "openai-responses":
        prompt = body["instructions"]
        tools = [t["name"] for t in body.get("tools", [])]
    elif api == "anthropic-messages":
        prompt = "".join(block["text"] for block in body["system"])
        tools = [t["name"] for t in body.get("tools", [])]
    else:
        prompt = body["systemInstruction"]["parts"][0]["text"]
        tools = [d["name"] for t in body.get("tools", []) for d in t["functionDeclarations"]]
    return prompt, tools


@pytest.mark.parametrize(
    "api", ["openai-completions", "openai-responses", "anthropic-messages", "google-generative-ai"]
)
async def test_every_provider_sends_the_replayed_prompt_and_tools(
    api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(name, "test-key")
    context = Context(
        messages=[
            SystemMessage(content="Be brief.", sections={"cwd": "Work in /tmp."}),
            UserMessage(content="hi"),
            SystemMessage(content="", tools_added=[_tool("read")]),
            UserMessage(content="again"),
        ]
    )
    async with LoopbackServer() as server:
        server.add(Reply.sse(_text_sse(api)))
        model = Model(id="m", api=api, provider="custom", base_url=server.url + "/v1")
        message = await complete(model, context, api_key="test-key")
    assert message.stop_reason == "stop", message.error_message
    assert message.text == "ok"
    body = server.requests[0].json()
    assert _prompt_and_tools(api, body) == ("Be brief.\n\nWork in /tmp.", ["read"])
    turns = body.get("messages") or body.get("input") or body.get("contents")
    assert json.dumps(turns).count('"system"') == (api == "openai-completions")  # only the prompt


def test_patch_writes_only_what_changed_as_pi_does() -> None:
    first = system_message_patch([], {"a": "A", "b": "B"}, [_tool("read"), _tool("bash")])
    assert first is not None and first.sections == {"a": "A", "b": "B"}
    assert [t.name for t in first.tools_added or []] == ["read", "bash"]
    history: list[Message] = [first, UserMessage(content="hi")]
    assert (
        system_message_patch(history, {"a": "A", "b": "B"}, [_tool("read"), _tool("bash")]) is None
    )
    patch = system_message_patch(history, {"a": "A2", "c": "C"}, [_tool("read", "v2")])
    assert patch is not None
    assert patch.sections == {"a": "A2", "c": "C", "b": None}
    assert [t.name for t in patch.tools_added or []] == ["read"]
    assert [r.name for r in patch.tools_removed or []] == ["read", "bash"]
    state = current_system_message([*history, patch])
    assert state is not None and state.sections == {"a": "A2", "c": "C"}
    assert [(t.name, t.description) for t in state.tools_added or []] == [("read", "v2")]
    assert system_message_patch([*history, patch], None, None) is None
