"""Agent loop, side by side in one run: pi_notebook, the real pi (node), pydantic-ai, a floor.

The same scripted workloads (``bench.peers_agent_loop.WORKLOADS``) run in every system, every event
consumed by one subscriber, each run checked: pi_notebook through ``bench.agent_loop_bench``, pi
through ``bench/peers/agent_loop.mjs`` (pi-agent-core 0.73.1, the peer we compare against, and 1.6.0
on Node 22 from tests/golden/pi-1.6/sessions: the bench runs ``npm ci`` there once if it is
missing, ``--no-install`` leaves it out), pydantic-ai through a ``FunctionModel`` stream function,
and the Python floor (``bench.agent_loop_floor``: the same events as dicts through a bare asyncio
loop, none of the loop's features). Repetitions alternate the order of the systems. The scripted
models of ours and pi hand a reply to the consumer every ``CHUNK_DELTAS`` deltas (a provider
parsing one network read); ``--pi-burst`` adds pi with each reply pushed whole (its backlog then
holds the entire reply: quadratic, as shared/spec/performance.md measured).

    python3 -m bench.compare_agent_loop                         # a few minutes
    python3 -m bench.compare_agent_loop --workloads turns_1k,mixed_100k --reps 5
    python3 -m bench.compare_agent_loop --workloads text_10k,text_100k --pi-burst
    python3 -m bench.compare_agent_loop --workloads text_1m --pydantic-1m   # pydantic-ai: minutes
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bench.agent_loop_bench import CHUNK_DELTAS, run_workload
from bench.agent_loop_floor import run_floor
from bench.common import (
    PiVersion,
    describe_environment,
    fmt_int,
    fmt_ms,
    fmt_rate,
    node_available,
    pi16_available,
    print_table,
    rotated,
    stats,
)
from bench.peers_agent_loop import (
    WORKLOADS,
    Run,
    Workload,
    parse_workloads,
    run_pi_node,
    run_pydantic_ai,
)

OURS = "pi_notebook"
PI = "pi 0.73 (node)"
PI16 = "pi 1.6 (node)"
PI_BURST = "pi, whole reply"
PYDANTIC = "pydantic-ai"
FLOOR = "Python floor"

DEFAULT = [
    "text_100k",
    "tools_parallel_1k",
    "tools_sequential_1k",
    "turns_1k",
    "mixed_100k",
    "text_10k",
    "text_1m",
]
SCALING = ["text_10k", "text_100k", "text_1m"]
WARM_UP = Workload("warm_up", "warm-up", 3, 100, 2)


@dataclass
class System:
    name: str
    run: Callable[[Workload], Awaitable[Run]]
    reps: int
    skip: Callable[[Workload], bool] = lambda _w: False
    runs: dict[str, list[Run]] = field(default_factory=dict)


async def _ours(workload: Workload) -> Run:
    return await run_workload(workload)


def _pi(chunk: int, pi: PiVersion = "0.73") -> Callable[[Workload], Awaitable[Run]]:
    async def run(workload: Workload) -> Run:
        (result,) = await asyncio.to_thread(run_pi_node, workload, 1, chunk=chunk, pi=pi)
        return result

    return run


def _systems(args: argparse.Namespace) -> tuple[list[System], list[str]]:
    notes: list[str] = []
    systems = [System(OURS, _ours, args.reps)]
    if node_available():
        systems.append(System(PI, _pi(CHUNK_DELTAS), args.reps))
        if args.pi_burst:
            systems.append(
                System(PI_BURST, _pi(0), args.reps, skip=lambda w: w.deltas < CHUNK_DELTAS)
            )
    else:
        notes.append("pi (node) skipped: run `npm ci --prefix bench/peers` first.")
    if pi16_available(install=not args.no_install):
        systems.append(System(PI16, _pi(CHUNK_DELTAS, "1.6"), args.reps))
    else:
        notes.append("pi 1.6 skipped: run `npm ci --prefix tests/golden/pi-1.6/sessions`.")
    systems.append(System(FLOOR, run_floor, args.reps))
    if importlib.util.find_spec("pydantic_ai") is not None:
        systems.append(
            System(
                PYDANTIC,
                run_pydantic_ai,
                args.pydantic_reps,
                skip=lambda w: w.total_deltas >= 1_000_000 and not args.pydantic_1m,
            )
        )
    else:
        notes.append("pydantic-ai skipped: `pip install pydantic-ai-slim`.")
    return systems, notes


async def measure(args: argparse.Namespace) -> tuple[list[System], list[str]]:
    systems, notes = _systems(args)
    for system in systems:  # imports, JIT, caches; also checks that each side runs at all
        if system.name in (OURS, PYDANTIC, FLOOR):
            await system.run(WARM_UP)
    for w, key in enumerate(args.workloads):
        workload = WORKLOADS[key]
        large = workload.total_deltas >= 1_000_000
        reps = {s.name: min(s.reps, args.reps_1m) if large else s.reps for s in systems}
        for rep in range(max(reps.values())):
            for system in rotated(systems, rep + w):
                if rep >= reps[system.name] or system.skip(workload):
                    continue
                run = await system.run(workload)
                system.runs.setdefault(key, []).append(run)
                print(
                    f"  {key:20} {system.name:16} rep {rep + 1}: {run.seconds * 1e3:10.1f} ms",
                    flush=True,
                )
    return systems, notes


def report(systems: list[System], keys: list[str], notes: list[str]) -> None:
    ours = next(s for s in systems if s.name == OURS)
    peers = [s for s in systems if s is not ours]

    def median(system: System, key: str) -> float | None:
        runs = system.runs.get(key)
        return stats([r.seconds for r in runs]).median if runs else None

    rows: list[list[str]] = []
    for key in keys:
        base = median(ours, key)
        row = [WORKLOADS[key].label]
        for system in systems:
            value = median(system, key)
            row.append(fmt_ms(value) if value is not None else "–")
        for system in peers:
            value = median(system, key)
            row.append(f"{value / base:.1f}×" if value is not None and base else "–")
        rows.append(row)
    runs_note = ", ".join(
        f"{s.name} {max((len(r) for r in s.runs.values()), default=0)}" for s in systems
    )
    print_table(
        "Agent loop: wall time, ms (median)",
        ["workload", *(s.name for s in systems), *(f"{s.name} ÷ ours" for s in peers)],
        rows,
        note=f"Runs per workload: {runs_note}. "
        "“÷ ours” > 1 means pi_notebook is faster. " + " ".join(notes),
    )

    pis = [s for s in peers if s.name in (PI, PI16)]
    if pis:
        rows = []
        for key in keys:
            ours_runs = ours.runs.get(key)
            if not ours_runs:
                continue
            mine = stats([r.seconds for r in ours_runs]).best
            row = [WORKLOADS[key].label, fmt_ms(mine)]
            for pi in pis:
                pi_runs = pi.runs.get(key)
                theirs = stats([r.seconds for r in pi_runs]).best if pi_runs else None
                row.append(fmt_ms(theirs) if theirs else "–")
                row.append(f"{mine / theirs:.2f}×" if theirs else "–")
            rows.append(row)
        print_table(
            "Agent loop: best wall time, ms (pi_notebook against pi)",
            ["workload", OURS, *(h for pi in pis for h in (pi.name, f"ours ÷ {pi.name}"))],
            rows,
            note="Best of the runs above, all measured in this run (the comparison is "
            "against pi 0.73.1). “ours ÷ pi” < 1 means pi_notebook is faster.",
        )

    rows = []
    for key in keys:
        row = [WORKLOADS[key].label]
        for system in systems:
            runs = system.runs.get(key)
            if runs:
                s = stats([r.seconds for r in runs])
                row += [fmt_int(runs[-1].events), fmt_rate(runs[-1].events / s.median)]
            else:
                row += ["–", "–"]
        rows.append(row)
    print_table(
        "Agent loop: events consumed and events/s",
        ["workload", *(f"{s.name} {h}" for s in systems for h in ("events", "ev/s"))],
        rows,
        note="Each system counts its own events (pi and ours: agent events, pydantic-ai: its "
        "run-stream events): compare wall times across systems, events/s within one.",
    )

    scaling = [k for k in SCALING if k in keys]
    if len(scaling) > 1:
        rows = []
        for system in systems:
            row = [system.name]
            for key in scaling:
                value = median(system, key)
                deltas = WORKLOADS[key].total_deltas
                row.append(f"{value / deltas * 1e6:.2f}" if value is not None else "–")
            rows.append(row)
        print_table(
            "Scaling: µs per text delta, one reply",
            ["system", *(WORKLOADS[k].label.removeprefix("one reply of ") for k in scaling)],
            rows,
            note="Flat from left to right = linear in the reply's length.",
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Agent loop side by side: pi_notebook, pi 0.73 and 1.6 (node), pydantic-ai."
    )
    parser.add_argument(
        "--workloads",
        type=parse_workloads,
        default=DEFAULT,
        help=f"comma-separated, from: {', '.join(WORKLOADS)} (default: {','.join(DEFAULT)})",
    )
    parser.add_argument("--reps", type=int, default=3, help="pi_notebook and pi repetitions")
    parser.add_argument("--reps-1m", type=int, default=1, help="repetitions of text_1m")
    parser.add_argument(
        "--pydantic-reps", type=int, default=1, help="pydantic-ai repetitions (default 1: slow)"
    )
    parser.add_argument(
        "--pydantic-1m", action="store_true", help="also run pydantic-ai on text_1m (minutes)"
    )
    parser.add_argument(
        "--pi-burst",
        action="store_true",
        help="add pi with each reply pushed whole (text workloads; quadratic: slow at 100k+)",
    )
    parser.add_argument(
        "--no-install", action="store_true", help="do not npm ci pi 1.6 when it is missing"
    )
    args = parser.parse_args()
    print(describe_environment(["pydantic", "pydantic-ai-slim"]))
    started = time.perf_counter()
    load = os.getloadavg()
    systems, notes = asyncio.run(measure(args))
    report(systems, args.workloads, notes)
    after = os.getloadavg()
    print(
        f"\n(whole run: {time.perf_counter() - started:.0f} s; load average "
        f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} before, "
        f"{after[0]:.2f} / {after[1]:.2f} / {after[2]:.2f} after)"
    )


if __name__ == "__main__":
    main()
