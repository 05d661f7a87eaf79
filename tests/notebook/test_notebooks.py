"""The example notebooks (notebooks/*.ipynb), executed as tests, and the machinery that does it:
``pi_notebook.testing`` and the pytest plugin.

Each notebook runs in a fresh kernel and directory without API keys — under its replay cassette
when it has one (recorded against the embedded local model), else with the faux provider it
scripts itself — and must finish without a cell error or a failed run; its last cells hold its
own assertions. The executed copies are kept under test-artifacts/notebooks/ for inspection.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest

from pi_notebook import testing
from pi_notebook.ai.cassette import Cassette
from pi_notebook.testing import ExecutedNotebook, NotebookFailure, cassette_for

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
ARTIFACTS = ROOT / "test-artifacts" / "notebooks"
EXAMPLES = sorted(NOTEBOOKS.glob("*.ipynb"))
EXPECTED = {"providers", "python-api", "quickstart", "sessions", "tools"}

REPLAY_SPEED = 1.0
"""The quickstart's cassette replays at its recorded pace: its ``%steer`` comes once the poem has
begun (``await pi.last_run.replying()``) and must land before the poem ends, four seconds later."""
FAST_REPLAY_SPEED = 40.0
"""The other cassettes (nothing lands mid-run in them) replay at 40×: still streaming, with
every recorded delay, but without the minutes of a loaded recording machine (providers.jsonl waits
24 s for its first token)."""
REPLAY_SPEEDS = {"quickstart": REPLAY_SPEED}


def _user_texts(entries: list[Any]) -> list[str]:
    texts = []
    for entry in entries:
        message = getattr(entry, "message", None)
        if message is not None and message.role == "user":
            content = message.content
            texts.append(content if isinstance(content, str) else content[0].text)
    return texts


def _check_quickstart(nb: ExecutedNotebook) -> None:
    assert nb.mode == "replay" and nb.cassette is not None
    assert nb.cassette.name == "quickstart.jsonl"
    views = nb.run_views
    assert [v["status"] for v in views] == ["done"] * 3
    assert {v["header"]["model"] for v in views} == {"local/smollm2-135m"}
    steered = views[1]["messages"]
    steer_at = next(i for i, item in enumerate(steered) if item.get("origin") == "steer")
    # mid-run: after the first reply, not sent along with the prompt
    assert "assistant" in [item["kind"] for item in steered[:steer_at]], steered
    assert len(nb.tree_views) == 1
    session = nb.session()
    assert len(_user_texts(session.get_entries())) == 4


CHECKS: dict[str, Callable[[ExecutedNotebook], None]] = {"quickstart": _check_quickstart}
"""Checks from outside the kernel, beyond each notebook's own assertion cells."""


# --- the example notebooks -----------------------------------------------------------------------


def test_the_examples_are_all_there() -> None:
    assert {p.stem for p in EXAMPLES} >= EXPECTED


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_is_committed_clean(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code), "clear the outputs"
    assert "widgets" not in nb.metadata
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    assert code[0].source.strip().startswith("%load_ext pi_notebook") or "import" in code[0].source
    assert "assert" in code[-1].source, "a notebook ends with its own checks"
    ids = [c.id for c in nb.cells]
    assert len(set(ids)) == len(ids)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs_clean(path: Path, tmp_path: Path) -> None:
    speed = REPLAY_SPEEDS.get(path.stem, FAST_REPLAY_SPEED)
    nb = testing.run_notebook(path, workdir=tmp_path / path.stem, speed=speed, timeout=180)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(nb.path, ARTIFACTS / path.name)
    nb.check()
    assert "All checks passed." in nb.text(len(nb.cells) - 1)
    check = CHECKS.get(path.stem)
    if check is not None:
        check(nb)


@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    "path", [p for p in EXAMPLES if cassette_for(p) is None], ids=lambda p: p.stem
)
def test_scripted_example_runs_again_in_place(path: Path, tmp_path: Path) -> None:
    """Restart & Run All in the same directory: the session saved by the first run is restored
    and the notebook still passes (cassette-replayed notebooks can't: their recorded prompts
    did not include a previous run's history)."""
    for _ in range(2):
        testing.run_notebook(path, workdir=tmp_path, timeout=180).check()


# --- pi_notebook.testing -------------------------------------------------------------------------


def _write(directory: Path, name: str, cells: list[str], **metadata: Any) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nb.metadata.update(metadata)
    path = directory / name
    nbformat.write(nb, path)
    return path


def test_a_cell_error_fails_the_check_and_names_the_cell(tmp_path: Path) -> None:
    path = _write(tmp_path, "broken.ipynb", ["x = 1", "1 / 0", "never = True"])
    nb = testing.run_notebook(path, workdir=tmp_path / "run")
    assert nb.stopped_by is not None and nb.stopped_by.index == 1
    assert "never" not in nb.text(2)  # execution stopped at the error
    with pytest.raises(NotebookFailure, match=r"cell 1 \('1 / 0'\) raised ZeroDivisionError"):
        nb.check()


def test_a_cell_that_runs_too_long_stops_the_notebook(tmp_path: Path) -> None:
    path = _write(tmp_path, "slow.ipynb", ["import time", "time.sleep(30)", "after = 1"])
    nb = testing.run_notebook(path, workdir=tmp_path / "run", timeout=3)
    assert nb.stopped_by is not None
    assert (nb.stopped_by.index, nb.stopped_by.ename) == (1, "CellTimeoutError")
    with pytest.raises(NotebookFailure, match=r"cell 1 \('time.sleep\(30\)'\) raised CellTimeout"):
        nb.check()


def test_a_failed_run_fails_the_check(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "failing-run.ipynb",
        [
            "%load_ext pi_notebook",
            "from pi_notebook.ai import register_faux_provider\n"
            "faux = register_faux_provider()",  # nothing queued: the model call fails
            "%model faux/faux-1",
            "%%agent --wait\nhello",
        ],
    )
    nb = testing.run_notebook(path, workdir=tmp_path / "run")
    assert nb.errors == []
    assert nb.failed_runs and "No more faux responses queued" in nb.failed_runs[0]
    with pytest.raises(NotebookFailure, match=r"a run failed: .*No more faux responses"):
        nb.check()


def test_a_prompt_missing_from_the_cassette_names_the_request(tmp_path: Path) -> None:
    """Replay never reaches the network: a prompt the cassette lacks is a failed run whose error
    names the request and the closest recording."""
    cassette = NOTEBOOKS / "cassettes" / "quickstart.jsonl"
    path = _write(
        tmp_path,
        "changed.ipynb",
        ["%load_ext pi_notebook", "%%agent --wait\nWhat is the capital of Spain?"],
    )
    nb = testing.run_notebook(path, cassette=cassette, workdir=tmp_path / "run", speed=0)
    assert nb.mode == "replay"
    [error] = nb.failed_runs
    assert "No recording in the cassette quickstart.jsonl matches request 1" in error
    assert "What is the capital of Spain?" in error
    assert "What is the capital of France?" in error  # the closest recording


def test_model_magic_records_and_replays(tmp_path: Path) -> None:
    """``%model --record`` in one kernel, ``%model --replay`` in another: the second run gets
    the recorded reply without calling the model."""
    setup = (
        "from pi_notebook.ai import faux_assistant_message, register_faux_provider\n"
        "faux = register_faux_provider(api='faux-tape')\n"
        "faux.set_responses([faux_assistant_message('Recorded reply.')] * {n})"
    )
    tape = tmp_path / "tape.jsonl"
    recording = _write(
        tmp_path,
        "record.ipynb",
        [
            "%load_ext pi_notebook\n%agent_context off",  # the two notebooks' cells differ
            setup.format(n=1),
            "%model faux/faux-1",
            f"%model --record {tape}",
            "%%agent --wait\nSay something.",
            "%model",
        ],
    )
    nb = testing.run_notebook(recording, workdir=tmp_path / "rec")
    nb.check()
    assert nb.text(3) == f"Recording model replies into {tape}\n"
    assert f"recording model replies: {tape}" in nb.text(5)
    assert len(Cassette.replay(tape).interactions) == 1

    replaying = _write(
        tmp_path,
        "replay.ipynb",
        [
            "%load_ext pi_notebook\n%agent_context off",  # the two notebooks' cells differ
            setup.format(n=0),  # nothing queued: a call to the model would fail
            "%model faux/faux-1",
            "from IPython.core.error import UsageError\n"
            "try:\n"
            f"    get_ipython().run_line_magic('model', '--replay {tape} --record {tape}')\n"
            "except UsageError as exc:\n"
            "    print('usage error:', exc)",
            f"%model --replay {tape}",
            "%%agent --wait\nSay something.",
            "import pi_notebook\n"
            "print(pi_notebook.current().last_run.result.text, faux.call_count)",
            "%model --live",
        ],
    )
    nb = testing.run_notebook(replaying, workdir=tmp_path / "rep")
    nb.check()
    assert nb.text(3) == "usage error: Choose one of --record, --replay and --live.\n"
    assert nb.text(4) == f"Replaying model replies from {tape} (1 recorded)\n"
    assert nb.text(6) == "Recorded reply. 0\n"
    assert nb.text(7) == "Model calls go to the models directly.\n"


def test_the_run_is_hermetic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-be-seen")
    monkeypatch.setenv("PI_NOTEBOOK_MODEL", "openai/gpt-5.1")
    path = _write(
        tmp_path,
        "env.ipynb",
        [
            "import os, pathlib\n"
            "env = os.environ\n"
            "print(sorted(k for k in env if k.endswith('_API_KEY') or 'PI_NOTEBOOK' in k))\n"
            "print(env['JPY_SESSION_NAME'], sorted(p.name for p in pathlib.Path().iterdir()))"
        ],
    )
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "rows.csv").write_text("a,b\n1,2\n")
    nb = testing.run_notebook(path, workdir=tmp_path / "run")
    assert nb.text(0).splitlines() == ["[]", "env.ipynb ['data', 'env.ipynb']"]


def test_cassette_lookup(tmp_path: Path) -> None:
    assert (
        cassette_for(NOTEBOOKS / "quickstart.ipynb") == NOTEBOOKS / "cassettes" / "quickstart.jsonl"
    )
    plain = _write(tmp_path, "plain.ipynb", ["1"])
    assert cassette_for(plain) is None
    named = _write(tmp_path, "named.ipynb", ["1"], pi_notebook={"cassette": "tapes/x.jsonl"})
    assert cassette_for(named) == tmp_path / "tapes" / "x.jsonl"
    with pytest.raises(FileNotFoundError, match="No cassette at"):
        testing.run_notebook(named)


# --- the pytest plugin ---------------------------------------------------------------------------


def test_the_pytest_plugin_collects_notebooks(tmp_path: Path) -> None:
    _write(tmp_path, "good.ipynb", ["x = 41", "assert x + 1 == 42"])
    _write(tmp_path, "bad.ipynb", ["assert 1 + 1 == 3, 'arithmetic is broken'"])
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    command = [sys.executable, "-m", "pytest", "-p", "pi_notebook.pytest_plugin", "-q"]
    plain = subprocess.run(
        [*command, "-p", "no:cacheprovider"], cwd=tmp_path, capture_output=True, text=True
    )
    assert "no tests ran" in plain.stdout  # inert without the option
    collected = subprocess.run(
        [*command, "-p", "no:cacheprovider", "--pi-notebooks", "-rf"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = collected.stdout
    assert collected.returncode == 1, out + collected.stderr
    assert "1 failed, 1 passed" in out
    assert "bad.ipynb" in out and "AssertionError: arithmetic is broken" in out


def test_the_fixture_runs_in_the_test_directory(
    run_notebook: Callable[..., ExecutedNotebook], tmp_path: Path
) -> None:
    path = _write(tmp_path, "tiny.ipynb", ["print(6 * 7)"])
    nb = run_notebook(path)
    assert nb.workdir == tmp_path / "run1" and nb.text(0).strip() == "42"
    assert json.loads(nb.path.read_text())["cells"][0]["outputs"]
