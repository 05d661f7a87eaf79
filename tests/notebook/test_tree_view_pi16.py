"""The session tree shows pi 1.6's kinds: system-message patches, context edits (their targets
marked edited or hidden), usage entries hidden as pi hides them, and what pi appends after one
of our leaf moves under the move's target. Files from tests/golden/pi-1.6/sessions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pi_notebook.ai import TextContent, UserMessage
from pi_notebook.harness import Session
from pi_notebook.notebook.widgets.tree_view import TreeView, entry_detail, node_row, short_id
from tests.paths import GOLDEN

PI = GOLDEN / "pi-1.6" / "sessions" / "pi"


def open_copy(tmp_path: Path, name: str) -> Session:
    path = tmp_path / name
    shutil.copy(PI / name, path)
    return Session.open(path)


def test_system_messages_and_usage_entries(tmp_path: Path) -> None:
    session = open_copy(tmp_path, "system-messages.jsonl")
    view = TreeView(session)
    rows = {row[0]: row for row in view.rows}
    kinds = [row[2] for row in view.rows]
    assert kinds.count("system") == 3 and kinds.count("usage") == 2
    first, patch, extra = (row for row in view.rows if row[2] == "system")
    assert first[3] == (
        "system: You are pi, a coding agent. · sections cwd, date · tools +read, bash"
    )
    assert patch[3] == "system: sections date, -cwd, style · tools +edit, read -bash, read"
    assert extra[3] == "system: Also: answer in English."
    warm = next(row for row in view.rows if row[2] == "usage")
    assert warm[3] == "usage: cache_warm (keep-alive)" and warm[4] == "faux/faux-1-2026"
    assert warm[5] == 400
    assert rows["fe000001"][2] == "other" and rows["fe000001"][3] == "future_entry_kind"
    text = view.tree_text()
    assert "usage:" not in text  # hidden, as pi hides them
    assert "system: sections date, -cwd, style" in text


def test_context_edits_mark_their_targets(tmp_path: Path) -> None:
    session = open_copy(tmp_path, "context-edits.jsonl")
    view = TreeView(session)
    edits = [e.to_json_dict() for e in session.get_entries() if e.type == "context_edit"]
    flags = {row[0]: row[7] for row in view.rows}
    for edit in edits:
        expected = "omitted" if edit["replacement"] is None else "edited"
        latest = [e for e in edits if e["targetId"] == edit["targetId"]][-1]
        if latest is edit:
            assert flags[edit["targetId"]] == expected
    hidden = next(e for e in edits if e["replacement"] is None)
    assert node_row(hidden)[3] == f"edit → {short_id(hidden['targetId'])}: hidden from context"
    replaced = next(e for e in edits if e["replacement"] is not None)
    assert node_row(replaced)[3] == f"edit → {short_id(replaced['targetId'])}: short answer"
    text = view.tree_text()
    assert "(hidden from context)" in text and "(edited in context)" in text
    # the wire carries the flag too, and a later edit re-sends the marked row
    assert {row[6] for row in view.display_rows()} >= {"edited", "omitted"}


def test_an_edit_appended_later_flags_a_row_already_sent(tmp_path: Path) -> None:
    session = Session.create(tmp_path / "s.jsonl", cwd="/p")
    question = session.append_message(UserMessage(content=[TextContent(text="q")]))
    view = TreeView(session)
    assert view.page["segments"][0][1][0][6] == ""
    session.append_message(UserMessage(content=[TextContent(text="r")]))
    session.append_context_edit(question.id, None)
    view.refresh()
    view.flush()
    assert view.page["segments"][0][1][0][6] == "omitted"


def test_what_pi_appends_after_an_older_leaf_move_hangs_under_the_target(tmp_path: Path) -> None:
    """A ``leaf`` entry (pi's 0.79 harness wrote them, and pi_notebook before it wrote what pi 1.6
    writes), with pi 1.6's next entry under it: shown under the move's target."""
    session = Session.create(tmp_path / "s.jsonl", cwd="/p")
    first = session.append_message(UserMessage(content=[TextContent(text="a")]))
    session.append_message(UserMessage(content=[TextContent(text="b")]))
    assert session.path is not None
    stamp = "2026-11-20T12:00:00.000Z"
    move = {"type": "leaf", "id": "leaf0001", "parentId": first.id, "timestamp": stamp}
    move["targetId"] = first.id
    line = {
        "type": "message",
        "id": "pi000001",
        "parentId": "leaf0001",
        "timestamp": stamp,
        "message": UserMessage(content=[TextContent(text="from pi")], timestamp=1).to_json_dict(),
    }
    with session.path.open("a") as file:
        for record in (move, line):
            file.write(json.dumps(record, separators=(",", ":")) + "\n")
    view = TreeView(Session.open(session.path))
    parents = {row[0]: row[1] for row in view.rows}
    assert parents["pi000001"] == first.id
    assert "leaf0001" not in parents
    lines = view.tree_lines()
    assert any("from pi" in line and "*current" in line for line in lines)


def test_a_system_message_detail_reads_as_text(tmp_path: Path) -> None:
    session = open_copy(tmp_path, "system-messages.jsonl")
    patch = next(
        e
        for e in session.get_entries()
        if e.type == "message" and e.message.role == "system" and e.message.tools_removed  # type: ignore[union-attr]
    )
    detail = entry_detail(patch.to_json_dict())
    assert detail["items"] == []
    assert detail["text"].split("\n\n") == [
        "[section date]\nToday is 2026-11-21.",
        "[section cwd: removed]",
        "[section style]\nBe brief.",
        "[tool added] edit: Edit a file",
        "[tool added] read: Read a file (with offsets)",
        "[tools removed] bash, read",
    ]
