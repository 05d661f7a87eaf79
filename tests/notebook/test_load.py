"""A damaged or unwritable session file must not stop ``%load_ext pi_notebook``: one line says
what is wrong, the magics are registered, and the old file is never overwritten.

Real kernels (nbclient). Read-only directories are made with ``chmod``; as root (which ignores
file modes) the kernel runs under ``setpriv`` without the capabilities that override them.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.notebook.kernel_notebook import FAUX_SETUP, execute, outputs_text

ENV = {"JPY_SESSION_NAME": "test.ipynb"}
LOAD = "%load_ext pi_notebook"


def faux(*replies: str) -> str:
    quoted = ", ".join(f"faux_assistant_message({reply!r})" for reply in replies)
    return FAUX_SETUP.format(tps=None) + f"faux.set_responses([{quoted}])"


CONTEXT = (
    "import pi_notebook\n"
    "agent = pi_notebook.current()\n"
    "texts = [getattr(m, 'text', None) or m.content[0].text\n"
    "         for m in agent.session.build_context().messages]\n"
    "print('context:', texts)\n"
    "print('file:', agent.session_path)"
)


def two_turns(directory: Path, env: dict[str, str] | None = None) -> Path:
    """A session file with two turns, written by a real kernel."""
    execute(
        [
            faux("one", "two"),
            LOAD,
            "%model faux/faux-1",
            "%%agent --wait\nfirst",
            "%%agent --wait\nsecond",
        ],
        directory,
        env={**ENV, **(env or {})},
    )
    return Path((env or {}).get("PI_NOTEBOOK_SESSION_DIR", directory)) / "test.pi.jsonl"


def third_turn(directory: Path) -> Any:
    """A kernel that loads the extension on the session in ``directory`` and runs a turn."""
    return execute(
        [faux("three"), LOAD, "%model faux/faux-1", "%%agent --wait\nthird", CONTEXT],
        directory,
        env=ENV,
    )


def assert_clean(text: str) -> None:
    assert "Traceback" not in text and "Error" not in text, text


def test_a_corrupt_line_is_skipped_and_named_and_the_rest_opens(tmp_path: Path) -> None:
    path = two_turns(tmp_path)
    lines = path.read_text().splitlines(keepends=True)
    lines.insert(3, '{"type": "message", "id": \n')  # a torn write in the middle of the file
    path.write_text("".join(lines))
    before = path.read_bytes()
    nb = third_turn(tmp_path)
    loaded = outputs_text(nb.cells[1])
    assert_clean(loaded)
    notice = loaded.splitlines()[0]
    assert notice.startswith(f"pi_notebook: {path}:4: ") and "skipped that line" in notice
    assert "Model: faux/faux-1" in outputs_text(nb.cells[2])
    context = outputs_text(nb.cells[4])
    assert "'first', 'one', 'second', 'two', 'third', 'three'" in context, context
    assert path.read_bytes().startswith(before)  # appended to, never rewritten


def test_an_entry_whose_content_is_damaged_is_left_out_of_runs_with_a_warning(
    tmp_path: Path,
) -> None:
    """A line whose JSON and structure are sound is read when a run first needs it: damaged
    content then is a warning and the entry adds nothing, never a failed run."""
    path = two_turns(tmp_path)
    lines = path.read_text().splitlines(keepends=True)
    first_reply = json.loads(lines[-3])  # "one", the reply to "first"
    assert first_reply["message"]["role"] == "assistant"
    first_reply["message"]["content"] = 7  # not content
    lines[-3] = json.dumps(first_reply) + "\n"
    path.write_text("".join(lines))
    before = path.read_bytes()
    nb = third_turn(tmp_path)
    assert_clean(outputs_text(nb.cells[1]))
    run = "".join(outputs_text(cell) for cell in nb.cells[2:4])
    assert "Traceback" not in run and "kept as an entry of unknown content" in run, [
        c.outputs for c in nb.cells
    ]
    context = outputs_text(nb.cells[4])
    assert "'first', 'second', 'two', 'third', 'three'" in context, context
    assert path.read_bytes().startswith(before)  # appended to, never rewritten


def test_an_unreadable_file_is_kept_and_a_fresh_session_starts_beside_it(tmp_path: Path) -> None:
    path = tmp_path / "test.pi.jsonl"
    path.write_text("this is not a session file\n")
    nb = execute(
        [faux("fresh"), LOAD, "%model faux/faux-1", "%%agent --wait\nhi", CONTEXT],
        tmp_path,
        env=ENV,
    )
    loaded = outputs_text(nb.cells[1])
    assert_clean(loaded)
    assert loaded.startswith(f"pi_notebook: cannot read {path}:1: ")
    assert "started a fresh session in" in loaded and "the old file is kept" in loaded
    assert path.read_text() == "this is not a session file\n"
    fresh = [p for p in tmp_path.glob("test.*.pi.jsonl")]
    assert len(fresh) == 1, fresh
    assert f"file: {fresh[0]}" in outputs_text(nb.cells[4])
    assert "'hi', 'fresh'" in outputs_text(nb.cells[4])


@pytest.fixture
def no_override_kernel(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """A kernel for which file modes hold: ``python3`` normally, as root one started under
    ``setpriv`` without CAP_DAC_OVERRIDE (and friends)."""
    if os.geteuid() != 0:
        yield "python3", {}
        return
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot make a directory read-only")
    caps = "-dac_override,-dac_read_search,-fowner"
    spec = tmp_path / "jupyter" / "kernels" / "python3-modes"
    spec.mkdir(parents=True)
    argv = [
        setpriv,
        "--bounding-set",
        caps,
        "--inh-caps",
        caps,
        sys.executable,
        "-m",
        "ipykernel_launcher",
        "-f",
        "{connection_file}",
    ]
    spec.joinpath("kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "modes", "language": "python"})
    )
    yield "python3-modes", {"JUPYTER_PATH": str(tmp_path / "jupyter")}


def read_only(directory: Path) -> None:
    for item in directory.iterdir():
        if item.is_file():
            item.chmod(0o444)
    directory.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP)


def test_a_read_only_directory_puts_the_session_in_pis_directory(
    tmp_path: Path, no_override_kernel: tuple[str, dict[str, str]]
) -> None:
    kernel, kernel_env = no_override_kernel
    notebook_dir = tmp_path / "checkout"
    notebook_dir.mkdir()
    agent_dir = tmp_path / "pi-agent"
    env = {**ENV, **kernel_env, "PI_CODING_AGENT_DIR": str(agent_dir)}
    cells = [faux("saved elsewhere"), LOAD, "%model faux/faux-1", "%%agent --wait\nhi", CONTEXT]
    nb: Any = None
    execute([], notebook_dir)  # the notebook file itself (nbclient writes it)
    read_only(notebook_dir)
    try:
        nb = execute(
            cells,
            tmp_path,
            env={**env, "PI_NOTEBOOK_SESSION_DIR": str(notebook_dir)},
            kernel_name=kernel,
        )
    finally:
        notebook_dir.chmod(0o755)
    loaded = outputs_text(nb.cells[1])
    assert_clean(loaded)
    assert loaded.startswith(f"pi_notebook: {notebook_dir} is not writable (Permission denied)")
    moved = list(agent_dir.glob("sessions/*/test.pi.jsonl"))
    assert len(moved) == 1 and f"file: {moved[0]}" in outputs_text(nb.cells[4])
    assert "'hi', 'saved elsewhere'" in outputs_text(nb.cells[4])
    assert not (notebook_dir / "test.pi.jsonl").exists()


def test_a_read_only_session_file_continues_in_a_copy(
    tmp_path: Path, no_override_kernel: tuple[str, dict[str, str]]
) -> None:
    kernel, kernel_env = no_override_kernel
    agent_dir = tmp_path / "pi-agent"
    notebook_dir = tmp_path / "checkout"
    notebook_dir.mkdir()
    env = {
        **ENV,
        "PI_NOTEBOOK_SESSION_DIR": str(notebook_dir),
        "PI_CODING_AGENT_DIR": str(agent_dir),
    }
    path = two_turns(tmp_path, env)
    before = path.read_bytes()
    read_only(notebook_dir)
    try:
        nb = execute(
            [faux("three"), LOAD, "%model faux/faux-1", "%%agent --wait\nthird", CONTEXT],
            tmp_path,
            env={**env, **kernel_env},
            kernel_name=kernel,
        )
    finally:
        notebook_dir.chmod(0o755)
    loaded = outputs_text(nb.cells[1])
    assert_clean(loaded)
    assert loaded.startswith("pi_notebook: test.pi.jsonl is read-only; continuing in a copy, ")
    assert path.read_bytes() == before
    context = outputs_text(nb.cells[4])
    assert "'first', 'one', 'second', 'two', 'third', 'three'" in context, context
    assert str(agent_dir) in context
