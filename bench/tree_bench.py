"""``%tree``'s widget on big sessions: build time and the state synced when its comm opens.

```bash
python3 -m bench.tree_bench                       # 2k, 20k, 100k entries
python3 -m bench.tree_bench --sizes 20k --reps 5
python3 -m bench.tree_bench --sizes 100k --before main   # before/after, side by side
```

Each size is a linear session written by ``bench.session_bench.generate`` and opened with
``Session.open``, plus (``branched``) the same with a side branch every 50 entries. Timed:
``Session.open`` of the file (what a restored notebook pays before any tree: the session's
structure index is built there), ``TreeView(session)`` (the first one after the open, then the
median of ``--reps``: the tree's shape and layout, the widget and its first page), its
text/HTML fallback (what ``%tree`` also renders), a ``rows`` request for a page in the middle
of the tree, unfolding a side branch, and two searches: one that finds nothing on a fresh view
(it reads every title: the first search) and another one after it. The synced state is the JSON
of every ``sync=True`` trait, the way the comm's opening message (and a saved notebook)
carries it. Everything runs inside an event loop, as in a kernel, and also once outside one
(``sync build``: the Coalescer's synchronous path).

Each session is measured in a fresh process. ``--before REV`` also measures git revision
``REV``'s ``pi_notebook/``, right before this tree's for each session, and prints both rows.
Targets: build ≤ 0.2 s and state ≤ 0.5 MB whatever the session size.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.session_bench import generate
from pi_notebook.ai import UserMessage
from pi_notebook.harness import Session
from pi_notebook.notebook.widgets.tree_view import TreeView


def parse_size(text: str) -> int:
    text = text.strip().lower()
    return int(float(text[:-1]) * 1000) if text.endswith("k") else int(text)


def state_bytes(view: TreeView) -> int:
    """Bytes of the JSON the comm opens with (every synced trait but the ESM and CSS)."""
    names = [n for n in view.keys if n not in ("_esm", "_css")]
    state = view.get_state(names)
    return len(json.dumps(state, separators=(",", ":"), ensure_ascii=False).encode())


def branch(path: Path) -> None:
    """Add a side branch of 20 entries every 50 entries of the session's main line."""
    session = Session.open(path)
    line = [e.id for e in session.get_entries()]
    for at in range(25, len(line), 50):
        session.set_leaf(line[at])
        for i in range(20):
            session.append_message(UserMessage(content=f"side {at}.{i}", timestamp=0))
    session.set_leaf(line[-1])


CPU: list[float] = []
"""CPU seconds of each :func:`timed` call (on a loaded machine wall time mostly measures the
wait for a core; both are printed)."""


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    result = fn()
    CPU.append(time.process_time() - cpu)
    return time.perf_counter() - start, result


class Sent:
    """Captures the view's custom messages (a ``rows`` reply) and their bytes."""

    def __init__(self, view: TreeView) -> None:
        self.messages: list[dict[str, Any]] = []
        view.send = self.messages.append

    def last_bytes(self) -> int:
        return len(json.dumps(self.messages[-1], separators=(",", ":")).encode())


def measure(path: Path, reps: int) -> dict[str, Any]:
    work = path.with_suffix(".work.jsonl")
    shutil.copy(path, work)  # the live append below writes to a copy
    figures: dict[str, Any] = {}
    figures["open"], session = timed(lambda: Session.open(work))
    figures["open_cpu"] = CPU[-1]
    builds: list[float] = []
    for rep in range(reps + 1):
        seconds, view = timed(lambda: TreeView(session))
        if rep == 0:  # the first view of the session
            figures["first"], figures["first_cpu"] = seconds, CPU[-1]
        else:
            builds.append(seconds)
            figures.setdefault("build_cpu", []).append(CPU[-1])
        figures["state"] = state_bytes(view)
        figures["total"] = view.page["total"]
        view.close()
    figures["build"] = builds
    view = TreeView(session)
    figures["fallback"], _ = timed(view._repr_mimebundle_)
    sent = Sent(view)
    middle = view.page["total"] // 2
    figures["fetch"], _ = timed(
        lambda: view._dispatch({"type": "rows", "start": middle, "end": middle + 100})
    )
    figures["fetch_bytes"] = sent.last_bytes()
    if view.folded_ids:

        def unfold() -> None:
            view.fold(view.folded_ids[0], False)
            view.flush()

        figures["unfold"], _ = timed(unfold)

    def append() -> None:  # a live run: one more entry under the leaf, refreshed and synced
        session.append_message(UserMessage(content="one more", timestamp=0))
        view.refresh()
        view.flush()

    figures["append"], _ = timed(append)
    figures["search"], _ = timed(lambda: view.search("no such text anywhere"))
    figures["search_cpu"] = CPU[-1]
    figures["search_again"], _ = timed(lambda: view.search("side 9"))
    view.close()
    return figures


async def in_loop(path: Path, reps: int) -> dict[str, Any]:
    return measure(path, reps)


def measure_both(path: Path, reps: int) -> dict[str, Any]:
    """In an event loop, then the build once outside one."""
    figures = asyncio.run(in_loop(path, reps))
    figures["sync"] = measure(path, 1)["build"][0]
    return figures


def measure_other(tree: Path, path: Path, reps: int) -> dict[str, Any]:
    """:func:`measure_both` in a subprocess, with ``tree``'s ``pi_notebook``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-m", "bench.tree_bench", "--measure", str(path), "--reps", str(reps)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def row(entries: int, shape: str, label: str, figures: dict[str, Any]) -> str:
    build = statistics.median(figures["build"])
    ok = build <= 0.2 and figures["sync"] <= 0.2 and figures["state"] <= 500_000
    unfold = f"{figures['unfold'] * 1000:.0f}" if "unfold" in figures else "–"
    return (
        f"| {entries:,} | {shape} | {label} | {figures['total']:,} "
        f"| {figures['open'] * 1000:.0f} / {figures['open_cpu'] * 1000:.0f} "
        f"| {figures['first'] * 1000:.0f} / {figures['first_cpu'] * 1000:.0f} "
        f"| {build * 1000:.0f} / {statistics.median(figures['build_cpu']) * 1000:.0f} "
        f"| {figures['sync'] * 1000:.0f} | {figures['state']:,} "
        f"| {figures['fallback'] * 1000:.0f} "
        f"| {figures['fetch'] * 1000:.1f} ({figures['fetch_bytes']:,}) | {unfold} "
        f"| {figures['append'] * 1000:.1f} "
        f"| {figures['search'] * 1000:.0f} / {figures['search_cpu'] * 1000:.0f} "
        f"| {figures['search_again'] * 1000:.0f} "
        f"| {'met' if ok else 'not met'} (load {os.getloadavg()[0]:.1f}) |"
    )


ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="2k,20k,100k", help="entries per session")
    parser.add_argument("--reps", type=int, default=3, help="builds per size")
    parser.add_argument("--before", default="", help="also measure git revision REV (e.g. main)")
    parser.add_argument("--measure", default="", help=argparse.SUPPRESS)  # --before's subprocess
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure_both(Path(args.measure), args.reps)))
        return
    print(f"load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        "| entries | shape | code | rows | open ms (wall / CPU) | first build ms (wall / CPU) "
        "| build ms (median wall / CPU) | sync build ms | state bytes | fallback ms "
        "| fetch 100 rows ms (bytes) | unfold ms | live append ms "
        "| first search ms (wall / CPU) | next search ms | target (wall; 1-min load average) |"
    )
    print("|--:|:--|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|:--|")
    with contextlib.ExitStack() as stack:
        before = None
        if args.before:
            from bench.kernel_bench import code_tree

            before = stack.enter_context(code_tree(args.before))
        tmp = stack.enter_context(tempfile.TemporaryDirectory())
        for text in args.sizes.split(","):
            entries = parse_size(text)
            for shape in ("linear", "branched"):
                path = Path(tmp) / f"tree_{entries}_{shape}.jsonl"
                generate(path, entries)
                if shape == "branched":
                    branch(path)
                if before is not None:
                    old = measure_other(before, path, args.reps)
                    print(row(entries, shape, f"before ({args.before})", old), flush=True)
                label = "after (this tree)" if before is not None else "this tree"
                # a fresh process for each tree: this one holds what generating the file left
                print(row(entries, shape, label, measure_other(ROOT, path, args.reps)), flush=True)


if __name__ == "__main__":
    main()
