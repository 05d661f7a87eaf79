"""A session file started without the entry models (``harness.session_file``) holds the bytes
``encode_record`` writes for the same header, and opens as an empty session."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_notebook.harness import Session, SessionHeader
from pi_notebook.harness.jsonl import encode_record
from pi_notebook.harness.session_file import create_file, header_line, start_session_file


@pytest.mark.parametrize(
    ("cwd", "parent"),
    [
        ("/home/u/project", None),
        ("/tmp/naïve — ünïcode/日本", "/tmp/parent.jsonl"),
        ('/odd "quotes" \\ back\\slash\ttab', None),
        ("/lone \ud800 surrogate", None),
        ("", ""),
    ],
)
def test_header_line_is_what_encode_record_writes(cwd: str, parent: str | None) -> None:
    header = SessionHeader(
        id="0198c0de-0000-7000-8000-000000000001",
        timestamp="2026-05-09T07:35:25.123Z",
        cwd=cwd,
        parent_session=parent,
    )
    made = header_line(header.id, header.timestamp, cwd, parent)
    assert made == encode_record(header)


def test_a_started_file_opens_as_an_empty_session(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "new.pi.jsonl"
    session_id = start_session_file(path, cwd=str(tmp_path))
    session = Session.open(path)
    assert session.id == session_id and len(session) == 0 and session.cwd == str(tmp_path)
    assert path.read_bytes() == encode_record(session.header)


def test_create_file_refuses_a_file_that_holds_a_session(tmp_path: Path) -> None:
    path = tmp_path / "taken.pi.jsonl"
    start_session_file(path, cwd="/")
    before = path.read_bytes()
    with pytest.raises(FileExistsError, match="already holds a session"):
        create_file(path, b"{}\n")
    assert path.read_bytes() == before
