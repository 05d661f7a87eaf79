"""``SaveNotices`` over a real session whose file cannot be written for a while: the view says
so once, and is told when the retry has put the turn in the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_notebook.ai.types import UserMessage
from pi_notebook.harness import Session, SessionWriteError
from pi_notebook.notebook.save_notices import SaveNotices


class View:
    def __init__(self) -> None:
        self.said: list[str] = []

    def note_unsaved(self, reason: str) -> None:
        self.said.append(f"unsaved: {reason}")

    def note_saved(self) -> None:
        self.said.append("saved")


def test_a_failed_write_is_told_once_and_its_retry_too(tmp_path: Path) -> None:
    path = tmp_path / "s.pi.jsonl"
    session = Session.create(path)
    session.append_message(UserMessage(content="hi"))
    notices, view, other = SaveNotices(), View(), View()
    notices.check(session, view)
    assert view.said == []  # nothing wrong: nothing said

    saved = path.read_bytes()
    path.unlink()
    path.mkdir()  # the file cannot be written now
    with pytest.raises(SessionWriteError):
        session.append_message(UserMessage(content="kept"))
    notices.check(session, view)
    notices.check(session, view)  # the same reason again: said once
    notices.check(session, other)
    assert len(view.said) == 1 and view.said[0].startswith("unsaved: Could not write the session")
    assert str(path) in view.said[0] and len(other.said) == 1

    path.rmdir()
    path.write_bytes(saved)
    assert session.flush() == 1
    notices.check(session, View())
    assert view.said[-1] == "saved" and other.said[-1] == "saved"
    notices.check(session, view)
    assert view.said.count("saved") == 1  # told once
