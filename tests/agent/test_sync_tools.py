"""Sync ``@tool`` functions run on workers that abandoned calls cannot starve
(``pi_notebook.agent.sync_tools``): more hung tools than ``asyncio.to_thread``'s default pool has
workers, all abandoned by an abort, and a normal sync tool still runs; past the cap a call fails
at once with a clear error instead of waiting behind the hung ones."""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from pi_notebook.agent import Agent, sync_tools, tool
from pi_notebook.agent.sync_tools import SyncToolsExhausted, run_sync_tool, sync_tool_threads
from pi_notebook.agent.tool_execution import ABORTED_TOOL_MESSAGE
from pi_notebook.ai import FauxProvider, ToolResultMessage, faux_assistant_message, faux_tool_call

DEFAULT_POOL = min(32, (os.cpu_count() or 1) + 4)
"""How many workers ``asyncio.to_thread``'s default executor has on this machine."""
HUNG = max(7, DEFAULT_POOL + 1)


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at the end of the test: the hung tools' threads end."""
    event = threading.Event()
    yield event
    event.set()


async def test_abandoned_hung_sync_tools_do_not_block_a_later_sync_tool(
    faux: FauxProvider, release: threading.Event
) -> None:
    loop = asyncio.get_running_loop()
    started = 0
    all_started = asyncio.Event()

    def count_start() -> None:
        nonlocal started
        started += 1
        if started == HUNG:
            all_started.set()

    @tool
    def hang() -> str:
        """Blocks its thread (until the test ends)."""
        loop.call_soon_threadsafe(count_start)
        release.wait(60)
        return "late"

    @tool
    def quick(x: int) -> int:
        """Doubles x."""
        return 2 * x

    agent = Agent(model=faux.get_model(), tools=[hang, quick])
    calls = [faux_tool_call("hang", {}) for _ in range(HUNG)]
    faux.set_responses(
        [faux_assistant_message(calls, stop_reason="toolUse"), faux_assistant_message("x")]
    )
    run = asyncio.ensure_future(agent.prompt("hang them all"))
    await asyncio.wait_for(all_started.wait(), 20)
    agent.abort()
    await asyncio.wait_for(run, 20)  # a generous ceiling, not a timing claim
    aborted = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert [m.content[0].text for m in aborted] == [ABORTED_TOOL_MESSAGE] * HUNG  # type: ignore[union-attr]
    assert sync_tool_threads()[1] >= HUNG  # still blocked, abandoned

    faux.set_responses(
        [
            faux_assistant_message([faux_tool_call("quick", {"x": 21})], stop_reason="toolUse"),
            faux_assistant_message("done"),
        ]
    )
    await asyncio.wait_for(agent.prompt("now a normal one"), 20)
    result = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)][-1]
    assert not result.is_error
    assert result.content[0].text == "42"  # type: ignore[union-attr]


async def test_past_the_cap_a_call_fails_at_once_and_says_why(
    monkeypatch: pytest.MonkeyPatch, release: threading.Event
) -> None:
    monkeypatch.setattr(sync_tools, "_pool", sync_tools._Pool(2))
    hung = [asyncio.ensure_future(run_sync_tool(release.wait, 60)) for _ in range(2)]
    while sync_tool_threads()[1] < 2:
        await asyncio.sleep(0.01)
    for task in hung:  # abandoned, as an abort does
        task.cancel()
    with pytest.raises(SyncToolsExhausted) as caught:
        await run_sync_tool(lambda: "never")
    message = str(caught.value)
    assert "2 sync tool calls are still running (2 of them abandoned" in message
    assert "Restart the kernel" in message
    release.set()
    while sync_tool_threads()[1]:
        await asyncio.sleep(0.01)
    assert await run_sync_tool(lambda: "again") == "again"  # freed workers serve again


async def test_idle_workers_are_reused() -> None:
    for _ in range(3):
        await run_sync_tool(lambda: None)
    before = sync_tool_threads()[0]
    for i in range(20):
        assert await run_sync_tool(pow, i, 2) == i * i
    assert sync_tool_threads()[0] == before


_where: contextvars.ContextVar[str] = contextvars.ContextVar("where", default="unset")


async def test_context_and_errors_reach_the_caller() -> None:
    _where.set("caller")
    assert await run_sync_tool(_where.get) == "caller"

    def fails() -> None:
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        await run_sync_tool(fails)

    def stops() -> Any:
        raise StopIteration

    with pytest.raises(RuntimeError, match="StopIteration"):
        await run_sync_tool(stops)

    def exits() -> None:
        raise SystemExit(3)

    with pytest.raises(RuntimeError, match="raised SystemExit"):
        await run_sync_tool(exits)
