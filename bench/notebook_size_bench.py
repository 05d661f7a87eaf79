"""How big a saved notebook is: 10 ``%%agent`` runs and a ``%tree`` (executed headless with
nbclient, which stores the widget state as JupyterLab does), and a ``%tree`` of a 20,000-entry
session. Prints the bytes of each notebook and of its widget state, for this checkout and for a
baseline git ref (default ``main``), each run in its own kernel with its own ``PYTHONPATH``.

    python3 -m bench.notebook_size_bench                  # this checkout vs main
    python3 -m bench.notebook_size_bench --baseline HEAD~3 --tree-entries 5000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent

SETUP = """\
from pi_notebook.ai import faux_assistant_message, register_faux_provider
faux = register_faux_provider()
faux.set_responses([faux_assistant_message(f'Reply {i}: ' + 'some words ' * 40) for i in range(10)])
"""

MAKE_SESSION = """\
import sys
from pi_notebook.ai import AssistantMessage, TextContent, UserMessage
from pi_notebook.harness import Session
session = Session.create(sys.argv[1], cwd="/tmp")
for i in range(int(sys.argv[2]) // 2):
    session.append_message(UserMessage(content=f"question {i}: " + "words " * 8, timestamp=0))
    session.append_message(AssistantMessage(
        content=[TextContent(text=f"answer {i}: " + "words " * 20)], api="faux", provider="faux",
        model="faux-1", stop_reason="stop", timestamp=0))
"""


def _execute(cells: list[str], directory: Path, pythonpath: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    saved = dict(os.environ)
    os.environ.update({"PYTHONPATH": pythonpath, "JPY_SESSION_NAME": "bench.ipynb"})
    for key in ("PI_NOTEBOOK_MODEL", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"):
        os.environ.pop(key, None)
    try:
        client = NotebookClient(
            nb,
            timeout=600,
            kernel_name="python3",
            resources={"metadata": {"path": str(directory)}},
        )
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    path = directory / "bench.ipynb"
    nbformat.write(nb, path)
    return path


def _widget_bytes(path: Path) -> tuple[int, int]:
    """(bytes of the widget state, number of widget models) in a saved notebook."""
    nb: Any = json.loads(path.read_text())
    state = nb["metadata"].get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    models = state.get("state", {})
    return len(json.dumps(state)), len(models)


def _export(ref: str, into: Path) -> None:
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "pi_notebook"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")


def _measure(label: str, pythonpath: str, entries: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        runs_dir = Path(scratch, "runs")
        runs_dir.mkdir()
        cells = [SETUP, "%load_ext pi_notebook\n%model faux/faux-1"]
        cells += [f"%%agent --wait\nQuestion {i}" for i in range(10)]
        cells.append("%tree")
        path = _execute(cells, runs_dir, pythonpath)
        state, models = _widget_bytes(path)
        size = path.stat().st_size
        print(f"{label:>10} | 10 runs + tree  | {size:>12,} | {state:>12,} | {models:>6}")

        tree_dir = Path(scratch, "tree")
        tree_dir.mkdir()
        env = {**os.environ, "PYTHONPATH": pythonpath}
        subprocess.run(
            [sys.executable, "-c", MAKE_SESSION, str(tree_dir / "bench.pi.jsonl"), str(entries)],
            check=True,
            env=env,
        )
        path = _execute(["%load_ext pi_notebook", "%tree"], tree_dir, pythonpath)
        state, models = _widget_bytes(path)
        size = path.stat().st_size
        print(f"{label:>10} | tree {entries:>6,} ent | {size:>12,} | {state:>12,} | {models:>6}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="main", help="git ref to compare with (or 'none')")
    parser.add_argument("--tree-entries", type=int, default=20_000)
    args = parser.parse_args()
    print("     code  | notebook        | bytes        | widget state | models")
    print("-----------|-----------------|--------------|--------------|-------")
    if args.baseline != "none":
        with tempfile.TemporaryDirectory() as base:
            _export(args.baseline, Path(base))
            _measure(args.baseline[:10], base, args.tree_entries)
    _measure("this", str(ROOT), args.tree_entries)


if __name__ == "__main__":
    main()
