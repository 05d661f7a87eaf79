"""Run notebooks in real kernels (nbclient) for the notebook-layer tests.

``execute(cells, directory)`` writes a notebook of ``cells`` (strings) into ``directory``,
executes it with nbclient in a fresh ipykernel whose working directory is ``directory``, and
returns the executed notebook. ``outputs_text(cell)`` joins a cell's stream and text outputs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

__all__ = ["FAUX_SETUP", "execute", "outputs_text", "widget_states"]

FAUX_SETUP = """\
from pi_notebook.ai import faux_assistant_message, faux_text, faux_tool_call, register_faux_provider
faux = register_faux_provider(tokens_per_second={tps})
"""


def execute(
    cells: Sequence[str],
    directory: Path,
    *,
    name: str = "test.ipynb",
    env: Mapping[str, str] | None = None,
    timeout: int = 60,
    allow_errors: bool = False,
    kernel_name: str = "python3",
) -> Any:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    path = directory / name
    nbformat.write(nb, path)
    saved = dict(os.environ)
    os.environ.update({"PYDEVD_DISABLE_FILE_VALIDATION": "1", **(env or {})})
    for key in ("PI_NOTEBOOK_MODEL", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"):
        if key not in (env or {}):
            os.environ.pop(key, None)
    try:
        client = NotebookClient(
            nb,
            timeout=timeout,
            kernel_name=kernel_name,
            allow_errors=allow_errors,
            resources={"metadata": {"path": str(directory)}},
        )
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    nbformat.write(nb, path)
    return nb


def outputs_text(cell: Any) -> str:
    parts: list[str] = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output.get("text", ""))
        elif output.get("output_type") in ("execute_result", "display_data"):
            parts.append(output.get("data", {}).get("text/plain", ""))
        elif output.get("output_type") == "error":
            parts.append(f"{output.get('ename')}: {output.get('evalue')}")
    return "".join(parts)


def widget_states(nb: Any) -> dict[str, Any]:
    """The saved widget models of an executed notebook, by model id."""
    widgets = nb.metadata.get("widgets", {})
    state = widgets.get("application/vnd.jupyter.widget-state+json", {})
    models: dict[str, Any] = state.get("state", {})
    return models
