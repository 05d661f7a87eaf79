"""``SessionSlot`` alone: a new notebook's file is only started until the session is asked for,
a moved file is written where it went, and a re-run cell branches where its first run started."""

from __future__ import annotations

import json
from pathlib import Path

from pi_notebook.ai.types import UserMessage
from pi_notebook.harness import Session
from pi_notebook.notebook.session_slot import SessionSlot


def texts(path: Path) -> list[str]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [line["message"]["content"] for line in lines if line.get("type") == "message"]


def test_a_new_file_is_started_and_opened_on_first_use(tmp_path: Path) -> None:
    path = tmp_path / "new.pi.jsonl"
    slot = SessionSlot(path)
    assert slot.opened is None and slot.notice is None
    assert path.exists() and slot.path == path and slot.restored_entries == 0
    header = json.loads(path.read_text().splitlines()[0])
    assert slot.id == header["id"]  # read from the header, the session not opened
    session = slot.session
    assert slot.opened is session and session.id == header["id"]


def test_a_moved_file_is_written_where_it_went(tmp_path: Path) -> None:
    path = tmp_path / "a.pi.jsonl"
    slot = SessionSlot(path)
    slot.session.append_message(UserMessage(content="before"))
    target = tmp_path / "b.pi.jsonl"
    path.rename(target)
    assert slot.moved(target) == path
    slot.session.append_message(UserMessage(content="after"))
    assert slot.path == target and texts(target) == ["before", "after"]
    assert not path.exists() and slot.restored_entries == 2


def test_a_rerun_cell_branches_where_its_first_run_started(tmp_path: Path) -> None:
    slot = SessionSlot(tmp_path / "s.pi.jsonl")
    session = slot.session
    session.append_message(UserMessage(content="setup"))
    slot.branch_for_cell("id:c1")  # first run of c1: starts after "setup"
    start = session.leaf_id
    session.append_message(UserMessage(content="first run"))
    slot.branch_for_cell("id:c2")
    session.append_message(UserMessage(content="other cell"))
    slot.branch_for_cell("id:c1")  # re-run: back to where c1 started
    assert session.leaf_id == start
    slot.branch_for_cell(None)
    assert session.leaf_id == start

    other = Session.create(tmp_path / "other.pi.jsonl")
    slot.put(other)  # another session: cells branch anew there
    assert slot.session is other and slot.path == other.path
    slot.branch_for_cell("id:c1")
    assert other.leaf_id is None
