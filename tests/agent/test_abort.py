"""``Agent.abort()`` ends a run promptly whatever its tools do, and every call gets a result.

Tools here ignore their signal in each way a tool can: an async sleep that never looks at it, an
async tool that swallows its cancellation and keeps going, a sync ``@tool`` function blocking its
worker thread, a ``before_tool_call`` hook (a confirmation) that never answers. The assertion is
on the outcome (the run ended, the call has an "aborted" error result, a late result is ignored),
not on a wall-clock limit: bench/abort_bench.py prints the latency.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from pi_notebook.agent import Agent, AgentTool, AgentToolResult, tool
from pi_notebook.agent.tool_execution import ABORTED_TOOL_MESSAGE
from pi_notebook.agent.types import BeforeToolCallResult
from pi_notebook.ai import (
    AbortSignal,
    FauxProvider,
    TextContent,
    ToolResultMessage,
    faux_assistant_message,
    faux_tool_call,
)


def raw_tool(name: str, execute: Any) -> AgentTool:
    return AgentTool(
        name=name,
        description=name,
        parameters={"type": "object", "properties": {}},
        execute=execute,
    )


async def sleeps_without_looking(
    call_id: str, params: dict[str, Any], signal: AbortSignal | None, on_update: Any
) -> AgentToolResult:
    await asyncio.sleep(30)
    return AgentToolResult(content=[TextContent(text="late")])


class Stubborn:
    """An async tool that swallows cancellation and goes on until told to stop (by the test)."""

    def __init__(self) -> None:
        self.stop = asyncio.Event()
        self.cancelled = 0

    async def __call__(
        self, call_id: str, params: dict[str, Any], signal: AbortSignal | None, on_update: Any
    ) -> AgentToolResult:
        while not self.stop.is_set():
            try:
                await self.stop.wait()
            except asyncio.CancelledError:
                self.cancelled += 1
        return AgentToolResult(content=[TextContent(text="late")])


def tool_call_then(faux: FauxProvider, *names: str) -> None:
    calls = [faux_tool_call(name, {}) for name in names]
    faux.set_responses(
        [faux_assistant_message(calls, stop_reason="toolUse"), faux_assistant_message("after")]
    )


async def start_and_abort_when_running(agent: Agent, started: asyncio.Event) -> asyncio.Task[None]:
    run = asyncio.ensure_future(agent.prompt("go"))
    await asyncio.wait_for(started.wait(), 10)
    agent.abort()
    await asyncio.wait_for(agent.wait_for_idle(), 10)  # a generous ceiling, not a timing claim
    return run


def tool_results(agent: Agent) -> list[ToolResultMessage]:
    return [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]


def assert_aborted_call(agent: Agent, count: int = 1) -> None:
    results = tool_results(agent)
    assert len(results) == count
    for result in results:
        assert result.is_error
        assert result.content[0].text == ABORTED_TOOL_MESSAGE  # type: ignore[union-attr]
    last = agent.state.messages[-1]
    assert last.role == "toolResult" or getattr(last, "stop_reason", None) == "aborted"


async def test_an_async_tool_that_ignores_its_signal_is_cancelled(faux: FauxProvider) -> None:
    started = asyncio.Event()

    async def execute(*args: Any) -> AgentToolResult:
        started.set()
        return await sleeps_without_looking(*args)

    agent = Agent(model=faux.get_model(), tools=[raw_tool("slow", execute)])
    tool_call_then(faux, "slow")
    run = await start_and_abort_when_running(agent, started)
    await run
    assert_aborted_call(agent)


async def test_a_tool_that_swallows_cancellation_is_abandoned_and_its_result_ignored(
    faux: FauxProvider,
) -> None:
    stubborn = Stubborn()
    started = asyncio.Event()

    async def execute(*args: Any) -> AgentToolResult:
        started.set()
        return await stubborn(*args)

    agent = Agent(model=faux.get_model(), tools=[raw_tool("stubborn", execute)])
    tool_call_then(faux, "stubborn")
    await start_and_abort_when_running(agent, started)
    assert stubborn.cancelled >= 1
    assert_aborted_call(agent)
    before = list(agent.state.messages)
    stubborn.stop.set()  # it finishes late: nothing changes
    await asyncio.sleep(0.05)
    assert agent.state.messages == before


async def test_a_sync_tool_thread_is_left_to_finish_and_its_late_result_ignored(
    faux: FauxProvider,
) -> None:
    release = threading.Event()
    finished = threading.Event()
    started = asyncio.Event()
    loop = asyncio.get_running_loop()

    @tool
    def blocking() -> str:
        """Blocks its thread until released."""
        loop.call_soon_threadsafe(started.set)
        release.wait(30)
        finished.set()
        return "late"

    agent = Agent(model=faux.get_model(), tools=[blocking])
    tool_call_then(faux, "blocking")
    await start_and_abort_when_running(agent, started)
    assert not finished.is_set()  # the thread still runs; the run is over anyway
    assert_aborted_call(agent)
    before = list(agent.state.messages)
    release.set()
    await asyncio.to_thread(finished.wait, 10)
    await asyncio.sleep(0.05)
    assert agent.state.messages == before


async def test_parallel_calls_all_get_an_aborted_result(faux: FauxProvider) -> None:
    started = asyncio.Event()
    stubborn = Stubborn()

    async def slow(*args: Any) -> AgentToolResult:
        started.set()
        return await sleeps_without_looking(*args)

    agent = Agent(
        model=faux.get_model(), tools=[raw_tool("slow", slow), raw_tool("stubborn", stubborn)]
    )
    tool_call_then(faux, "slow", "stubborn", "slow")
    await start_and_abort_when_running(agent, started)
    assert_aborted_call(agent, count=3)
    stubborn.stop.set()


async def test_a_cooperative_tool_keeps_its_own_result(faux: FauxProvider) -> None:
    started = asyncio.Event()

    async def cooperative(
        call_id: str, params: dict[str, Any], signal: AbortSignal | None, on_update: Any
    ) -> AgentToolResult:
        started.set()
        assert signal is not None
        await signal.wait()
        return AgentToolResult(content=[TextContent(text="stopped cleanly")])

    agent = Agent(model=faux.get_model(), tools=[raw_tool("coop", cooperative)])
    tool_call_then(faux, "coop")
    await start_and_abort_when_running(agent, started)
    [result] = tool_results(agent)
    assert result.content[0].text == "stopped cleanly"  # type: ignore[union-attr]


async def test_an_unanswered_before_tool_call_hook_is_abandoned_on_abort(
    faux: FauxProvider,
) -> None:
    started = asyncio.Event()
    ran: list[str] = []

    async def confirm(context: Any, signal: Any) -> BeforeToolCallResult | None:
        started.set()
        await asyncio.Event().wait()  # a confirmation nobody answers
        return None

    async def execute(*args: Any) -> AgentToolResult:
        ran.append("ran")
        return AgentToolResult(content=[TextContent(text="ran")])

    agent = Agent(model=faux.get_model(), tools=[raw_tool("t", execute)], before_tool_call=confirm)
    tool_call_then(faux, "t")
    await start_and_abort_when_running(agent, started)
    assert ran == []
    assert_aborted_call(agent)


@pytest.mark.parametrize("mode", ["parallel", "sequential"])
async def test_the_agent_is_usable_after_an_abandoned_tool(faux: FauxProvider, mode: str) -> None:
    started = asyncio.Event()
    stubborn = Stubborn()

    async def execute(*args: Any) -> AgentToolResult:
        started.set()
        return await stubborn(*args)

    agent = Agent(
        model=faux.get_model(), tools=[raw_tool("stubborn", execute)], tool_execution=mode
    )  # type: ignore[arg-type]
    tool_call_then(faux, "stubborn")
    await start_and_abort_when_running(agent, started)
    faux.set_responses([faux_assistant_message("fine")])
    await agent.prompt("again")
    assert agent.state.messages[-1].text == "fine"  # type: ignore[union-attr]
    stubborn.stop.set()
