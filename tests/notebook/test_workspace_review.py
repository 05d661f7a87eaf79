"""Several cell changes of one reply reviewed on one card: the run view's review (decisions per
change, accept all, Stop, timeout) and ``ReplyChanges`` with the real write tools against the
in-process frontend of ``test_workspace_edit_tools``. The whole path (the agent loop, the
labextension, Chromium) is in ``tests/browser/test_workspace_browser.py``."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, cast

import pytest

from pi_notebook.ai.types import AssistantMessage, TextContent, ToolCall
from pi_notebook.notebook.widgets.protocol import ApprovalPreview
from pi_notebook.notebook.widgets.run_view import RunView
from pi_notebook.notebook.workspace.review import ReplyChanges

from .test_run_view import click, settle
from .test_workspace_edit_tools import Setup, shell, text, workspace

__all__ = ["shell", "workspace"]  # fixtures used here

PREVIEW = cast(
    ApprovalPreview,
    {"title": "Edit", "language": "python", "source": "x = 1", "diff": "", "always": False},
)


def changes(*ids: str) -> list[tuple[str, str, Mapping[str, Any], ApprovalPreview]]:
    return [(i, "edit_cell", {"cell_id": "c", "source": "x = 1"}, PREVIEW) for i in ids]


async def test_a_review_waits_for_every_change_then_answers_each() -> None:
    view = RunView()
    asking = asyncio.ensure_future(view.request_review(changes("a", "b", "c")))
    await settle(view)
    assert view.status == "awaiting_approval"
    review = view.review
    assert [c["decision"] for c in review["changes"]] == ["pending"] * 3
    assert all(view.running_tools[i]["approval"]["review"] for i in "abc")
    click(view, {"type": "review", "review_id": review["id"], "accept": False, "tool_call_id": "b"})
    await settle(view)
    assert not asking.done()  # nothing is decided before every change is
    assert [c["decision"] for c in view.review["changes"]] == ["pending", "rejected", "pending"]
    click(view, {"type": "review", "review_id": "review-0", "accept": True})  # a stale card
    await settle(view)
    assert not asking.done()
    click(view, {"type": "review", "review_id": review["id"], "accept": True})  # accept all
    assert await asking == {"a": True, "b": False, "c": True}
    view.flush()
    assert view.review == {}
    approvals = {i: view.running_tools[i]["approval"] for i in "abc"}
    assert [approvals[i]["state"] for i in "abc"] == ["allowed", "denied", "allowed"]
    assert "review of 3 changes (2 accepted)" in approvals["a"]["reason"]
    assert view.status == "running_tools"


async def test_stop_rejects_a_pending_review_even_its_accepted_changes() -> None:
    view = RunView()
    stopped: list[bool] = []
    view.on_stop = lambda: stopped.append(True)
    asking = asyncio.ensure_future(view.request_review(changes("a", "b")))
    await settle(view)
    click(view, {"type": "review", "review_id": "review-1", "accept": True, "tool_call_id": "a"})
    click(view, {"type": "stop"})
    assert await asking == {"a": False, "b": False}
    assert stopped == [True]
    view.flush()
    assert view.running_tools["a"]["approval"]["state"] == "denied"
    assert "stopped" in view.running_tools["a"]["approval"]["reason"]


async def test_an_unanswered_review_times_out_and_a_cancelled_one_is_marked() -> None:
    view = RunView()
    assert await view.request_review(changes("a", "b"), timeout=0.05) is None
    view.flush()
    assert view.running_tools["a"]["approval"]["state"] == "timed_out"
    assert view.review == {}
    asking = asyncio.ensure_future(view.request_review(changes("c", "d")))
    await settle(view)
    asking.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asking
    view.flush()
    assert view.running_tools["c"]["approval"]["state"] == "cancelled"
    assert view.status == "running_tools"


def reply(*calls: ToolCall) -> AssistantMessage:
    return AssistantMessage(
        content=[TextContent(text="Two changes."), *calls],
        api="faux",
        provider="faux",
        model="faux-1",
        stop_reason="toolUse",
    )


async def test_the_writes_of_one_reply_are_reviewed_together_and_applied_as_decided(
    workspace: Setup,
) -> None:
    frontend, _document, tools, made = workspace
    frontend.cells.append({"id": "target", "cell_type": "code", "source": "rate = 0.2"})
    before = [dict(c) for c in frontend.cells]
    pending = ReplyChanges()
    pending.note_reply(
        reply(
            ToolCall(id="ins1", name="insert_cell", arguments={"source": "a = 1"}),
            ToolCall(id="run", name="run_cell", arguments={"cell_id": "x"}),  # its own card
            ToolCall(id="edit", name="edit_cell", arguments={"cell_id": "target", "source": "r"}),
            ToolCall(id="ins2", name="insert_cell", arguments={"source": "b = 2"}),
            ToolCall(id="bad", name="delete_cell", arguments={}),  # invalid: fails on its own
        )
    )
    asked: list[list[tuple[str, str, Mapping[str, Any], ApprovalPreview]]] = []

    async def ask(
        listed: list[tuple[str, str, Mapping[str, Any], ApprovalPreview]], timeout: float | None
    ) -> dict[str, bool]:
        asked.append(listed)
        assert frontend.cells == before  # nothing lands while the user decides
        return {"ins1": True, "edit": False, "ins2": True}

    first = await pending.review("ins1", tools, ask, 30.0)
    assert first is not None and first.accepted
    assert [c[0] for c in asked[0]] == ["ins1", "edit", "ins2"]
    titles = [c[3]["title"] for c in asked[0]]
    assert titles[0].startswith("Insert a code cell below code cell")
    assert titles[2] == "Insert a code cell below the cell inserted before it"
    assert "-rate = 0.2" in asked[0][1][3]["diff"]
    assert first.words.startswith("The user accepted this change (one of 3 changes")
    edit = pending.take("edit")
    assert edit is not None and not edit.accepted
    assert "2 accepted, 1 rejected); the notebook is unchanged by it." in edit.words
    assert pending.take("edit") is None  # taken once
    assert await pending.review("run", tools, ask, 30.0) is None  # run_cell is not reviewed

    tools.approve("ins1", first.words)
    result = await made["insert_cell"].execute("ins1", {"source": "a = 1"}, None, lambda _: None)
    assert text(result).startswith("The user accepted this change")
    assert "Inserted code cell" in text(result)
    second = pending.take("ins2")
    assert second is not None and second.accepted
    tools.approve("ins2", second.words)
    await made["insert_cell"].execute("ins2", {"source": "b = 2"}, None, lambda _: None)
    sources = [c["source"] for c in frontend.cells]
    assert sources == ["%%agent\nplot it", "a = 1", "b = 2", "# notes", "rate = 0.2"]


async def test_a_single_change_keeps_its_own_card(workspace: Setup) -> None:
    _frontend, _document, tools, _made = workspace
    pending = ReplyChanges()
    pending.note_reply(
        reply(
            ToolCall(id="one", name="insert_cell", arguments={"source": "a = 1"}),
            ToolCall(id="run", name="run_cell", arguments={"cell_id": "x"}),
        )
    )

    async def ask(*_args: Any) -> dict[str, bool]:
        raise AssertionError("one change is not reviewed")

    assert await pending.review("one", tools, ask, 30.0) is None
    # a change whose cell is gone leaves the review: with one change left, no review either
    pending.note_reply(
        reply(
            ToolCall(id="gone", name="edit_cell", arguments={"cell_id": "nope", "source": "x"}),
            ToolCall(id="ok", name="insert_cell", arguments={"source": "a = 1"}),
        )
    )
    assert await pending.review("gone", tools, ask, 30.0) is None
    assert await pending.review("ok", tools, ask, 30.0) is None


async def test_a_review_nobody_answers_applies_nothing(workspace: Setup) -> None:
    _frontend, _document, tools, _made = workspace
    pending = ReplyChanges()
    pending.note_reply(
        reply(
            ToolCall(id="a", name="insert_cell", arguments={"source": "a = 1"}),
            ToolCall(id="b", name="insert_cell", arguments={"source": "b = 2"}),
        )
    )

    async def ask(*_args: Any) -> None:
        return None

    decided = await pending.review("a", tools, ask, 30.0)
    assert decided is not None and not decided.accepted
    assert "Nobody reviewed the 2 proposed changes within 30 s" in decided.words
    later = pending.take("b")
    assert later is not None and not later.accepted


async def test_an_edit_that_changes_nothing_leaves_the_review(workspace: Setup) -> None:
    frontend, _document, tools, _made = workspace
    frontend.cells.append({"id": "target", "cell_type": "code", "source": "rate = 0.2"})
    pending = ReplyChanges()
    pending.note_reply(
        reply(
            ToolCall(
                id="same", name="edit_cell", arguments={"cell_id": "target", "source": "rate = 0.2"}
            ),
            ToolCall(id="ins", name="insert_cell", arguments={"source": "a = 1"}),
            ToolCall(id="ins2", name="insert_cell", arguments={"source": "b = 2"}),
        )
    )
    asked: list[list[str]] = []

    async def ask(
        listed: list[tuple[str, str, Mapping[str, Any], ApprovalPreview]], timeout: float | None
    ) -> dict[str, bool]:
        asked.append([c[0] for c in listed])
        return dict.fromkeys(asked[-1], True)

    assert await pending.review("same", tools, ask, 30.0) is None  # refused on its own
    decided = await pending.review("ins", tools, ask, 30.0)
    assert decided is not None and decided.accepted
    assert asked == [["ins", "ins2"]]
