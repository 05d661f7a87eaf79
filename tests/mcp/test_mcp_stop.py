"""One MCP call stopped on its own (a tool card's stop) and ``isError`` results, through an
``Agent`` and an ``AgentHarness`` and the real demo server: the server sees
``notifications/cancelled``, the model sees the error, the run goes on."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pi_notebook.agent import CANCELLED_TOOL_MESSAGE, Agent
from pi_notebook.agent.events import AgentEvent
from pi_notebook.ai import (
    ImageContent,
    TextContent,
    ToolResultMessage,
    faux_assistant_message,
    faux_text,
    faux_tool_call,
    register_faux_provider,
)
from pi_notebook.mcp import McpServerConfig, McpServers

from .conftest import stdio_config
from .test_mcp_client import ENV

SLOW = faux_tool_call("mcp__demo__slow", {"steps": 400, "delay": 0.05}, id="slow")
ECHO = faux_tool_call("mcp__demo__echo", {"text": "still here"}, id="echo")


def with_mark(config: McpServerConfig, mark: Path) -> McpServerConfig:
    return config.model_copy(update={"env": {**config.env, "DEMO_MARK_FILE": str(mark)}})


async def marked(mark: Path) -> str:
    for _ in range(250):
        if mark.exists() and mark.read_text():
            break
        await asyncio.sleep(0.02)
    return mark.read_text()


def text_of(message: ToolResultMessage) -> str:
    return "".join(b.text for b in message.content if isinstance(b, TextContent))


async def test_stopping_one_mcp_call_cancels_it_on_the_server(tmp_path: Path) -> None:
    mark = tmp_path / "mark"
    faux = register_faux_provider()
    try:
        faux.set_responses(
            [
                faux_assistant_message([SLOW, ECHO], stop_reason="toolUse"),
                faux_assistant_message([faux_text("one was stopped")]),
            ]
        )
        async with McpServers([with_mark(stdio_config(), mark)], environ=ENV) as servers:
            agent = Agent(model=faux.get_model(), tools=await servers.load_tools())
            stopped: list[bool] = []

            def on_event(event: AgentEvent) -> None:
                # stop the count once its first progress notification reached the card
                if event.type == "tool_execution_update" and not stopped:
                    stopped.append(agent.cancel_tool_call(event.tool_call_id))

            agent.subscribe(on_event)
            await agent.prompt("count and echo")
            assert stopped == [True]
            results = {
                m.tool_call_id: m for m in agent.state.messages if isinstance(m, ToolResultMessage)
            }
            assert results["slow"].is_error
            assert text_of(results["slow"]) == CANCELLED_TOOL_MESSAGE
            assert not results["echo"].is_error and text_of(results["echo"]) == "still here"
            assert agent.state.messages[-1].role == "assistant"  # the next turn ran
            assert (await marked(mark)).startswith("slow cancelled after ")
            assert servers.get("demo").state == "ready"  # stopping a call is not a failure
    finally:
        faux.unregister()


async def test_a_harness_stops_one_call_and_keeps_error_results_whole(tmp_path: Path) -> None:
    from pi_notebook.harness import AgentHarness, JsonlSessionStorage, Session

    mark = tmp_path / "mark"
    faux = register_faux_provider()
    try:
        faux.set_responses(
            [
                faux_assistant_message([SLOW], stop_reason="toolUse"),
                faux_assistant_message(
                    [faux_tool_call("mcp__demo__fail", {}, id="fail")], stop_reason="toolUse"
                ),
                faux_assistant_message([faux_text("done")]),
            ]
        )
        session = Session.create(JsonlSessionStorage(tmp_path / "s.jsonl"))
        async with McpServers([with_mark(stdio_config(), mark)], environ=ENV) as servers:
            harness = AgentHarness(session, faux.get_model(), tools=await servers.load_tools())
            stopped: list[bool] = []

            def on_event(event: Any) -> None:
                if getattr(event, "type", None) == "tool_execution_update" and not stopped:
                    stopped.append(harness.cancel_tool_call(event.tool_call_id))

            harness.subscribe(on_event)
            await harness.prompt("count, then fail")
            assert stopped == [True]
            assert harness.cancel_tool_call("slow") is False  # idle now
            messages = session.build_context().messages
            results = [m for m in messages if isinstance(m, ToolResultMessage)]
            assert [(r.tool_call_id, r.is_error) for r in results] == [
                ("slow", True),
                ("fail", True),
            ]
            assert text_of(results[0]) == CANCELLED_TOOL_MESSAGE
            failed = results[1]
            assert text_of(failed).startswith("the disk is on fire")
            assert any(isinstance(b, ImageContent) for b in failed.content)
            assert failed.details["structuredContent"] == {"device": "sda", "temperature_c": 93}
            assert (await marked(mark)).startswith("slow cancelled after ")
    finally:
        faux.unregister()
