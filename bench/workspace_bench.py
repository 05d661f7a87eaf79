"""The workspace channel end to end: kernel → comm → JupyterLab's labextension → back.

A notebook in a real JupyterLab (``tests/browser/lab.py``, Debian's Chromium through Playwright,
this checkout's ``pi_notebook/labextension`` on ``JUPYTER_PATH``) loads pi_notebook; a cell then
times ``NotebookDocument`` requests from the kernel (each one a comm message to the page and its
reply): ``cells()`` on a small and on a larger notebook, ``insert_cell``, ``edit_cell``,
``delete_cell``, and ``execute_cell`` until ``history.wait_for`` sees the cell finish (that one
from a background task: a cell cannot wait for another cell, the deadlock rule). It prints
p50/p95/max milliseconds per request and never passes or fails.

    python3 -m bench.workspace_bench              # 50 of each
    python3 -m bench.workspace_bench --count 200
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from bench.common import describe_environment, print_table
from tests.browser.lab import close_notebook, launch_chromium, open_notebook_page, start_lab

LABEXTENSION = Path(__file__).resolve().parents[1] / "pi_notebook" / "labextension"
RESULT = "workspace_bench.json"

MEASURE = """
import asyncio, json, time, pi_notebook
agent = pi_notebook.current()
doc = agent.document
COUNT = {count}
assert doc.connected, "the labextension did not link this notebook"
timings = {{}}
async def timed(name, make):
    spent = []
    for i in range(COUNT):
        start = time.perf_counter()
        result = await make(i)
        spent.append((time.perf_counter() - start) * 1000)
    timings[name] = spent
    return result
await timed("cells() · 3 cells", lambda i: doc.cells())
ids = []
async def insert(i):
    ids.append(await doc.insert_cell(f"# bench {{i}}", after_cell_id=None, cell_type="markdown"))
await timed("insert_cell", insert)
await timed("edit_cell", lambda i: doc.edit_cell(ids[i], f"# edited {{i}}"))
await timed(f"cells() · {{3 + COUNT}} cells", lambda i: doc.cells())
await timed("delete_cell", lambda i: doc.delete_cell(ids[i]))
target = await doc.insert_cell("x = 1 + 1", after_cell_id=None)
async def run_cell(i):
    mark = agent.history.mark
    await doc.execute_cell(target)
    await agent.history.wait_for(target, started_after=mark)
async def in_background():
    await timed("execute_cell + wait_for", run_cell)
    await doc.delete_cell(target)
    with open({result!r}, "w") as f:
        json.dump(timings, f)
_bench = asyncio.ensure_future(in_background())
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=50, help="requests of each kind")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        data = base / "data" / "labextensions"
        data.mkdir(parents=True)
        (data / "pi-notebook-widgets").symlink_to(LABEXTENSION, target_is_directory=True)
        os.environ["JUPYTER_PATH"] = str(base / "data")
        from playwright.sync_api import sync_playwright

        with start_lab(base) as server, sync_playwright() as pw:
            browser = launch_chromium(pw)
            try:
                cells = ["%load_ext pi_notebook", MEASURE.format(count=args.count, result=RESULT)]
                nb = open_notebook_page(browser, server, "workspace_bench.ipynb", cells)
                nb.run_and_wait(0, 1)
                result = server.root / RESULT
                nb.wait_until(result.exists, "the background measurements", timeout=300_000)
                timings: dict[str, list[float]] = json.loads(result.read_text())
                close_notebook(nb)
            finally:
                browser.close()
    rows = [
        [
            name,
            str(len(spent)),
            f"{percentile(spent, 0.5):.1f}",
            f"{percentile(spent, 0.95):.1f}",
            f"{max(spent):.1f}",
        ]
        for name, spent in timings.items()
    ]
    print(describe_environment(["jupyterlab", "ipykernel", "playwright"]))
    print_table(
        "NotebookDocument requests, kernel → JupyterLab → kernel (ms)",
        ["request", "n", "p50", "p95", "max"],
        rows,
    )


if __name__ == "__main__":
    main()
