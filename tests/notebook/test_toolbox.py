"""``NotebookToolbox`` alone: nothing is made before it is asked for, the registry is made once
even when two threads ask at once, and it holds the read, write and verify tools as the agent
offers them."""

from __future__ import annotations

import threading
from typing import Any

from pi_notebook.notebook.notebook_tools import ToolRegistry
from pi_notebook.notebook.toolbox import NotebookToolbox
from pi_notebook.notebook.workspace.document import NotebookDocument
from pi_notebook.notebook.workspace.history import ExecutionHistory


def toolbox() -> NotebookToolbox:
    history = ExecutionHistory()
    namespace: dict[str, Any] = {}
    return NotebookToolbox(
        lambda: namespace,
        history,
        NotebookDocument(history),
        takes_images=lambda: False,
        waited_on=lambda: False,
        on_mcp_change=lambda: None,
    )


def test_nothing_is_made_before_it_is_asked_for() -> None:
    box = toolbox()
    assert not box.made and box.mcp_if_made is None
    mcp = box.mcp
    assert box.mcp_if_made is mcp and box.mcp is mcp and not box.made


def test_the_registry_is_made_once_from_two_threads() -> None:
    box = toolbox()
    made: list[ToolRegistry] = []
    threads = [threading.Thread(target=lambda: made.append(box.registry)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert made[0] is made[1] is box.registry and box.made


def test_the_registry_holds_the_read_write_and_verify_tools() -> None:
    box = toolbox()
    rows = {name: active for name, _kind, active, _desc in box.registry.listing()}
    writers = box.writers()
    assert writers and all(rows[name] for name in writers)  # on, offered with a frontend
    assert rows["verify_notebook"] is False  # off until added by name
    assert box.writers() is writers  # made once
    assert box.reply_changes is box.reply_changes


def test_prepare_imports_what_a_run_needs() -> None:
    box = toolbox()
    assert not box.prepared()
    box.prepare()
    assert box.prepared()
