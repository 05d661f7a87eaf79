"""Session open side by side: code trees of pi_notebook (e.g. main's and a branch's) and pi 1.6,
opening the same pi 1.6-style files: open time, build_context time, and memory per entry.

    python3 -m bench.session_open_compare --tree main=/path/to/main --tree ours=.
    python3 -m bench.session_open_compare --tree ours=. --sizes 1k,10k --rounds 3

Each tree runs in its own Python processes (``PYTHONPATH`` set to the tree, so the trees never
meet in one interpreter), in alternating order over ``--rounds`` rounds of ``--reps`` timed
repetitions (after a warm-up open); medians of all of them. Memory: ``tracemalloc``'s traced
bytes while the opened session is alive, less those before the open, divided by the entries,
after the open, after ``build_context``, and after reading every message of the context (a
context's messages are validated from their lines when first read).
pi 1.6 (``tests/golden/pi-1.6/sessions/open_bench.mjs``, Node 22): ``SessionManager.open`` and
``buildSessionContext``; its memory is the V8 heap used with the manager alive, after a full
collection, less the same before. The files are written once by ``bench.session_bench``'s
1.6-style generator (system-message patches, usage entries, context edits).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

_CHILD = r"""
import gc, json, sys, time, tracemalloc
import pi_notebook
from pi_notebook.harness import Session

mode, path, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
if mode == "time":
    session = Session.open(path)
    session.build_context()
    del session
    opens, builds, reads, messages = [], [], [], 0
    for _ in range(reps):
        gc.collect()
        start = time.perf_counter()
        session = Session.open(path)
        opened = time.perf_counter()
        context = session.build_context()
        built = time.perf_counter()
        messages = len(list(context.messages))
        read = time.perf_counter()
        opens.append(opened - start)
        builds.append(built - opened)
        reads.append(read - built)
        del session, context
    print(json.dumps({"open": opens, "build": builds, "read": reads, "messages": messages,
                      "module": pi_notebook.__file__}))
else:
    Session.open(path).build_context()  # imports, caches
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    session = Session.open(path)
    gc.collect()
    opened = tracemalloc.get_traced_memory()[0] - before
    context = session.build_context()
    gc.collect()
    built = tracemalloc.get_traced_memory()[0] - before
    len(list(context.messages))
    gc.collect()
    read = tracemalloc.get_traced_memory()[0] - before
    print(json.dumps({"open_bytes": opened, "built_bytes": built, "read_bytes": read,
                      "entries": len(session)}))
"""


_ONCE = r"""
import os, sys
from pi_notebook.harness import Session

mode, path = sys.argv[1], sys.argv[2]
if mode != "none":
    session = Session.open(path)
    if mode == "context":
        session.build_context()
sys.stdout.flush()
os._exit(0)  # no teardown in the count
"""


def _instructions(tree: Path, mode: str, path: Path) -> int:
    """Instructions of a child that imports the session and, by ``mode``, opens ``path``
    (``open``) and builds its context (``context``), under callgrind."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("--instructions needs valgrind (apt-get install valgrind)")
    env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
    done = subprocess.run(
        [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c",
         _ONCE, mode, str(path)],
        capture_output=True, text=True, env=env, cwd=tree, check=False,
    )  # fmt: skip
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"{tree} ({mode}): {done.stderr[-2000:]}")
    return int(found.group(1))


def _child(tree: Path, mode: str, path: Path, reps: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, mode, str(path), str(reps)],
        capture_output=True, text=True, env=env, timeout=1800, check=False, cwd=tree,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{tree}: {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    from bench.common import (
        PI16,
        PI16_NODE,
        describe_environment,
        fmt_ms,
        pi16_available,
        print_table,
        stats,
    )
    from bench.session_bench import generate_16
    from bench.stream_bench import parse_size

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--tree",
        action="append",
        required=True,
        metavar="NAME=PATH",
        help="a pi_notebook source tree to measure (give it twice or more to compare)",
    )
    parser.add_argument(
        "--sizes",
        type=lambda s: [parse_size(x) for x in s.split(",")],
        default=[1_000, 10_000, 100_000],
        help="entry counts (default 1k,10k,100k)",
    )
    parser.add_argument("--reps", type=int, default=3, help="timed opens per process")
    parser.add_argument("--rounds", type=int, default=2, help="processes per tree and size")
    parser.add_argument("--no-pi", action="store_true", help="leave pi 1.6 out")
    parser.add_argument(
        "--instructions",
        type=parse_size,
        metavar="SIZE",
        help="also count instructions per entry under callgrind at one size (load-independent)",
    )
    args = parser.parse_args()
    trees = [(name, Path(path)) for name, path in (t.split("=", 1) for t in args.tree)]
    with_pi = not args.no_pi and pi16_available(install=False)
    print(describe_environment(["pydantic", "pydantic-core"]))
    for name, tree in trees:
        commit = subprocess.run(
            ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=False,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, check=False,
        ).stdout.strip()  # fmt: skip
        print(f"{name}: {tree.resolve()} at {commit}{' (with changes)' if dirty else ''}")
    times: list[list[str]] = []
    memory: list[list[str]] = []
    with tempfile.TemporaryDirectory(prefix="session-open-") as folder:
        for size in args.sizes:
            path = Path(folder) / f"session16-{size}.jsonl"
            generate_16(path, size)
            entries = path.read_bytes().count(b"\n") - 1
            megabytes = path.stat().st_size / 1e6
            print(f"{entries:,} entries ({megabytes:.1f} MB)", flush=True)
            opens: dict[str, list[float]] = {name: [] for name, _ in trees}
            builds: dict[str, list[float]] = {name: [] for name, _ in trees}
            reads: dict[str, list[float]] = {name: [] for name, _ in trees}
            messages: dict[str, int] = {}
            for round_ in range(args.rounds):
                order = trees if round_ % 2 == 0 else trees[::-1]
                for name, tree in order:
                    result = _child(tree, "time", path, args.reps)
                    opens[name] += result["open"]
                    builds[name] += result["build"]
                    reads[name] += result.get("read", [0.0] * len(result["build"]))
                    messages[name] = result["messages"]
                    if not result["module"].startswith(str(tree.resolve())):
                        raise RuntimeError(f"{name} imported {result['module']}")
            if len(set(messages.values())) != 1:
                raise RuntimeError(f"the trees disagree on the context: {messages}")
            row = [f"{entries:,}", f"{megabytes:.1f}"]
            total = {n: stats([o + b for o, b in zip(opens[n], builds[n], strict=True)]).median
                     for n, _ in trees}  # fmt: skip
            whole = {n: stats([sum(t) for t in zip(opens[n], builds[n], reads[n], strict=True)])
                     .median for n, _ in trees}  # fmt: skip
            for name, _ in trees:
                row += [fmt_ms(stats(opens[name]).median), fmt_ms(total[name]), fmt_ms(whole[name])]
            mem_row = [f"{entries:,}", f"{megabytes * 1e6 / entries:,.0f}"]
            for _, tree in trees:
                held = _child(tree, "memory", path, 1)
                mem_row += [
                    f"{held['open_bytes'] / entries:,.0f}",
                    f"{held['built_bytes'] / entries:,.0f}",
                    f"{held.get('read_bytes', held['built_bytes']) / entries:,.0f}",
                ]
            if with_pi:
                done = subprocess.run(
                    [str(PI16_NODE), "--expose-gc", "--max-old-space-size=4096",
                     "open_bench.mjs", str(path), "--reps", str(args.reps * args.rounds)],
                    capture_output=True, text=True, timeout=1800, check=True, cwd=PI16,
                )  # fmt: skip
                pi = json.loads(done.stdout.strip().splitlines()[-1])
                if pi["context_messages"] != next(iter(messages.values())):
                    raise RuntimeError(f"pi's context has {pi['context_messages']} messages")
                row += [
                    fmt_ms(stats([t / 1e3 for t in pi["open_ms"]]).median),
                    fmt_ms(stats([t / 1e3 for t in pi["total_ms"]]).median),
                ]
                mem_row.append(f"{pi['heap_bytes'] / entries:,.0f}")
            times.append(row)
            memory.append(mem_row)
        counted: list[list[str]] = []
        if args.instructions:
            path = Path(folder) / f"counted-{args.instructions}.jsonl"
            generate_16(path, args.instructions)
            entries = path.read_bytes().count(b"\n") - 1
            for name, tree in trees:
                base, opened, built = (
                    _instructions(tree, mode, path) for mode in ("none", "open", "context")
                )
                counted.append(
                    [name, f"{entries:,}", f"{(opened - base) / entries / 1e3:,.1f} k",
                     f"{(built - base) / entries / 1e3:,.1f} k"]
                )  # fmt: skip
    headers = ["entries", "MB"]
    for name, _ in trees:
        headers += [f"{name} open", f"{name} open+context", f"{name} +read"]
    if with_pi:
        headers += ["pi 1.6 open", "pi 1.6 open+context"]
    print_table(
        "Open, open + build_context, and + reading every context message (ms, median)",
        headers,
        times,
        note=(
            f"{args.rounds} processes × {args.reps} opens per tree and size, trees alternating; "
            "pi 1.6: SessionManager.open + buildSessionContext, Node 22, "
            f"{args.reps * args.rounds} opens after a warm-up (its context's messages are "
            "objects already: nothing more to read). Every reader gives the same number of "
            "context messages (checked)."
        ),
    )
    mem_headers = ["entries", "bytes/line"]
    for name, _ in trees:
        mem_headers += [f"{name} open", f"{name} + context", f"{name} + read"]
    if with_pi:
        mem_headers.append("pi 1.6 open")
    print_table(
        "Memory per entry of an opened session (bytes)",
        mem_headers,
        memory,
        note=(
            "Python: tracemalloc's traced bytes with the session alive, less before the open "
            "(then after build_context, then after reading every context message). pi: V8 heap "
            "used with the SessionManager alive after a full collection, less before."
        ),
    )
    if counted:
        print_table(
            "Instructions per entry (callgrind)",
            ["tree", "entries", "open", "open + context"],
            counted,
            note="(I(open) − I(imports only)) ÷ entries; the child exits without teardown.",
        )


if __name__ == "__main__":
    main()
