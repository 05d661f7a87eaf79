"""Abort latency with uncooperative tools: the time from ``Agent.abort()`` to the agent idle.

Each kind of tool ignores its abort signal in its own way: an async tool sleeping without looking
at it (cancellable), an async tool that swallows every cancellation (abandoned after the grace),
a sync ``@tool`` function blocking its worker thread (cannot be stopped: left to finish), and a
``before_tool_call`` confirmation nobody answers. The model is the in-process faux provider, so
the figure is the agent's own latency.

Then (``--hung``) the time a normal sync ``@tool`` takes after that many hung sync tools were
abandoned by an abort (more than ``asyncio.to_thread``'s default pool has workers: before
``agent/sync_tools`` it never ran), and (``--kernel-reps``, 0 to skip) the same aborts in a
real kernel (nbclient): a notebook ``@tool`` that sleeps 30 s in its thread, swallows its
cancellation, or blocks forever, ``%abort`` in the next cell, the time until the run ended
(measured inside the kernel). Prints tables; passes or fails on nothing.

    python3 -m bench.abort_bench --reps 5 --hung 8 --kernel-reps 2
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


async def _after_hung(hung: int) -> tuple[float, float]:
    """(abort → idle with ``hung`` hung sync tools, a normal sync tool's run after them) in s."""
    faux = register_faux_provider()
    release = threading.Event()
    loop = asyncio.get_running_loop()
    started: list[int] = []
    all_started = asyncio.Event()

    def count() -> None:
        started.append(1)
        if len(started) == hung:
            all_started.set()

    @tool
    def hang() -> str:
        """Blocks its thread."""
        loop.call_soon_threadsafe(count)
        release.wait(60)
        return "late"

    @tool
    def quick() -> str:
        """Answers at once."""
        return "quick"

    try:
        agent = Agent(model=faux.get_model(), tools=[hang, quick])
        calls = [faux_tool_call("hang", {}) for _ in range(hung)]
        faux.set_responses(
            [faux_assistant_message(calls, stop_reason="toolUse"), faux_assistant_message("x")]
        )
        run = asyncio.ensure_future(agent.prompt("hang"))
        await all_started.wait()
        began = time.perf_counter()
        agent.abort()
        await run
        aborted = time.perf_counter() - began
        faux.set_responses(
            [
                faux_assistant_message([faux_tool_call("quick", {})], stop_reason="toolUse"),
                faux_assistant_message("done"),
            ]
        )
        began = time.perf_counter()
        await asyncio.wait_for(agent.prompt("quick"), 30)
        return aborted, time.perf_counter() - began
    finally:
        release.set()
        faux.unregister()


_DEAF_ASYNC = """\
@pi_notebook.tool
async def slow() -> str:
    '''Deaf to the abort, swallows its cancellation.'''
    started.set()
    while True:
        try:
            await asyncio.sleep(30)
            return 'late'
        except asyncio.CancelledError:
            pass
"""
_DEAF_SYNC = """\
@pi_notebook.tool
def slow() -> str:
    '''Deaf to the abort.'''
    started.set()
    {body}
    return 'late'
"""
_KERNEL_TOOLS = {
    "sync @tool sleeping 30 s": _DEAF_SYNC.format(body="time.sleep(30)"),
    "async @tool swallowing cancellation": _DEAF_ASYNC,
    "sync @tool blocked forever": _DEAF_SYNC.format(body="threading.Event().wait()"),
}
_KERNEL_SETUP = """\
from pi_notebook.ai import faux_assistant_message, faux_tool_call, register_faux_provider
import asyncio, threading, time, pi_notebook
faux = register_faux_provider()
started = threading.Event()
faux.set_responses([faux_assistant_message(faux_tool_call('slow', {}))])
"""


def _kernel_abort(tool_cell: str) -> float:
    """Seconds from ``%abort`` to the run's end, inside a fresh kernel."""
    import os
    import tempfile

    import nbformat
    from nbclient import NotebookClient

    cells = [
        _KERNEL_SETUP,
        "%load_ext pi_notebook\n%model faux/faux-1",
        tool_cell,
        "%%agent\nUse slow",
        "await asyncio.to_thread(started.wait, 30)",
        "aborted_at = time.monotonic()\n%abort",
        "await pi_notebook.current().runs[0].wait()\n"
        "print('ELAPSED', time.monotonic() - aborted_at)",
    ]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    os.environ["JPY_SESSION_NAME"] = "bench.ipynb"
    with tempfile.TemporaryDirectory() as tmp:
        NotebookClient(nb, timeout=120, resources={"metadata": {"path": tmp}}).execute()
    text = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    return float(text.split("ELAPSED", 1)[1].split()[0])


async def _main(reps: int, hung: int, kernel_reps: int) -> None:
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
    if hung:
        aborted, quick = await _after_hung(hung)
        print_table(
            f"{hung} hung sync tools abandoned, then a normal sync tool",
            ["abort → idle ms", "the next run with a sync tool, ms"],
            [[fmt_ms(aborted), fmt_ms(quick)]],
        )
    if kernel_reps:
        rows = []
        for name, tool_cell in _KERNEL_TOOLS.items():
            samples = [_kernel_abort(tool_cell) for _ in range(kernel_reps)]
            rows.append([name, fmt_ms(stats(samples).median), fmt_ms(max(samples))])
        print_table(
            f"%abort in a real kernel ({kernel_reps} kernels each; timed inside the kernel)",
            ["tool", "%abort → run ended, median ms", "max ms"],
            rows,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--hung", type=int, default=8, help="hung sync tools (0: skip)")
    parser.add_argument("--kernel-reps", type=int, default=1, help="kernels per tool (0: skip)")
    args = parser.parse_args()
    asyncio.run(_main(args.reps, args.hung, args.kernel_reps))


if __name__ == "__main__":
    main()
