"""Helpers shared by the benchmarks: repeated timing, medians, the environment line, running a
node peer script, and printing Markdown tables.

Benchmarks print figures; they never pass or fail on time. Compare ratios measured in one run:
absolute times on a shared 2-core machine are noisy.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Literal, TypeAlias, TypeVar

__all__ = [
    "BENCH_DIR",
    "PEERS_DIR",
    "PI16",
    "PI16_NODE",
    "REPO_ROOT",
    "PiVersion",
    "Stats",
    "callgrind_instructions",
    "describe_environment",
    "fmt_int",
    "fmt_ms",
    "fmt_rate",
    "fmt_us",
    "node_available",
    "pi16_available",
    "print_table",
    "rotated",
    "run_node_json",
    "stats",
    "timed",
]

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
PEERS_DIR = BENCH_DIR / "peers"
PI16 = REPO_ROOT / "tests" / "golden" / "pi-1.6" / "sessions"
"""pi 1.6.0 (pi-coding-agent, pi-agent-core, pi-ai) and the Node 22 it needs, as the live interop
tests install it (``npm ci`` there)."""
PI16_NODE = PI16 / "node_modules" / ".bin" / "node"

PiVersion: TypeAlias = Literal["0.73", "1.6"]
"""Which pi a node peer script runs (``--pi``): 0.73.1 from bench/peers, or 1.6.0 from ``PI16``."""

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Stats:
    """Best and median of repeated measurements (seconds)."""

    best: float
    median: float
    runs: int


def stats(samples: Sequence[float]) -> Stats:
    """Best and median of ``samples`` (at least one)."""
    if not samples:
        raise ValueError("no samples")
    return Stats(best=min(samples), median=statistics.median(samples), runs=len(samples))


def rotated(items: Sequence[T], shift: int) -> list[T]:
    """``items`` rotated left by ``shift``: repetition r runs the consumers in a different order,
    so no one consumer always runs first (cold) or last (after the others warmed the machine)."""
    if not items:
        return []
    k = shift % len(items)
    return [*items[k:], *items[:k]]


def fmt_int(value: float) -> str:
    return f"{value:,.0f}"


def fmt_us(seconds: float) -> str:
    """Microseconds with a precision that suits the magnitude."""
    us = seconds * 1e6
    if us < 10:
        return f"{us:.2f}"
    if us < 100:
        return f"{us:.1f}"
    return f"{us:,.0f}"


def fmt_ms(seconds: float) -> str:
    ms = seconds * 1e3
    if ms < 10:
        return f"{ms:.2f}"
    if ms < 100:
        return f"{ms:.1f}"
    return f"{ms:,.0f}"


def fmt_rate(per_second: float) -> str:
    """A rate such as events/s, rounded to three significant digits."""
    if per_second >= 1e6:
        return f"{per_second / 1e6:.2f} M"
    if per_second >= 1e3:
        return f"{per_second / 1e3:.1f} k"
    return f"{per_second:.0f}"


def print_table(
    title: str,
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    note: str = "",
    left_columns: int = 1,
) -> None:
    """Print a Markdown table: the first ``left_columns`` columns left-aligned (labels), the
    others right-aligned (figures)."""
    widths = [len(h) for h in headers]
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"row {row!r} does not have {len(headers)} cells")
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]

    def line(cells: Sequence[str]) -> str:
        parts = [
            cell.ljust(w) if i < left_columns else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "| " + " | ".join(parts) + " |"

    rule = (
        "|"
        + "|".join(
            ":" + "-" * (w + 1) if i < left_columns else "-" * (w + 1) + ":"
            for i, w in enumerate(widths)
        )
        + "|"
    )
    print(f"\n### {title}\n")
    print(line(headers))
    print(rule)
    for row in rows:
        print(line(row))
    if note:
        print(f"\n{note}")
    sys.stdout.flush()


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def node_available() -> bool:
    """True when ``node`` is on PATH and the pinned peers are installed (``npm ci`` in peers/)."""
    return shutil.which("node") is not None and (PEERS_DIR / "node_modules").is_dir()


def pi16_available(install: bool) -> bool:
    """pi 1.6 and its Node 22 in tests/golden/pi-1.6/sessions (``npm ci`` there if allowed)."""
    if PI16_NODE.exists():
        return True
    if not install:
        return False
    print("installing pi 1.6.0 and Node 22 (npm ci in tests/golden/pi-1.6/sessions)…", flush=True)
    done = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=PI16, check=False)
    return done.returncode == 0 and PI16_NODE.exists()


def callgrind_instructions(module_args: Sequence[str], what: str, out: str = "/dev/null") -> int:
    """Instructions that ``python3 -m <module_args>`` executes under ``valgrind --tool=callgrind``
    (run from the repository root; ``out``: where callgrind writes its file). A missing valgrind
    or a failed child ends the benchmark with a one-line message naming ``what``."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("--instructions needs valgrind (apt-get install valgrind)")
    command = [valgrind, "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-m"]
    done = subprocess.run(
        [*command, *module_args], capture_output=True, text=True, cwd=REPO_ROOT, check=False
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        # the child's own last lines, not valgrind's summary (its lines start with ==pid==)
        lines = [line for line in done.stderr.splitlines() if line and not line.startswith("==")]
        tail = (lines or done.stdout.strip().splitlines())[-3:]
        raise SystemExit(f"{what} failed: {' / '.join(tail)}")
    return int(found.group(1))


def describe_environment(packages: Sequence[str] = ()) -> str:
    """One line naming the machine, Python and the versions of ``packages`` that are installed."""
    parts = [
        f"Python {platform.python_version()}",
        f"{os.cpu_count()} CPUs",
        platform.machine(),
    ]
    for package in packages:
        version = _version(package)
        parts.append(f"{package} {version}" if version else f"{package} (not installed)")
    if shutil.which("node"):
        node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False)
        parts.append(f"node {node.stdout.strip()}")
    return ", ".join(parts)


def run_node_json(
    script: str, args: Sequence[str], *, timeout: float, node: str | Path = "node"
) -> Any:
    """Run ``bench/peers/<script>`` with ``args`` (on ``node``, the one on PATH by default) and
    return the JSON it prints last on stdout."""
    if node == "node" and not node_available():
        raise RuntimeError(
            "node peers are not installed: run `npm ci --prefix bench/peers` (see bench/README.md)"
        )
    completed = subprocess.run(
        [str(node), "--expose-gc", "--max-old-space-size=4096", str(PEERS_DIR / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=PEERS_DIR,
    )
    if completed.returncode != 0:
        raise RuntimeError(
            f"{script} {' '.join(args)} failed ({completed.returncode}): "
            f"{completed.stderr.strip()[-2000:]}"
        )
    lines = [line for line in completed.stdout.splitlines() if line.strip()]
    if not lines:
        raise RuntimeError(f"{script} printed nothing")
    return json.loads(lines[-1])


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    """``(seconds, result)`` of one call of ``fn``."""
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result
