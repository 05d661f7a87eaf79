"""``%tree``'s widget on big sessions: build time and the state synced when its comm opens.

```bash
python3 -m bench.tree_bench                       # 2k, 20k, 100k entries
python3 -m bench.tree_bench --sizes 20k --reps 5
```

Each size is a linear session written by ``bench.session_bench.generate`` and opened with
``Session.open``; then ``TreeView(session)`` is timed (reading the entries, building the node
table, the widget and its opening state) outside a kernel, and the synced state is measured as
the JSON of every ``sync=True`` trait, the way the comm's opening message carries it. The build
runs inside an event loop, as in a kernel. Targets
(issue 15): build ≤ 0.2 s and state ≤ 0.5 MB whatever the session size.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import tempfile
import time
from pathlib import Path

from bench.session_bench import generate
from pi_notebook.harness import Session
from pi_notebook.notebook.tree_view import TreeView


def parse_size(text: str) -> int:
    text = text.strip().lower()
    return int(float(text[:-1]) * 1000) if text.endswith("k") else int(text)


def state_bytes(view: TreeView) -> int:
    """Bytes of the JSON the comm opens with (every synced trait but the ESM and CSS)."""
    names = [n for n in view.keys if n not in ("_esm", "_css")]
    state = view.get_state(names)
    return len(json.dumps(state, separators=(",", ":"), ensure_ascii=False).encode())


async def measure(path: Path, reps: int) -> tuple[list[float], int, int]:
    """Inside a running event loop, as ``%tree`` runs in a kernel (outside one, the widget's
    throttle flushes synchronously while it reads, re-sending the node table every 50 ms)."""
    session = Session.open(path)
    times: list[float] = []
    size = rows = 0
    for _ in range(reps):
        gc.collect()
        start = time.perf_counter()
        view = TreeView(session)
        times.append(time.perf_counter() - start)
        size, rows = state_bytes(view), len(view.rows)
        view.close()
    return times, size, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="2k,20k,100k", help="entries per session")
    parser.add_argument("--reps", type=int, default=3, help="builds per size")
    args = parser.parse_args()
    print("| entries | rows | build ms (median) | build ms (best) | state bytes | target |")
    print("|--:|--:|--:|--:|--:|:--|")
    with tempfile.TemporaryDirectory() as tmp:
        for text in args.sizes.split(","):
            entries = parse_size(text)
            path = Path(tmp) / f"tree_{entries}.jsonl"
            generate(path, entries)
            times, size, rows = asyncio.run(measure(path, args.reps))
            ok = statistics.median(times) <= 0.2 and size <= 500_000
            print(
                f"| {entries:,} | {rows:,} | {statistics.median(times) * 1000:.0f} "
                f"| {min(times) * 1000:.0f} | {size:,} | {'met' if ok else 'not met'} |"
            )


if __name__ == "__main__":
    main()
