"""Undoing the agent's cell changes on the branch being left: the real write tools change a
notebook (the in-process frontend of ``test_workspace_edit_tools``), their results go into a
real session, and ``plan_revert``/``apply_steps`` give the notebook back as it was. The whole
path in JupyterLab is in ``tests/browser/test_restore_browser.py``."""

from __future__ import annotations

from typing import Any

from pi_notebook.ai.types import TextContent, ToolResultMessage, UserMessage
from pi_notebook.harness import InMemorySessionStorage, Session
from pi_notebook.notebook.restore.document_revert import (
    apply_steps,
    branch_left,
    plan_revert,
    unapply_diff,
)
from pi_notebook.notebook.workspace.edit_tools import unified_diff

from .test_workspace_edit_tools import Setup, call, shell, workspace

__all__ = ["shell", "workspace"]  # fixtures used here


def test_unapply_diff_gives_the_old_text_back() -> None:
    cases = [
        ("a\nb\nc", "a\nB\nc"),
        ("", "x = 1\ny = 2"),
        ("x = 1\ny = 2", ""),
        (
            "\n".join(f"line {i}" for i in range(40)),
            "\n".join(f"line {i}" for i in range(40) if i % 9),
        ),
        (
            "head\n" + "\n".join(str(i) for i in range(30)),
            "\n".join(str(i) for i in range(30)) + "\ntail",
        ),
    ]
    for old, new in cases:
        assert unapply_diff(new, unified_diff(old, new)) == old
    # a diff that does not fit the text, or one that was cut, gives nothing
    assert unapply_diff("other\ntext", unified_diff("a\nb", "a\nc")) is None
    assert unapply_diff("a", "--- x\n+++ y\n@@ -1 +1 @@\n-b\n+a\n[... diff cut]") is None


def _result(call_id: str, name: str, details: Any) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call_id, tool_name=name, content=[TextContent(text="ok")], details=details
    )


async def test_the_agents_changes_are_undone_newest_first(workspace: Setup) -> None:
    frontend, document, tools, made = workspace
    frontend.cells.append({"id": "calc", "cell_type": "code", "source": "x = 1\ny = 2\nz = 3"})
    frontend.cells.append({"id": "old", "cell_type": "code", "source": "print('old')"})
    before = [(c["id"], c["source"]) for c in frontend.cells]

    session = Session.create(InMemorySessionStorage())
    root = session.append_message(UserMessage(content="start")).id
    # the branch being left: an insert, an edit, a delete, and an edit of the inserted cell
    session.append_message(UserMessage(content="change the notebook"))
    for name, args in [
        ("insert_cell", {"source": "a = 1"}),
        ("edit_cell", {"cell_id": "calc", "source": "x = 1\ny = 20\nz = 3"}),
        ("delete_cell", {"cell_id": "old"}),
        ("edit_cell", {"cell_id": "new1", "source": "a = 2"}),
        ("run_cell", {"cell_id": "new1"}),
    ]:
        result = await call(tools, made, name, args, approve=True)
        session.append_message(_result(f"c-{name}", name, result.details))
    leaf = session.leaf_id
    assert [c["id"] for c in frontend.cells] == ["agent", "new1", "later", "calc"]

    left = branch_left(session, leaf, root)
    assert len(left) == 6 and branch_left(session, root, leaf) == []
    steps = plan_revert(left)
    assert [(s.action, s.cell_id) for s in steps] == [
        ("unedit", "new1"),
        ("reinsert", "old"),
        ("unedit", "calc"),
        ("delete", "new1"),
    ]
    assert steps[1].after_cell_id == "calc" and steps[0].source == "a = 1"
    outcomes = await apply_steps(document, steps)
    assert [o.done for o in outcomes] == [True] * 4, [o.words for o in outcomes]
    # the fake frontend picks its own ids for inserted cells (the real one keeps the id asked)
    after = [(c["id"], c["source"]) for c in frontend.cells]
    assert [s for _i, s in after] == [s for _i, s in before]


async def test_a_cell_the_user_changed_since_is_left_as_is(workspace: Setup) -> None:
    frontend, document, tools, made = workspace
    session = Session.create(InMemorySessionStorage())
    root = session.append_message(UserMessage(content="start")).id
    result = await call(tools, made, "insert_cell", {"source": "a = 1"}, approve=True)
    session.append_message(_result("c1", "insert_cell", result.details))
    frontend.cells[1]["source"] = "a = 1  # mine now"
    # an unapproved call changed nothing and is not undone
    refused = await call(tools, made, "delete_cell", {"cell_id": "later"}, approve=False)
    session.append_message(_result("c2", "delete_cell", refused.details))
    steps = plan_revert(branch_left(session, session.leaf_id, root))
    assert [(s.action, s.cell_id) for s in steps] == [("delete", "new1")]
    outcomes = await apply_steps(document, steps)
    assert not outcomes[0].done and "changed since" in outcomes[0].words
    assert [c["id"] for c in frontend.cells] == ["agent", "new1", "later"]
