"""Abort latency with uncooperative tools: the time from ``Agent.abort()`` to the agent idle.

Each kind of tool ignores its abort signal in its own way: an async tool sleeping without looking
at it (cancellable), an async tool that swallows every cancellation (abandoned after the grace),
a sync ``@tool`` function blocking its worker thread (cannot be stopped: left to finish), and a
``before_tool_call`` confirmation nobody answers. The model is the in-process faux provider, so
the figure is the agent's own latency. Prints a table; passes or fails on nothing.

    python3 -m bench.abort_bench --reps 5
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from pi_notebook.agent import Agent, AgentTool, AgentToolResult, tool
from pi_notebook.agent.tool_execution import ABORT_GRACE_S
from pi_notebook.ai import (
    TextContent,
    faux_assistant_message,
    faux_tool_call,
    register_faux_provider,
)

from .common import describe_environment, fmt_ms, print_table, stats


def _raw(name: str, execute: Any) -> AgentTool:
    schema = {"type": "object", "properties": {}}
    return AgentTool(name=name, description=name, parameters=schema, execute=execute)


def _sleeper(started: asyncio.Event) -> tuple[list[AgentTool], dict[str, Any]]:
    async def execute(*args: Any) -> AgentToolResult:
        started.set()
        await asyncio.sleep(60)
        return AgentToolResult(content=[TextContent(text="late")])

    return [_raw("t", execute)], {}


def _stubborn(started: asyncio.Event) -> tuple[list[AgentTool], dict[str, Any]]:
    async def execute(*args: Any) -> AgentToolResult:
        started.set()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(0.01)
        return AgentToolResult(content=[TextContent(text="late")])

    return [_raw("t", execute)], {}


def _thread(started: asyncio.Event) -> tuple[list[AgentTool], dict[str, Any]]:
    loop = asyncio.get_running_loop()
    release = threading.Event()

    @tool(name="t")
    def blocking() -> str:
        """Blocks its worker thread."""
        loop.call_soon_threadsafe(started.set)
        release.wait(3)
        return "late"

    return [blocking], {}


def _confirm(started: asyncio.Event) -> tuple[list[AgentTool], dict[str, Any]]:
    async def confirm(context: Any, signal: Any) -> None:
        started.set()
        await asyncio.Event().wait()

    async def execute(*args: Any) -> AgentToolResult:
        return AgentToolResult(content=[TextContent(text="ran")])

    return [_raw("t", execute)], {"before_tool_call": confirm}


CASES: dict[str, Callable[[asyncio.Event], tuple[list[AgentTool], dict[str, Any]]]] = {
    "async tool ignoring its signal": _sleeper,
    "async tool swallowing cancellation": _stubborn,
    "sync @tool blocking its thread": _thread,
    "unanswered before_tool_call": _confirm,
}


async def _once(make: Callable[[asyncio.Event], tuple[list[AgentTool], dict[str, Any]]]) -> float:
    faux = register_faux_provider()
    try:
        started = asyncio.Event()
        tools, options = make(started)
        faux.set_responses(
            [
                faux_assistant_message([faux_tool_call("t", {})], stop_reason="toolUse"),
                faux_assistant_message("after"),
            ]
        )
        agent = Agent(model=faux.get_model(), tools=tools, **options)
        run = asyncio.ensure_future(agent.prompt("go"))
        await started.wait()
        began = time.perf_counter()
        agent.abort()
        await agent.wait_for_idle()
        elapsed = time.perf_counter() - began
        await run
        return elapsed
    finally:
        faux.unregister()


async def _main(reps: int) -> None:
    print(describe_environment())
    print(f"ABORT_GRACE_S = {ABORT_GRACE_S}\n")
    rows = []
    for name, make in CASES.items():
        samples = [await _once(make) for _ in range(reps)]
        figures = stats(samples)
        rows.append([name, fmt_ms(figures.median), fmt_ms(max(samples))])
    print_table(
        f"Abort latency with an uncooperative tool ({reps} runs each)",
        ["tool", "abort → idle, median ms", "max ms"],
        rows,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(_main(args.reps))


if __name__ == "__main__":
    main()
