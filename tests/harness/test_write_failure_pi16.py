"""An entry whose write fails, in pi 1.6 and here (``write-failure.mjs`` runs the real pi).

pi 1.6 drops it: ``SessionManager._appendEntry`` rolls memory back to the file and throws, so
the message is gone from the session. pi_notebook keeps a message-like entry in memory instead
(``Session.unsaved_entries``) and writes it, in order, with the next write that works: a
notebook's conversation outlives a full disk or a synced folder's lock without losing a turn,
and the file never holds a child whose parent is missing. A deliberate difference."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_notebook.harness import Session, SessionWriteError
from tests.harness.pi16_live import run_pi
from tests.harness.test_session_tree import assistant, user


def test_we_keep_the_entry_and_write_it_when_the_file_is_writable_again(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create(path, cwd="/p")
    session.append_message(user("hi"))
    session.append_message(assistant("hello"))
    saved = path.read_bytes()
    path.unlink()
    path.mkdir()  # the file cannot be written now
    with pytest.raises(SessionWriteError):
        session.append_message(user("kept?"))
    assert [e.message.content[0].text for e in session.unsaved_entries] == ["kept?"]  # type: ignore[attr-defined]
    path.rmdir()
    path.write_bytes(saved)
    assert session.flush() == 1 and session.unsaved_entries == []
    entries = Session.open(path).get_entries()
    texts = [e.message.content[0].text for e in entries]  # type: ignore[attr-defined]
    assert texts == ["hi", "hello", "kept?"]


@pytest.mark.pi_node
def test_pi_16_drops_an_entry_whose_write_failed(tmp_path: Path) -> None:
    pi = run_pi("write-failure.mjs", tmp_path)
    assert pi["error"] == "EISDIR"
    assert pi["entries"] == ["hi", [{"type": "text", "text": "hello"}]]  # "lost?" is gone
    assert pi["leafIsLastWritten"] is True
