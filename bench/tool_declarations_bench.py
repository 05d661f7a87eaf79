"""What declaring tool changes before every request costs (pi 1.6's ``declareToolChanges``),
side by side in one run: pi_notebook's ``Agent`` (declarations before each request, the default
since pi 1.6), the same loop with ``declare_tools`` off (the tool list handed over beside the
transcript, as before), and pi-agent-core 1.6.0 itself in node.

Two workloads of N turns, one no-op tool call each, then a closing reply (the transcript grows to
2N+3 messages): the tools unchanged (each request finds nothing to declare), and the tools
changed before every turn by ``prepare_next_turn`` (it swaps the tool list of the run's own
context; each request then gets a system message). The
scripted model streams every reply as pi's does (``bench/peers/tool_declarations_16.mjs``); one
subscriber consumes every event; every run is checked. A per-turn cost that does not grow with N
shows the declaration is no whole-history work (it replays only the messages added since the
previous request).

    python3 -m bench.tool_declarations_bench                       # 1k and 4k turns, 5 reps
    python3 -m bench.tool_declarations_bench --turns 1000 --reps 9

pi 1.6 needs ``npm ci`` in ``tests/golden/pi-1.6/agent`` (it brings Node 22); without it that
column is left out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench.common import describe_environment, fmt_ms, print_table, rotated, stats
from pi_notebook.agent.agent import Agent
from pi_notebook.agent.tools import AgentTool, AgentToolResult
from pi_notebook.agent.types import AgentLoopConfig, TurnEndContext
from pi_notebook.ai import (
    AbortSignal,
    AssistantMessage,
    AssistantMessageEventStream,
    Context,
    MessageBuilder,
    Model,
    StreamOptions,
    SystemMessage,
    TextContent,
    produce_stream,
)

ROOT = Path(__file__).resolve().parent.parent
PI16 = ROOT / "tests" / "golden" / "pi-1.6" / "agent" / "node_modules"
PEER = ROOT / "bench" / "peers" / "tool_declarations_16.mjs"
MODEL = Model(id="scripted", api="scripted", provider="bench", context_window=1_000_000_000)
DECLARED = "pi_notebook Agent (declared per request)"
OFF = "pi_notebook, declare_tools off"
PI = "pi 1.6 (node)"


def tool(name: str) -> AgentTool:
    async def execute(
        call_id: str, params: dict[str, Any], signal: AbortSignal | None, on_update: Any
    ) -> AgentToolResult:
        return AgentToolResult(content=[TextContent(text="ok")], details={})

    return AgentTool(
        name=name,
        description=f"The {name} tool: does nothing and says ok.",
        parameters={"type": "object", "properties": {}},
        execute=execute,
    )


NOOP, EXTRA = tool("noop"), tool("extra")


def scripted(turns: int) -> Callable[[Model, Context, StreamOptions], AssistantMessageEventStream]:
    calls = 0

    def stream(model: Model, context: Context, options: StreamOptions) -> Any:
        nonlocal calls
        turn, calls = calls, calls + 1

        async def body(out: MessageBuilder) -> None:
            out.start()
            if turn >= turns:
                index = out.text_start()
                out.text_delta(index, "done")
                out.text_end(index)
                out.done("stop")
                return
            index = out.toolcall_start(f"call_{turn}", "noop")
            out.toolcall_delta(index, "{}")
            out.toolcall_end(index)
            out.done("toolUse")

        return produce_stream(model, options, body)

    return stream


class _Undeclared(Agent):
    """The same agent with the loop's declarations off: tools go beside the transcript."""

    def _config(self, *, skip_initial_steering_poll: bool = False) -> AgentLoopConfig:
        config = super()._config(skip_initial_steering_poll=skip_initial_steering_poll)
        config.declare_tools = False
        return config


async def ours(turns: int, changing: bool, declared: bool) -> tuple[float, int]:
    count = 0

    def toggle(turn: TurnEndContext) -> None:
        nonlocal count
        count += 1
        # the run's own context, its tool list swapped: no other context to convert afresh
        turn.context.tools = [NOOP, EXTRA] if count % 2 else [NOOP]

    agent = (Agent if declared else _Undeclared)(
        system_prompt="You are a benchmark.",
        model=MODEL,
        tools=[NOOP],
        stream_fn=scripted(turns),
        prepare_next_turn=toggle if changing else None,
    )
    events = 0

    def consume(event: Any) -> None:
        nonlocal events
        events += 1

    agent.subscribe(consume)
    start = time.perf_counter()
    await agent.prompt("Go.")
    seconds = time.perf_counter() - start
    messages = agent.state.messages
    patches = sum(isinstance(m, SystemMessage) for m in messages) - 1
    last = messages[-1]
    expected = 2 * turns + 3 + (patches if declared else 0)
    if not isinstance(last, AssistantMessage) or last.text != "done" or len(messages) != expected:
        raise RuntimeError(f"the run went wrong: {len(messages)} messages, {patches} patches")
    if declared and patches != (turns if changing else 0):
        raise RuntimeError(f"{patches} patches declared, expected {turns if changing else 0}")
    return seconds, patches


def pi_available() -> bool:
    return (PI16 / ".bin" / "node").exists() and (
        PI16 / "@earendil-works" / "pi-agent-core"
    ).is_dir()


def pi_node(turns: int, changing: bool) -> tuple[float, int]:
    out = subprocess.run(
        [
            str(PI16 / ".bin" / "node"),
            str(PEER),
            "--turns",
            str(turns),
            "--changing",
            "1" if changing else "0",
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    row = json.loads(out.stdout.strip().splitlines()[-1])
    return row["ms"] / 1e3, row["patches"]


async def measure(turns_list: list[int], reps: int) -> list[list[str]]:
    rows: list[list[str]] = []
    await ours(100, True, True)  # warm-up: imports, caches
    for turns in turns_list:
        for changing in (False, True):
            systems: dict[str, Callable[[], Awaitable[tuple[float, int]]]] = {
                DECLARED: lambda t=turns, c=changing: ours(t, c, True),
                OFF: lambda t=turns, c=changing: ours(t, c, False),
            }
            if pi_available():
                systems[PI] = lambda t=turns, c=changing: asyncio.to_thread(pi_node, t, c)
            samples: dict[str, list[float]] = {name: [] for name in systems}
            patches: dict[str, int] = {}
            for rep in range(reps):
                for name in rotated(list(systems), rep):
                    seconds, declared = await systems[name]()
                    samples[name].append(seconds)
                    patches[name] = declared
            what = "tools changed every turn" if changing else "tools unchanged"
            for name, values in samples.items():
                s = stats(values)
                per_turn = s.median / turns * 1e6
                shown = "—" if name == OFF else str(patches[name])
                rows.append(
                    [
                        f"{turns:,} turns, {what}",
                        name,
                        fmt_ms(s.median),
                        fmt_ms(s.best),
                        f"{per_turn:.0f}",
                        shown,
                    ]
                )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", default="1000,4000", help="comma-separated turn counts")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    turns = [int(t) for t in args.turns.split(",")]
    print(describe_environment())
    if pi_available():
        node = subprocess.run(
            [str(PI16 / ".bin" / "node"), "--version"], capture_output=True, text=True, check=True
        )
        print(f"pi-agent-core 1.6.0 on node {node.stdout.strip()} (tests/golden/pi-1.6/agent)")
    else:
        print("pi 1.6 not installed (npm ci in tests/golden/pi-1.6/agent): its column is left out")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (before)")
    rows = asyncio.run(measure(turns, args.reps))
    print_table(
        "Tool declarations before every request (median of the runs, ms)",
        ["workload", "system", "median ms", "best ms", "µs/turn", "patches"],
        rows,
        left_columns=2,
    )
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (after)")


if __name__ == "__main__":
    main()
