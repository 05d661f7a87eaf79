"""Executed notebooks as tests.

``run_notebook(path)`` executes a copy of a notebook with nbclient in a fresh kernel — replaying
its cassette when it has one, else as written (the faux provider scripted in its cells) — and
returns an ``ExecutedNotebook``: its cells and outputs, the widget state it saved (the run views
and session trees), its session file, and ``check()``, which fails on any cell error or failed
run. ``record_notebook(path)`` runs it against a real model and records the cassette.

A notebook's cassette is named in its metadata (``"pi_notebook": {"cassette": "c/x.jsonl"}``, a
path relative to the notebook) or found at ``cassettes/<notebook stem>.jsonl`` next to it.

The run is hermetic: the kernel starts in a fresh directory holding the notebook and its ``data/``
folder, without API keys or ``PI_NOTEBOOK_MODEL`` from the calling environment, and with
``JPY_SESSION_NAME`` set as JupyterLab sets it, so the session file is ``<stem>.pi.jsonl`` there.

Command line (needs the ``test`` extra: nbclient)::

    python -m pi_notebook.testing run notebooks/tools.ipynb
    python -m pi_notebook.testing record notebooks/quickstart.ipynb   # against the default model

The pytest plugin (``pi_notebook.pytest_plugin``) collects notebooks with these functions.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from .ai.cassette import RECORD_ENV, REPLAY_ENV, SPEED_ENV
from .harness import Session

__all__ = [
    "HERMETIC_UNSET",
    "CellError",
    "ExecutedNotebook",
    "NotebookFailure",
    "cassette_for",
    "main",
    "record_notebook",
    "run_notebook",
]

HERMETIC_UNSET: tuple[str, ...] = (
    "PI_NOTEBOOK_MODEL",
    "PI_NOTEBOOK_SESSION_DIR",
    RECORD_ENV,
    REPLAY_ENV,
    SPEED_ENV,
    "JPY_SESSION_NAME",
)
"""Variables a notebook run never inherits (API keys are dropped too)."""

_KEY_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET")
# A saved widget's ``_anywidget_id`` names its class's module: notebooks saved before the views
# moved to ``notebook.widgets`` name the old one.
_RUN_VIEW = (
    "pi_notebook.notebook.widgets.run_view.RunView",
    "pi_notebook.notebook.run_view.RunView",
)
_TREE_VIEW = (
    "pi_notebook.notebook.widgets.tree_view.TreeView",
    "pi_notebook.notebook.tree_view.TreeView",
)
_FAILED_RUN_STATES = ("error",)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class NotebookFailure(AssertionError):
    """A notebook cell raised, or one of its runs failed."""


@dataclass(frozen=True, slots=True)
class CellError:
    """A cell that raised: its index, source and the exception."""

    index: int
    source: str
    ename: str
    evalue: str
    traceback: str

    def __str__(self) -> str:
        first = self.source.strip().splitlines()[0] if self.source.strip() else "(empty)"
        return f"cell {self.index} ({first[:60]!r}) raised {self.ename}: {self.evalue}"


def _strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


@dataclass
class ExecutedNotebook:
    """What running a notebook produced."""

    source: Path
    """The notebook that was run."""
    path: Path
    """The executed copy (outputs and widget state saved in it)."""
    notebook: Any
    """The executed ``nbformat.NotebookNode``."""
    cassette: Path | None = None
    mode: Literal["replay", "record", "live"] = "live"
    seconds: float = 0.0
    stopped_by: CellError | None = None
    """The error that stopped execution early, if any (later cells did not run)."""

    @property
    def workdir(self) -> Path:
        return self.path.parent

    @property
    def cells(self) -> list[Any]:
        return list(self.notebook.cells)

    @property
    def code_cells(self) -> list[Any]:
        return [c for c in self.notebook.cells if c.cell_type == "code"]

    def cell(self, key: int | str) -> Any:
        """A cell by index, or the first cell tagged ``key``."""
        if isinstance(key, int):
            return self.notebook.cells[key]
        for c in self.notebook.cells:
            if key in c.get("metadata", {}).get("tags", ()):
                return c
        raise KeyError(f"{self.source.name} has no cell tagged {key!r}")

    def text(self, key: int | str) -> str:
        """A cell's printed output, text results and errors as plain text."""
        parts: list[str] = []
        for output in self.cell(key).get("outputs", []):
            kind = output.get("output_type")
            if kind == "stream":
                parts.append(output.get("text", ""))
            elif kind in ("execute_result", "display_data"):
                parts.append(output.get("data", {}).get("text/plain", ""))
            elif kind == "error":
                parts.append(f"{output.get('ename')}: {output.get('evalue')}")
        return "".join(parts)

    # --- errors ----------------------------------------------------------------------------------

    @property
    def errors(self) -> list[CellError]:
        """Every cell that raised (cells tagged ``raises-exception`` excepted), and the one that
        stopped the run (a timeout, a dead kernel)."""
        found: list[CellError] = []
        for index, c in enumerate(self.notebook.cells):
            if c.cell_type != "code" or "raises-exception" in c.get("metadata", {}).get("tags", ()):
                continue
            for output in c.get("outputs", []):
                if output.get("output_type") == "error":
                    traceback = _strip_ansi("\n".join(output.get("traceback", [])))
                    ename, evalue = str(output.get("ename")), str(output.get("evalue"))
                    found.append(CellError(index, c.source, ename, evalue, traceback))
                    break
        stopped = self.stopped_by
        if stopped is not None:  # the reason it stopped wins (a timeout shows as an interrupt)
            shown = next((e.traceback for e in found if e.index == stopped.index), "")
            found = [e for e in found if e.index != stopped.index]
            found.append(replace(stopped, traceback=stopped.traceback or shown))
        return sorted(found, key=lambda e: e.index)

    # --- widgets ---------------------------------------------------------------------------------

    @property
    def widget_states(self) -> dict[str, dict[str, Any]]:
        """The saved state of every widget, by model id."""
        saved = self.notebook.metadata.get("widgets", {})
        models = saved.get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
        return {model_id: dict(m.get("state", {})) for model_id, m in models.items()}

    def _widgets(self, kinds: tuple[str, ...]) -> list[dict[str, Any]]:
        return [s for s in self.widget_states.values() if s.get("_anywidget_id") in kinds]

    @property
    def run_views(self) -> list[dict[str, Any]]:
        """The saved state of each ``%%agent`` run view (``status``, ``messages``, ``header``…)."""
        return self._widgets(_RUN_VIEW)

    @property
    def tree_views(self) -> list[dict[str, Any]]:
        """The saved state of each ``%tree`` widget (``page``, its first rows; ``leaf_id``…)."""
        return self._widgets(_TREE_VIEW)

    @property
    def failed_runs(self) -> list[str]:
        """The error text of each run view that ended in an error: the run's own, or the
        failed model request's (which its last reply carries)."""
        return [_run_error(s) for s in self.run_views if s.get("status") in _FAILED_RUN_STATES]

    # --- the session -----------------------------------------------------------------------------

    @property
    def session_path(self) -> Path:
        """The notebook's session file (``<stem>.pi.jsonl`` in the working directory)."""
        return self.workdir / f"{self.source.stem}.pi.jsonl"

    def session(self) -> Session:
        """The notebook's session, opened."""
        return Session.open(self.session_path)

    # --- the verdict -----------------------------------------------------------------------------

    def check(self) -> ExecutedNotebook:
        """Raise ``NotebookFailure`` if a cell raised or a run failed; else return ``self``."""
        errors = self.errors
        problems = [str(e) for e in errors]
        problems += [f"a run failed: {text}" for text in self.failed_runs]
        if not problems:
            return self
        detail = ""
        if errors and errors[0].traceback:
            detail = "\n\n" + errors[0].traceback
        raise NotebookFailure(
            f"{self.source.name} ({self.mode}"
            + (f" {self.cassette.name}" if self.cassette else "")
            + f"; executed copy: {self.path}):\n  "
            + "\n  ".join(problems)
            + detail
        )


# --- running -------------------------------------------------------------------------------------


def _nbformat() -> Any:
    """nbformat (untyped; part of the ``test`` extra), imported when a notebook is read."""
    return importlib.import_module("nbformat")


def cassette_for(notebook: str | os.PathLike[str]) -> Path | None:
    """The cassette a notebook replays: named in its metadata, else ``cassettes/<stem>.jsonl``
    next to it; None when it has none."""
    path = Path(notebook)
    nb = _nbformat().read(path, as_version=4)
    named = nb.metadata.get("pi_notebook", {}).get("cassette")
    if named:
        return (path.parent / str(named)).resolve()
    default = path.parent / "cassettes" / f"{path.stem}.jsonl"
    return default.resolve() if default.is_file() else None


def _kernel_env(extra: Mapping[str, str], keep_keys: bool) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in HERMETIC_UNSET and (keep_keys or not k.upper().endswith(_KEY_SUFFIXES))
    }
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    env.update(extra)
    return env


class _CurrentCell:
    """Follows the cell being executed, and sends its id with its ``execute_request``
    (``metadata.cellId``) as JupyterLab does and nbclient does not — so ``%%agent`` cells
    re-run as branches exactly as in Lab."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.cell_id: str | None = None
        self.index = -1
        self._patched: Any = None

    def error(self, ename: str, evalue: str, traceback: str) -> CellError:
        """The cell being executed, as the one that stopped the run."""
        source = self.client.nb.cells[self.index].source if self.index >= 0 else ""
        return CellError(self.index, source, ename, evalue, traceback)

    def before_cell(self, cell: Any, cell_index: int) -> None:
        self.cell_id = cell.get("id")
        self.index = cell_index
        session = self.client.kc.session
        if self._patched is session:
            return
        create = session.msg

        def msg(
            msg_type: str,
            content: Any = None,
            parent: Any = None,
            header: Any = None,
            metadata: Any = None,
        ) -> Any:
            if msg_type == "execute_request" and self.cell_id:
                metadata = {**(metadata or {}), "cellId": self.cell_id}
            return create(msg_type, content, parent, header, metadata)

        session.msg = msg
        self._patched = session


def _prepare_workdir(
    source: Path, workdir: Path, include: Iterable[str | os.PathLike[str]]
) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    target = workdir / source.name
    shutil.copyfile(source, target)
    for item in ("data", *include):
        found = source.parent / item
        if found.is_dir():
            shutil.copytree(
                found,
                workdir / Path(item).name,
                dirs_exist_ok=True,
                ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "*.pi.jsonl"),
            )
        elif found.is_file():
            shutil.copyfile(found, workdir / Path(item).name)
    return target


def _execute(
    source: Path,
    *,
    env: Mapping[str, str],
    workdir: Path | None,
    include: Iterable[str | os.PathLike[str]],
    timeout: int,
    keep_keys: bool,
    cassette: Path | None,
    mode: Literal["replay", "record", "live"],
) -> ExecutedNotebook:
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    directory = (
        Path(tempfile.mkdtemp(prefix=f"pi-nb-{source.stem}-")) if workdir is None else workdir
    )
    target = _prepare_workdir(source, directory, include)
    nbformat = _nbformat()
    nb = nbformat.read(target, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(directory)}},
        store_widget_state=True,
    )
    current = _CurrentCell(client)
    client.on_cell_execute = current.before_cell
    stopped: CellError | None = None
    started = time.monotonic()
    kernel_env = _kernel_env({"JPY_SESSION_NAME": source.name, **env}, keep_keys)
    try:
        client.execute(env=kernel_env)
    except CellExecutionError as exc:
        stopped = current.error(exc.ename, exc.evalue, _strip_ansi(exc.traceback))
    except CellTimeoutError:
        stopped = current.error("CellTimeoutError", f"the cell ran longer than {timeout} s", "")
    except DeadKernelError as exc:
        stopped = current.error("DeadKernelError", str(exc), "")
    seconds = time.monotonic() - started
    nbformat.write(nb, target)
    return ExecutedNotebook(
        source=source,
        path=target,
        notebook=nb,
        cassette=cassette,
        mode=mode,
        seconds=seconds,
        stopped_by=stopped,
    )


def run_notebook(
    path: str | os.PathLike[str],
    *,
    cassette: str | os.PathLike[str] | Literal["auto"] | None = "auto",
    speed: float | None = None,
    env: Mapping[str, str] | None = None,
    workdir: str | os.PathLike[str] | None = None,
    include: Sequence[str | os.PathLike[str]] = (),
    timeout: int = 120,
    keep_keys: bool = False,
) -> ExecutedNotebook:
    """Execute a copy of the notebook at ``path`` and return what it produced.

    ``cassette``: ``"auto"`` replays the notebook's cassette if it has one (see ``cassette_for``),
    a path replays that file, None runs without one. ``speed`` is the replay pace (1 = as
    recorded, 0 = instant; default: the cassette's default, 1). ``workdir`` (default: a new
    temporary directory) receives the notebook, its ``data/`` folder and ``include``. Cells run
    with a ``timeout`` in seconds each. Execution stops at the first cell that raises (unless
    tagged ``raises-exception``); call ``check()`` on the result to fail on errors.
    ``keep_keys`` passes the environment's API keys on to the kernel (a live run against a
    hosted model; the cassette, if any, never stores them).
    """
    source = Path(path).resolve()
    chosen = cassette_for(source) if cassette == "auto" else cassette
    extra = dict(env or {})
    mode: Literal["replay", "record", "live"] = "live"
    if chosen is not None:
        chosen = Path(chosen).resolve()
        if not chosen.is_file():
            raise FileNotFoundError(f"No cassette at {chosen}: record it with record_notebook()")
        extra[REPLAY_ENV] = str(chosen)
        mode = "replay"
        if speed is not None:
            extra[SPEED_ENV] = str(speed)
    return _execute(
        source,
        env=extra,
        workdir=None if workdir is None else Path(workdir),
        include=include,
        timeout=timeout,
        keep_keys=keep_keys,
        cassette=chosen,
        mode=mode,
    )


def record_notebook(
    path: str | os.PathLike[str],
    *,
    cassette: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    workdir: str | os.PathLike[str] | None = None,
    include: Sequence[str | os.PathLike[str]] = (),
    timeout: int = 300,
) -> ExecutedNotebook:
    """Run the notebook against real models and record a fresh cassette (default: its
    ``cassette_for`` path, else ``cassettes/<stem>.jsonl`` next to it). API keys in the
    environment are passed on (the cassette never stores them)."""
    source = Path(path).resolve()
    target = Path(cassette) if cassette is not None else cassette_for(source)
    if target is None:
        target = source.parent / "cassettes" / f"{source.stem}.jsonl"
    target = target.resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    return _execute(
        source,
        env={RECORD_ENV: str(target), **(env or {})},
        workdir=None if workdir is None else Path(workdir),
        include=include,
        timeout=timeout,
        keep_keys=True,
        cassette=target,
        mode="record",
    )


# --- command line --------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """``run NOTEBOOK…``: execute and check (replaying cassettes); ``record NOTEBOOK…``: record
    their cassettes against the default model."""
    parser = argparse.ArgumentParser(
        prog="python -m pi_notebook.testing", description="Executed notebooks as tests."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="execute notebooks and fail on errors or failed runs")
    run.add_argument("notebooks", nargs="+", type=Path)
    run.add_argument("--speed", type=float, default=None, help="replay pace (0 = instant)")
    record = commands.add_parser("record", help="record the notebooks' cassettes")
    record.add_argument("notebooks", nargs="+", type=Path)
    record.add_argument(
        "--serve-local",
        metavar="VAR",
        help="start the embedded llama.cpp server while recording and pass its OpenAI-compatible "
        "base URL to the notebooks in the environment variable VAR",
    )
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        env: dict[str, str] = {}
        if args.command == "record" and args.serve_local:
            from .ai.local import LocalServer

            server = stack.enter_context(LocalServer())
            env[args.serve_local] = f"{server.address}/v1"
        return _run_all(args, env)


def _run_all(args: argparse.Namespace, env: dict[str, str]) -> int:
    status = 0
    for notebook in args.notebooks:
        if args.command == "record":
            result = record_notebook(notebook, env=env)
        else:
            result = run_notebook(notebook, speed=args.speed)
        try:
            result.check()
        except NotebookFailure as exc:
            print(f"FAILED {exc}", file=sys.stderr)
            status = 1
        else:
            done = "recorded" if args.command == "record" else "passed"
            print(f"{done} {notebook} in {result.seconds:.1f} s ({result.path})")
    return status


if __name__ == "__main__":
    sys.exit(main())


def _run_error(state: dict[str, Any]) -> str:
    if state.get("error"):
        return str(state["error"])
    replies = [m for m in state.get("messages") or () if m.get("stop_reason") == "error"]
    if replies and replies[-1].get("error_message"):
        return f"The model request failed: {replies[-1]['error_message']}"
    return "failed without a message"
