"""Tool results that cannot be encoded, or are huge, never break a run or a session line.

The results come from raw ``AgentTool``s (no decorator in between) and go through a real agent
run; what the model would see is read from the next request's context, what the session file
would get is the tool-result message encoded as the session writer does (strict JSON).
"""

from __future__ import annotations

import json
import math
from typing import Any

from pi_notebook.agent import Agent, AgentTool, AgentToolResult
from pi_notebook.agent.tool_output import (
    MAX_TOOL_DETAILS_CHARS,
    MAX_TOOL_IMAGE_CHARS,
    MAX_TOOL_TEXT_CHARS,
    bound_result,
    json_safe,
)
from pi_notebook.ai import (
    Context,
    FauxProvider,
    ImageContent,
    TextContent,
    ToolResultMessage,
    faux_assistant_message,
    faux_tool_call,
)


class Opaque:
    def __repr__(self) -> str:
        return "<Opaque thing>"


def raw_tool(name: str, result: AgentToolResult) -> AgentTool:
    async def execute(*args: Any) -> AgentToolResult:
        return result

    return AgentTool(
        name=name,
        description=name,
        parameters={"type": "object", "properties": {}},
        execute=execute,
    )


def strict_line(message: ToolResultMessage) -> str:
    """The message as the session writer encodes it (``allow_nan=False``, UTF-8)."""
    line = json.dumps(message.to_json_dict(), ensure_ascii=False, allow_nan=False)
    line.encode("utf-8")
    return line


async def run_with(faux: FauxProvider, result: AgentToolResult) -> tuple[Agent, list[Context]]:
    seen: list[Context] = []

    def answer(context: Context, *rest: Any) -> Any:
        seen.append(context)
        return faux_assistant_message("done")

    faux.set_responses(
        [faux_assistant_message([faux_tool_call("t", {})], stop_reason="toolUse"), answer]
    )
    agent = Agent(model=faux.get_model(), tools=[raw_tool("t", result)])
    await agent.prompt("go")
    return agent, seen


def tool_result(agent: Agent) -> ToolResultMessage:
    [message] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    return message


async def test_unencodable_details_are_sanitised_and_the_run_goes_on(faux: FauxProvider) -> None:
    details = {
        "nan": math.nan,
        "inf": [math.inf, -math.inf, 1.5],
        "bytes": b"\x00\x01\x02",
        "object": Opaque(),
        1: "int key",
        "set": {1},
        "text": "lone \ud800 surrogate",
    }
    agent, seen = await run_with(
        faux, AgentToolResult(content=[TextContent(text="ok \udfff")], details=details)
    )
    message = tool_result(agent)
    assert agent.state.messages[-1].text == "done"  # type: ignore[union-attr]
    assert json.loads(strict_line(message))["details"] == {
        "nan": None,
        "inf": [None, None, 1.5],
        "bytes": "<3 bytes>",
        "object": "<Opaque thing>",
        "1": "int key",
        "set": [1],
        "text": "lone \ufffd surrogate",
    }
    assert message.content[0].text == "ok \ufffd"  # type: ignore[union-attr]
    assert seen  # the model was asked again, with the result


async def test_a_huge_raw_tool_result_is_bounded_for_model_and_file(faux: FauxProvider) -> None:
    big = "x" * 5_000_000
    image = ImageContent(data="A" * (MAX_TOOL_IMAGE_CHARS + 4), mime_type="image/png")
    result = AgentToolResult(
        content=[TextContent(text=big), image, TextContent(text="tail " * 1000)],
        details={"blob": "y" * (MAX_TOOL_DETAILS_CHARS + 10)},
    )
    agent, seen = await run_with(faux, result)
    message = tool_result(agent)
    line = strict_line(message)
    assert len(line) < MAX_TOOL_TEXT_CHARS + 20_000
    texts = [b.text for b in message.content if isinstance(b, TextContent)]
    assert "characters cut: the output had 5000000 characters" in texts[0]
    assert "an image (image/png" in texts[1] and "was left out" in texts[1]
    assert sum(map(len, texts)) < MAX_TOOL_TEXT_CHARS + 2_000
    assert message.details["truncated"] is True and "cut to a preview" in message.details["note"]
    sent = [m for m in seen[0].messages if isinstance(m, ToolResultMessage)]
    assert sent[0].content == message.content  # the model got the bounded text


def test_small_json_results_pass_through_unchanged() -> None:
    result = AgentToolResult(content=[TextContent(text="fine")], details={"a": [1, 2.5, "b"]})
    assert bound_result(result) is result
    value = {"k": [1, {"n": None}]}
    assert json_safe(value) is value
