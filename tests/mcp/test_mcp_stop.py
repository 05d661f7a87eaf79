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


async def test_the_run_view_card_stop_reaches_the_agent(tmp_path: Path) -> None:
    """The front end's ``stop_tool`` message (delivered on another thread, as a subshell does)
    stops that call through ``on_stop_tool``; a stop of a call waiting for approval refuses it."""
    import threading

    from pi_notebook.agent.types import BeforeToolCallContext, BeforeToolCallResult
    from pi_notebook.ai import AbortSignal
    from pi_notebook.notebook.widgets.run_view import RunView

    mark = tmp_path / "mark"
    faux = register_faux_provider()
    view = RunView()

    def click(message: dict[str, Any]) -> None:
        thread = threading.Thread(target=view._handle_custom_msg, args=(message, []))
        thread.start()
        thread.join()

    async def until(check: Any) -> None:
        for _ in range(500):
            view.flush()
            if check():
                return
            await asyncio.sleep(0.02)
        raise AssertionError("the view never got there")

    async def ask(ctx: BeforeToolCallContext, _s: AbortSignal | None) -> BeforeToolCallResult:
        if ctx.tool_call.name != "mcp__demo__echo":
            return BeforeToolCallResult()
        allowed = await view.request_approval(ctx.tool_call.id, ctx.tool_call.name, ctx.args)
        return BeforeToolCallResult(block=not allowed, reason="denied")

    try:
        faux.set_responses(
            [
                faux_assistant_message([SLOW, ECHO], stop_reason="toolUse"),
                faux_assistant_message([faux_text("both stopped")]),
            ]
        )
        async with McpServers([with_mark(stdio_config(), mark)], environ=ENV) as servers:
            agent = Agent(
                model=faux.get_model(), tools=await servers.load_tools(), before_tool_call=ask
            )
            assert view.controls["stop_tool"] is False
            view.on_stop_tool = agent.cancel_tool_call
            view.flush()
            assert view.controls["stop_tool"] is True
            agent.subscribe(view.handle)
            run = asyncio.ensure_future(agent.prompt("count and echo"))
            # the echo call waits for an approval: its card's stop refuses it and ends it
            await until(lambda: (view.running_tools.get("echo") or {}).get("approval"))
            click({"type": "stop_tool", "tool_call_id": "echo"})
            # the count runs once the preparation pass is over; stop it while it reports progress
            await until(lambda: (view.running_tools.get("slow") or {}).get("progress"))
            click({"type": "stop_tool", "tool_call_id": "slow"})
            click({"type": "stop_tool", "tool_call_id": "no-such-call"})  # ignored
            await run
            view.flush()
            results = {i["tool_call_id"]: i for i in view.messages if i["kind"] == "tool_result"}
            assert results["slow"]["is_error"] and results["slow"]["text"] == CANCELLED_TOOL_MESSAGE
            assert results["echo"]["is_error"] and results["echo"]["text"] == CANCELLED_TOOL_MESSAGE
            assert results["echo"]["approval"]["state"] == "denied"
            assert view.status == "done" and view.notice == ""
            assert (await marked(mark)).startswith("slow cancelled after ")
    finally:
        faux.unregister()
