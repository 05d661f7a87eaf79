"""System messages in mid-conversation on the Chat Completions API, as pi-ai 1.6 sends them
(``tests/golden/pi-1.6/sessions/system-role.mjs`` recorded pi's request bodies): folded into
the leading prompt by default; kept in place when the model's compat sets
``supportsMidConvoSystemMessages``, with the ``system`` role (``developer`` only for OpenAI's own
reasoning models), a later one rendered as a section update, one that lands between a tool call
and its result held back until after the result, and the tools of every system message declared
in the request. Each case goes through the real provider over a loopback server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pi_notebook.ai import Context, Model, stream
from pi_notebook.ai.types import AssistantMessage, SystemMessage, ToolResultMessage, UserMessage
from tests.ai.test_openai_completions import text_stream
from tests.loopback import LoopbackServer, Reply, sse_chunks
from tests.paths import GOLDEN

RECORDED = json.loads(
    (GOLDEN / "pi-1.6" / "sessions" / "requests" / "openai-completions-system.json").read_text()
)
_ROLES: dict[str, Any] = {
    "system": SystemMessage,
    "user": UserMessage,
    "assistant": AssistantMessage,
    "toolResult": ToolResultMessage,
}


def _arguments_parsed(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for message in messages:
        calls = message.get("tool_calls")
        if calls:
            parsed = [
                {
                    **c,
                    "function": {
                        **c["function"],
                        "arguments": json.loads(c["function"]["arguments"]),
                    },
                }
                for c in calls
            ]
            message = {**message, "tool_calls": parsed}
        out.append(message)
    return out


def _message(record: dict[str, Any]) -> Any:
    return _ROLES[record["role"]].model_validate(record)


@pytest.mark.parametrize("case", RECORDED["cases"], ids=lambda c: f"{c['model']}:{c['transcript']}")
async def test_the_request_holds_what_pi_16_sends(case: dict[str, Any]) -> None:
    fields = case["modelFields"]
    messages = [_message(m) for m in RECORDED["transcripts"][case["transcript"]]]
    async with LoopbackServer() as server:
        model = Model(
            id="m",
            api="openai-completions",
            provider=fields["provider"],
            base_url=server.url + "/v1",
            reasoning=fields["reasoning"],
            compat=fields.get("compat"),
        )
        server.add(Reply.sse(sse_chunks(text_stream("ok"), done=True)))
        events = stream(model, Context(messages=messages), api_key="none")
        reply = await events.result()
    assert reply.stop_reason == "stop", reply.error_message
    body = server.requests[0].json()
    # (tool-call arguments are compared as JSON: pi writes them without spaces, we with)
    assert _arguments_parsed(body["messages"]) == _arguments_parsed(case["messages"])
    assert [tool["function"]["name"] for tool in body.get("tools", [])] == case["tools"]
