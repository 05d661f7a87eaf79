"""Renaming a notebook in JupyterLab takes its session file along (the labextension tells the
kernel the new path), the notebook keeps its session id in its metadata, and the next new
``Untitled.ipynb`` starts a session of its own instead of the renamed notebook's."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest

from .lab import (
    FAUX_IMPORTS,
    LabNotebook,
    LabServer,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]


_JS_KEPT_SESSION = """
(id) => {
  const panel = Array.from(window.jupyterapp.shell.widgets('main')).find((w) => w.id === id);
  return panel.content.model.getMetadata('pi_notebook')?.session_id ?? null;
}
"""

_JS_RENAME = """
async ([id, name]) => {
  const panel = Array.from(window.jupyterapp.shell.widgets('main')).find((w) => w.id === id);
  await panel.context.rename(name);
  await panel.context.save();
  return null;
}
"""


def header_id(path: Path) -> str:
    first: str = json.loads(path.read_text(encoding="utf-8").splitlines()[0])["id"]
    return first


def user_texts(path: Path) -> list[str]:
    entries = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    users = [e["message"] for e in entries if e["type"] == "message"]
    return [
        "".join(block.get("text", "") for block in m["content"])
        for m in users
        if m["role"] == "user"
    ]


def test_a_renamed_notebook_takes_its_session_along(
    extension_lab: LabServer, open_with_extension: Callable[..., LabNotebook]
) -> None:
    root = extension_lab.root
    nb = open_with_extension(
        "Untitled.ipynb",
        [
            "\n".join(
                [
                    FAUX_IMPORTS,
                    "faux = register_faux_provider()",
                    "faux.set_responses([faux_assistant_message('one'),"
                    " faux_assistant_message('two')])",
                    "%load_ext pi_notebook",
                    "%model faux/faux-1",
                ]
            ),
            "%%agent --wait\nBefore the rename",
            "%%agent --wait\nAfter the rename",
        ],
    )
    nb.run_and_wait(0, 1)
    untitled = root / "Untitled.pi.jsonl"
    assert user_texts(untitled)[-1] == "Before the rename"
    session_id = header_id(untitled)
    nb.wait_until(
        lambda: nb.page.evaluate(_JS_KEPT_SESSION, nb.panel_id) == session_id,
        "the session id in the notebook's metadata",
    )

    nb.page.evaluate(_JS_RENAME, [nb.panel_id, "sales.ipynb"])
    sales = root / "sales.pi.jsonl"
    nb.wait_until(lambda: sales.exists() and not untitled.exists(), "the session file to move")
    nb.run_and_wait(2)
    assert user_texts(sales) == ["Before the rename", "After the rename"]
    assert header_id(sales) == session_id
    saved = nbformat.read(root / "sales.ipynb", as_version=4)
    assert saved.metadata["pi_notebook"]["session_id"] == session_id

    fresh = open_with_extension("Untitled.ipynb", ["%load_ext pi_notebook"])
    fresh.run_and_wait(0)
    loaded = fresh.output_text(0)
    assert "session Untitled.pi.jsonl" in loaded and "restored" not in loaded, loaded
    assert header_id(root / "Untitled.pi.jsonl") != session_id
    assert user_texts(sales) == ["Before the rename", "After the rename"]
