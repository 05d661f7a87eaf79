"""The agent-loop peers on scripted workloads: the real pi (node, ``bench/peers/agent_loop.mjs``)
and pydantic-ai (``FunctionModel`` with a stream function, every run event consumed).

A workload is ``turns`` model replies that each stream ``deltas`` text deltas and then ``tools``
no-op tool calls, then one closing reply of one text delta (without tool calls the first reply
ends the run). ``bench/compare_agent_loop.py`` runs these next to pi_notebook's own loop; this
module alone measures just the peers:

    python3 -m bench.peers_agent_loop                    # the five workloads + 10k/100k scaling
    python3 -m bench.peers_agent_loop --workloads text_10k,turns_1k --reps 5
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from bench.common import (
    PI16_NODE,
    PiVersion,
    describe_environment,
    fmt_int,
    fmt_ms,
    fmt_rate,
    node_available,
    print_table,
    run_node_json,
    stats,
)
from bench.sse_server import DELTA_TEXTS

if TYPE_CHECKING:
    from pydantic_ai import Agent

__all__ = [
    "CHUNK_DELTAS",
    "DEFAULT_WORKLOADS",
    "WORKLOADS",
    "Run",
    "Workload",
    "closing_text",
    "parse_workloads",
    "run_pi_node",
    "run_pydantic_ai",
]

Execution = Literal["parallel", "sequential"]

CHUNK_DELTAS = 1_000
"""Deltas a scripted model produces between two hand-offs to the consumer (a provider parsing one
network read): ours, the floor, and pi (``agent_loop.mjs --chunk``, its default too)."""


@dataclass(frozen=True, slots=True)
class Workload:
    key: str
    label: str
    turns: int
    deltas: int
    """Text deltas per reply."""
    tools: int
    """No-op tool calls per reply (0: the first reply ends the run)."""
    execution: Execution = "parallel"

    def __post_init__(self) -> None:
        if self.tools == 0 and self.turns != 1:
            raise ValueError(f"{self.key}: a reply without tool calls ends the run; use turns=1")

    @property
    def model_calls(self) -> int:
        return self.turns + 1 if self.tools else 1

    @property
    def total_deltas(self) -> int:
        return self.turns * self.deltas + (1 if self.tools else 0)


WORKLOADS: dict[str, Workload] = {
    w.key: w
    for w in (
        Workload("text_100k", "one reply of 100k text deltas", 1, 100_000, 0),
        Workload("tools_parallel_1k", "1,000 no-op tool calls in one batch, parallel", 1, 0, 1000),
        Workload("tools_sequential_1k", "the same, sequential", 1, 0, 1000, execution="sequential"),
        Workload("turns_1k", "1,000 turns, one tool call each", 1000, 0, 1),
        Workload("mixed_100k", "100k deltas over 1,000 turns + 1,000 tool calls", 1000, 100, 1),
        Workload("text_10k", "one reply of 10k text deltas", 1, 10_000, 0),
        Workload("text_1m", "one reply of 1M text deltas", 1, 1_000_000, 0),
    )
}
DEFAULT_WORKLOADS = [
    "text_100k",
    "tools_parallel_1k",
    "tools_sequential_1k",
    "turns_1k",
    "mixed_100k",
    "text_10k",
]
"""Run by default; ``text_1m`` only when asked (pi's single-reply cost is quadratic: minutes)."""


@dataclass(frozen=True, slots=True)
class Run:
    """One timed run: wall seconds and how many events the consumer received."""

    seconds: float
    events: int


def closing_text(workload: Workload) -> str:
    """The text of the reply that ends a run (what a correct loop returns as its output)."""
    n = workload.deltas if workload.tools == 0 else 1
    whole, rest = divmod(n, len(DELTA_TEXTS))
    return "".join(DELTA_TEXTS) * whole + "".join(DELTA_TEXTS[:rest])


# --- pi (node) ---


def run_pi_node(
    workload: Workload,
    reps: int,
    *,
    chunk: int = CHUNK_DELTAS,
    timeout: float = 1800.0,
    pi: PiVersion = "0.73",
) -> list[Run]:
    """Run ``workload`` ``reps`` times in the real pi (one node process, one warm-up run first).

    The scripted model hands its reply to the consumer every ``chunk`` deltas; 0 pushes each
    reply whole before the loop reads it (pi's event backlog then holds all of it). ``pi``: the
    pinned 0.73.1 of bench/peers, or 1.6.0 on its Node 22 (``common.pi16_available``)."""
    result = run_node_json(
        "agent_loop.mjs",
        [
            "--turns",
            str(workload.turns),
            "--deltas",
            str(workload.deltas),
            "--tools",
            str(workload.tools),
            "--execution",
            workload.execution,
            "--chunk",
            str(chunk),
            "--reps",
            str(reps),
            "--pi",
            pi,
        ],
        timeout=timeout,
        node=PI16_NODE if pi == "1.6" else "node",
    )
    return [Run(ms / 1000.0, int(result["events"])) for ms in result["runs_ms"]]


# --- pydantic-ai ---


def _pydantic_agent(workload: Workload) -> tuple[Agent[None, str], list[int]]:
    """A pydantic-ai Agent on a FunctionModel that streams ``workload``'s replies, and the list
    its tool appends to on every call."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    calls = 0

    async def stream_function(
        messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | dict[int, DeltaToolCall]]:
        nonlocal calls
        turn = calls
        calls += 1
        closing = workload.tools > 0 and turn >= workload.turns
        deltas = 1 if closing else workload.deltas
        tools = 0 if closing else workload.tools
        for i in range(deltas):
            yield DELTA_TEXTS[i % len(DELTA_TEXTS)]
        for t in range(tools):
            yield {
                t + 1: DeltaToolCall(name="noop", json_args="{}", tool_call_id=f"call_{turn}_{t}")
            }

    agent = Agent(
        FunctionModel(stream_function=stream_function, model_name="scripted"),
        instructions="You are a benchmark.",
    )

    executed: list[int] = []

    @agent.tool_plain
    def noop() -> str:
        """Does nothing and says ok."""
        executed.append(1)
        return "ok"

    return agent, executed


async def run_pydantic_ai(workload: Workload) -> Run:
    """One run of ``workload`` in pydantic-ai, consuming every event of ``run_stream_events``."""
    from pydantic_ai import Agent, AgentRunResultEvent
    from pydantic_ai.usage import UsageLimits

    agent, executed = _pydantic_agent(workload)
    events = 0
    output: Any = None
    gc.collect()
    mode: Execution = workload.execution
    start = time.perf_counter()
    with Agent.parallel_tool_call_execution_mode(mode):
        limits = UsageLimits(request_limit=None)  # default 50 requests: too few for 1,000 turns
        async with agent.run_stream_events("Go.", usage_limits=limits) as stream:
            async for event in stream:
                events += 1
                if isinstance(event, AgentRunResultEvent):
                    output = event.result.output
    seconds = time.perf_counter() - start
    if output != closing_text(workload) or len(executed) != workload.turns * workload.tools:
        raise RuntimeError(
            f"pydantic-ai ran {workload.key} wrongly: {len(executed)} tool calls, "
            f"output of {len(output or '')} characters"
        )
    return Run(seconds, events)


# --- command line ---


def parse_workloads(text: str) -> list[str]:
    keys = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in keys if k not in WORKLOADS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown workload(s) {', '.join(unknown)}; known: {', '.join(WORKLOADS)}"
        )
    return keys


async def _main(args: argparse.Namespace) -> None:
    rows: list[list[str]] = []
    await run_pydantic_ai(Workload("warm_up", "warm-up", 3, 100, 2))  # imports and caches
    for key in args.workloads:
        workload = WORKLOADS[key]
        for name in ("pi (node)", "pydantic-ai"):
            if name == "pi (node)":
                if not node_available():
                    continue
                runs = run_pi_node(workload, args.reps, chunk=args.chunk)
            else:
                runs = [await run_pydantic_ai(workload) for _ in range(args.pydantic_reps)]
            s = stats([r.seconds for r in runs])
            events = runs[-1].events
            rows.append(
                [
                    workload.label,
                    name,
                    fmt_ms(s.median),
                    fmt_ms(s.best),
                    fmt_int(events),
                    fmt_rate(events / s.median),
                    str(s.runs),
                ]
            )
            print(f"  {key:20} {name:12} {s.median * 1e3:10.1f} ms", flush=True)
    print_table(
        "Agent-loop peers (scripted model, every event consumed)",
        ["workload", "system", "ms (median)", "ms (best)", "events", "events/s", "runs"],
        rows,
        left_columns=2,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="Agent-loop peers: pi (node) and pydantic-ai.")
    parser.add_argument(
        "--workloads",
        type=parse_workloads,
        default=DEFAULT_WORKLOADS,
        help=f"comma-separated, from: {', '.join(WORKLOADS)}",
    )
    parser.add_argument("--reps", type=int, default=3, help="pi repetitions (default 3)")
    parser.add_argument(
        "--chunk",
        type=int,
        default=CHUNK_DELTAS,
        help="pi: deltas per hand-off to the consumer (default 1000; 0: each reply whole)",
    )
    parser.add_argument(
        "--pydantic-reps", type=int, default=1, help="pydantic-ai repetitions (default 1: slow)"
    )
    args = parser.parse_args()
    print(describe_environment(["pydantic-ai-slim"]))
    asyncio.run(_main(args))


if __name__ == "__main__":
    main()
