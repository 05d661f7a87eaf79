"""The run view end to end: kernel → jupyter_server → JupyterLab → headless Chromium's DOM.

A notebook in a real JupyterLab (``tests/browser/lab.py``: random port and token, Debian's
Chromium through Playwright) loads the extension and runs ``%%agent`` against the faux provider
streaming a reply of ``--tokens`` tokens (default 10,000) at ``--rate`` tokens/s (default 1,000).
The reply is made of numbered markers (``w00000 w00001 …``, a paragraph every 40) so both ends
can say how far the text has got:

- the kernel records when each marker was produced (a harness listener on ``text_delta``);
- the page records when each marker first shows in the run view's DOM (a ``MutationObserver``);
- Playwright counts the kernel's websocket frames (``page.on("websocket")``, jupyter's v1
  binary protocol or JSON): iopub ``comm_msg`` count and bytes, ``comm_open`` bytes, all bytes;
- Chrome DevTools ``Performance.getMetrics`` gives the main thread's busy time (``TaskDuration``,
  script, layout, style), and a ``longtask`` observer the longest task.

Per run it prints messages/s, bytes, the marker latency (produced → in the DOM; p50/p95/max,
and for the last token) and the browser's busy time, next to the goals (≤ 25 messages/s, ≤ 2 MB
in all, p95 ≤ 150 ms). It never passes or fails.

``--before REV`` runs the same in a second JupyterLab whose kernels import git revision REV's
``pi_notebook/`` (exported to a temporary directory, first on ``PYTHONPATH``; the run view's
front-end code comes with the kernel), and ends with a before/after table: bytes ÷ text,
messages/s, token → DOM p95.

    python3 -m bench.widget_bench                         # 10k tokens at 1k/s, 2 runs
    python3 -m bench.widget_bench --tokens 20000 --rate 2000 --runs 1
    python3 -m bench.widget_bench --before main --runs 1  # before/after, side by side
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import json
import math
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import describe_environment, fmt_int, print_table
from bench.kernel_bench import code_tree, tree_env
from tests.browser.lab import (
    FAUX_IMPORTS,
    LabNotebook,
    close_notebook,
    launch_chromium,
    open_notebook_page,
    start_lab,
)

MARKS_FILE = "widget_bench_marks.json"

SETUP = """{imports}
CHARS = {chars}
MARKS_FILE = {marks_file!r}
_parts, _ends, _n, _i = [], [], 0, 0
while _n < CHARS:
    _word, _sep = f"w{{_i:05d}}", "\\n\\n" if _i % 40 == 39 else " "
    _parts.append(_word + _sep)
    _ends.append(_n + len(_word))
    _n += len(_word) + len(_sep)
    _i += 1
REPLY = "".join(_parts)[:CHARS]
ENDS = [end for end in _ends if end <= CHARS]
faux = register_faux_provider(tokens_per_second={rate})
faux.set_responses([faux_assistant_message(REPLY) for _ in range({runs})])
%model faux/faux-1"""

# Records, per run, when the kernel produced each marker (epoch ms) and dumps it to a file.
INSTRUMENT = """import json, time
import pi_notebook
await pi_notebook.current().wait()
_bench = {"runs": []}

def _bench_listener(event):
    kind = getattr(event, "type", None)
    if kind == "agent_start":
        _bench["runs"].append({"marks": [], "chars": 0})
    elif kind == "message_update":
        delta = event.assistant_message_event
        if delta.type != "text_delta":
            return
        run = _bench["runs"][-1]
        run["chars"] += len(delta.delta)
        now = time.time() * 1000
        marks = run["marks"]
        while len(marks) < len(ENDS) and ENDS[len(marks)] <= run["chars"]:
            marks.append(now)
    elif kind == "agent_end":
        _bench["runs"][-1]["syncs"] = pi_notebook.current().last_run.view.sync_count
        with open(MARKS_FILE, "w") as out:
            json.dump(_bench, out)

pi_notebook.current().harness.subscribe(_bench_listener)"""

AGENT = "%%agent\nStream the markers."

# Watches one cell's output: the highest marker in the run view's assistant text, with times.
_JS_OBSERVE = """
([id, index]) => {
  const panel = Array.from(window.jupyterapp.shell.widgets('main')).find((w) => w.id === id);
  const node = panel.content.widgets[index].node;
  const log = { marks: [], last: -1, longest: 0, longTasks: 0 };
  window.__piBench = log;
  const marker = /w(\\d{5})(?!\\d)/g;
  const observer = new MutationObserver(() => {
    const texts = node.querySelectorAll('.pi-run .pi-assistant .pi-text');
    if (texts.length === 0) return;
    const tail = texts[texts.length - 1].textContent.slice(-32);
    let found = -1;
    marker.lastIndex = 0;
    for (let m = marker.exec(tail); m !== null; m = marker.exec(tail)) found = Number(m[1]);
    if (found > log.last) {
      log.last = found;
      log.marks.push([Date.now(), found]);
    }
  });
  observer.observe(node, { subtree: true, childList: true, characterData: true });
  const tasks = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      log.longTasks += 1;
      log.longest = Math.max(log.longest, entry.duration);
    }
  });
  tasks.observe({ type: 'longtask' });
  log.stop = () => { observer.disconnect(); tasks.disconnect(); };
  return null;
}
"""

_JS_RESULTS = """
() => { const log = window.__piBench; log.stop();
        return { marks: log.marks, longest: log.longest, longTasks: log.longTasks }; }
"""


# --- websocket frames ----------------------------------------------------------------------------


@dataclass(slots=True)
class Frame:
    at: float  # epoch seconds
    size: int
    channel: str
    msg_type: str


@dataclass
class FrameLog:
    """Frames the kernel's websocket delivered to the page."""

    frames: list[Frame] = field(default_factory=list)

    def attach(self, page: Any) -> None:
        page.on("websocket", self._on_websocket)

    def _on_websocket(self, ws: Any) -> None:
        if "/channels" in ws.url:
            ws.on("framereceived", self._on_frame)

    def _on_frame(self, payload: str | bytes) -> None:
        now = time.time()
        if isinstance(payload, bytes):
            channel, msg_type = _v1_header(payload)
            size = len(payload)
        else:
            message = json.loads(payload)
            channel = str(message.get("channel", ""))
            msg_type = str(message.get("header", {}).get("msg_type", ""))
            size = len(payload.encode())
        self.frames.append(Frame(now, size, channel, msg_type))

    def between(self, start: float, end: float) -> list[Frame]:
        return [f for f in self.frames if start <= f.at <= end]


def _v1_header(data: bytes) -> tuple[str, str]:
    """Channel and msg_type of a ``v1.kernel.websocket.jupyter.org`` frame: a count, then
    little-endian 8-byte offsets of channel, header, parent header, metadata, content…"""
    count = int.from_bytes(data[:8], "little")
    offsets = [int.from_bytes(data[8 * (i + 1) : 8 * (i + 2)], "little") for i in range(count)]
    channel = data[offsets[0] : offsets[1]].decode()
    header = json.loads(data[offsets[1] : offsets[2]])
    return channel, str(header.get("msg_type", ""))


# --- one run -------------------------------------------------------------------------------------


@dataclass
class RunResult:
    tokens_per_s: float
    stream_s: float
    comm_msgs: int
    comm_msg_bytes: int
    comm_open_bytes: int
    all_bytes: int
    msgs_per_s: float
    kernel_syncs: int
    latencies_ms: list[float]
    last_latency_ms: float
    busy: dict[str, float]
    window_s: float
    longest_task_ms: float
    long_tasks: int
    markers_seen: int
    markers_sent: int


def _metrics(cdp: Any) -> dict[str, float]:
    answer = cdp.send("Performance.getMetrics")
    return {m["name"]: float(m["value"]) for m in answer["metrics"]}


def idle_busy(nb: LabNotebook, cdp: Any, seconds: float = 3.0) -> float:
    """The page's main-thread busy fraction with the kernel idle (JupyterLab's own work)."""
    before = _metrics(cdp)["TaskDuration"]
    started = time.monotonic()
    nb.page.wait_for_timeout(seconds * 1000)
    return (_metrics(cdp)["TaskDuration"] - before) / (time.monotonic() - started)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def measure_run(
    nb: LabNotebook, frames: FrameLog, cdp: Any, cell: int, run_index: int, rate: int
) -> RunResult:
    marks_path = nb.server.root / MARKS_FILE
    marks_path.unlink(missing_ok=True)
    nb.page.evaluate(_JS_OBSERVE, [nb.panel_id, cell])
    before = _metrics(cdp)
    started = time.time()
    nb.run(cell)
    nb.cell(cell).locator(".pi-run .pi-status.pi-status-done").wait_for(timeout=600_000)
    nb.wait_cell(cell, timeout=600_000)
    nb.wait_until(marks_path.exists, "the kernel's marker times", timeout=60_000)
    nb.page.wait_for_timeout(300)  # the last frames and mutations
    ended = time.time()
    after = _metrics(cdp)
    browser = nb.page.evaluate(_JS_RESULTS)

    kernel = json.loads(marks_path.read_text())["runs"][run_index]
    produced: list[float] = kernel["marks"]
    seen_at = [at for at, _ in browser["marks"]]
    seen_mark = [mark for _, mark in browser["marks"]]
    latencies: list[float] = []
    for index, at in enumerate(produced):
        position = bisect.bisect_left(seen_mark, index)
        if position < len(seen_mark):
            latencies.append(seen_at[position] - at)
    stream_s = (produced[-1] - produced[0]) / 1000 if len(produced) > 1 else math.nan

    window = frames.between(started, ended)
    iopub = [f for f in window if f.channel == "iopub"]
    comm_msgs = [f for f in iopub if f.msg_type == "comm_msg"]
    # The stream's messages: from the first marker to the last one in the DOM.
    stream_start = produced[0] / 1000
    stream_end = (seen_at[-1] if seen_at else produced[-1]) / 1000
    streaming = [f for f in comm_msgs if stream_start - 0.1 <= f.at <= stream_end + 0.1]
    span = max(stream_end - stream_start, 1e-9)
    busy = {
        name: after.get(name, 0.0) - before.get(name, 0.0)
        for name in ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration")
    }
    return RunResult(
        tokens_per_s=kernel["chars"] / 4 / stream_s if stream_s > 0 else math.nan,
        stream_s=stream_s,
        comm_msgs=len(comm_msgs),
        comm_msg_bytes=sum(f.size for f in comm_msgs),
        comm_open_bytes=sum(f.size for f in iopub if f.msg_type == "comm_open"),
        all_bytes=sum(f.size for f in window),
        msgs_per_s=len(streaming) / span,
        kernel_syncs=int(kernel.get("syncs", 0)),
        latencies_ms=latencies,
        last_latency_ms=latencies[-1] if len(latencies) == len(produced) else math.nan,
        busy=busy,
        window_s=ended - started,
        longest_task_ms=float(browser["longest"]),
        long_tasks=int(browser["longTasks"]),
        markers_seen=(seen_mark[-1] + 1) if seen_mark else 0,
        markers_sent=len(produced),
    )


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


def _ms(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.0f} ms"


def _busy(r: RunResult) -> str:
    task = r.busy["TaskDuration"]
    return f"{task:.2f} s of {r.window_s:.1f} s ({100 * task / r.window_s:.0f}%)"


def _busy_parts(r: RunResult) -> str:
    parts = (r.busy[name] for name in ("ScriptDuration", "LayoutDuration", "RecalcStyleDuration"))
    return " / ".join(f"{value:.2f}" for value in parts) + " s"


def report(
    results: list[RunResult], tokens: int, rate: int, idle: float, label: str = "this tree"
) -> None:
    headers = ["metric", *[f"run {i + 1}" for i in range(len(results))], "goal"]

    def row(label: str, values: list[str], goal: str = "") -> list[str]:
        return [label, *values, goal]

    rows = [
        row(
            "tokens streamed (achieved tokens/s)",
            [f"{tokens:,} ({r.tokens_per_s:,.0f}/s)" for r in results],
        ),
        row("streaming time", [f"{r.stream_s:.2f} s" for r in results]),
        row("comm messages (comm_msg) in the run", [fmt_int(r.comm_msgs) for r in results]),
        row("run view syncs (kernel, until agent_end)", [fmt_int(r.kernel_syncs) for r in results]),
        row("comm messages/s while streaming", [f"{r.msgs_per_s:.1f}" for r in results], "≤ 25"),
        row("comm_msg bytes", [_mb(r.comm_msg_bytes) for r in results]),
        row("comm_open bytes (widget ESM + CSS)", [_mb(r.comm_open_bytes) for r in results]),
        row("all websocket bytes to the page", [_mb(r.all_bytes) for r in results], "≤ 2 MB"),
        row(
            "markers in the DOM / produced",
            [f"{r.markers_seen:,} / {r.markers_sent:,}" for r in results],
        ),
        row("token → DOM latency p50", [_ms(statistics.median(r.latencies_ms)) for r in results]),
        row(
            "token → DOM latency p95",
            [_ms(_percentile(r.latencies_ms, 0.95)) for r in results],
            "≤ 150 ms",
        ),
        row("token → DOM latency max", [_ms(max(r.latencies_ms)) for r in results]),
        row("last token → DOM", [_ms(r.last_latency_ms) for r in results]),
        row("browser main thread busy (TaskDuration)", [_busy(r) for r in results]),
        row("  script / layout / style", [_busy_parts(r) for r in results]),
        row("  busy with nothing streaming (idle page)", [f"{100 * idle:.0f}%" for _ in results]),
        row(
            "long tasks (> 50 ms), longest",
            [f"{r.long_tasks}, {_ms(r.longest_task_ms)}" for r in results],
        ),
    ]
    print_table(
        f"Run view in JupyterLab + headless Chromium ({label}): {tokens:,} tokens at "
        f"{rate:,} tokens/s",
        headers,
        rows,
        note=(
            "Latency: from the kernel's harness event carrying a marker's last digit to the first "
            "DOM mutation showing it (same host clock). Bytes: every websocket frame from the "
            "server to the page between starting the cell and the end of the run."
        ),
        left_columns=1,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=10_000, help="reply length in tokens")
    parser.add_argument("--rate", type=int, default=1_000, help="faux tokens per second")
    parser.add_argument("--runs", type=int, default=2, help="runs of the same cell")
    parser.add_argument(
        "--before", default="", help="also measure git revision REV (e.g. main): before/after"
    )
    args = parser.parse_args(argv)
    if args.tokens < 100 or args.rate < 1 or args.runs < 1:
        parser.error("--tokens must be ≥ 100, --rate and --runs ≥ 1")

    print(describe_environment(["jupyterlab", "ipykernel", "anywidget", "playwright"]))
    cells = [
        "%load_ext pi_notebook",
        SETUP.format(
            imports=FAUX_IMPORTS,
            chars=args.tokens * 4,
            rate=args.rate,
            runs=args.runs,
            marks_file=MARKS_FILE,
        ),
        INSTRUMENT,
        AGENT,
    ]
    trees: list[tuple[str, str]] = []
    if args.before:
        trees.append((f"before ({args.before})", args.before))
    trees.append(("after (this tree)" if args.before else "this tree", ""))
    measured: list[tuple[str, list[RunResult]]] = []
    for label, rev in trees:
        with contextlib.ExitStack() as stack:
            tree = stack.enter_context(code_tree(rev)) if rev else None
            results, idle = measure_lab(cells, args.runs, args.rate, tree)
        report(results, args.tokens, args.rate, idle, label)
        measured.append((label, results))
    if args.before:
        compare(measured, args.tokens * 4)


def measure_lab(
    cells: list[str], runs: int, rate: int, tree: Path | None
) -> tuple[list[RunResult], float]:
    """Runs of the agent cell in a fresh JupyterLab whose kernels import ``tree``'s code."""
    from playwright.sync_api import sync_playwright

    saved = os.environ.get("PYTHONPATH")
    os.environ.update(tree_env(tree))  # the Lab's kernels inherit it
    frames = FrameLog()
    results: list[RunResult] = []
    try:
        with (
            tempfile.TemporaryDirectory(prefix="widget_bench-") as tmp,
            start_lab(Path(tmp)) as server,
            sync_playwright() as pw,
        ):
            browser = launch_chromium(pw)
            nb = open_notebook_page(
                browser, server, "widget_bench.ipynb", cells, before_load=frames.attach
            )
            try:
                cdp = nb.page.context.new_cdp_session(nb.page)
                cdp.send("Performance.enable")
                nb.run_and_wait(0, 1, 2)
                idle = idle_busy(nb, cdp)
                for run_index in range(runs):
                    results.append(measure_run(nb, frames, cdp, 3, run_index, rate))
                    print(f"run {run_index + 1}: done", file=sys.stderr)
                if nb.page_errors:
                    print("page errors:\n" + "\n".join(nb.page_errors), file=sys.stderr)
            finally:
                close_notebook(nb)
                browser.close()
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    return results, idle


def compare(measured: list[tuple[str, list[RunResult]]], chars: int) -> None:
    """Before/after, per run: bytes ÷ text, messages/s, token → DOM p95."""
    headers = ["figure"]
    columns: list[RunResult] = []
    for label, results in measured:
        for index, result in enumerate(results):
            headers.append(f"{label}, run {index + 1}")
            columns.append(result)
    rows = [
        ["websocket bytes ÷ text (all frames)"]
        + [f"{r.all_bytes / chars:.2f}" for r in columns]
        + [""],
        ["comm_msg bytes ÷ text"] + [f"{r.comm_msg_bytes / chars:.2f}" for r in columns] + ["≤ 3"],
        ["comm_open bytes (code modules, opening states)"]
        + [fmt_int(r.comm_open_bytes) for r in columns]
        + [""],
        ["comm messages/s while streaming"] + [f"{r.msgs_per_s:.1f}" for r in columns] + ["≤ 25"],
        ["token → DOM latency p95"]
        + [_ms(_percentile(r.latencies_ms, 0.95)) for r in columns]
        + ["≤ 150 ms"],
        ["token → DOM latency p50"]
        + [_ms(statistics.median(r.latencies_ms)) for r in columns]
        + [""],
        ["browser main thread busy"] + [_busy(r) for r in columns] + [""],
    ]
    print_table(
        f"Before / after ({chars:,} characters of reply text)",
        [*headers, "goal"],
        rows,
        note="text = the reply's characters; bytes are websocket frames to the page during the "
        "run (the first run of a kernel includes the shared code modules' comm_open).",
        left_columns=1,
    )


if __name__ == "__main__":
    main()
