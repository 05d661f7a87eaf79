""" "Insert as cell" and "Apply as edit" on a reply's code blocks, the kernel's side: the blocks
it acts on, the cell a run is about, and the whole path through ``NotebookAgent`` (a faux model
answering with a code block, the run view's click as the front end sends it, the in-process
frontend of ``test_workspace_edit_tools``, the session file). The real frontend and Chromium
are in ``tests/browser/test_code_actions_browser.py``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pi_notebook.ai import faux_assistant_message, register_faux_provider
from pi_notebook.notebook.kernel_agent import NotebookAgent
from pi_notebook.notebook.runs import Run
from pi_notebook.notebook.workspace.code_actions import (
    CUSTOM_TYPE,
    code_blocks,
    edit_target,
)
from pi_notebook.notebook.workspace.history import ExecutionHistory

from .test_run_view import click, settle
from .test_workspace_edit_tools import FakeFrontend, shell

__all__ = ["shell"]  # the fixture used here

REPLY = (
    "The column is `Revenue`, not `revenue`:\n\n"
    "```python\ndf['Revenue'].sum()\n```\n\n"
    "To look first:\n\n```\ndf.columns\n```\n\n"
    "```bash\nls data/\n```\n\n"
    "- in a list:\n\n  ```py\n  df.head()\n  ```\n\n"
    "    indented = 'not fenced'\n"
)


def test_code_blocks_are_the_fenced_ones_the_kernel_runs() -> None:
    assert code_blocks(REPLY) == ["df['Revenue'].sum()\n", "df.columns\n", "df.head()\n"]
    assert code_blocks("```Python title\nx = 1\n```") == ["x = 1\n"]
    assert code_blocks("no code here") == []


def test_the_edit_target_is_the_last_cell_still_failing(
    shell: tuple[Any, ExecutionHistory],
) -> None:
    ip, history = shell
    assert edit_target(history) is None
    ip.run_cell("1 / 0", store_history=True, cell_id="a")
    ip.run_cell("{}['x']", store_history=True, cell_id="b")
    assert edit_target(history) == "b"
    ip.run_cell("y = 1", store_history=True, cell_id="b")  # fixed
    assert edit_target(history) == "a"
    ip.run_cell("z = 2", store_history=True, cell_id="c")  # ran fine: not about it
    assert edit_target(history) == "a"


@pytest.fixture
def agent(tmp_path: Path, shell: tuple[Any, ExecutionHistory]) -> Iterator[NotebookAgent]:
    _ip, history = shell
    made = NotebookAgent(tmp_path / "t.ipynb.pi.jsonl", {})
    made.history = history
    made.document.history = history
    made.write_tools.history = history
    made.document.follow = None  # the notebook's path and session id are not tested here
    try:
        yield made
    finally:
        made.session_lock.release()


def connect(agent: NotebookAgent, ip: Any) -> FakeFrontend:
    frontend = FakeFrontend(
        ip,
        [
            {"id": "load", "cell_type": "code", "source": "df = {'Revenue': 1}"},
            {"id": "bad", "cell_type": "code", "source": "df['revenue']"},
            {"id": "ask", "cell_type": "code", "source": "%%agent\nwhy?"},
            {"id": "end", "cell_type": "markdown", "source": "# notes"},
        ],
    )
    agent.document.attach(frontend.comm)
    frontend.hello()
    return frontend


async def run_reply(agent: NotebookAgent, text: str, cell: str = "ask") -> Run:
    faux = register_faux_provider()
    faux.set_responses([faux_assistant_message(text)])
    agent.use_model_now(faux.get_model())
    agent.cell_key = f"id:{cell}"
    run = agent.start_run("why?")
    await run.wait()
    faux.unregister()
    return run


def session_lines(agent: NotebookAgent) -> list[dict[str, Any]]:
    return [json.loads(line) for line in agent.session_path.read_text().splitlines()[1:]]


async def until(check: Any, view: Any = None) -> None:
    for _ in range(200):
        await settle(view)
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("timed out")


def reply_id(run: Run) -> str:
    return next(i["id"] for i in run.view.items if i["kind"] == "assistant")


async def test_insert_as_cell_inserts_below_the_run_cell_and_records_it(
    agent: NotebookAgent, shell: tuple[Any, ExecutionHistory]
) -> None:
    ip, _history = shell
    frontend = connect(agent, ip)
    ip.run_cell("df['revenue']", store_history=True, cell_id="bad")  # a KeyError
    run = await run_reply(agent, REPLY)
    view = run.view
    view.flush()
    assert view.controls["insert_code"] is True
    assert view.controls["edit_code"].startswith("In [")  # the failing cell, by its count
    click(
        view,
        {
            "type": "code_action",
            "action": "insert",
            "item_id": reply_id(run),
            "source": "df['Revenue'].sum()",
        },
    )
    await until(lambda: len(frontend.cells) == 5, view)
    click(
        view,
        {
            "type": "code_action",
            "action": "insert",
            "item_id": reply_id(run),
            "source": "df.columns",
        },
    )
    await until(lambda: len(frontend.cells) == 6, view)
    sources = [c["source"] for c in frontend.cells]
    assert sources[2:5] == ["%%agent\nwhy?", "df['Revenue'].sum()", "df.columns"]
    cards = [i for i in view.items if i["kind"] == "tool_result"]
    assert [c["tool_name"] for c in cards] == ["insert_cell", "insert_cell"]
    assert cards[0]["text"] == "Inserted code cell new1 below cell ask. It has not run yet."
    assert cards[1]["text"].startswith("Inserted code cell new2 below cell new1.")
    assert cards[0]["approval"] is not None
    assert cards[0]["approval"]["reason"] == 'By your click on "Insert as cell".'
    await agent.wait()
    recorded = [e for e in session_lines(agent) if e.get("customType") == CUSTOM_TYPE]
    assert [e["details"]["notebook"]["cell_id"] for e in recorded] == ["new1", "new2"]
    assert recorded[0]["details"]["notebook"]["by"] == "user"
    assert "as code cell new1 (below cell ask)" in recorded[0]["content"]
    # the model's next context has it
    messages = agent.session.build_context().messages
    assert "as code cell new2 (below cell new1)" in str(messages[-1].content)


async def test_only_code_of_this_runs_replies_and_only_what_is_offered(
    agent: NotebookAgent, shell: tuple[Any, ExecutionHistory]
) -> None:
    ip, _history = shell
    frontend = connect(agent, ip)
    run = await run_reply(agent, REPLY)
    view = run.view
    assert view.controls["edit_code"] == ""  # no cell failed: nothing to edit
    sent = {"type": "code_action", "item_id": reply_id(run)}
    click(view, {**sent, "action": "insert", "source": "import os; os.remove('x')"})
    await settle(view)
    assert "not a block of this run's replies" in view.notice
    click(view, {**sent, "action": "insert", "source": "ls data/"})  # bash: not runnable
    await settle(view)
    click(view, {**sent, "action": "edit", "source": "df.columns"})
    await settle(view)
    assert "does not offer" in view.notice
    assert len(frontend.cells) == 4


async def test_apply_as_edit_shows_the_edit_card_and_applies_only_when_allowed(
    agent: NotebookAgent, shell: tuple[Any, ExecutionHistory]
) -> None:
    ip, _history = shell
    frontend = connect(agent, ip)
    ip.run_cell("df['revenue']", store_history=True, cell_id="bad")
    run = await run_reply(agent, REPLY)
    view = run.view
    sent = {"type": "code_action", "action": "edit", "item_id": reply_id(run)}
    click(view, {**sent, "source": "df['Revenue'].sum()"})
    await until(lambda: "pi-user-edit-1" in view.running_tools, view)
    approval = view.running_tools["pi-user-edit-1"]["approval"]
    assert approval["state"] == "pending"
    assert approval["preview"]["title"] == "Edit code cell (bad: \"df['revenue']\")"
    assert "-df['revenue']\n+df['Revenue'].sum()" in approval["preview"]["diff"]
    assert frontend.cells[1]["source"] == "df['revenue']"  # nothing before Allow
    click(view, {"type": "approval", "tool_call_id": "pi-user-edit-1", "allow": True})
    await until(lambda: frontend.cells[1]["source"] == "df['Revenue'].sum()", view)
    await until(lambda: "pi-user-edit-1" not in view.running_tools, view)
    card = [i for i in view.items if i["kind"] == "tool_result"][-1]
    assert card["text"] == "Edited cell bad. It has not run since the edit."
    assert card["approval"]["state"] == "allowed"
    await agent.wait()
    recorded = [e for e in session_lines(agent) if e.get("customType") == CUSTOM_TYPE]
    assert recorded[-1]["details"]["notebook"]["action"] == "edit"
    assert "+df['Revenue'].sum()" in recorded[-1]["details"]["notebook"]["diff"]

    # denied: nothing changes, nothing is recorded
    click(view, {**sent, "source": "df.columns"})
    await until(lambda: "pi-user-edit-2" in view.running_tools, view)
    click(view, {"type": "approval", "tool_call_id": "pi-user-edit-2", "allow": False})
    await until(lambda: "pi-user-edit-2" not in view.running_tools, view)
    assert frontend.cells[1]["source"] == "df['Revenue'].sum()"
    assert view.items[-1]["text"] == "Not applied: the notebook is unchanged."
    await agent.wait()
    assert len([e for e in session_lines(agent) if e.get("customType") == CUSTOM_TYPE]) == 1

    # the same code as the cell holds: no card, a note
    click(view, {**sent, "source": "df['Revenue'].sum()"})
    await until(lambda: view.items[-1]["kind"] == "note", view)
    assert view.items[-1]["title"] == "Apply as edit: nothing to do"
    assert view.items[-1]["text"].startswith("No change: the code block is what code cell")
    assert not view.running_tools


async def test_fix_names_its_cell_and_no_frontend_offers_nothing(
    agent: NotebookAgent, shell: tuple[Any, ExecutionHistory]
) -> None:
    ip, _history = shell
    ip.run_cell("df['revenue']", store_history=True, cell_id="bad")
    run = await run_reply(agent, REPLY)  # no frontend connected
    assert run.view.controls["insert_code"] is False
    assert run.view.controls["edit_code"] == ""
    assert "Insert as cell" not in run.view.transcript_html()
    connect(agent, ip)
    faux = register_faux_provider()
    faux.set_responses([faux_assistant_message(REPLY)])
    agent.use_model_now(faux.get_model())
    fixing = agent.start_run("fix it", edit_cell="load")
    await fixing.wait()
    faux.unregister()
    assert fixing.edit_cell == "load"
    assert fixing.view.controls["edit_code"] == "cell load"  # never run here: named by its id
