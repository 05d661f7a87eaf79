"""NotebookDocument and the write tools: against an in-process frontend that speaks the
labextension's protocol (js/src/lab/protocol.js) over a fake comm, with cells executed by a real
InteractiveShell, and in a real kernel under nbclient (no frontend). The real frontend is tested
in tests/browser/test_workspace_browser.py."""

from __future__ import annotations

import asyncio
import base64
import io
import itertools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

from pi_notebook.agent.tools import AgentTool, AgentToolResult
from pi_notebook.ai.types import ImageContent, TextContent
from pi_notebook.notebook.workspace.document import (
    DocumentError,
    NotebookDocument,
    NotebookNotConnected,
)
from pi_notebook.notebook.workspace.edit_tools import (
    WriteTools,
    new_cell_id,
    same_code,
    unified_diff,
)
from pi_notebook.notebook.workspace.history import ExecutionHistory, OutputSummary

from .kernel_notebook import execute, outputs_text


def _png() -> str:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (4, 3), (200, 30, 30)).save(out, "PNG")
    return base64.b64encode(out.getvalue()).decode("ascii")


PNG = _png()


class FakeComm:
    """The kernel's end of a comm whose other end is ``frontend``."""

    def __init__(self, frontend: FakeFrontend) -> None:
        self.comm_id = "comm-1"
        self.frontend = frontend
        self.on_message: Callable[[dict[str, Any]], None] | None = None
        self.on_closed: Callable[[dict[str, Any]], None] | None = None

    def send(self, data: Any = None) -> None:
        self.frontend.receive(data)

    def on_msg(self, callback: Callable[[dict[str, Any]], None] | None) -> None:
        self.on_message = callback

    def on_close(self, callback: Callable[[dict[str, Any]], None] | None) -> None:
        self.on_closed = callback

    def close(self) -> None:
        if self.on_closed is not None:
            self.on_closed({})

    def deliver(self, data: dict[str, Any]) -> None:
        assert self.on_message is not None
        self.on_message({"content": {"data": data}})


class FakeFrontend:
    """A notebook of cells answering requests like the labextension; "execute" runs the cell in
    ``shell`` soon after replying, as the kernel would run the frontend's execute_request."""

    def __init__(self, shell: Any, cells: list[dict[str, Any]]) -> None:
        self.shell = shell
        self.cells = cells
        self.comm = FakeComm(self)
        self.requests: list[dict[str, Any]] = []
        self.ids = itertools.count(1)
        self.answer = True

    def hello(self) -> None:
        self.comm.deliver({"type": "hello", "app": "Fake", "version": "1", "path": "t.ipynb"})

    def index(self, cell_id: str) -> int:
        for i, cell in enumerate(self.cells):
            if cell["id"] == cell_id:
                return i
        raise DocumentError(f"no cell with id {cell_id} in this notebook")

    def receive(self, data: dict[str, Any]) -> None:
        self.requests.append(data)
        if not self.answer:
            return
        try:
            result = self.run(data)
            reply = {"type": "reply", "id": data["id"], "ok": True, "result": result}
        except DocumentError as exc:
            reply = {"type": "reply", "id": data["id"], "ok": False, "error": str(exc)}
        asyncio.get_running_loop().call_soon(self.comm.deliver, reply)

    def run(self, data: dict[str, Any]) -> Any:
        op = data["op"]
        if op == "cells":
            return [
                {
                    "id": c["id"],
                    "cell_type": c["cell_type"],
                    "source": c["source"],
                    "execution_count": c.get("execution_count"),
                    "outputs": [{"kind": "stdout", "text": "hi"}] if c.get("outputs") else [],
                }
                for c in self.cells
            ]
        if op == "insert":
            after = data["after_cell_id"]
            at = len(self.cells) if after is None else self.index(after) + 1
            new = {"id": f"new{next(self.ids)}", "cell_type": data["cell_type"]}
            new["source"] = data["source"]
            self.cells.insert(at, new)
            return {"id": new["id"]}
        if op == "edit":
            self.cells[self.index(data["cell_id"])]["source"] = data["source"]
            return {}
        if op == "delete":
            del self.cells[self.index(data["cell_id"])]
            return {}
        if op == "outputs":
            return self.cells[self.index(data["cell_id"])].get("outputs", [])
        if op == "execute":
            cell = self.cells[self.index(data["cell_id"])]
            loop = asyncio.get_running_loop()
            loop.call_later(0.01, self.execute, cell)
            return {}
        raise DocumentError(f"unknown request {op}")

    def execute(self, cell: dict[str, Any]) -> None:
        result = self.shell.run_cell(cell["source"], store_history=True, cell_id=cell["id"])
        cell["execution_count"] = result.execution_count
        if "IMAGE" in cell["source"]:
            cell["outputs"] = [{"output_type": "display_data", "data": {"image/png": PNG}}]


@pytest.fixture
def shell() -> Iterator[tuple[Any, ExecutionHistory]]:
    ip = InteractiveShell.instance()
    history = ExecutionHistory()
    history.install(ip)
    try:
        yield ip, history
    finally:
        history.uninstall()


Setup = tuple[FakeFrontend, NotebookDocument, WriteTools, dict[str, AgentTool]]


@pytest.fixture
def workspace(shell: tuple[Any, ExecutionHistory]) -> Setup:
    ip, history = shell
    frontend = FakeFrontend(
        ip,
        [
            {"id": "agent", "cell_type": "code", "source": "%%agent\nplot it"},
            {"id": "later", "cell_type": "markdown", "source": "# notes"},
        ],
    )
    document = NotebookDocument(history)
    document.attach(frontend.comm)
    frontend.hello()
    tools = WriteTools(document, history)
    tools.begin_run(1, "agent")
    return frontend, document, tools, tools.tools()


async def call(
    tools: WriteTools, made: dict[str, AgentTool], name: str, args: dict[str, Any], approve: bool
) -> AgentToolResult:
    call_id = f"call-{name}-{len(tools._approved)}-{id(args)}"
    if approve:
        tools.approve(call_id)
    return await made[name].execute(call_id, args, None, lambda _partial: None)


def text(result: AgentToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, TextContent))


async def test_document_reads_cells_and_marks_edits_since_run(workspace: Setup) -> None:
    frontend, document, _tools, _made = workspace
    assert document.connected
    assert document.frontend is not None and document.frontend.app == "Fake"
    frontend.cells.append({"id": "calc", "cell_type": "code", "source": "y = 1"})
    frontend.execute(frontend.cells[-1])
    cells = await document.cells()
    assert [c.id for c in cells] == ["agent", "later", "calc"]
    calc = cells[-1]
    assert calc.ran_in_kernel and not calc.edited_since_run
    assert cells[1].cell_type == "markdown" and not cells[1].ran_in_kernel
    frontend.cells[-1]["source"] = "y = 2"
    assert (await document.cells())[-1].edited_since_run
    frontend.cells[-1]["outputs"] = [{"output_type": "stream", "text": "hi"}]
    assert (await document.cells())[-1].outputs == (OutputSummary("stdout", "hi"),)


async def test_inserts_land_below_the_agent_cell_then_below_the_last_insert(
    workspace: Setup,
) -> None:
    frontend, _document, tools, made = workspace
    first = await call(tools, made, "insert_cell", {"source": "a = 1"}, approve=True)
    second = await call(
        tools, made, "insert_cell", {"source": "# why", "cell_type": "markdown"}, True
    )
    assert [c["id"] for c in frontend.cells] == ["agent", "new1", "new2", "later"]
    assert frontend.cells[2]["cell_type"] == "markdown"
    assert text(first).startswith(
        "Inserted code cell new1 below cell agent. It has not run yet, so nobody has seen its "
        'output: call run_cell with cell_id "new1" to run it'
    )
    assert text(second).startswith("Inserted markdown cell new2 below cell new1. Markdown cells")
    # the kernel asks for an id made from the call's (this fake frontend picks its own, as a
    # frontend older than the field does; the real one is tested in tests/browser)
    asks = [r for r in frontend.requests if r["op"] == "insert"]
    assert len(asks) == 2 and all(r["cell_id"].startswith("agent-call-insert_cell-") for r in asks)
    assert first.details == {
        "notebook": {
            "action": "insert",
            "applied": True,
            "cell_id": "new1",
            "after_cell_id": "agent",
            "cell_type": "code",
            "source": "a = 1",
        }
    }
    assert second.details["notebook"]["after_cell_id"] == "new1"
    # a new run starts below its own cell again; a follow-up of the same run goes on
    tools.begin_run(1, "agent")
    assert tools.anchor_cell_id == "new2"
    tools.begin_run(2, "later")
    assert tools.anchor_cell_id == "later"


async def test_an_insert_whose_anchor_was_deleted_goes_to_the_end(workspace: Setup) -> None:
    frontend, _document, tools, made = workspace
    frontend.cells.pop(0)  # the user deleted the %%agent cell meanwhile
    result = await call(tools, made, "insert_cell", {"source": "a = 1"}, approve=True)
    assert [c["id"] for c in frontend.cells] == ["later", "new1"]
    assert "went to the end" in text(result)


async def test_nothing_is_written_without_approval(workspace: Setup) -> None:
    frontend, _document, tools, made = workspace
    before = json.dumps(frontend.cells)
    for name, args in [
        ("insert_cell", {"source": "x"}),
        ("edit_cell", {"cell_id": "agent", "source": "x"}),
        ("delete_cell", {"cell_id": "later"}),
        ("run_cell", {"cell_id": "agent"}),
    ]:
        result = await call(tools, made, name, args, approve=False)
        assert text(result) == f"{name} was not approved by the user; nothing was changed."
    assert json.dumps(frontend.cells) == before
    assert not [r for r in frontend.requests if r["op"] != "cells"]


async def test_previews_show_source_diff_and_always_for_run(workspace: Setup) -> None:
    frontend, _document, tools, _made = workspace
    frontend.cells.append({"id": "calc", "cell_type": "code", "source": "rate = 0.2\nrate"})
    insert = await tools.preview("insert_cell", {"source": "df.plot()"})
    assert insert["title"] == "Insert a code cell below code cell (agent: '%%agent')"
    assert insert["source"] == "df.plot()" and insert["diff"] == "" and not insert["always"]
    edit = await tools.preview("edit_cell", {"cell_id": "calc", "source": "rate = 0.5\nrate"})
    assert edit["diff"] == unified_diff("rate = 0.2\nrate", "rate = 0.5\nrate")
    assert "-rate = 0.2" in edit["diff"] and "+rate = 0.5" in edit["diff"]
    run = await tools.preview("run_cell", {"cell_id": "calc"})
    assert run["always"] and run["source"] == "rate = 0.2\nrate"
    delete = await tools.preview("delete_cell", {"cell_id": "later"})
    assert delete["language"] == "markdown" and delete["title"].startswith("Delete markdown")
    with pytest.raises(DocumentError, match=r"no cell with id 'nope'.*agent, later, calc"):
        await tools.preview("edit_cell", {"cell_id": "nope", "source": ""})


async def test_edit_and_delete_apply_and_record(workspace: Setup) -> None:
    frontend, _document, tools, made = workspace
    edited = await call(
        tools, made, "edit_cell", {"cell_id": "agent", "source": "%%agent\nx"}, True
    )
    assert frontend.cells[0]["source"] == "%%agent\nx"
    assert edited.details["notebook"]["diff"].endswith("-plot it\n+x")
    deleted = await call(tools, made, "delete_cell", {"cell_id": "later"}, approve=True)
    assert [c["id"] for c in frontend.cells] == ["agent"]
    assert deleted.details["notebook"] == {
        "action": "delete",
        "applied": True,
        "cell_id": "later",
        "source": "# notes",
        "cell_type": "markdown",
        "after_cell_id": "agent",  # where it was: a restore puts it back there
    }
    missing = await call(tools, made, "delete_cell", {"cell_id": "later"}, approve=True)
    assert text(missing).startswith("The notebook refused: There is no cell with id 'later'")


async def test_run_cell_returns_result_error_and_images(workspace: Setup) -> None:
    frontend, _document, tools, made = workspace
    frontend.cells += [
        {"id": "ok", "cell_type": "code", "source": "print('hi')\n6 * 7"},
        {"id": "bad", "cell_type": "code", "source": "{}['missing']"},
        {"id": "pic", "cell_type": "code", "source": "'IMAGE'"},
    ]
    ran = await call(tools, made, "run_cell", {"cell_id": "ok"}, approve=True)
    words = text(ran)
    assert "ran without error" in words and "hi" in words and "42" in words
    assert not ran.is_error
    assert ran.details["notebook"]["status"] == "ok"
    assert ran.details["notebook"]["execution_count"] == frontend.cells[2]["execution_count"]
    failed = await call(tools, made, "run_cell", {"cell_id": "bad"}, approve=True)
    assert "failed with KeyError: 'missing'" in text(failed)
    assert failed.is_error  # the model reads a failed cell as a failed call
    assert failed.details["notebook"]["status"] == "error"
    pic = await call(tools, made, "run_cell", {"cell_id": "pic"}, approve=True)
    assert text(pic).endswith("[image: 4×3 PNG; this model does not take images]")
    assert not any(isinstance(b, ImageContent) for b in pic.content)
    tools.takes_images = lambda: True
    pic = await call(tools, made, "run_cell", {"cell_id": "pic"}, approve=True)
    assert [b for b in pic.content if isinstance(b, ImageContent)] == [
        ImageContent(data=PNG, mime_type="image/png")
    ]
    assert "[image: 4×3 PNG]" in text(pic)
    markdown = await call(tools, made, "run_cell", {"cell_id": "later"}, approve=True)
    assert text(markdown) == "Cell later is a markdown cell; only code runs."


async def test_insert_cell_with_run_inserts_runs_and_returns_the_result(
    workspace: Setup,
) -> None:
    frontend, _document, tools, made = workspace
    tools.takes_images = lambda: True
    preview = await tools.preview("insert_cell", {"source": "print('hi')", "run": True})
    assert preview["title"] == "Insert and run a code cell below code cell (agent: '%%agent')"
    assert not preview["always"]  # one approval covers the insert and its run
    result = await call(
        tools, made, "insert_cell", {"source": "print('hi')\n'IMAGE'", "run": True}, True
    )
    assert [c["id"] for c in frontend.cells] == ["agent", "new1", "later"]
    assert frontend.cells[1]["execution_count"] is not None  # it really ran
    words = text(result)
    assert words.startswith("Inserted code cell new1 below cell agent.\n```python\n")
    assert "ran without error" in words and "[stdout]\nhi" in words
    assert "call run_cell" not in words
    assert [b for b in result.content if isinstance(b, ImageContent)] == [
        ImageContent(data=PNG, mime_type="image/png")
    ]
    notebook = result.details["notebook"]
    assert notebook["action"] == "insert" and notebook["cell_id"] == "new1"
    assert notebook["run"] == {
        "applied": True,
        "execution_count": frontend.cells[1]["execution_count"],
        "status": "ok",
    }
    # a markdown cell never runs, and run=false (the default) only inserts
    doc = await call(
        tools, made, "insert_cell", {"source": "# x", "cell_type": "markdown", "run": True}, True
    )
    plain = await call(tools, made, "insert_cell", {"source": "y = 1"}, True)
    assert "run" not in doc.details["notebook"] and "run" not in plain.details["notebook"]
    assert frontend.cells[3].get("execution_count") is None
    assert "call run_cell" in text(plain)


async def test_insert_cell_with_run_while_a_cell_waits_for_the_run_is_queued(
    workspace: Setup,
) -> None:
    frontend, document, _tools, _made = workspace
    tools = WriteTools(document, _tools.history, waited_on=lambda: True)
    tools.begin_run(1, "agent")
    made = tools.tools()
    frontend.execute = lambda cell: None  # type: ignore[method-assign]  # queued behind it
    assert tools.needs_approval("insert_cell")  # the insert itself still asks
    result = await call(tools, made, "insert_cell", {"source": "z = 3", "run": True}, True)
    assert [c["id"] for c in frontend.cells] == ["agent", "new1", "later"]
    assert "could not run yet" in text(result)
    assert result.details["notebook"]["run"] == {"applied": False, "queued": True}


async def test_run_cell_refuses_while_a_cell_waits_for_the_run(workspace: Setup) -> None:
    frontend, document, _tools, _made = workspace
    waiting = [True]
    tools = WriteTools(document, _tools.history, waited_on=lambda: waiting[0])
    made = tools.tools()
    assert not tools.needs_approval("run_cell")  # nothing to ask: it cannot run
    result = await made["run_cell"].execute("c1", {"cell_id": "agent"}, None, lambda _p: None)
    assert "was not run" in text(result) and "--wait" in text(result)
    assert not [r for r in frontend.requests if r["op"] == "execute"]

    # A wait that starts while the cell is queued: reported, not waited for forever.
    waiting[0] = False
    frontend.cells.append({"id": "slow", "cell_type": "code", "source": "1"})
    frontend.execute = lambda cell: None  # type: ignore[method-assign]  # stays queued
    tools.approve("c2")
    running = asyncio.ensure_future(
        made["run_cell"].execute("c2", {"cell_id": "slow"}, None, lambda _p: None)
    )
    await asyncio.sleep(0.3)
    assert not running.done()
    waiting[0] = True
    result = await asyncio.wait_for(running, 5)
    assert "could not run yet" in text(result) and "queued" in text(result)
    assert result.details["notebook"]["queued"] is True


async def test_run_cell_stops_waiting_for_a_cell_that_waits_for_the_run(workspace: Setup) -> None:
    """The agent runs a cell that awaits the agent's own run: neither could end, so the tool
    says so once the cell has started, and the run goes on (the cell ends after it)."""
    frontend, document, _tools, _made = workspace
    waiting = [False]
    tools = WriteTools(document, _tools.history, waited_on=lambda: waiting[0])
    made = tools.tools()
    frontend.cells.append({"id": "check", "cell_type": "code", "source": "await pi.wait()"})

    def start_and_wait(cell: dict[str, Any]) -> None:  # the cell starts, then awaits the run
        info = SimpleNamespace(raw_cell=cell["source"], cell_id=cell["id"], store_history=True)
        tools.history.pre_run_cell(info)
        waiting[0] = True

    frontend.execute = start_and_wait  # type: ignore[method-assign]
    tools.approve("c1")
    result = await asyncio.wait_for(
        made["run_cell"].execute("c1", {"cell_id": "check"}, None, lambda _p: None), 5
    )
    assert "is waiting for this agent run to finish" in text(result), text(result)
    assert result.details["notebook"]["waits_for_run"] is True


async def test_a_frontend_that_goes_away_fails_requests_clearly(workspace: Setup) -> None:
    frontend, document, tools, made = workspace
    frontend.answer = False
    pending = asyncio.ensure_future(document.cells())
    await asyncio.sleep(0)
    frontend.comm.close()
    with pytest.raises(NotebookNotConnected, match="went away"):
        await pending
    assert not document.connected
    result = await call(tools, made, "insert_cell", {"source": "x = 1"}, approve=True)
    assert text(result).startswith("No notebook frontend is connected")
    assert "x = 1" in text(result)


def test_an_inserted_cell_id_is_made_from_the_call_id() -> None:
    assert new_cell_id("call_abc123") == "agent-call_abc123"
    assert new_cell_id("toolu_01A:b/c") == "agent-toolu_01A-b-c"
    assert new_cell_id("::") == "agent-cell"
    long = new_cell_id("x" * 200)
    assert len(long) == 54 and len(long) + len("-99") <= 64


async def test_without_a_frontend_the_tools_say_what_they_would_have_done(
    shell: tuple[Any, ExecutionHistory],
) -> None:
    _ip, history = shell
    document = NotebookDocument(history)
    assert not document.connected and not document.install()  # no kernel here
    tools = WriteTools(document, history)
    assert not tools.needs_approval("insert_cell")
    made = tools.tools()
    result = await made["insert_cell"].execute("c", {"source": "df.head()"}, None, lambda _p: 0)
    assert text(result) == (
        "No notebook frontend is connected to this kernel (it runs under nbclient, papermill or "
        "a terminal, or JupyterLab lacks the pi_notebook extension), so no cell was inserted. "
        "The code cell would have been (proposed as cell proposed-1):\n```python\ndf.head()\n```"
        '\nrun_cell with cell_id "proposed-1" shows the user the code to run.'
    )
    assert result.details == {
        "notebook": {
            "action": "insert",
            "applied": False,
            "cell_id": "proposed-1",
            "cell_type": "code",
            "source": "df.head()",
        }
    }
    ran = await made["run_cell"].execute("r", {"cell_id": "proposed-1"}, None, lambda _p: 0)
    assert "cell proposed-1 was not run" in text(ran)
    assert text(ran).endswith("```python\ndf.head()\n```")
    assert ran.details == {
        "notebook": {
            "action": "run",
            "applied": False,
            "cell_id": "proposed-1",
            "source": "df.head()",
        }
    }
    # asked again (a small model loops on it): a short, firm answer, without the code
    again = await made["run_cell"].execute("r2", {"cell_id": "proposed-1"}, None, lambda _p: 0)
    assert text(again).startswith("run_cell already answered for cell proposed-1")
    assert "Do not call run_cell again" in text(again) and "df.head()" not in text(again)
    assert again.details == {
        "notebook": {"action": "run", "applied": False, "cell_id": "proposed-1", "repeated": True}
    }
    # asked to insert and run at once: the proposal and the firm answer together
    both = await made["insert_cell"].execute(
        "b", {"source": "df.tail()", "run": True}, None, lambda _p: 0
    )
    assert "no cell was inserted or run" in text(both) and "(proposed as cell proposed-2)" in text(
        both
    )
    assert "do not ask again" in text(both)
    assert both.details["notebook"]["run"] == {"applied": False}
    later = await made["run_cell"].execute("r3", {"cell_id": "proposed-2"}, None, lambda _p: 0)
    assert text(later).startswith("run_cell already answered for cell proposed-2")
    with pytest.raises(NotebookNotConnected):
        await document.cells()


FAUX = """
from pi_notebook.ai import faux_assistant_message, faux_tool_call, register_faux_provider
faux = register_faux_provider(tokens_per_second=1000)
faux.set_responses([
    faux_assistant_message([faux_tool_call("insert_cell", {"source": "df.describe()"}, id="i1")]),
    faux_assistant_message([faux_tool_call("run_cell", {"cell_id": "proposed-1"}, id="r1")]),
    faux_assistant_message([faux_tool_call("run_cell", {"cell_id": "abc"}, id="r2")]),
    faux_assistant_message("Done."),
])
%model faux/faux-1
"""

REPORT = """
import json, pi_notebook
results = [e.message for e in pi_notebook.current().session.get_entries()
           if getattr(getattr(e, "message", None), "role", None) == "toolResult"]
print(json.dumps([[r.tool_name, r.content[0].text, r.details] for r in results]))
"""


def test_nbclient_without_a_frontend_is_deterministic(tmp_path: Path) -> None:
    nb = execute(
        [
            "%load_ext pi_notebook",
            FAUX,
            "%tools add insert_cell run_cell",
            "%%agent --wait\nAdd a summary cell and run it.",
            REPORT,
        ],
        tmp_path,
    )
    assert "also without a notebook frontend" in outputs_text(nb.cells[2])
    results = json.loads(outputs_text(nb.cells[4]))
    assert [name for name, _text, _details in results] == ["insert_cell", "run_cell", "run_cell"]
    inserted, ran, unknown = results
    assert "no cell was inserted" in inserted[1] and "df.describe()" in inserted[1]
    assert inserted[2]["notebook"]["cell_id"] == "proposed-1"
    assert inserted[2]["notebook"]["applied"] is False
    assert "cell proposed-1 was not run" in ran[1] and "df.describe()" in ran[1]
    assert "cell abc was not run" in unknown[1]
    # the executed notebook shows the proposal in the %%agent cell's output
    assert "df.describe()" in outputs_text(nb.cells[3])


async def test_an_edit_that_changes_nothing_the_cell_runs_is_refused_without_asking(
    workspace: Setup,
) -> None:
    frontend, _document, tools, made = workspace
    frontend.cells += [
        {"id": "bad", "cell_type": "code", "source": "{'a': 1}['b']"},
        {"id": "ok", "cell_type": "code", "source": "x = {'a': 1}"},
    ]
    await call(tools, made, "run_cell", {"cell_id": "bad"}, approve=True)
    await call(tools, made, "run_cell", {"cell_id": "ok"}, approve=True)
    reformatted = await tools.unchanged("edit_cell", {"cell_id": "bad", "source": '{"a":1}["b"]'})
    assert reformatted is not None
    assert reformatted.startswith("This edit only reformats the code cell")
    assert "fail again with KeyError: 'b'. Nothing was changed" in reformatted
    same = await tools.unchanged("edit_cell", {"cell_id": "later", "source": "# notes\n"})
    assert same is not None and "already has exactly this source" in same
    # what is asked as before: a real change, a reformat of a cell that worked, other tools
    assert await tools.unchanged("edit_cell", {"cell_id": "bad", "source": "{'a': 1}['a']"}) is None
    assert await tools.unchanged("edit_cell", {"cell_id": "ok", "source": 'x = {"a": 1}'}) is None
    assert await tools.unchanged("run_cell", {"cell_id": "bad"}) is None
    assert await tools.unchanged("edit_cell", {"cell_id": "nope", "source": "x"}) is None
    # a cell edited by hand since it failed: its failure says nothing of its source now
    frontend.cells[-2]["source"] = "{'a': 1}['c']"
    assert await tools.unchanged("edit_cell", {"cell_id": "bad", "source": '{"a":1}["c"]'}) is None


def test_same_code_compares_what_runs() -> None:
    assert same_code("print('a')  # say it", 'print( "a" )')
    assert not same_code("print('a')", "print('b')")
    assert not same_code("%time x = 1", "%time x = 1 ")  # a magic does not parse: no guess
