"""``%verify``: does the notebook run top-down in a fresh kernel, and give what it shows?

A copy of the notebook — the open document when a frontend is linked (the workspace comm),
else the file on disk — runs top to bottom in a new kernel with the executed-notebook machinery
of :mod:`pi_notebook.testing` (nbclient), in a worker thread so the kernel's event loop goes
on, each cell with a time limit. The kernel starts in a temporary copy of the notebook's
folder (so relative data paths work and nothing of the user's is written), without API keys,
and with its pi session in the temporary folder.

The report names:

- cells that fail top-down (execution stops at the first, as "Run All" does);
- of those, cells that worked in the notebook: they relied on state the order of the document
  does not give — a cell below that ran before them, a cell edited or deleted since it ran;
- cells whose outputs differ from the document's (text compared with object addresses
  masked; images by their type only);
- cells that were not run: ``%%agent`` cells and the magics that ask a model or set one up
  (``%fix``, ``%compact``, ``%steer``, ``%follow_up``, ``%fork --summarize``, ``%model``, which
  may start the local one; ``%verify`` itself) are replaced by ``pass``. A verification must not
  spend money or depend on a model's mood (and runs without API keys); the cells an agent wrote
  into the notebook are checked like any other.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ..tools.decorator import FunctionTool
    from .workspace.document import NotebookDocument
    from .workspace.history import ExecutionHistory, ExecutionRecord

__all__ = [
    "COPY_LIMIT_BYTES",
    "DEFAULT_CELL_TIMEOUT",
    "CellFinding",
    "VerifyReport",
    "notebook_file",
    "open_notebook",
    "verify_notebook",
    "verify_open_notebook",
    "verify_tool",
]

DEFAULT_CELL_TIMEOUT = 120
"""Seconds each cell may run in the verification."""
COPY_LIMIT_BYTES = 200 * 1024 * 1024
"""The notebook's folder is copied for the run up to this size (larger files are left out)."""

_MODEL_CELL = re.compile(r"^\s*%%agent\b")
_MODEL_LINE = re.compile(
    r"^\s*%(?:fix|compact|steer|follow_up|verify|model)\b|^\s*%fork\b.*--summarize",
    re.MULTILINE,
)
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_SKIP_DIRS = {".ipynb_checkpoints", "__pycache__", ".git", ".venv", "node_modules"}

FindingKind = Literal["fails", "out_of_order", "changed_output", "skipped", "not_run"]


@dataclass(frozen=True, slots=True)
class CellFinding:
    """Something about one cell. ``number`` counts every cell from 1, as the notebook shows
    them top to bottom."""

    number: int
    cell_id: str | None
    kind: FindingKind
    detail: str


@dataclass(slots=True)
class VerifyReport:
    """The outcome of a verification."""

    source: str
    """Where the notebook came from: the open document or a file."""
    seconds: float = 0.0
    cells_run: int = 0
    findings: list[CellFinding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Nothing fails and every output is as the document shows it."""
        return not any(f.kind in ("fails", "out_of_order", "changed_output") for f in self.findings)

    def of(self, kind: FindingKind) -> list[CellFinding]:
        return [f for f in self.findings if f.kind == kind]

    def text(self) -> str:
        verdict = (
            "reproducible: runs top-down with the outputs the document shows"
            if self.ok
            else "NOT reproducible top-down"
        )
        lines = [
            f"%verify: {verdict} ({self.cells_run} cells run in a fresh kernel, "
            f"{self.seconds:.1f} s; {self.source})"
        ]
        titles = {
            "fails": "Fails top-down",
            "out_of_order": "Worked only because of the order cells ran in",
            "changed_output": "Output differs from the document",
            "not_run": "Not run (after the failure)",
            "skipped": "Skipped (would ask a model)",
        }
        for kind in ("out_of_order", "fails", "changed_output", "skipped", "not_run"):
            found = self.of(kind)
            if not found:
                continue
            lines.append(f"{titles[kind]}:")
            if kind == "not_run":
                lines.append("  cells " + ", ".join(f"[{f.number}]" for f in found))
                continue
            lines += [f"  cell [{f.number}]: {f.detail}" for f in found]
        lines += self.notes
        return "\n".join(lines)


# --- the notebook to verify ------------------------------------------------------------------


def _nbformat() -> Any:
    """nbformat, untyped: imported when a verification starts."""
    return importlib.import_module("nbformat")


def notebook_file(environ: dict[str, str] | None = None, cwd: Path | None = None) -> Path | None:
    """The notebook this kernel runs, from ``JPY_SESSION_NAME`` (relative names are in the
    kernel's working directory, where jupyter_server starts it)."""
    env = os.environ if environ is None else environ
    name = env.get("JPY_SESSION_NAME")
    if not name or not name.endswith(".ipynb"):
        return None
    path = Path(name)
    if not path.is_absolute():
        path = (Path.cwd() if cwd is None else cwd) / path.name
    return path if path.is_file() else None


async def open_notebook(
    document: NotebookDocument | None, path: Path | None
) -> tuple[Any, str, Path | None]:
    """``(notebook, where it came from, its folder)``: the open document when a frontend is
    linked, else the file at ``path``. Raises ``FileNotFoundError`` when there is neither."""
    nbformat = _nbformat()

    if document is not None and document.connected:
        cells = await document.cells()
        nb = nbformat.v4.new_notebook()
        for cell in cells:
            if cell.cell_type == "code":
                made = nbformat.v4.new_code_cell(cell.source)
                made.execution_count = cell.execution_count
                made.outputs = [nbformat.from_dict(o) for o in await document.cell_outputs(cell.id)]
            elif cell.cell_type == "markdown":
                made = nbformat.v4.new_markdown_cell(cell.source)
            else:
                made = nbformat.v4.new_raw_cell(cell.source)
            made.id = cell.id
            nb.cells.append(made)
        info = document.frontend
        where = f"the open notebook {info.path}" if info is not None else "the open notebook"
        folder = path.parent if path is not None else None
        return nb, where, folder
    if path is None:
        raise FileNotFoundError(
            "No notebook to verify: no notebook frontend is linked and the kernel does not "
            "know its notebook file (JPY_SESSION_NAME)"
        )
    return nbformat.read(path, as_version=4), f"{path.name} as saved on disk", path.parent


# --- running it ------------------------------------------------------------------------------


def _prepared(nb: Any) -> tuple[Any, dict[int, str]]:
    """A copy of ``nb`` without outputs whose model-asking cells and lines are ``pass``; the
    reasons by cell index."""
    import copy

    clean = copy.deepcopy(nb)
    skipped: dict[int, str] = {}
    for index, cell in enumerate(clean.cells):
        if cell.cell_type != "code":
            continue
        cell.outputs = []
        cell.execution_count = None
        source = cell.source
        if _MODEL_CELL.match(source):
            cell.source = "pass  # %%agent cell: not run by %verify"
            skipped[index] = "an %%agent cell (it would ask the model)"
        elif _MODEL_LINE.search(source):
            cell.source = _MODEL_LINE.sub("pass  # not run by %verify", source)
            skipped[index] = "a magic that sets up or asks the model was replaced by pass"
    return clean, skipped


def _folder_items(folder: Path | None, notes: list[str]) -> list[Path]:
    """What of the notebook's folder goes into the run's copy: everything but hidden and
    bulky folders, session files and notebooks, up to :data:`COPY_LIMIT_BYTES`."""
    if folder is None or not folder.is_dir():
        return []
    items: list[Path] = []
    total = 0
    left_out: list[str] = []
    for item in sorted(folder.iterdir()):
        name = item.name
        if name.startswith(".") or name in _SKIP_DIRS or name.endswith((".pi.jsonl", ".ipynb")):
            continue
        size = _size(item, COPY_LIMIT_BYTES - total + 1)
        if total + size > COPY_LIMIT_BYTES:
            left_out.append(name)
            continue
        total += size
        items.append(item)
    if left_out:
        notes.append(
            "Left out of the run's copy of the folder (over "
            f"{COPY_LIMIT_BYTES // 2**20} MB): {', '.join(left_out[:10])}"
        )
    return items


def _size(path: Path, stop: int) -> int:
    if path.is_file():
        return path.stat().st_size
    total = 0
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not d.startswith(".")]
        for name in files:
            try:
                total += (Path(root) / name).stat().st_size
            except OSError:
                continue
            if total >= stop:
                return total
    return total


def _run(nb: Any, name: str, items: Sequence[Path], timeout: int) -> Any:
    """Execute ``nb`` with :func:`pi_notebook.testing.run_notebook` in a temporary folder
    (runs in a worker thread); the ``ExecutedNotebook``."""
    nbformat = _nbformat()

    from ..testing import run_notebook

    base = Path(tempfile.mkdtemp(prefix="pi-verify-"))
    try:
        staged = base / "source" / name
        staged.parent.mkdir()
        nbformat.write(nb, staged)
        sessions = base / "sessions"
        sessions.mkdir()
        return run_notebook(
            staged,
            cassette=None,
            workdir=base / "run",
            include=[str(item) for item in items],
            timeout=timeout,
            env={"PI_NOTEBOOK_SESSION_DIR": str(sessions), "PI_NOTEBOOK_CONTEXT": "off"},
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)


# --- comparing -------------------------------------------------------------------------------


def _output_text(outputs: Iterable[Any]) -> str:
    """Outputs as comparable text: streams, text results and errors; images by type."""
    parts: list[str] = []
    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream":
            parts.append(output.get("text", ""))
        elif kind in ("execute_result", "display_data"):
            data = output.get("data", {})
            if "application/vnd.jupyter.widget-view+json" in data:
                continue  # a live widget: its view is the frontend's, not text
            images = sorted(k for k in data if k.startswith("image/"))
            if images:
                parts.append(f"[{' '.join(images)}]")
            elif "text/plain" in data:
                text = data["text/plain"]
                parts.append(text if isinstance(text, str) else "".join(text))
        elif kind == "error":
            parts.append(f"{output.get('ename')}: {output.get('evalue')}")
    return _ADDRESS.sub(" at 0x…", "".join(parts)).strip()


def _errored(cell: Any) -> bool:
    return any(o.get("output_type") == "error" for o in cell.get("outputs", []))


def _short(text: str, limit: int = 120) -> str:
    line = " ⏎ ".join(text.splitlines())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _order_hint(
    nb: Any,
    index: int,
    numbers: dict[int, int],
    records: Sequence[ExecutionRecord],
) -> str | None:
    """Why cell ``index`` may have worked in the notebook: cells below it that ran before it,
    its code edited since it ran, or code run in this kernel that the notebook no longer holds."""
    cells = nb.cells
    count = cells[index].get("execution_count")
    hints: list[str] = []
    if isinstance(count, int):
        earlier_below = [
            numbers[j]
            for j in range(index + 1, len(cells))
            if cells[j].cell_type == "code"
            and isinstance(cells[j].get("execution_count"), int)
            and cells[j].execution_count < count
        ]
        if earlier_below:
            shown = ", ".join(f"[{n}]" for n in earlier_below[:5])
            hints.append(f"cells below it ran before it ({shown})")
    cell_id = cells[index].get("id")
    if records:
        sources = {c.source.strip() for c in cells if c.cell_type == "code"}
        ran = [r for r in records if r.cell_id == cell_id]
        if ran and ran[-1].source.strip() != cells[index].source.strip():
            hints.append("its code was edited after it ran")
        gone = [r for r in records if r.source.strip() and r.source.strip() not in sources]
        if gone:
            hints.append(
                f"this kernel ran {len(gone)} cell execution(s) whose code is no longer in the "
                "notebook (edited or deleted cells)"
            )
    return "; ".join(hints) if hints else None


def _compare(
    original: Any,
    executed: Any,
    skipped: dict[int, str],
    stop: tuple[int, str] | None,
    records: Sequence[ExecutionRecord],
    report: VerifyReport,
) -> None:
    stopped_at = stop[0] if stop is not None else None
    numbers = {index: index + 1 for index in range(len(original.cells))}
    for index, cell in enumerate(original.cells):
        if cell.cell_type != "code":
            continue
        number = numbers[index]
        cell_id = cell.get("id")
        if index in skipped:
            report.findings.append(CellFinding(number, cell_id, "skipped", skipped[index]))
            continue
        if stopped_at is not None and index > stopped_at:
            report.findings.append(CellFinding(number, cell_id, "not_run", ""))
            continue
        report.cells_run += 1
        ran = executed.cells[index]
        if stop is not None and stopped_at == index and not _errored(cell):
            error = stop[1]
            worked = isinstance(cell.get("execution_count"), int)
            hint = _order_hint(original, index, numbers, records) if worked else None
            if worked:
                detail = f"{error} — it ran without error in the notebook"
                detail += f": {hint}" if hint else ""
                report.findings.append(CellFinding(number, cell_id, "out_of_order", detail))
            else:
                report.findings.append(CellFinding(number, cell_id, "fails", error))
            continue
        if stop is not None and stopped_at == index:
            report.findings.append(CellFinding(number, cell_id, "fails", stop[1]))
            continue
        if not isinstance(cell.get("execution_count"), int) and not cell.get("outputs"):
            continue  # never run in the notebook: nothing to compare with
        before, after = _output_text(cell.outputs), _output_text(ran.outputs)
        if before != after:
            detail = f"the document shows {_short(before)!r}, a fresh run gives {_short(after)!r}"
            report.findings.append(CellFinding(number, cell_id, "changed_output", detail))


async def verify_notebook(
    nb: Any,
    *,
    source: str,
    folder: Path | None = None,
    name: str = "notebook.ipynb",
    records: Sequence[ExecutionRecord] = (),
    timeout: int = DEFAULT_CELL_TIMEOUT,
) -> VerifyReport:
    """Run a copy of ``nb`` top-down in a fresh kernel (in a worker thread) and compare it
    with ``nb``; ``records``: what this kernel ran (for the order hints)."""
    report = VerifyReport(source=source)
    prepared, skipped = _prepared(nb)
    items = _folder_items(folder, report.notes)
    started = time.monotonic()
    executed = await asyncio.to_thread(_run, prepared, name, items, timeout)
    report.seconds = time.monotonic() - started
    stopped = executed.stopped_by
    stop = (stopped.index, f"{stopped.ename}: {stopped.evalue}") if stopped is not None else None
    if stopped is not None and stopped.ename == "CellTimeoutError":
        report.notes.append(f"Cell [{stopped.index + 1}] ran past the limit of {timeout} s.")
    if stopped is not None and stopped.ename == "DeadKernelError":
        report.notes.append(f"The kernel died in cell [{stopped.index + 1}].")
    _compare(nb, executed.notebook, skipped, stop, records, report)
    return report


async def verify_open_notebook(
    document: NotebookDocument | None,
    history: ExecutionHistory | None,
    *,
    timeout: int = DEFAULT_CELL_TIMEOUT,
) -> VerifyReport:
    """Verify this kernel's notebook: the open document when a frontend is linked, else its
    file (see :func:`open_notebook`)."""
    path = notebook_file()
    nb, source, folder = await open_notebook(document, path)
    return await verify_notebook(
        nb,
        source=source,
        folder=folder if folder is not None else Path.cwd(),
        name=path.name if path is not None else "notebook.ipynb",
        records=history.records() if history is not None else (),
        timeout=timeout,
    )


def verify_tool(
    document: Callable[[], NotebookDocument | None], history: ExecutionHistory
) -> FunctionTool:
    """The agent's read-only ``verify_notebook`` tool (it changes neither the document nor the
    kernel: the copy runs in another kernel and folder)."""
    from ..tools.decorator import tool

    async def verify_notebook() -> str:
        """Check that the notebook is reproducible: run a copy of it top-down in a fresh
        kernel and report cells that fail, cells that only worked because of the order they
        ran in, and outputs that differ from the notebook's. Read-only: the notebook and this
        kernel are not touched, and %%agent cells are not run. Call it before you say the
        work in the notebook is done."""
        report = await verify_open_notebook(document(), history)
        return report.text()

    return tool(verify_notebook)
