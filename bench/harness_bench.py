"""The agent-loop workloads (``bench.peers_agent_loop``, and shorter multi-turn ones) through
``AgentHarness``: the loop plus what the harness adds per event and per turn (turn snapshots,
writing every message to a session file, the hooks' stream function, listeners).

Each run is one ``AgentHarness.prompt`` over a fresh session file in a temporary directory, the
model scripted as in ``bench.agent_loop_bench`` (replies written through ``MessageBuilder``), one
listener consuming every event. ``--before REV`` measures ``pi_notebook/`` of git revision REV
too (exported to a temporary directory and put first on ``PYTHONPATH`` of a child process);
the two alternate, and the table gives the median of ``--reps`` per workload and the ratio.

    python3 -m bench.harness_bench                                  # this tree
    python3 -m bench.harness_bench --before 38fec7e --reps 5        # before/after in one run
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .agent_loop_bench import MODEL, noop_tool, scripted_stream_fn
from .kernel_bench import code_tree
from .peers_agent_loop import WORKLOADS as LOOP_WORKLOADS
from .peers_agent_loop import Workload

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS: dict[str, Workload] = {
    **LOOP_WORKLOADS,
    "turns_200": Workload("turns_200", "200 turns, one tool call each", 200, 0, 1),
    "mixed_20k": Workload("mixed_20k", "20k deltas over 200 turns + 200 tool calls", 200, 100, 1),
}
"""The loop's workloads, and shorter multi-turn ones: every turn of a harness run rebuilds its
context from the session, so a run's cost grows with its length."""
DEFAULT = ["text_100k", "tools_parallel_1k", "turns_200", "mixed_20k"]


async def run_harness(key: str, directory: Path) -> tuple[float, int]:
    """One timed prompt of workload ``key``: seconds and events heard."""
    from pi_notebook.harness import AgentHarness, JsonlSessionStorage, Session

    workload = WORKLOADS[key]
    path = directory / f"{key}-{time.monotonic_ns()}.jsonl"
    session = Session.create(JsonlSessionStorage(path))
    harness = AgentHarness(
        session,
        MODEL,
        tools=[noop_tool()],
        system_prompt="You are a benchmark.",
        stream_fn=scripted_stream_fn(workload),
        tool_execution=workload.execution,
    )
    events = 0

    def count(event: Any) -> None:
        nonlocal events
        events += 1

    harness.subscribe(count)
    gc.collect()
    start = time.perf_counter()
    reply = await harness.prompt("Go.")
    await harness.wait_for_idle()
    seconds = time.perf_counter() - start
    if reply.stop_reason != "stop":
        raise RuntimeError(f"{key} ran wrongly: {reply.stop_reason} {reply.error_message}")
    calls = len(harness.last_run_messages)
    expected = 2 + workload.turns * (1 + workload.tools) if workload.tools else 2
    if calls != expected:
        raise RuntimeError(f"{key}: {calls} messages, expected {expected}")
    path.unlink()
    return seconds, events


def _child(keys: list[str]) -> None:
    """Run each workload once and print one JSON line of milliseconds (``--child``)."""
    with tempfile.TemporaryDirectory() as tmp:
        result = {key: asyncio.run(run_harness(key, Path(tmp)))[0] * 1000 for key in keys}
    print(json.dumps(result))


def _measure(keys: list[str], tree: str) -> dict[str, float]:
    """Run ``keys`` in a child process importing ``pi_notebook`` from ``tree`` (its working
    directory, which ``-m`` puts first on ``sys.path``) and ``bench`` from this repository."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((tree, str(ROOT)))}
    code = "import sys, pi_notebook; print(pi_notebook.__file__, file=sys.stderr)"
    check = [sys.executable, "-c", code]
    found = subprocess.run(check, cwd=tree, env=env, capture_output=True, text=True, check=True)
    if not found.stderr.strip().startswith(tree):
        raise RuntimeError(f"pi_notebook came from {found.stderr.strip()}, not {tree}")
    out = subprocess.run(
        [sys.executable, "-m", "bench.harness_bench", "--child", ",".join(keys)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--workloads", default=",".join(DEFAULT))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--before", metavar="REV", help="also measure git revision REV")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child.split(","))
        return
    keys = args.workloads.split(",")
    with contextlib.ExitStack() as stack:
        systems = {"this tree": str(ROOT)}
        if args.before:
            before = stack.enter_context(code_tree(args.before))
            systems = {f"before ({args.before})": str(before), **systems}
        times: dict[str, dict[str, list[float]]] = {s: {k: [] for k in keys} for s in systems}
        names = list(systems)
        for rep in range(args.reps):
            for name in names if rep % 2 == 0 else names[::-1]:
                for key, ms in _measure(keys, systems[name]).items():
                    times[name][key].append(ms)
    header = ["workload", *(f"{name} (ms)" for name in names)]
    if len(names) == 2:
        header.append("after ÷ before")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for key in keys:
        medians = [statistics.median(times[name][key]) for name in names]
        row = [key, *(f"{m:,.0f}" for m in medians)]
        if len(names) == 2:
            row.append(f"{medians[1] / medians[0]:.2f}")
        print("| " + " | ".join(row) + " |")
    print(f"medians of {args.reps} runs each, alternating order")


if __name__ == "__main__":
    main()
