"""pi_notebook's agent loop on the scripted agent-loop workloads (``bench.peers_agent_loop``).

Each workload runs ``Agent.prompt`` against an in-process scripted stream function that writes
its replies through ``MessageBuilder`` (the path every provider takes), with one subscriber
consuming every agent event. The scripted model hands its events over in chunks of
``CHUNK_DELTAS`` deltas, the way a provider parses a network read, so even a 1M-delta reply
never sits in memory whole. Every run is checked (message count, tool calls, final text).

    python3 -m bench.agent_loop_bench                          # five workloads + 10k/100k/1M
    python3 -m bench.agent_loop_bench --workloads turns_1k --reps 5
    python3 -m bench.agent_loop_bench --profile mixed_100k     # cProfile, top functions
    python3 -m bench.agent_loop_bench --instructions           # callgrind: per turn, per delta
    python3 -m bench.agent_loop_bench --instructions turn --callgrind-out /tmp/cg  # keep files
    python3 -m bench.agent_loop_bench --bytecodes turn      # bytecodes per turn, by module

Reuse from other scripts: ``await run_workload(WORKLOADS[key])`` or one of the per-workload
functions (``text_100k()``, ``tools_parallel_1k()``, …), each returning a ``Run``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import pstats
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Coroutine
from types import FrameType
from typing import Any

from bench.common import (
    REPO_ROOT,
    callgrind_instructions,
    describe_environment,
    fmt_int,
    fmt_ms,
    fmt_rate,
    print_table,
    stats,
)
from bench.peers_agent_loop import (
    CHUNK_DELTAS,
    WORKLOADS,
    Run,
    Workload,
    closing_text,
    parse_workloads,
)
from bench.sse_server import DELTA_TEXTS
from pi_notebook.agent.agent import Agent
from pi_notebook.agent.tools import AgentTool, AgentToolResult
from pi_notebook.agent.types import StreamFn
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

__all__ = [
    "CHUNK_DELTAS",
    "FULL_GC_PASSES",
    "MODEL",
    "RUNNERS",
    "mixed_100k",
    "noop_tool",
    "run_workload",
    "scripted_stream_fn",
    "text_1m",
    "text_10k",
    "text_100k",
    "tools_parallel_1k",
    "tools_sequential_1k",
    "turns_1k",
]


MODEL = Model(
    id="scripted",
    name="Scripted model",
    api="scripted",
    provider="bench",
    context_window=1_000_000_000,
)

FULL_GC_PASSES: dict[str, int] = {}
"""Full (generation 2) GC passes during the last timed run of each workload."""

SCALING = ["text_10k", "text_100k", "text_1m"]
DEFAULT = ["text_100k", "tools_parallel_1k", "tools_sequential_1k", "turns_1k", "mixed_100k"]


def noop_tool() -> AgentTool:
    """The workloads' tool: no parameters, answers "ok"."""

    async def execute(
        call_id: str, params: dict[str, Any], signal: AbortSignal | None, on_update: Any
    ) -> AgentToolResult:
        return AgentToolResult(content=[TextContent(text="ok")], details={})

    return AgentTool(
        name="noop",
        label="No-op",
        description="Does nothing and says ok.",
        parameters={"type": "object", "properties": {}},
        execute=execute,
    )


def scripted_stream_fn(workload: Workload) -> StreamFn:
    """A stream function playing ``workload``: ``turns`` replies of ``deltas`` text deltas and
    ``tools`` no-op tool calls, then a closing reply of one delta."""
    calls = 0

    def stream(model: Model, context: Context, options: StreamOptions) -> Any:
        nonlocal calls
        turn = calls
        calls += 1
        closing = workload.tools > 0 and turn >= workload.turns
        deltas = 1 if closing else workload.deltas
        tools = 0 if closing else workload.tools

        async def body(out: MessageBuilder) -> None:
            out.start()
            if deltas:
                index = out.text_start()
                for i in range(deltas):
                    out.text_delta(index, DELTA_TEXTS[i % len(DELTA_TEXTS)])
                    if i % CHUNK_DELTAS == CHUNK_DELTAS - 1:
                        await asyncio.sleep(0)
                out.text_end(index)
            for t in range(tools):
                index = out.toolcall_start(f"call_{turn}_{t}", "noop")
                out.toolcall_delta(index, "{}")
                out.toolcall_end(index)
            out.done("toolUse" if tools else "stop")

        stream_: AssistantMessageEventStream = produce_stream(model, options, body)
        return stream_

    return stream


async def run_workload(workload: Workload) -> Run:
    """One timed ``Agent.prompt`` of ``workload`` (fresh agent), checked afterwards."""
    agent = Agent(
        system_prompt="You are a benchmark.",
        model=MODEL,
        tools=[noop_tool()],
        stream_fn=scripted_stream_fn(workload),
        tool_execution=workload.execution,
    )
    events = 0

    def count(event: Any) -> None:
        nonlocal events
        events += 1

    agent.subscribe(count)
    gc.collect()
    full_passes = gc.get_stats()[2]["collections"]
    start = time.perf_counter()
    await agent.prompt("Go.")
    seconds = time.perf_counter() - start
    FULL_GC_PASSES[workload.key] = gc.get_stats()[2]["collections"] - full_passes

    # pi 1.6: the transcript opens with the system message holding the prompt and the tool
    # declarations (no event reports it), then the prompt, the replies and the tool results.
    messages = agent.state.messages
    expected = 3 + workload.turns * (1 + workload.tools) if workload.tools else 3
    last = messages[-1]
    if (
        len(messages) != expected
        or not isinstance(messages[0], SystemMessage)
        or agent.state.error_message
        or not isinstance(last, AssistantMessage)
        or last.text != closing_text(workload)
    ):
        raise RuntimeError(
            f"{workload.key} ran wrongly: {len(messages)} messages (expected {expected}), "
            f"error {agent.state.error_message}"
        )
    return Run(seconds, events)


def _runner(key: str) -> Callable[[], Coroutine[Any, Any, Run]]:
    async def run() -> Run:
        return await run_workload(WORKLOADS[key])

    run.__name__ = key
    run.__doc__ = f"One run of {WORKLOADS[key].label}."
    return run


text_100k = _runner("text_100k")
tools_parallel_1k = _runner("tools_parallel_1k")
tools_sequential_1k = _runner("tools_sequential_1k")
turns_1k = _runner("turns_1k")
mixed_100k = _runner("mixed_100k")
text_10k = _runner("text_10k")
text_1m = _runner("text_1m")

RUNNERS: dict[str, Callable[[], Coroutine[Any, Any, Run]]] = {
    "text_100k": text_100k,
    "tools_parallel_1k": tools_parallel_1k,
    "tools_sequential_1k": tools_sequential_1k,
    "turns_1k": turns_1k,
    "mixed_100k": mixed_100k,
    "text_10k": text_10k,
    "text_1m": text_1m,
}


# --- command line --------------------------------------------------------------------------------


async def _measure(keys: list[str], reps: int, reps_1m: int) -> list[list[str]]:
    await run_workload(WORKLOADS["text_10k"])  # warm-up: imports, caches
    rows: list[list[str]] = []
    for key in keys:
        workload = WORKLOADS[key]
        runs = [await RUNNERS[key]() for _ in range(reps_1m if key == "text_1m" else reps)]
        s = stats([r.seconds for r in runs])
        events = runs[-1].events
        per_delta = f"{s.median / workload.total_deltas * 1e6:.2f}" if workload.deltas else "–"
        rows.append(
            [
                workload.label,
                fmt_ms(s.median),
                fmt_ms(s.best),
                fmt_int(events),
                fmt_rate(events / s.median),
                per_delta,
                str(FULL_GC_PASSES.get(key, 0)),
                str(s.runs),
            ]
        )
        print(f"  {key:20} {s.median * 1e3:10.1f} ms", flush=True)
    return rows


def _profile(key: str) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    asyncio.run(RUNNERS[key]())
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


_ICOUNT_UNITS: dict[str, tuple[str, Callable[[int], Workload], tuple[int, int]]] = {
    # what one unit costs: a workload at each of two sizes, differenced (start-up cancels out)
    "turn": ("turn, one tool call", lambda n: Workload("icount", "", n, 0, 1), (200, 1_200)),
    "mixed": (
        "turn, 100 deltas + one tool call",
        lambda n: Workload("icount", "", n, 100, 1),
        (200, 1_200),
    ),
    "delta": ("delta, one reply", lambda n: Workload("icount", "", 1, n, 0), (10_000, 60_000)),
}


def _parse_units(text: str) -> list[str]:
    units = [unit.strip() for unit in text.split(",") if unit.strip()]
    for unit in units:
        if unit not in _ICOUNT_UNITS:
            raise argparse.ArgumentTypeError(
                f"unknown unit {unit!r} (from {', '.join(_ICOUNT_UNITS)})"
            )
    return units


def _instructions(units: list[str], callgrind_out: str | None) -> None:
    """Instructions per turn and per delta under ``valgrind --tool=callgrind``: one run of each
    unit's workload at two sizes (``--run-once``), (I(large) − I(small)) ÷ (large − small)."""
    rows: list[list[str]] = []
    for unit in units:
        name, shape, sizes = _ICOUNT_UNITS[unit]
        totals: list[int] = []
        for n in sizes:
            w = shape(n)
            out = f"{callgrind_out}.{unit}.{n}" if callgrind_out else "/dev/null"
            module = ["bench.agent_loop_bench", "--run-once", f"{w.turns},{w.deltas},{w.tools}"]
            totals.append(callgrind_instructions(module, f"{name} ({n})", out))
        per_unit = (totals[1] - totals[0]) / (sizes[1] - sizes[0])
        rows.append([name, f"{per_unit / 1000:,.1f} k"])
        print(f"  {name:34} {per_unit:12,.0f} instructions", flush=True)
    print_table(
        "Instructions per unit (callgrind)",
        ["unit", "instructions"],
        rows,
        note="One run at each of two sizes, differenced: start-up and the first turn cancel out.",
    )


_BYTECODE_SIZES = {"turn": (50, 250), "mixed": (50, 250), "delta": (2_000, 12_000)}
"""The two sizes ``--bytecodes`` traces per unit (tracing is slow: smaller than callgrind's)."""


def _count_bytecodes(workload: Workload) -> Counter[tuple[str, int, str]]:
    """Bytecodes run per function (file, first line, name) in one traced run of ``workload``."""
    counts: Counter[tuple[str, int, str]] = Counter()

    def on_call(frame: FrameType, event: str, arg: object) -> Any:
        frame.f_trace_opcodes = True
        code = frame.f_code
        key = (code.co_filename, code.co_firstlineno, code.co_name)

        def on_opcode(frame: FrameType, event: str, arg: object) -> Any:
            if event == "opcode":
                counts[key] += 1
            return on_opcode

        return on_opcode

    sys.settrace(on_call)
    try:
        asyncio.run(run_workload(workload))
    finally:
        sys.settrace(None)
    return counts


def _short(path: str) -> str:
    """A file's path from the repository or the standard library / site-packages."""
    for root in (str(REPO_ROOT) + "/", sys.prefix + "/lib/", sys.base_prefix + "/lib/"):
        if path.startswith(root):
            path = path[len(root) :]
    return re.sub(r"^python3\.\d+/(site-packages/)?", "", path)


def _bytecodes(units: list[str], top: int) -> None:
    """Python bytecodes per unit under ``sys.settrace`` (opcode events), by module and by
    function: each unit's workload is traced at two sizes and differenced, like
    ``--instructions``. Exact and repeatable; it shows where the interpreter's work goes, not
    what C code (allocation, GC, pydantic-core) costs."""
    sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]  # see _run_once
    for unit in units:
        name, shape, _sizes = _ICOUNT_UNITS[unit]
        small, large = _BYTECODE_SIZES[unit]
        asyncio.run(run_workload(shape(small)))  # warm-up: lazy imports and caches
        before, after = _count_bytecodes(shape(small)), _count_bytecodes(shape(large))
        units_run = large - small
        per_function = {k: (after[k] - before.get(k, 0)) / units_run for k in after}
        per_module: Counter[str] = Counter()
        for (path, _line, _name), value in per_function.items():
            per_module[_short(path)] += value  # type: ignore[assignment]
        total = sum(per_function.values())
        print_table(
            f"Bytecodes per {name}: {total:,.0f}, by module",
            ["module", "bytecodes", "share"],
            [
                [module, f"{value:,.0f}", f"{value / total:.0%}"]
                for module, value in per_module.most_common(top)
                if value >= 0.5
            ],
        )
        ranked = sorted(per_function.items(), key=lambda item: -item[1])[:top]
        print_table(
            f"Bytecodes per {name}, by function",
            ["function", "bytecodes", "share"],
            [
                [f"{_short(path)}:{line} {fn}", f"{value:,.0f}", f"{value / total:.0%}"]
                for (path, line, fn), value in ranked
            ],
            note=f"Traced at {small:,} and {large:,} units, differenced (set-up cancels out).",
        )


def _run_once(shape: str) -> None:
    """One untimed run of ``turns,deltas,tools`` (the child of ``--instructions``)."""
    turns, deltas, tools = (int(part) for part in shape.split(","))
    # jsonschema's optional IRI format checker builds a grammar at import (~2.7 s, ~10 G
    # instructions under callgrind); no workload schema has a format, so the child goes without.
    sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]
    # A full GC pass walks every start-up object; whether one falls into a run depends on the
    # start-up heap, not on the turns, and would land on one of the two sizes only. So a short
    # run first (lazy imports, caches), then the heap is frozen: start-up objects are left out
    # of every pass (the timed runs see no full pass either: FULL_GC_PASSES).
    warm_up = Workload("warm-up", shape, 2 if tools else 1, min(deltas, 100), tools)
    asyncio.run(run_workload(warm_up))
    gc.collect()
    gc.freeze()
    asyncio.run(run_workload(Workload("icount", shape, turns, deltas, tools)))


def main() -> None:
    parser = argparse.ArgumentParser(description="pi_notebook's agent loop on scripted workloads.")
    parser.add_argument(
        "--workloads",
        type=parse_workloads,
        default=DEFAULT + [k for k in SCALING if k not in DEFAULT],
        help=f"comma-separated, from: {', '.join(WORKLOADS)}",
    )
    parser.add_argument("--reps", type=int, default=3, help="repetitions (default 3)")
    parser.add_argument("--reps-1m", type=int, default=1, help="repetitions of text_1m")
    parser.add_argument("--profile", metavar="WORKLOAD", help="profile one run of WORKLOAD")
    parser.add_argument(
        "--instructions",
        nargs="?",
        const=",".join(_ICOUNT_UNITS),
        type=_parse_units,
        metavar="UNITS",
        help="count instructions per unit under callgrind instead (comma-separated, from "
        f"{', '.join(_ICOUNT_UNITS)}; default all)",
    )
    parser.add_argument(
        "--callgrind-out",
        metavar="PREFIX",
        help="with --instructions: keep the callgrind files as PREFIX.<unit>.<size>",
    )
    parser.add_argument(
        "--bytecodes",
        nargs="?",
        const="turn",
        type=_parse_units,
        metavar="UNITS",
        help="count Python bytecodes per unit instead, by module and function (sys.settrace; "
        f"comma-separated, from {', '.join(_ICOUNT_UNITS)}; default turn)",
    )
    parser.add_argument("--top", type=int, default=25, help="rows of --bytecodes tables")
    parser.add_argument("--run-once", metavar="TURNS,DELTAS,TOOLS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bytecodes:
        _bytecodes(args.bytecodes, args.top)
        return
    if args.run_once:
        _run_once(args.run_once)
        return
    if args.instructions:
        _instructions(args.instructions, args.callgrind_out)
        return
    if args.profile:
        parse_workloads(args.profile)
        _profile(args.profile)
        return
    print(describe_environment(["pydantic"]))
    rows = asyncio.run(_measure(args.workloads, args.reps, args.reps_1m))
    print_table(
        "pi_notebook agent loop (scripted model, every event consumed)",
        [
            "workload",
            "ms (median)",
            "ms (best)",
            "events",
            "events/s",
            "µs/delta",
            "full GCs",
            "runs",
        ],
        rows,
        note="µs/delta: wall time over text deltas; flat from 10k to 1M means linear scaling. "
        "full GCs: generation-2 collections during the last run (each walks every object).",
    )


if __name__ == "__main__":
    main()
