"""Real processes: a writer killed with SIGKILL in the middle of appending loses at most the line
it was writing, and two writers appending to one file at once never mix their lines."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from pi_notebook.ai import UserMessage
from pi_notebook.harness import MessageEntry, Session, SessionFileWarning
from tests.paths import ROOT

WRITER = """
import sys
from pi_notebook.ai import UserMessage
from pi_notebook.harness import Session

path, tag, count, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
session = Session.open(path)
start = sum(1 for e in session.get_entries() if e.message.content.startswith(tag + ":"))
print("ready", flush=True)
sys.stdin.readline()
pad = "x" * size
for i in range(start, start + count):
    session.append_message(UserMessage(content=f"{tag}:{i}:{pad}", timestamp=i))
    print(i, flush=True)
"""


TORN_WRITER = """
import fcntl, os, signal, sys
from pi_notebook.ai import UserMessage
from pi_notebook.harness import MessageEntry, Session
from pi_notebook.harness.jsonl import encode_record

session = Session.open(sys.argv[1])
for i in range(3):
    session.append_message(UserMessage(content=f"w:{i}:", timestamp=i))
line = encode_record(
    MessageEntry(id="torn", parent_id=session.leaf_id, timestamp="t",
                 message=UserMessage(content="w:3:" + "x" * 100_000, timestamp=3))
)
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
fcntl.flock(fd, fcntl.LOCK_EX)  # exactly as an append does
os.write(fd, line[: len(line) // 2])
os.kill(os.getpid(), signal.SIGKILL)  # dies inside its write, holding the lock
"""


def start_writer(path: Path, tag: str, count: int, size: int) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), tag, str(count), str(size)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # a writer reopening after a kill warns about the torn line
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert process.stdout is not None and process.stdout.readline() == "ready\n"
    return process


def numbers(session: Session, tag: str) -> list[int]:
    out = []
    for entry in session.get_entries():
        assert isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage)
        content = entry.message.content
        assert isinstance(content, str)
        if content.startswith(tag + ":"):
            out.append(int(content.split(":")[1]))
    return out


def open_recording_warnings(path: Path) -> tuple[Session, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        session = Session.open(path)
    return session, caught


def test_sigkill_mid_stream_loses_at_most_the_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    Session.create(path, cwd="/p")
    reported = -1
    for round_number in range(4):
        writer = start_writer(path, "w", 10**6, 200_000)  # big lines: a kill may tear one
        assert writer.stdin is not None and writer.stdout is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()
        for _ in range(3 + 2 * round_number):
            reported = int(writer.stdout.readline())
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
        writer.stdout.close()
        writer.stdin.close()

    session, caught = open_recording_warnings(path)
    assert all(issubclass(w.category, SessionFileWarning) for w in caught)
    assert len(caught) <= 1 and all("torn" in str(w.message) for w in caught)
    written = numbers(session, "w")
    assert written == list(range(len(written)))  # nothing lost or repeated in between
    assert len(written) >= reported + 1  # everything the writer reported is there
    entries = session.get_entries()
    assert [e.parent_id for e in entries[1:]] == [e.id for e in entries[:-1]]
    _, again = open_recording_warnings(path)  # the torn line was removed from the file
    assert again == []


def test_writer_killed_inside_its_write_leaves_a_line_that_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    Session.create(path, cwd="/p")
    killed = subprocess.run(
        [sys.executable, "-c", TORN_WRITER, str(path)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL
    assert not path.read_bytes().endswith(b"\n")
    with pytest.warns(SessionFileWarning, match="torn by an interrupted write"):
        session = Session.open(path)
    assert numbers(session, "w") == [0, 1, 2]
    session.append_message(UserMessage(content="w:3:again", timestamp=3))
    assert numbers(Session.open(path), "w") == [0, 1, 2, 3]  # strict, and no warning now


def test_concurrent_writers_never_interleave_lines(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    Session.create(path, cwd="/p")
    writers = [start_writer(path, tag, 150, 20_000) for tag in ("a", "b")]
    for writer in writers:
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()
    for writer in writers:
        assert writer.wait(timeout=120) == 0
        for stream in (writer.stdin, writer.stdout):
            assert stream is not None
            stream.close()

    session = Session.open(path)  # strict: any mixed-up line would raise
    assert numbers(session, "a") == list(range(150)) and numbers(session, "b") == list(range(150))
    for tag in ("a", "b"):
        last = next(e for e in session.get_entries() if numbers_of(e) == (tag, 149))
        branch = session.get_branch(last.id)
        assert [numbers_of(e) for e in branch] == [(tag, i) for i in range(150)]
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and all(line.endswith(b"}") for line in lines[:-1])


def numbers_of(entry: object) -> tuple[str, int]:
    assert isinstance(entry, MessageEntry)
    content = entry.message.content  # type: ignore[union-attr]
    assert isinstance(content, str)
    tag, number, _ = content.split(":", 2)
    return tag, int(number)
