"""The extension's cost inside a real ipykernel (jupyter_client, no server, no browser).

1. **Load time.** In several fresh kernels: ``import pi_notebook`` and ``%load_ext pi_notebook``,
   each timed inside the kernel with ``time.perf_counter`` and ``time.process_time`` (median,
   best, worst), next to the kernel's own start time; without and with a bytecode cache when
   the environment sets ``PYTHONDONTWRITEBYTECODE``. The same kernels then set up the faux
   provider and run a first ``%%agent`` to its reply (what ``%load_ext`` defers is paid
   there), and as many more load the extension next to an existing session of 1,000 entries
   (a notebook reopened: its session is opened at once). Then ``--import-kernels`` more run with
   ``PYTHONPROFILEIMPORTTIME=1`` and the imports made by the two steps are broken down
   (median per module): by package, the heaviest modules, and
   the third-party packages that pi_notebook pulls in (with the module that first imports
   each, i.e. where a lazy import would go). ``-X importtime`` adds its own overhead, so read
   those figures as shares, and the table above as the real time.
2. **A streamed run.** One kernel loads the extension, registers the faux provider at
   ``--rate`` tokens/s with one reply of ``--rate × --seconds`` tokens, sets
   ``%model faux/faux-1`` and runs ``%%agent`` (in the background). The client reads iopub's
   raw ZMQ frames for the whole run: messages by type (``comm_msg`` split by method), bytes
   (all frames of each message) and messages/s; kernel CPU is the kernel process's
   utime + stime (``/proc/<pid>/stat``) over wall time, in % of one core. An idle kernel
   before loading the extension, with it loaded, and after the run are measured the same way.

   The run's iopub bytes are also given per character of the reply (bytes ÷ text), with and
   without the ``comm_open`` of the widgets' shared code module (sent once per kernel).

``--before REV`` measures the code of git revision ``REV`` (its ``pi_notebook/``, exported to a
temporary directory and put first on the kernels' ``PYTHONPATH``) the same way in the same run,
and ends with a before/after table: load time, bytes ÷ text, messages/s, CPU.

The goals: load ≤ 250 ms; during the run < 10 % CPU, ≤ 25 messages/s and ≤ 3× the
text in bytes. It prints tables and never passes or fails.

    python3 -m bench.kernel_bench                       # 4 kernels per mode, 20 s at 1,000 tokens/s
    python3 -m bench.kernel_bench --kernels 3 --seconds 10 --rate 2000
    python3 -m bench.kernel_bench --before main --seconds 10   # before/after, side by side
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zmq
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager

from bench.common import describe_environment, fmt_int, fmt_ms, print_table

ROOT = Path(__file__).resolve().parents[1]
MARK = "@@kernel_bench "
"""Prefix of the JSON line a measuring cell prints on stdout."""

TERMINAL_STATUSES = frozenset({"done", "aborted", "error"})
SCRUBBED_ENV = ("PI_NOTEBOOK_MODEL", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY")

LOAD_CELL = f"""\
_n0, _c0, _t0 = len(sys.modules), time.process_time(), time.perf_counter()
import pi_notebook
_n1, _c1, _t1 = len(sys.modules), time.process_time(), time.perf_counter()
get_ipython().run_line_magic("load_ext", "pi_notebook")
_n2, _c2, _t2 = len(sys.modules), time.process_time(), time.perf_counter()
print({MARK!r} + json.dumps({{"wall": [_t1 - _t0, _t2 - _t1], "cpu": [_c1 - _c0, _c2 - _c1],
                              "modules": [_n1 - _n0, _n2 - _n1]}}))
"""

FAUX_CELL = f"""\
_c0, _t0 = time.process_time(), time.perf_counter()
from pi_notebook.ai import faux_assistant_message, register_faux_provider
_faux = register_faux_provider()
_faux.set_responses([faux_assistant_message("Hello from the faux model.")])
os.environ["PI_NOTEBOOK_MODEL"] = "faux/faux-1"
print({MARK!r} + json.dumps({{"wall": time.perf_counter() - _t0,
                              "cpu": time.process_time() - _c0}}))
"""

FIRST_RUN_CELL = f"""\
_c0, _t0 = time.process_time(), time.perf_counter()
get_ipython().run_cell_magic("agent", "", "Say hello.")
_c1, _t1 = time.process_time(), time.perf_counter()
await pi_notebook.current().wait()
_c2, _t2 = time.process_time(), time.perf_counter()
print({MARK!r} + json.dumps({{"wall": [_t1 - _t0, _t2 - _t0], "cpu": [_c1 - _c0, _c2 - _c0]}}))
"""
"""The first ``%%agent`` after ``%load_ext`` (faux model): when the magic returns (the run view
is shown, the run queued) and when the reply is done. What ``%load_ext`` defers lands here."""

RESTORED_ENTRIES = 1_000
"""Entries of the session a restoring kernel finds next to its notebook."""

IMPORTTIME_CELL = """\
os.write(2, b"@@begin\\n")
import pi_notebook
get_ipython().run_line_magic("load_ext", "pi_notebook")
os.write(2, b"@@end\\n")
"""

RUN_SETUP = """\
from pi_notebook.ai import faux_assistant_message, register_faux_provider
_words, _n, _i = [], 0, 0
while _n < {chars}:
    _w = f"w{{_i:05d}}" + ("\\n\\n" if _i % 40 == 39 else " ")
    _words.append(_w)
    _n += len(_w)
    _i += 1
REPLY = "".join(_words)[:{chars}]
faux = register_faux_provider(tokens_per_second={rate})
faux.set_responses([faux_assistant_message(REPLY)])
"""

MODEL_CELL = "%model faux/faux-1"
WAIT_CELL = "import pi_notebook\nawait pi_notebook.current().wait()"
RUN_CELL = "%%agent\nTell a very long story."


# --- the kernel -----------------------------------------------------------------------------------


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), from ``/proc/<pid>/stat``."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    # after "pid (comm)": state is field 3, utime 14 and stime 15 (1-based)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class IopubMessage:
    at: float
    """``time.perf_counter()`` when the client received it."""
    kind: str
    """``msg_type``, and for comms the method: ``comm_msg/update``."""
    size: int
    """Bytes of all its ZMQ frames."""
    parent: str
    content: dict[str, Any]


@dataclass
class CellResult:
    stdout: str = ""
    errors: list[str] = field(default_factory=list)


class Kernel:
    """A real ipykernel and a client reading iopub's raw frames."""

    def __init__(self, cwd: Path, env: Mapping[str, str], stderr: Any = None) -> None:
        self.manager = KernelManager(kernel_name="python3")
        started = time.perf_counter()
        self.manager.start_kernel(cwd=str(cwd), env=dict(env), stderr=stderr)
        self.client: BlockingKernelClient = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)
        self.start_seconds = time.perf_counter() - started
        process = getattr(self.manager.provisioner, "process", None)
        if process is None:
            raise RuntimeError("the kernel provisioner does not expose the kernel process")
        self.pid: int = process.pid
        self._iopub: zmq.Socket[bytes] = self.client.iopub_channel.socket
        self._poller = zmq.Poller()
        self._poller.register(self._iopub, zmq.POLLIN)
        self.drain(0.2)

    def cpu_seconds(self) -> float:
        return _cpu_seconds(self.pid)

    def receive(self, timeout: float) -> IopubMessage | None:
        """The next iopub message, or None after ``timeout`` seconds."""
        if not self._poller.poll(max(0, int(timeout * 1000))):
            return None
        frames = self._iopub.recv_multipart()
        at = time.perf_counter()
        session = self.client.session
        _idents, parts = session.feed_identities(frames)
        msg = session.deserialize(parts, content=True)
        kind = msg["msg_type"]
        content = msg["content"]
        if kind == "comm_msg":
            kind += "/" + str(content.get("data", {}).get("method", "?"))
        parent = msg["parent_header"].get("msg_id", "")
        return IopubMessage(at, kind, sum(len(f) for f in frames), parent, content)

    def drain(self, seconds: float) -> list[IopubMessage]:
        """Every message that arrives within ``seconds``."""
        end = time.perf_counter() + seconds
        out: list[IopubMessage] = []
        while (left := end - time.perf_counter()) > 0:
            message = self.receive(left)
            if message is not None:
                out.append(message)
        return out

    def execute(
        self, code: str, timeout: float = 60, seen: list[IopubMessage] | None = None
    ) -> CellResult:
        """Run a cell to its ``status: idle``; its stdout and errors (iopub messages read
        meanwhile go to ``seen``)."""
        msg_id = self.client.execute(code, store_history=False)
        result = CellResult()
        deadline = time.perf_counter() + timeout
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"the cell did not finish within {timeout} s: {code[:60]!r}")
            message = self.receive(left)
            if message is None:
                continue
            if seen is not None:
                seen.append(message)
            if message.parent != msg_id:
                continue
            if message.kind == "stream" and message.content.get("name") == "stdout":
                result.stdout += message.content.get("text", "")
            elif message.kind == "error":
                result.errors.append(f"{message.content['ename']}: {message.content['evalue']}")
            elif message.kind == "status" and message.content["execution_state"] == "idle":
                break
        reply = self.client.get_shell_msg(timeout=timeout)
        if reply["content"]["status"] != "ok" and not result.errors:
            result.errors.append(str(reply["content"].get("evalue", reply["content"])))
        return result

    def checked(self, code: str, timeout: float = 60) -> CellResult:
        result = self.execute(code, timeout)
        if result.errors:
            raise RuntimeError(f"cell {code[:60]!r} failed: {'; '.join(result.errors)}")
        return result

    def shutdown(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


def kernel_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
    env.update({"JPY_SESSION_NAME": "bench.ipynb", "PYDEVD_DISABLE_FILE_VALIDATION": "1"})
    env.update(extra)
    return env


@contextmanager
def kernel(
    env: Mapping[str, str], *, stderr: Any = None, session: Path | None = None
) -> Iterator[Kernel]:
    """A fresh kernel in a temporary directory, with ``env`` over this process's environment;
    ``session``: a session file it finds there as its notebook's (``bench.pi.jsonl``)."""
    with tempfile.TemporaryDirectory(prefix="kernel_bench-") as tmp:
        if session is not None:
            shutil.copy(session, Path(tmp) / "bench.pi.jsonl")
        k = Kernel(Path(tmp), kernel_env(**env), stderr=stderr)
        try:
            k.checked("import json, os, sys, time")  # the first cell's own one-off cost
            yield k
        finally:
            k.shutdown()


def marked(stdout: str) -> dict[str, Any]:
    for line in stdout.splitlines():
        if line.startswith(MARK):
            data: dict[str, Any] = json.loads(line.removeprefix(MARK))
            return data
    raise RuntimeError(f"the cell printed no measurement: {stdout!r}")


@contextmanager
def code_tree(rev: str) -> Iterator[Path]:
    """A temporary directory holding ``pi_notebook/`` as of git revision ``rev`` (for a
    kernel's ``PYTHONPATH``: the before of a before/after run)."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "pi_notebook"],
        check=True,
        capture_output=True,
    ).stdout
    with tempfile.TemporaryDirectory(prefix="kernel_bench-tree-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        yield Path(tmp)


def tree_env(tree: Path | None) -> dict[str, str]:
    """Kernel environment that imports pi_notebook from ``tree`` (None: as installed/here)."""
    if tree is None:
        return {}
    rest = os.environ.get("PYTHONPATH", "")
    return {"PYTHONPATH": os.pathsep.join(p for p in (str(tree), rest) if p)}


# --- 1. load time ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class BytecodeMode:
    """How the kernels find compiled bytecode."""

    label: str
    env: dict[str, str]


def bytecode_modes(cache: Path) -> list[BytecodeMode]:
    """This environment as it is and, if it keeps Python from writing ``.pyc`` files (then every
    kernel compiles pi_notebook's sources again), kernels with a primed bytecode cache in a
    temporary directory: what an installed wheel gives. The working tree is not written to."""
    cached = BytecodeMode(
        "bytecode cached", {"PYTHONPYCACHEPREFIX": str(cache), "PYTHONDONTWRITEBYTECODE": ""}
    )
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return [cached]
    return [BytecodeMode("no .pyc (PYTHONDONTWRITEBYTECODE)", {}), cached]


def _add(
    steps: dict[str, tuple[list[float], list[float], int | None]],
    name: str,
    wall: float,
    cpu: float,
    modules: int | None = None,
) -> None:
    walls, cpus, _ = steps.setdefault(name, ([], [], modules))
    walls.append(wall)
    cpus.append(cpu)


def measure_load(
    kernels: int, cache: Path, tree: Path | None = None, label: str = "this tree"
) -> dict[str, float]:
    """Prints the load table; returns median ms of import + %load_ext and of the first reply,
    per bytecode mode.

    Each fresh kernel loads the extension in a new notebook, sets up the faux provider and runs
    a first ``%%agent`` to its reply; as many more kernels load it next to a session of
    :data:`RESTORED_ENTRIES` entries (an existing notebook reopened)."""
    from bench.session_bench import generate

    rows: list[list[str]] = []
    medians: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="kernel_bench-session-") as tmp:
        restored = Path(tmp) / "restored.pi.jsonl"
        generate(restored, RESTORED_ENTRIES)
        for mode in bytecode_modes(cache):
            env = {**mode.env, **tree_env(tree)}
            if "PYTHONPYCACHEPREFIX" in mode.env:
                with kernel(env) as k:  # fills the cache
                    k.checked(LOAD_CELL)
                    k.checked(FAUX_CELL)
                    k.checked(FIRST_RUN_CELL)
            starts: list[float] = []
            steps: dict[str, tuple[list[float], list[float], int | None]] = {}
            for _ in range(kernels):
                with kernel(env) as k:
                    data = marked(k.checked(LOAD_CELL).stdout)
                    faux = marked(k.checked(FAUX_CELL).stdout)
                    first = marked(k.checked(FIRST_RUN_CELL).stdout)
                starts.append(k.start_seconds)
                wall, cpu, modules = data["wall"], data["cpu"], data["modules"]
                for i, name in enumerate(("import pi_notebook", "%load_ext pi_notebook")):
                    _add(steps, name, wall[i], cpu[i], modules[i])
                _add(steps, "import + %load_ext", sum(wall), sum(cpu), sum(modules))
                _add(steps, "then: faux provider set up", faux["wall"], faux["cpu"])
                _add(steps, "then: first %%agent, magic returns", first["wall"][0], first["cpu"][0])
                _add(steps, "then: first %%agent, reply done", first["wall"][1], first["cpu"][1])
            for _ in range(kernels):
                with kernel(env, session=restored) as k:
                    data = marked(k.checked(LOAD_CELL).stdout)
                _add(
                    steps,
                    f"import + %load_ext, restoring {RESTORED_ENTRIES:,} entries",
                    sum(data["wall"]),
                    sum(data["cpu"]),
                    sum(data["modules"]),
                )
            rows.append(
                [
                    f"{mode.label}: kernel start + ready",
                    fmt_ms(statistics.median(starts)),
                    fmt_ms(min(starts)),
                    fmt_ms(max(starts)),
                    "",
                    "",
                ]
            )
            medians[f"import + %load_ext, {mode.label}"] = (
                statistics.median(steps["import + %load_ext"][0]) * 1000
            )
            medians[f"first %%agent reply done, {mode.label}"] = (
                statistics.median(steps["then: first %%agent, reply done"][0]) * 1000
            )
            for name, (walls, cpus, count) in steps.items():
                rows.append(
                    [
                        f"{mode.label}: {name}",
                        fmt_ms(statistics.median(walls)),
                        fmt_ms(min(walls)),
                        fmt_ms(max(walls)),
                        fmt_ms(statistics.median(cpus)),
                        "" if count is None else fmt_int(count),
                    ]
                )
    print_table(
        f"Cold load ({label}), timed inside {kernels} fresh kernels per row",
        ["step", "median ms", "best ms", "worst ms", "median CPU ms", "new modules"],
        rows,
        note="Goal: import + %load_ext ≤ 250 ms. Wall time inside the kernel "
        "(time.perf_counter); CPU = the kernel's time.process_time, less sensitive to other "
        "load on the machine. 'kernel start + ready' is the client's KernelManager "
        "start_kernel + wait_for_ready (the spec measured 0.54 s on a quiet machine). The "
        "kernel has IPython and ipykernel loaded already; 'new modules' is what each step adds "
        "to sys.modules. The 'then:' rows run in the same kernels after %load_ext: what it "
        "defers is paid there (the faux set-up imports the ai layer; the first run imports "
        "the harness, agent and tools in a thread). 'restoring' kernels find a session file "
        "next to their notebook, which %load_ext opens at once.",
    )
    return medians


@dataclass(frozen=True)
class ImportLine:
    name: str
    self_us: int
    cumulative_us: int
    depth: int


_IMPORTTIME = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def parse_importtime(text: str) -> list[ImportLine]:
    """The ``-X importtime`` lines between the cell's markers, in the order printed."""
    begin, end = text.find("@@begin"), text.find("@@end")
    if begin < 0 or end < 0:
        raise RuntimeError("the import-time kernel wrote no markers on stderr")
    lines = []
    for line in text[begin:end].splitlines():
        match = _IMPORTTIME.match(line)
        if match:
            self_us, cumulative, indent, name = match.groups()
            lines.append(ImportLine(name, int(self_us), int(cumulative), len(indent) // 2))
    return lines


def importers(lines: list[ImportLine]) -> dict[str, str]:
    """Each module's importer: ``-X importtime`` prints a module after its imports, so a line's
    parent is the next line that is less indented."""
    parents: dict[str, str] = {}
    stack: list[ImportLine] = []
    for line in reversed(lines):
        while stack and stack[-1].depth >= line.depth:
            stack.pop()
        if stack:
            parents[line.name] = stack[-1].name
        stack.append(line)
    return parents


def package_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "pi_notebook" and len(parts) > 1 else parts[0]


def median_lines(runs: list[list[ImportLine]]) -> list[ImportLine]:
    """Each module's median self and cumulative time over several runs (in the first run's
    order, which gives the nesting)."""
    by_name: dict[str, list[ImportLine]] = defaultdict(list)
    for run in runs:
        for line in run:
            by_name[line.name].append(line)
    return [
        ImportLine(
            line.name,
            int(statistics.median(x.self_us for x in by_name[line.name])),
            int(statistics.median(x.cumulative_us for x in by_name[line.name])),
            line.depth,
        )
        for line in runs[0]
    ]


def measure_imports(top: int, kernels: int, cache: Path) -> None:
    env = bytecode_modes(cache)[-1].env
    runs = []
    for _ in range(kernels):
        with tempfile.NamedTemporaryFile("w+", prefix="kernel_bench-importtime-") as log:
            with kernel({**env, "PYTHONPROFILEIMPORTTIME": "1"}, stderr=log) as k:
                k.checked(IMPORTTIME_CELL)
            log.flush()
            log.seek(0)
            runs.append(parse_importtime(log.read()))
    lines = median_lines(runs)
    total = sum(line.self_us for line in lines)

    by_package: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    for line in lines:
        by_package[package_of(line.name)] += line.self_us
        counts[package_of(line.name)] += 1
    print_table(
        f"Import time by package (-X importtime, bytecode cached, median of {kernels} kernels)",
        ["package", "ms", "share", "modules"],
        [
            [name, fmt_ms(us / 1e6), f"{us / total:.0%}", str(counts[name])]
            for name, us in by_package.most_common(top)
        ]
        + [["all", fmt_ms(total / 1e6), "100%", str(len(lines))]],
        note="Self times summed per package. -X importtime's own overhead inflates these, and "
        "one kernel's figures swing with the machine's load: compare shares, not totals.",
    )

    print_table(
        f"The {top} most expensive modules (own time, excluding their imports)",
        ["module", "self ms", "cumulative ms"],
        [
            [line.name, fmt_ms(line.self_us / 1e6), fmt_ms(line.cumulative_us / 1e6)]
            for line in sorted(lines, key=lambda line: -line.self_us)[:top]
        ],
    )

    parents = importers(lines)
    pulled = [
        line
        for line in lines
        if not line.name.startswith("pi_notebook")
        and parents.get(line.name, "").startswith("pi_notebook")
    ]
    print_table(
        "Third-party imports pi_notebook triggers, and where (lazy-import candidates)",
        ["module", "cumulative ms", "first imported by"],
        [
            [line.name, fmt_ms(line.cumulative_us / 1e6), parents[line.name]]
            for line in sorted(pulled, key=lambda line: -line.cumulative_us)[:top]
        ],
        note="Cumulative = the module with everything it imported first. Standard-library "
        "modules are listed too when a pi_notebook module is the first to import them.",
    )


# --- 2. a streamed run ----------------------------------------------------------------------------


@dataclass
class Window:
    """Kernel CPU and iopub traffic over one stretch of wall time."""

    label: str
    seconds: float
    cpu_seconds: float
    messages: list[IopubMessage]

    @property
    def cpu_percent(self) -> float:
        return 100 * self.cpu_seconds / self.seconds

    @property
    def total_bytes(self) -> int:
        return sum(m.size for m in self.messages)

    def row(self) -> list[str]:
        count = len(self.messages)
        return [
            self.label,
            f"{self.seconds:.1f}",
            f"{self.cpu_percent:.1f}",
            fmt_int(count),
            f"{count / self.seconds:.1f}",
            fmt_int(self.total_bytes),
            fmt_int(self.total_bytes / self.seconds),
        ]


def idle_window(k: Kernel, label: str, seconds: float) -> Window:
    cpu0, t0 = k.cpu_seconds(), time.perf_counter()
    messages = k.drain(seconds)
    return Window(label, time.perf_counter() - t0, k.cpu_seconds() - cpu0, messages)


@dataclass
class RunTrace:
    messages: list[IopubMessage]
    cpu: list[tuple[float, float]]
    """(perf_counter, kernel CPU seconds) sampled about every 0.25 s."""
    started: float
    ended: float
    status: str
    cell_seconds: float
    """From sending ``%%agent`` to its cell's ``status: idle`` (the run goes on after)."""


def trace_run(k: Kernel, timeout: float) -> RunTrace:
    """Send ``%%agent`` and read iopub until the run view reports a terminal status."""
    cpu = [(time.perf_counter(), k.cpu_seconds())]
    started = cpu[0][0]
    cell = k.client.execute(RUN_CELL, store_history=False)
    messages: list[IopubMessage] = []
    status = ""
    cell_seconds = float("nan")
    while status not in TERMINAL_STATUSES:
        now = time.perf_counter()
        if now - started > timeout:
            raise TimeoutError(f"the run did not end within {timeout:.0f} s")
        if now - cpu[-1][0] >= 0.25:
            cpu.append((now, k.cpu_seconds()))
        message = k.receive(0.05)
        if message is None:
            continue
        messages.append(message)
        if message.kind == "status" and message.parent == cell:
            if message.content["execution_state"] == "idle":
                cell_seconds = message.at - started
        elif message.kind == "comm_msg/update":
            status = message.content["data"].get("state", {}).get("status", status)
        elif message.kind == "comm_msg/custom":  # the run view's patches carry it too
            patch = message.content["data"].get("content", {})
            if isinstance(patch, dict) and patch.get("type") == "patch":
                status = patch.get("set", {}).get("status", status)
    ended = time.perf_counter()
    cpu.append((ended, k.cpu_seconds()))
    k.client.get_shell_msg(timeout=10)  # the %%agent cell's reply (long since sent)
    return RunTrace(messages, cpu, started, ended, status, cell_seconds)


def cpu_between(trace: RunTrace, start: float, end: float) -> float:
    """Kernel CPU seconds between the samples nearest ``start`` and ``end``."""
    first = min(trace.cpu, key=lambda s: abs(s[0] - start))
    last = min(trace.cpu, key=lambda s: abs(s[0] - end))
    return last[1] - first[1]


@dataclass(frozen=True)
class RunFigures:
    """What the before/after table compares."""

    chars: int
    bytes_all: int
    bytes_module: int
    """``comm_open`` bytes: the shared code modules and the views' opening states."""
    messages_per_s: float
    busiest_second: int
    cpu_percent: float


def _sync_kind(message: IopubMessage) -> str | None:
    """What a run view sync carries: ``update: traits`` or ``patch: ops + set traits``."""
    data = message.content.get("data", {})
    if message.kind == "comm_msg/update":
        return "update: " + ", ".join(sorted(data.get("state", {})))
    if message.kind == "comm_msg/custom":
        patch = data.get("content", {})
        if isinstance(patch, dict) and patch.get("type") == "patch":
            ops = sorted({str(op[0]) for op in patch.get("ops", [])})
            return "patch: " + ", ".join([*ops, *(f"set {k}" for k in sorted(patch["set"]))])
    return None


def measure_run(
    rate: int, seconds: float, idle: float, tree: Path | None = None, label: str = "this tree"
) -> RunFigures:
    tokens = int(rate * seconds)
    with kernel(tree_env(tree)) as k:
        windows = [idle_window(k, "idle kernel, no extension", idle)]
        k.checked(RUN_SETUP.format(chars=tokens * 4, rate=rate))
        k.checked("%load_ext pi_notebook")
        k.checked(MODEL_CELL)
        k.checked(WAIT_CELL)
        k.drain(0.3)
        windows.append(idle_window(k, "idle, extension loaded + %model", idle))
        trace = trace_run(k, timeout=seconds * 3 + 30)
        tail = k.drain(0.5)
        result = k.checked(
            "_r = pi_notebook.current().last_run.result\n"
            f"print({MARK!r} + json.dumps({{'chars': len(_r.text), 'stop': _r.stop_reason}}))"
        )
        reply = marked(result.stdout)
        windows.append(idle_window(k, "idle after the run", idle))

    duration = trace.ended - trace.started
    run = Window("run: %%agent → final status", duration, 0.0, trace.messages)
    run.cpu_seconds = trace.cpu[-1][1] - trace.cpu[0][1]
    steady_from = trace.started + min(2.0, duration / 4)
    steady_to = trace.ended - min(1.0, duration / 8)
    steady = Window(
        "run, steady state (from +2 s to −1 s)",
        steady_to - steady_from,
        cpu_between(trace, steady_from, steady_to),
        [m for m in trace.messages if steady_from <= m.at < steady_to],
    )
    print_table(
        f"Kernel cost of a streamed run ({label}: {fmt_int(tokens)} tokens, faux paced at "
        f"{fmt_int(rate)} tokens/s)",
        ["window", "wall s", "kernel CPU %", "iopub msgs", "msgs/s", "bytes", "bytes/s"],
        [w.row() for w in (windows[0], windows[1], run, steady, windows[2])],
        note=f"Goals during the run: < 10 % CPU, < 25 messages/s. The reply: "
        f"{fmt_int(reply['chars'])} characters (stop reason {reply['stop']}), streamed in "
        f"{duration:.1f} s = {reply['chars'] / 4 / duration:,.0f} tokens/s achieved (the faux "
        "provider sleeps per chunk and does not catch up on timer overshoot); final status "
        f"{trace.status!r}; the %%agent cell itself returned after "
        f"{trace.cell_seconds * 1000:,.0f} ms. Kernel CPU for the whole run: "
        f"{run.cpu_seconds * 1000:,.0f} ms = {run.cpu_seconds * 4e6 / reply['chars']:.1f} ms "
        "per 1,000 tokens. CPU is the kernel process (all its threads) in % of one core.",
    )

    per_second = Counter(int(m.at - trace.started) for m in trace.messages)
    cpu_per_second = [
        100 * (b[1] - a[1]) / (b[0] - a[0])
        for a, b in zip(trace.cpu[::4], trace.cpu[4::4], strict=False)
        if b[0] > a[0]
    ]
    kinds: dict[str, list[int]] = defaultdict(list)
    synced: dict[str, list[int]] = defaultdict(list)
    for m in trace.messages:
        kinds[m.kind].append(m.size)
        if (sync := _sync_kind(m)) is not None:
            synced[sync].append(m.size)

    def size_rows(groups: dict[str, list[int]]) -> list[list[str]]:
        return [
            [
                name,
                fmt_int(len(sizes)),
                f"{len(sizes) / duration:.1f}",
                fmt_int(sum(sizes)),
                fmt_int(sum(sizes) / len(sizes)),
                fmt_int(max(sizes)),
            ]
            for name, sizes in sorted(groups.items(), key=lambda kv: -sum(kv[1]))
        ]

    print_table(
        f"Run view syncs during the run ({label}), by what they carry",
        ["carries", "count", "per s", "bytes", "mean bytes", "max bytes"],
        size_rows(synced),
        note="update: a trait sync (the traits named). patch: the run view's append-only "
        "patch message: push = finished items, current = the reply in progress whole, blocks "
        "= text appended to it, promote = the reply finished (its text not sent again), set = "
        "small traits whole.",
    )
    print_table(
        "iopub messages during the run, by type",
        ["type", "count", "per s", "bytes", "mean bytes", "max bytes"],
        size_rows(kinds),
        note=f"Busiest second: {max(per_second.values(), default=0)} messages; kernel CPU per "
        f"second: median {statistics.median(cpu_per_second):.1f} %, max "
        f"{max(cpu_per_second):.1f} %. After the final status: {len(tail)} more message(s) "
        f"in 0.5 s ({', '.join(sorted({m.kind for m in tail})) or 'none'}).",
    )
    return RunFigures(
        chars=int(reply["chars"]),
        bytes_all=run.total_bytes,
        bytes_module=sum(kinds.get("comm_open", [])),
        messages_per_s=len(trace.messages) / duration,
        busiest_second=max(per_second.values(), default=0),
        cpu_percent=run.cpu_percent,
    )


def compare(
    labels: list[str], loads: list[dict[str, float]], runs: list[RunFigures | None]
) -> None:
    """The before/after table."""
    rows: list[list[str]] = []
    for step in dict.fromkeys(m for load in loads for m in load):
        rows.append(
            [f"{step} (median ms)"]
            + [fmt_ms(load[step] / 1000) if step in load else "" for load in loads]
            + ["≤ 250 ms" if step.startswith("import + %load_ext") else ""]
        )
    if all(runs):
        figures = [r for r in runs if r is not None]
        rows += [
            ["reply characters"] + [fmt_int(r.chars) for r in figures] + [""],
            ["iopub bytes in the run"] + [fmt_int(r.bytes_all) for r in figures] + [""],
            ["  of which comm_open (code modules, opening states)"]
            + [fmt_int(r.bytes_module) for r in figures]
            + [""],
            ["bytes ÷ text"] + [f"{r.bytes_all / r.chars:.2f}" for r in figures] + [""],
            ["bytes ÷ text without comm_open"]
            + [f"{(r.bytes_all - r.bytes_module) / r.chars:.2f}" for r in figures]
            + ["≤ 3"],
            ["iopub messages/s (busiest second)"]
            + [f"{r.messages_per_s:.1f} ({r.busiest_second})" for r in figures]
            + ["≤ 25"],
            ["kernel CPU % during the run"] + [f"{r.cpu_percent:.1f}" for r in figures] + ["< 10"],
        ]
    print_table(
        "Before / after",
        ["figure", *labels, "goal"],
        rows,
        note="Token → DOM latency needs a browser: bench/widget_bench.py --before REV.",
        left_columns=1,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", type=int, default=4, help="fresh kernels for the load time")
    parser.add_argument("--rate", type=int, default=1000, help="faux tokens per second")
    parser.add_argument("--seconds", type=float, default=20, help="length of the streamed run")
    parser.add_argument("--idle", type=float, default=4, help="seconds per idle window")
    parser.add_argument(
        "--import-kernels", type=int, default=3, help="kernels for the -X importtime breakdown"
    )
    parser.add_argument("--top", type=int, default=15, help="rows of the import breakdown")
    parser.add_argument("--skip-load", action="store_true", help="only the streamed run")
    parser.add_argument("--skip-run", action="store_true", help="only the load time")
    parser.add_argument(
        "--before", default="", help="also measure git revision REV (e.g. main): before/after"
    )
    args = parser.parse_args(argv)
    if min(args.kernels, args.import_kernels, args.rate) < 1 or min(args.seconds, args.idle) <= 0:
        parser.error("--kernels, --import-kernels and --rate must be ≥ 1, --seconds and --idle > 0")
    began = time.perf_counter()
    print(describe_environment(["ipykernel", "jupyter_client", "ipywidgets", "anywidget"]))
    print(f"load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with contextlib.ExitStack() as stack:
        trees: list[tuple[str, Path | None]] = []
        if args.before:
            trees.append((f"before ({args.before})", stack.enter_context(code_tree(args.before))))
        trees.append(("this tree" if not args.before else "after (this tree)", None))
        loads: list[dict[str, float]] = []
        runs: list[RunFigures | None] = []
        for label, tree in trees:
            if not args.skip_load:
                cache = stack.enter_context(
                    tempfile.TemporaryDirectory(prefix="kernel_bench-pycache-")
                )
                loads.append(measure_load(args.kernels, Path(cache), tree, label))
                if tree is None:
                    measure_imports(args.top, args.import_kernels, Path(cache))
            else:
                loads.append({})
            runs.append(
                None
                if args.skip_run
                else measure_run(args.rate, args.seconds, args.idle, tree, label)
            )
        if args.before:
            compare([label for label, _ in trees], loads, runs)
    print(f"\nTook {time.perf_counter() - began:.0f} s.")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
