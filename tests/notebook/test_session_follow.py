"""A notebook's session follows the notebook: renamed, moved while closed, copied, or new beside
an old session file; and two kernels never append to one session file without knowing.

The kernel side in-process (``NotebookAgent`` told what the labextension tells it), the lock
across real processes."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from pi_notebook.ai import UserMessage
from pi_notebook.notebook.kernel_agent import NotebookAgent
from pi_notebook.notebook.session_follow import header_id, renamed_session_file, session_owner
from pi_notebook.notebook.session_lock import SessionLock, lock_holder

from .kernel_notebook import execute, outputs_text


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PI_NOTEBOOK_SESSION_DIR", raising=False)
    return tmp_path


def agent_for(monkeypatch: pytest.MonkeyPatch, notebook: str) -> NotebookAgent:
    """The agent a kernel started for ``notebook`` makes at ``%load_ext``."""
    from pi_notebook.notebook.locations import latest_session_path, session_path_for

    monkeypatch.setenv("JPY_SESSION_NAME", notebook)
    return NotebookAgent(latest_session_path(session_path_for()), {})


def texts(path: Path) -> list[str]:
    entries = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    return [e["message"]["content"] for e in entries if e["type"] == "message"]


def notebook_with(path: Path, session_id: str | None) -> None:
    nb = nbformat.v4.new_notebook()
    if session_id:
        nb.metadata["pi_notebook"] = {"session_id": session_id}
    nbformat.write(nb, path)


def earlier_session(monkeypatch: pytest.MonkeyPatch, notebook: str, text: str) -> str:
    """A session a kernel of ``notebook`` wrote ``text`` into, then ended; its id."""
    first = agent_for(monkeypatch, notebook)
    first.session.append_message(UserMessage(content=text))
    first.session_lock.release()
    return first.session.id


def test_a_renamed_notebook_takes_its_session_file_along(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = agent_for(monkeypatch, "Untitled.ipynb")
    agent.session.append_message(UserMessage(content="before the rename"))
    keep, notices = agent._follow_notebook("Untitled.ipynb", None, True)
    assert keep == agent.session.id and notices == []

    keep, notices = agent._follow_notebook("sales.ipynb", None, False)
    assert notices == [] and keep == agent.session.id
    assert not (folder / "Untitled.pi.jsonl").exists()
    assert agent.session_path == folder / "sales.pi.jsonl"
    agent.session.append_message(UserMessage(content="after the rename"))
    assert texts(folder / "sales.pi.jsonl") == ["before the rename", "after the rename"]
    assert agent.session_lock.path == folder / "sales.pi.jsonl"

    # the next new notebook, Untitled.ipynb again, starts empty
    fresh = agent_for(monkeypatch, "Untitled.ipynb")
    assert fresh.restored_entries == 0 and fresh.session_id != agent.session.id


def test_a_rename_never_overwrites_another_session_file(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (folder / "sales.pi.jsonl").write_text("not ours\n")
    agent = agent_for(monkeypatch, "Untitled.ipynb")
    agent.session.append_message(UserMessage(content="mine"))
    agent._follow_notebook("Untitled.ipynb", None, True)
    _, notices = agent._follow_notebook("sales.ipynb", None, False)
    assert notices and "sales.pi.jsonl exists already" in notices[0]
    assert (folder / "sales.pi.jsonl").read_text() == "not ours\n"
    assert texts(folder / "Untitled.pi.jsonl") == ["mine"]


def test_a_notebook_moved_while_closed_reopens_its_own_session_by_id(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = earlier_session(monkeypatch, "Untitled.ipynb", "the sales question")
    # that kernel ended; the notebook was renamed in a file manager
    notebook_with(folder / "sales.ipynb", session_id)

    agent = agent_for(monkeypatch, "sales.ipynb")
    assert agent.restored_entries == 0  # sales.pi.jsonl did not exist: a new one was started
    keep, notices = agent._follow_notebook("sales.ipynb", session_id, True)
    assert keep == session_id
    assert "reopened this notebook's session (1 entries)" in notices[0]
    assert agent.session_path == folder / "sales.pi.jsonl"
    assert texts(folder / "sales.pi.jsonl") == ["the sales question"]
    assert not (folder / "Untitled.pi.jsonl").exists()


def test_a_copied_notebook_continues_in_a_copy_of_the_session(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = earlier_session(monkeypatch, "sales.ipynb", "original")
    notebook_with(folder / "sales.ipynb", session_id)
    notebook_with(folder / "sales-Copy1.ipynb", session_id)

    copy = agent_for(monkeypatch, "sales-Copy1.ipynb")
    keep, notices = copy._follow_notebook("sales-Copy1.ipynb", session_id, True)
    assert keep is not None and keep != session_id
    assert "sales.ipynb's session" in notices[0]
    assert copy.session_path == folder / "sales-Copy1.pi.jsonl"
    copy.session.append_message(UserMessage(content="in the copy"))
    assert texts(folder / "sales-Copy1.pi.jsonl") == ["original", "in the copy"]
    assert texts(folder / "sales.pi.jsonl") == ["original"]
    assert header_id(folder / "sales.pi.jsonl") == session_id


def test_a_new_notebook_never_keeps_a_session_another_notebook_claims(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = earlier_session(monkeypatch, "Untitled.ipynb", "belongs to sales")
    notebook_with(folder / "sales.ipynb", session_id)  # renamed while closed, file left behind

    new = agent_for(monkeypatch, "Untitled.ipynb")
    assert new.restored_entries == 1  # by name alone it would have been picked up
    keep, notices = new._follow_notebook("Untitled.ipynb", None, True)
    assert "sales.ipynb owns the session in Untitled.pi.jsonl" in notices[0]
    assert keep != session_id and len(new.session) == 0
    new.session.append_message(UserMessage(content="new notebook"))
    assert texts(folder / "Untitled.pi.jsonl") == ["belongs to sales"]


def test_session_file_names_follow_the_notebook() -> None:
    assert renamed_session_file(Path("/d/a.pi.jsonl"), "a", "b") == Path("/d/b.pi.jsonl")
    stamped = Path("/d/a.20260101-120000.pi.jsonl")
    assert renamed_session_file(stamped, "a", "b") == Path("/d/b.20260101-120000.pi.jsonl")
    assert renamed_session_file(Path("/d/a.b.pi.jsonl"), "a", "c") is None  # a.b's own
    assert renamed_session_file(Path("/d/other.pi.jsonl"), "a", "b") is None
    assert session_owner(Path("/d/q.v2.pi.jsonl")) == Path("/d/q.v2.ipynb")
    assert session_owner(stamped) == Path("/d/a.ipynb")


HOLDER = """
import sys
from pathlib import Path
from pi_notebook.notebook.session_lock import SessionLock
lock = SessionLock()
assert lock.acquire(Path(sys.argv[1])) is None
print("holding", flush=True)
sys.stdin.read()
"""


@contextlib.contextmanager
def held_elsewhere(path: Path) -> Iterator[int]:
    """Another process holds ``path``'s lock until the block ends, then dies without cleaning
    up (killed); yields its pid."""
    with subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(HOLDER), str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
            yield holder.pid
        finally:
            holder.kill()
            holder.wait()


def test_the_lock_holds_while_a_kernel_lives_and_never_after(tmp_path: Path) -> None:
    path = tmp_path / "nb.pi.jsonl"
    with held_elsewhere(path) as pid:
        held = lock_holder(path)
        assert held == f"another kernel (pid {pid})"
        assert SessionLock().acquire(path) == held
    assert lock_holder(path) is None  # the dead holder's lock went with it
    mine = SessionLock()
    assert mine.acquire(path) is None and mine.held
    mine.release()


def test_a_second_kernel_on_a_held_session_is_told_and_chooses(tmp_path: Path) -> None:
    """The second kernel continues in a copy and says so; ``%session open --read-only`` shows
    the original without writing, and refuses runs; ``%session fork`` continues from it."""
    first = execute(
        [
            "from pi_notebook.ai import faux_assistant_message, register_faux_provider\n"
            "faux = register_faux_provider()\n"
            "faux.set_responses([faux_assistant_message('first kernel reply')])",
            "%load_ext pi_notebook\n%model faux/faux-1",
            "%%agent --wait\nfirst kernel",
        ],
        tmp_path,
        name="shared.ipynb",
        env={"JPY_SESSION_NAME": "shared.ipynb"},
    )
    assert first is not None
    original = tmp_path / "shared.pi.jsonl"
    before = original.read_bytes()
    with held_elsewhere(original) as pid:
        nb = execute(
            [
                "%load_ext pi_notebook",
                f"%session open {original}",
                f"%session open {original} --read-only\n%session",
                "%%agent\nwrite into it",
                "%session fork\n%session",
            ],
            tmp_path,
            name="shared.ipynb",
            env={"JPY_SESSION_NAME": "shared.ipynb"},
            allow_errors=True,
        )
    loaded = outputs_text(nb.cells[0])
    assert f"shared.pi.jsonl is open in another kernel (pid {pid})" in loaded, loaded
    assert "continues in a copy" in loaded and "--read-only" in loaded
    assert "UsageError" in outputs_text(nb.cells[1]) and "--read-only" in outputs_text(nb.cells[1])
    viewed = outputs_text(nb.cells[2])
    assert "read-only" in viewed and f"file: {original}" in viewed, viewed
    refused = outputs_text(nb.cells[3])
    assert "UsageError" in refused and "open read-only" in refused, refused
    forked = outputs_text(nb.cells[4])
    assert "Continuing shared.pi.jsonl in a copy" in forked, forked
    assert original.read_bytes() == before  # never written by the second kernel


def test_reloading_the_extension_lets_go_of_the_lock_first(tmp_path: Path) -> None:
    nb = execute(
        [
            "%load_ext pi_notebook",
            "%unload_ext pi_notebook\n%load_ext pi_notebook",
            "import pi_notebook\nprint(pi_notebook.current().session_path.name)",
        ],
        tmp_path,
        name="reload.ipynb",
        env={"JPY_SESSION_NAME": "reload.ipynb"},
    )
    assert "another kernel" not in outputs_text(nb.cells[1])
    assert outputs_text(nb.cells[2]) == "reload.pi.jsonl\n"
