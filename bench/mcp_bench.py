"""MCP tool calls: pi_notebook's ``McpTool`` against the SDK's own ``Client.call_tool`` on the
same server (tests/mcp/demo_server.py), over stdio and Streamable HTTP on 127.0.0.1.

Prints the time to start and list tools, and the median latency of an ``echo`` call, for both;
the difference is what pi_notebook adds (timeout watch, progress, content mapping). Then the
card stop: an ``Agent`` runs a long ``slow`` count, ``cancel_tool_call`` stops it at its first
progress notification, and the time to the call's error result (``tool_execution_end``) and to
the server writing down its cancellation are printed. Never passes or fails on time.

    python3 -m bench.mcp_bench [--calls 200] [--stops 20]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pi_notebook.mcp import McpServerConfig, McpServers

DEMO = Path(__file__).resolve().parents[1] / "tests" / "mcp" / "demo_server.py"
ENV = {"DEMO_SECRET": "unused", "PATH": "/usr/bin:/bin"}


async def _median_ms(call: Callable[[], Awaitable[Any]], count: int) -> float:
    for _ in range(5):  # warm-up
        await call()
    times = []
    for _ in range(count):
        start = time.perf_counter()
        await call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


async def ours(config: McpServerConfig, count: int) -> tuple[float, float]:
    start = time.perf_counter()
    async with McpServers([config], environ=ENV) as servers:
        tools = {t.remote_name: t for t in await servers.load_tools()}
        started = (time.perf_counter() - start) * 1000
        echo = tools["echo"]
        latency = await _median_ms(
            lambda: echo.execute("id", {"text": "hi"}, None, lambda _u: None), count
        )
    return started, latency


async def sdk(target: Any, count: int) -> tuple[float, float]:
    from mcp import Client

    start = time.perf_counter()
    async with Client(target, cache=None) as client:
        page = await client.list_tools()
        while page.next_cursor:  # every page, as McpServers does
            page = await client.list_tools(cursor=page.next_cursor)
        started = (time.perf_counter() - start) * 1000
        latency = await _median_ms(lambda: client.call_tool("echo", {"text": "hi"}), count)
    return started, latency


async def stop_latency(config: McpServerConfig, reps: int) -> tuple[float, float]:
    """Median ms from ``Agent.cancel_tool_call`` to the call's end, and to the server's note."""
    import tempfile

    from pi_notebook.agent import Agent
    from pi_notebook.ai import faux_assistant_message, faux_tool_call, register_faux_provider

    faux = register_faux_provider()
    ended: list[float] = []
    noted: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        mark = Path(tmp) / "mark"
        env = {**config.env, "DEMO_MARK_FILE": str(mark)}
        async with McpServers([config.model_copy(update={"env": env})], environ=ENV) as servers:
            agent = Agent(model=faux.get_model(), tools=await servers.load_tools())
            for _ in range(reps):
                mark.unlink(missing_ok=True)
                call = faux_tool_call("mcp__demo__slow", {"steps": 10_000, "delay": 0.01})
                faux.set_responses([faux_assistant_message([call]), faux_assistant_message("ok")])
                stopped_at: list[float] = []

                def on_event(event: Any, stopped_at: list[float] = stopped_at) -> None:
                    if event.type == "tool_execution_update" and not stopped_at:
                        stopped_at.append(time.perf_counter())
                        agent.cancel_tool_call(event.tool_call_id)
                    elif event.type == "tool_execution_end" and stopped_at:
                        ended.append(time.perf_counter() - stopped_at[0])

                unsubscribe = agent.subscribe(on_event)
                await agent.prompt("count")
                unsubscribe()
                while not (mark.exists() and mark.read_text()):
                    await asyncio.sleep(0.001)
                noted.append(time.perf_counter() - stopped_at[0])
    faux.unregister()
    return statistics.median(ended) * 1000, statistics.median(noted) * 1000


async def main(count: int, stops: int) -> None:
    from mcp import StdioServerParameters

    process = subprocess.Popen(
        [sys.executable, str(DEMO), "http"], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    url = f"http://127.0.0.1:{int(process.stdout.readline().split()[1])}/mcp"
    try:
        stdio = McpServerConfig(name="demo", command=sys.executable, args=[str(DEMO), "stdio"])
        http = McpServerConfig(name="demo", url=url)
        rows = [
            ("stdio", "pi_notebook McpTool", await ours(stdio, count)),
            (
                "stdio",
                "mcp SDK Client",
                await sdk(
                    StdioServerParameters(command=sys.executable, args=[str(DEMO), "stdio"]), count
                ),
            ),
            ("http", "pi_notebook McpTool", await ours(http, count)),
            ("http", "mcp SDK Client", await sdk(url, count)),
        ]
    finally:
        process.terminate()
        process.wait(10)
        process.stdout.close()
    print(f"{'transport':<10} {'client':<22} {'start+list ms':>14} {'echo median ms':>15}")
    for transport, name, (started, latency) in rows:
        print(f"{transport:<10} {name:<22} {started:>14.1f} {latency:>15.2f}")
    print(f"({count} calls each after 5 warm-up calls)")
    stdio = McpServerConfig(name="demo", command=sys.executable, args=[str(DEMO), "stdio"])
    ended, noted = await stop_latency(stdio, stops)
    print(
        f"card stop (stdio): {ended:.2f} ms to the call's error result, "
        f"{noted:.2f} ms to the server's cancellation (median of {stops})"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--stops", type=int, default=20)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.calls, arguments.stops))
