"""The session-tree widget's Python half: rows from a real Session, the synced page and what a
refresh re-sends, selection details, actions hopped onto the loop, and the text fallbacks.
(The paging itself: test_tree_pages.py.)"""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from pi_notebook.agent.agent import Agent
from pi_notebook.agent.events import MessageUpdateEvent
from pi_notebook.ai import (
    FauxProvider,
    TextContent,
    ToolResultMessage,
    UserMessage,
    faux_assistant_message,
    faux_tool_call,
)
from pi_notebook.harness import InMemorySessionStorage, Session
from pi_notebook.notebook.widgets.tree_pages import BRANCHING, FOLDED, FORK, PATH
from pi_notebook.notebook.widgets.tree_view import CONTENT_TRAITS as TREE_CONTENT
from pi_notebook.notebook.widgets.tree_view import PAGE_ROWS, TreeView, entry_detail, node_row
from tests.notebook.test_run_view import Wire, click, record_displays, settle
from tests.paths import GOLDEN


def fresh_session() -> Session:
    return Session.create(InMemorySessionStorage(), cwd="/project")


def sample_session(tmp_path: Path) -> Session:
    path = tmp_path / "sample.jsonl"
    shutil.copy(GOLDEN / "sample-session.jsonl", path)
    return Session.open(path)


def chat(session: Session, turns: int, prefix: str = "turn") -> None:
    for i in range(turns):
        session.append_message(UserMessage(content=f"{prefix} {i}: question"))
        session.append_message(faux_assistant_message(f"{prefix} {i}: answer\nsecond line"))


# --- the node table ------------------------------------------------------------------------------


def test_the_golden_session_becomes_rows_and_a_page(tmp_path: Path) -> None:
    session = sample_session(tmp_path)
    view = TreeView(session)
    assert len(view.rows) == len([e for e in session.get_entries() if e.type != "leaf"])
    rows = {row[0]: row for row in view.rows}
    assert rows["c94109b7"] == (
        "c94109b7",
        None,
        "model_change",
        "model → anthropic/claude-sonnet-4-5",
        "anthropic/claude-sonnet-4-5",
        0,
        0.0,
        "",
    )
    assert rows["395c4bfb"][2:4] == ("user", "Read src/app.ts and tell me what it does.")
    assert rows["fbe2bf54"][2:4] == ("assistant", "→ read")
    assert rows["fbe2bf54"][4:7] == ("anthropic/claude-sonnet-4-5", 1240, 0.0042)
    assert rows["dc4407d6"][2:4] == ("tool_result", "read: export function main() {")
    assert rows["e278acc8"][2] == "branch_summary"
    assert rows["9df221ad"][2:4] == ("compaction", "compaction · 2,715 tokens summarized")
    assert rows["b90dc256"][2] == "label"
    page = view.page
    (segment,) = page["segments"]  # a small tree: all of it
    shown = {row[0]: row for row in segment[1]}
    assert segment[0] == 0 and len(shown) == page["total"] == 18  # label and name hidden
    assert page["entries"] == 20 and "b90dc256" not in shown
    assert shown["fa74abb6"][7] == "checkpoint-1"  # its label, on the row
    assert shown[view.leaf_id][9] & PATH and page["leaf_index"] == list(shown).index("ded3406f")
    assert view.leaf_id == "ded3406f" and view.session_name == "Demo session"
    assert view.controls == {"navigate": False, "fork": False, "label": False, "compact": False}


def test_the_text_fallback_draws_the_tree_like_pi(tmp_path: Path) -> None:
    view = TreeView(sample_session(tmp_path))
    data, _ = view._repr_mimebundle_()
    lines = data["text/plain"].splitlines()
    assert lines[0] == "Session “Demo session” · 20 entries · current ded3406f"
    assert lines[1] == "c94109b7 model → anthropic/claude-sonnet-4-5"
    assert (
        "fa74abb6 assistant: src/app.ts defines main(), which logs 'hello' 8 times.  [checkpoint-1]"
        in lines
    )
    assert "├─ 83e081ad user: Now add structured logging to src/app.ts." in lines
    assert "│  861c7e65 assistant: Switched to logger.info." in lines
    assert lines[-1] == "   ded3406f assistant: All tests pass.  *current"
    assert not any("label" in line.split(" ", 2)[1] for line in lines[1:])  # bookkeeping hidden
    assert data["text/html"].startswith('<pre class="pi-tree-static"')
    assert "&lt;" not in data["text/html"] or "<script" not in data["text/html"]


def test_rows_for_every_kind_of_entry() -> None:
    session = fresh_session()
    session.append_thinking_level_change("high")
    session.append_active_tools_change(["ls", "cat"])
    session.append_message(UserMessage(content=[TextContent(text="\n\n  first line  \nsecond")]))
    session.append_message(
        faux_assistant_message([faux_tool_call("ls", {}), faux_tool_call("cat", {})])
    )
    session.append_message(
        ToolResultMessage(
            tool_call_id="x", tool_name="ls", content=[TextContent(text="boom")], is_error=True
        )
    )
    session.append_message(
        faux_assistant_message([], stop_reason="error", error_message="429 slow down")
    )
    session.append_message(faux_assistant_message("partial", stop_reason="aborted"))
    session.append_custom("ext-state", {"a": 1})
    session.append_custom_message("reminder", "Be careful.\nVery.", display=True)
    session.append_session_info("Named")
    rows = [
        node_row(e.model_dump(mode="json", by_alias=True, exclude_none=True))
        for e in session.get_entries()
    ]
    assert [(r[2], r[3], r[7]) for r in rows] == [
        ("thinking_change", "thinking → high", ""),
        ("active_tools", "tools: ls, cat", ""),
        ("user", "first line", ""),
        ("assistant", "→ ls, cat", ""),
        ("tool_result", "ls: boom", "error"),
        ("assistant", "error: 429 slow down", "error"),
        ("assistant", "partial", "aborted"),
        ("custom", "custom: ext-state", ""),
        ("custom_message", "reminder: Be careful.", ""),
        ("session_info", "name: Named", ""),
    ]


def test_details_show_the_messages_of_an_entry(tmp_path: Path) -> None:
    session = sample_session(tmp_path)
    view = TreeView(session)
    view.select("d5c38495")
    detail = view.selected_detail
    assert view.selected_id == "d5c38495"
    assert detail["type"] == "message" and detail["model"] == "anthropic/claude-sonnet-4-5"
    (item,) = detail["items"]
    assert item["kind"] == "assistant"
    assert [b["type"] for b in item["blocks"]] == ["thinking", "toolCall"]
    compaction = entry_detail(session.get_entry("9df221ad").model_dump(mode="json", by_alias=True))  # type: ignore[union-attr]
    assert compaction["items"][0]["kind"] == "note"
    assert compaction["items"][0]["title"] == "Compaction summary (2,715 tokens before)"
    view.select("b90dc256")  # a label entry: shown as its JSON
    assert '"label": "checkpoint-1"' in view.selected_detail["text"]
    view.select(None)
    assert view.selected_id == "" and view.selected_detail == {}


# --- live updates --------------------------------------------------------------------------------


def test_refresh_sends_the_page_only_when_it_changed() -> None:
    session = fresh_session()
    chat(session, 500)
    view = TreeView(session)
    wire = Wire(view)
    assert view.page["total"] == 1000 and view.page["leaf_index"] == 999
    assert sum(len(rows) for _, rows in view.page["segments"]) == PAGE_ROWS
    assert len(json.dumps(view.page)) < PAGE_ROWS * 150  # a compact page

    session.append_message(UserMessage(content="one more"))
    view.refresh()
    view.flush()
    (update,) = wire.updates
    assert set(update) == {"page", "leaf_id"}
    assert update["page"]["total"] == 1001
    assert update["page"]["segments"][-1][1][-1][1:3] == ["user", "one more"]

    session.append_label(session.get_entries()[0].id, "start")
    view.refresh()
    view.flush()
    assert set(wire.updates[-1]) == {"page", "leaf_id"}
    assert view.page["segments"][0][1][0][7] == "start"
    view.refresh()
    view.flush()
    assert len(wire.updates) == 2  # nothing new: nothing sent


def test_reading_a_big_session_outside_an_event_loop_flushes_once() -> None:
    """The Coalescer's synchronous path: marks made while reading wait for the read's end."""
    session = fresh_session()
    view = TreeView(session, sync_interval=1e-9)  # every mark would flush at once
    wire = Wire(view)
    chat(session, 2000)
    view.refresh()
    assert len(wire.updates) == 1 and wire.updates[0]["page"]["total"] == 4000


def test_resync_reads_the_session_and_sends_the_content_once() -> None:
    session = fresh_session()
    view = TreeView(session)
    wire = Wire(view)
    chat(session, 1)
    view.resync()  # picks up what the session gained, even without a refresh
    update = wire.updates[-1]
    assert set(update) == set(TREE_CONTENT)
    (segment,) = update["page"]["segments"]
    assert [row[2] for row in segment[1]] == ["turn 0: question", "turn 0: answer"]
    sent = len(wire.updates)
    view.resync()
    assert len(wire.updates) == sent


def test_leaf_moves_and_a_replaced_session() -> None:
    session = fresh_session()
    chat(session, 2)
    view = TreeView(session)
    first_answer = session.get_entries()[1].id
    session.set_leaf(first_answer)
    session.append_message(UserMessage(content="a new branch"))
    view.refresh()
    view.flush()
    assert view.leaf_id == session.leaf_id
    assert all(row[2] != "other" for row in view.rows)  # the leaf entry is not a node
    assert view.rows[-1][1] == first_answer
    rows = view.display_rows()
    assert [(r[2], r[8], r[9] & (FORK | BRANCHING)) for r in rows] == [
        ("turn 0: question", 0, 0),
        ("turn 0: answer", 0, BRANCHING),
        ("turn 1: question", 1, FORK),
        ("turn 1: answer", 1, 0),
        ("a new branch", 1, FORK),
    ]
    assert view.page["leaf_index"] == 4

    other = fresh_session()
    chat(other, 1, "other")
    view.select(rows[0][0])
    view.session = other
    view.flush()
    assert [row[2] for row in view.display_rows()] == ["other 0: question", "other 0: answer"]
    assert view.selected_id == "" and view.page["total"] == 2


async def test_the_tree_follows_a_live_run_through_handle(faux: FauxProvider) -> None:
    session = fresh_session()
    faux.set_responses([faux_assistant_message("Hello!")])
    agent = Agent(model=faux.get_model())
    view = TreeView(session)

    def persist(event: Any) -> None:  # what the harness does: append on message_end first
        if event.type == "message_end":
            session.append_message(event.message)

    agent.subscribe(persist)
    agent.subscribe(view.handle)
    await agent.prompt("hi")
    await settle(view)
    assert [row[1:3] for row in view.display_rows()] == [["user", "hi"], ["assistant", "Hello!"]]
    reads = view.sync_count
    update = MessageUpdateEvent.model_construct(type="message_update")
    for _ in range(100):
        view.handle(update)  # streaming deltas do not even read the session
    view.flush()
    assert view.sync_count == reads


# --- actions -------------------------------------------------------------------------------------


async def test_actions_run_on_the_loop_and_refresh_the_tree() -> None:
    session = fresh_session()
    chat(session, 2)
    view = TreeView(session)
    target = session.get_entries()[1].id
    calls: list[tuple[Any, ...]] = []
    main = threading.get_ident()

    def navigate(entry_id: str, summarize: bool) -> None:
        calls.append(("navigate", entry_id, summarize, threading.get_ident() == main))
        session.set_leaf(entry_id)

    release = asyncio.Event()

    async def label(entry_id: str, text: str) -> None:
        calls.append(("label", entry_id, text))
        await release.wait()
        session.append_label(entry_id, text)

    view.on_navigate = navigate
    view.on_label = label
    view.on_fork = lambda entry_id: calls.append(("fork", entry_id))
    view.on_compact = lambda: calls.append(("compact",))
    view.flush()
    assert view.controls == {"navigate": True, "fork": True, "label": True, "compact": True}

    click(view, {"type": "navigate", "id": target, "summarize": True})
    await settle(view)
    assert calls == [("navigate", target, True, True)]
    assert view.leaf_id == target and view.busy == ""

    click(view, {"type": "label", "id": target, "text": " v1 "})
    await settle(view)
    assert calls[-1] == ("label", target, "v1")
    assert view.busy == "labelling…"
    release.set()
    await settle(view, rounds=10)
    assert view.busy == "" and view.display_rows()[1][7] == "v1"

    click(view, {"type": "fork", "id": target})
    click(view, {"type": "compact"})
    click(view, {"type": "select", "id": target})
    await settle(view)
    assert calls[-2:] == [("fork", target), ("compact",)]
    assert view.selected_id == target and view.selected_detail["items"][0]["kind"] == "assistant"


async def test_bad_requests_and_failing_actions_become_notices() -> None:
    session = fresh_session()
    chat(session, 1)
    view = TreeView(session)

    async def fail(entry_id: str) -> None:
        raise RuntimeError("The harness is busy")

    view.on_fork = fail
    click(view, {"type": "navigate", "id": "nope", "summarize": False})
    await settle(view)
    assert view.notice == "The session has no entry 'nope' (was it replaced?)."
    click(view, {"type": "fork", "id": session.get_entries()[0].id})
    await settle(view, rounds=10)
    assert view.notice == "Fork failed: The harness is busy" and view.busy == ""
    click(view, {"type": "compact"})
    await settle(view)
    assert "no callback is set" in view.notice and view.busy == ""
    click(view, {"type": "explode"})
    await settle(view)
    assert "unknown widget request" in view.notice
    click(view, {"type": "dismiss_notice"})
    await settle(view)
    assert view.notice == ""


# --- scale ---------------------------------------------------------------------------------------


def test_two_thousand_entries_with_branches() -> None:
    session = fresh_session()
    for i in range(1000):
        if i and i % 100 == 0:  # a branch every 100 turns
            session.set_leaf(session.get_entries()[-40].id)
        session.append_message(UserMessage(content=f"q{i}"))
        session.append_message(faux_assistant_message(f"a{i}"))
    view = TreeView(session)
    assert len([r for r in view.rows if r[2] in ("user", "assistant")]) == 2000
    assert len(json.dumps(view.get_state(["page"]))) < PAGE_ROWS * 150
    # bigger than a page: the side branches open folded, one row each with their size
    assert len(view.folded_ids) == 9
    folded = [r for r in view.display_rows() if r[9] & FOLDED]
    assert len(folded) == 9 and all(r[10] > 0 for r in folded)
    assert view.page["total"] + sum(r[10] for r in folded) == 2000
    lines = view.tree_lines()
    assert len(lines) == 2000
    assert max(len(line) - len(line.lstrip("│ ├└─")) for line in lines) < 40  # no drift right
    assert sum("*current" in line for line in lines) == 1


def test_the_end_of_a_run_refreshes_the_trees_shown_fallback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run may end after the last cell ran: its ``agent_end`` brings the shown text/HTML of the
    tree up to date (no post_run_cell hook would)."""
    from pi_notebook.agent.events import AgentEndEvent

    shown = record_displays(monkeypatch, "text/plain")
    session = fresh_session()
    view = TreeView(session)
    view.show()
    chat(session, 1, prefix="late")
    view.handle(AgentEndEvent(messages=[]))
    assert len(shown) == 2 and "late 0" in shown[-1]
    view.resync()
    assert len(shown) == 2
