"""Checkpoints of a kernel's namespace: pi_notebook's store against Kishu and a full pickle.

Each system runs in a fresh process with a real IPython shell, on the same cells:

- **mixed**: a 100 MB DataFrame, a fitted scikit-learn model, a matplotlib figure, a generator
  and an open file; a first checkpoint, then ``--steps`` cells that each change a small value
  (every fourth also changes one cell of the DataFrame), a checkpoint after each;
- **1 GB**: a 1 GB DataFrame and its first checkpoint.

Systems:

- ``pi fork``: ``Checkpoints`` as the kernel uses it on Linux: the snapshot is a fork, the
  child pickles into the content-addressed store;
- ``pi thread``: the same store, values pickled in a worker thread (the fallback where fork is
  unsafe);
- ``full pickle``: every value cloudpickled into one new file per checkpoint, synchronously
  (what a naive design does);
- ``kishu``: Kishu 0.3.4's own checkpointing (``KishuForJupyter`` with its cell hooks, in its
  test mode: no notebook file saved), incremental store on (its default).

Figures per checkpoint: **blocked** is the time the kernel cannot run anything (for the
synchronous systems, the whole checkpoint inside the cell's ``post_run_cell``; for ``pi``,
the snapshot on the event loop plus the worst lateness of a 1 ms ticker on the loop while
the checkpoint is written); **done** is until the checkpoint is on disk; **written** the bytes
it added to disk. **RSS+** is the peak memory above the namespace's own: the process's peak
RSS (``ru_maxrss``) less its RSS before the first checkpoint, plus, for a fork, the peak
private memory (USS) of the child, sampled every 10 ms. The serialiser table times
cloudpickle and dill on each value of the mixed namespace.

Kishu is not a dependency of pi_notebook (it brings a JupyterLab extension and a Flask
server); install it in a separate environment and point ``--kishu-python`` (or
``KISHU_PYTHON``) at its interpreter::

    python3 -m venv --system-site-packages /tmp/kishu-venv
    /tmp/kishu-venv/bin/pip install kishu==0.3.4
    python3 bench/checkpoints.py --kishu-python /tmp/kishu-venv/bin/python

Timings are wall-clock on a shared machine: compare systems within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = ("pi fork", "pi thread", "full pickle", "kishu")

MIXED_SETUP = [
    "import numpy as np, pandas as pd",
    # 1,310,720 rows x 10 float64 columns = 100 MiB
    "df = pd.DataFrame(np.random.default_rng(0).random((1_310_720, 10)),"
    " columns=[f'c{i}' for i in range(10)], copy=False)",
    "from sklearn.ensemble import RandomForestClassifier\n"
    "model = RandomForestClassifier(n_estimators=20, max_depth=8, random_state=0, n_jobs=1)\n"
    "model.fit(df.iloc[:20000, :9].to_numpy(), (df.c9.iloc[:20000] > 0.5).to_numpy())",
    "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
    "fig, ax = plt.subplots()\nax.plot(df.c0.iloc[:2000].to_numpy())",
    "squares = (i * i for i in range(10))",
    "log = open(LOG_PATH, 'w')",
]
OBJECTS_SETUP = [
    "records = [{'id': i, 'name': f'user{i}', 'score': i * 0.5} for i in range(500_000)]",
]
BIG_SETUP = [
    "import numpy as np, pandas as pd",
    # 13,421,773 rows x 10 float64 columns = 1 GiB
    "big = pd.DataFrame(np.random.default_rng(1).random((13_421_773, 10)),"
    " columns=[f'c{i}' for i in range(10)], copy=False)",
]


def step_cell(i: int, workload: str = "mixed") -> str:
    if workload == "objects":
        cell = f"step = {i}\nresult = records[{i}]['score']"
        return cell + (f"\nrecords[{i}]['score'] = 0.0" if i % 4 == 3 else "")
    cell = f"step = {i}\nresult = float(df.c0.iloc[:{i + 1}].sum())"
    if i % 4 == 3:
        cell += f"\ndf.loc[{i}, 'c1'] = 0.5"
    return cell


# --- measuring ---------------------------------------------------------------------------------


def rss() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def reset_peak() -> int:
    """Reset this process's peak RSS to its current RSS (Linux ≥ 4.0); returns the RSS."""
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")
    return rss()


def peak_rss() -> int:
    """The peak RSS since the last :func:`reset_peak` (``VmHWM``)."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def uss(pid: int) -> int:
    """Private memory of ``pid`` (Private_Clean + Private_Dirty of its mappings)."""
    total = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith(("Private_Clean:", "Private_Dirty:")):
                    total += int(line.split()[1]) * 1024
    except OSError:
        return 0
    return total


def children() -> list[int]:
    me = os.getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children") as handle:
            return [int(p) for p in handle.read().split()]
    except OSError:
        return []


class ChildSampler:
    """Peak private memory of this process's children, sampled every 10 ms."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, sum(uss(pid) for pid in children()))

    def __enter__(self) -> ChildSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def du(path: Path) -> int:
    """Bytes under a folder, or of a file and its siblings named after it (SQLite's -wal…)."""
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())


# --- workers: one system, one workload, in this process ----------------------------------------


def make_shell(workdir: Path) -> Any:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.user_ns["LOG_PATH"] = str(workdir / "log.txt")
    return shell


def run_cell(shell: Any, code: str) -> None:
    result = shell.run_cell(code, store_history=True)
    if result.error_in_exec is not None or result.error_before_exec is not None:
        raise RuntimeError(f"cell failed: {code!r}: {result.error_in_exec!r}")


def worker(system: str, workload: str, steps: int, workdir: Path) -> dict[str, Any]:
    shell = make_shell(workdir)
    setup = {"mixed": MIXED_SETUP, "objects": OBJECTS_SETUP, "big": BIG_SETUP}[workload]
    cells = [step_cell(i, workload) for i in range(steps)] if workload != "big" else []
    if system == "kishu":
        return kishu_worker(shell, setup, cells, workdir)

    for code in setup:
        run_cell(shell, code)
    if system == "full pickle":
        return full_pickle_worker(shell, cells, workdir)
    return asyncio.run(pi_worker(shell, cells, workdir, fork=system == "pi fork"))


async def pi_worker(shell: Any, cells: list[str], workdir: Path, *, fork: bool) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from pi_notebook.harness import JsonlSessionStorage, Session
    from pi_notebook.notebook.checkpoints import Checkpoints

    path = workdir / "bench.pi.jsonl"
    session = Session.create(JsonlSessionStorage(path))
    session.append_custom("bench", {})
    checkpoints = Checkpoints(lambda: session, lambda: path, shell.user_ns, use_fork=fork)
    store_dir = workdir / "bench.pi.ckpt"
    base = reset_peak()
    rows: list[dict[str, Any]] = []
    for index in range(len(cells) + 1):
        if index:
            run_cell(shell, cells[index - 1])
        session.append_custom("bench", {"step": index})
        before = du(store_dir)
        lateness = 0.0
        with ChildSampler() as sampler:
            started = time.perf_counter()
            task = checkpoints.capture_soon("cell")
            assert task is not None
            while not task.done():  # the loop's lateness while the checkpoint is written
                tick = time.perf_counter()
                await asyncio.sleep(0.001)
                lateness = max(lateness, time.perf_counter() - tick - 0.001)
            report = task.result()
            done = time.perf_counter() - started
        if report.problem:
            raise RuntimeError(report.problem)
        rows.append(
            {
                "blocked": report.blocked_s + lateness,
                "snapshot": report.blocked_s,
                "lateness": lateness,
                "done": done,
                "written": du(store_dir) - before,
                "child": sampler.peak,
                "skipped": sorted(report.manifest.skipped) if report.manifest else [],
            }
        )
    return {"rows": rows, "base": base, "peak": peak_rss()}


def full_pickle_worker(shell: Any, cells: list[str], workdir: Path) -> dict[str, Any]:
    import cloudpickle

    sys.path.insert(0, str(ROOT))
    from pi_notebook.notebook.checkpoints import select_values

    out = workdir / "full"
    out.mkdir()
    base = reset_peak()
    rows: list[dict[str, Any]] = []
    for index in range(len(cells) + 1):
        if index:
            run_cell(shell, cells[index - 1])
        started = time.perf_counter()
        items, _ = select_values(shell.user_ns, shell.user_ns_hidden)
        kept: dict[str, Any] = {}
        skipped = []
        for name, value in items:
            try:
                cloudpickle.dumps(value)  # the naive way to find what pickles
            except Exception:
                skipped.append(name)
            else:
                kept[name] = value
        target = out / f"{index:04d}.pkl"
        with target.open("wb") as handle:
            cloudpickle.dump(kept, handle, protocol=5)
        elapsed = time.perf_counter() - started
        rows.append(
            {
                "blocked": elapsed,
                "done": elapsed,
                "written": target.stat().st_size,
                "child": 0,
                "skipped": skipped,
            }
        )
    return {"rows": rows, "base": base, "peak": peak_rss()}


def kishu_worker(shell: Any, setup: list[str], cells: list[str], workdir: Path) -> dict[str, Any]:
    os.environ["ENV_KISHU_TEST_MODE"] = "1"  # no notebook file to save, no frontend to reload
    import nbformat
    from kishu import __version__ as kishu_version
    from kishu.jupyterint import KishuForJupyter
    from kishu.notebook_id import NotebookId

    for code in setup:  # the namespace first; Kishu then tracks it from here
        run_cell(shell, code)
    notebook = workdir / "bench.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), notebook)
    kishu = KishuForJupyter(NotebookId("bench", notebook, "bench-kernel"), ip=shell)
    timings: list[float] = []

    def timed_post_run_cell(result: Any) -> None:
        started = time.perf_counter()
        kishu.post_run_cell(result)
        timings.append(time.perf_counter() - started)

    shell.user_ns["_kishu"] = kishu
    shell.events.register("pre_run_cell", kishu.pre_run_cell)
    shell.events.register("post_run_cell", timed_post_run_cell)
    database = workdir / "bench.kishudb"
    base = reset_peak()
    rows: list[dict[str, Any]] = []
    # Kishu checkpoints after every cell: the first is its checkpoint of the whole namespace
    for code in ["first = True", *cells]:
        before = du(database)
        run_cell(shell, code)
        rows.append(
            {
                "blocked": timings[-1],
                "done": timings[-1],
                "written": du(database) - before,
                "child": 0,
                "skipped": [],
            }
        )
    return {"rows": rows, "base": base, "peak": peak_rss(), "version": kishu_version}


def serialisers(workdir: Path) -> dict[str, Any]:
    """cloudpickle and dill on each picklable value of the mixed namespace."""
    import cloudpickle

    shell = make_shell(workdir)
    for code in MIXED_SETUP:
        run_cell(shell, code)
    try:
        import dill
    except ImportError:
        dill = None
    table: dict[str, Any] = {}
    for name in ("df", "model", "fig"):
        value = shell.user_ns[name]
        row = {}
        picklers: list[tuple[str, Callable[[Any], bytes]]] = [
            ("cloudpickle", lambda v: cloudpickle.dumps(v, protocol=5))
        ]
        if dill is not None:
            picklers.append(("dill", lambda v: dill.dumps(v, protocol=5)))
        for label, dumps in picklers:
            times = []
            for _ in range(3):
                started = time.perf_counter()
                data = dumps(value)
                times.append(time.perf_counter() - started)
            row[label] = (min(times), len(data))
        table[name] = row
    return {"table": table, "dill": getattr(dill, "__version__", None)}


# --- the driver ----------------------------------------------------------------------------------


def run_worker(python: str, args: list[str], timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ckpt-bench-") as tmp:
        out = Path(tmp) / "result.json"
        env = {**os.environ, "PYTHONPATH": str(ROOT), "KISHU_PATH_ROOT": tmp}
        try:
            done = subprocess.run(
                [python, str(Path(__file__).resolve()), *args, "--workdir", tmp, "--out", str(out)],
                capture_output=True,
                text=True,
                timeout=timeout,
                env=env,
            )
        except subprocess.TimeoutExpired:
            return {"error": f"did not finish in {timeout:.0f} s"}
        if done.returncode != 0 or not out.exists():
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            return {"error": " | ".join(tail) or f"exit status {done.returncode}"}
        result: dict[str, Any] = json.loads(out.read_text())
        return result


def mb(n: float) -> str:
    return f"{n / 2**20:,.1f}"


def ms(s: float) -> str:
    return f"{s * 1000:,.1f}"


def pct(values: list[float], q: float) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def summarise(name: str, result: dict[str, Any]) -> list[str]:
    if "error" in result:
        return [f"| {name} | could not run: {result['error']} | | | | | | | |"]
    rows = result["rows"]
    first, rest = rows[0], rows[1:]
    blocked = [r["blocked"] for r in rest] or [0.0]
    done = [r["done"] for r in rest] or [0.0]
    overhead = result["peak"] - result["base"] + max(r["child"] for r in rows)
    snapshot = [r.get("snapshot", r["blocked"]) for r in rest] or [0.0]
    return [
        f"| {name} | {ms(first['blocked'])} | {ms(first['done'])} "
        f"| {ms(pct(blocked, 50))} / {ms(pct(blocked, 95))} "
        f"| {ms(pct(snapshot, 50))} / {ms(pct(snapshot, 95))} "
        f"| {ms(pct(done, 50))} / {ms(pct(done, 95))} "
        f"| {mb(first['written'])} | {mb(sum(r['written'] for r in rest))} "
        f"| {mb(overhead)} |"
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument(
        "--workloads", default="mixed,objects,big", help="Of mixed, objects, big (1 GB)."
    )
    parser.add_argument(
        "--timeout", type=float, default=1200, help="Seconds one system may take per workload."
    )
    parser.add_argument("--kishu-python", default=os.environ.get("KISHU_PYTHON", sys.executable))
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--workload", default="mixed", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        workdir = Path(args.workdir)
        if args.worker == "serialisers":
            result = serialisers(workdir)
        else:
            result = worker(args.worker, args.workload, args.steps, workdir)
        Path(args.out).write_text(json.dumps(result))
        return 0

    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    workloads = {w.strip() for w in args.workloads.split(",")}
    print(f"Checkpoint benchmark ({os.cpu_count()} CPUs, {shutil.which('python3')})\n")
    ser = run_worker(sys.executable, ["--worker", "serialisers"], args.timeout)
    if "error" not in ser:
        print(f"Serialisers (best of 3; dill {ser['dill']}):\n")
        print("| value | cloudpickle ms | cloudpickle MB | dill ms | dill MB |")
        print("|---|---|---|---|---|")
        for name, row in ser["table"].items():
            cp_time, cp_size = row["cloudpickle"]
            dill_time, dill_size = row.get("dill", (float("nan"), 0))
            print(f"| {name} | {ms(cp_time)} | {mb(cp_size)} | {ms(dill_time)} | {mb(dill_size)} |")
        print()
    else:
        print(f"Serialisers: {ser['error']}\n")

    header = (
        "| system | first: blocked ms | first: done ms | next: blocked p50/p95 ms "
        "| next: on loop p50/p95 ms | next: done p50/p95 ms | first: written MB "
        "| next {n}: written MB | RSS+ peak MB |"
    )
    titles = {
        "mixed": "Mixed namespace (100 MB DataFrame, fitted RandomForest, figure, generator, "
        "open file)",
        "objects": "Python objects (a list of 500,000 dicts)",
    }
    for workload, title in titles.items():
        if workload not in workloads:
            continue
        print(
            f"{title}: a first checkpoint, then {args.steps} cells each followed by one "
            "(every 4th changes the large value):\n"
        )
        print(header.format(n=args.steps))
        print("|---|---|---|---|---|---|---|---|---|")
        skipped: dict[str, list[str]] = {}
        for system in systems:
            python = args.kishu_python if system == "kishu" else sys.executable
            command = ["--worker", system, "--workload", workload, "--steps", str(args.steps)]
            result = run_worker(python, command, args.timeout)
            if "version" in result:
                system = f"kishu {result['version']}"
            for line in summarise(system, result):
                print(line, flush=True)
            if "rows" in result:
                skipped[system] = result["rows"][0]["skipped"]
        print()
        for system, names in skipped.items():
            if names:
                print(f"- {system} left out: {', '.join(names)}")
        print()
    if "big" not in workloads:
        return 0
    print("\n1 GB namespace (one 1 GiB DataFrame), first checkpoint:\n")
    print("| system | blocked ms | done ms | written MB | RSS+ peak MB |")
    print("|---|---|---|---|---|")
    for system in systems:
        python = args.kishu_python if system == "kishu" else sys.executable
        command = ["--worker", system, "--workload", "big", "--steps", "0"]
        result = run_worker(python, command, args.timeout)
        if "error" in result:
            print(f"| {system} | could not run: {result['error']} | | | |", flush=True)
            continue
        if "version" in result:
            system = f"kishu {result['version']}"
        row = result["rows"][0]
        overhead = result["peak"] - result["base"] + row["child"]
        print(
            f"| {system} | {ms(row['blocked'])} | {ms(row['done'])} | {mb(row['written'])} "
            f"| {mb(overhead)} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
