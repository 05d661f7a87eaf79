"""The run view tells what went wrong, in real kernels (nbclient): a session write that fails
mid-notebook (the file made read-only) gives a "not saved" notice, and a stopped reply whose
usage the provider never sent says so instead of ↑0 ↓0 · $0."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.notebook.kernel_notebook import FAUX_SETUP, execute, outputs_text

ENV = {"JPY_SESSION_NAME": "test.ipynb"}
LOAD = "%load_ext pi_notebook\n%model faux/faux-1"


@pytest.fixture
def modes_kernel(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """A kernel for which file modes hold (as root: under setpriv without CAP_DAC_OVERRIDE)."""
    if os.geteuid() != 0:
        yield "python3", {}
        return
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot make a file read-only")
    caps = "-dac_override,-dac_read_search,-fowner"
    spec = tmp_path / "jupyter" / "kernels" / "python3-modes"
    spec.mkdir(parents=True)
    argv = [setpriv, "--bounding-set", caps, "--inh-caps", caps, sys.executable]
    argv += ["-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec.joinpath("kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "modes", "language": "python"})
    )
    yield "python3-modes", {"JUPYTER_PATH": str(tmp_path / "jupyter")}


def test_a_failed_session_write_shows_a_not_saved_notice(
    tmp_path: Path, modes_kernel: tuple[str, dict[str, str]]
) -> None:
    """The file made read-only before the second run: the run still ends with its reply, its
    view says what is not saved; writable again, the third run's first write retries the kept
    entries and the second view says they are saved."""
    kernel, kernel_env = modes_kernel
    replies = "faux_assistant_message(t) for t in ('one', 'two', 'three')"
    nb = execute(
        [
            FAUX_SETUP.format(tps=None) + f"faux.set_responses([{replies}])",
            LOAD,
            "%%agent --wait\nfirst",
            "import os\nos.chmod('test.pi.jsonl', 0o444)",
            "%%agent --wait\nsecond",
            "import pi_notebook\n"
            "run = pi_notebook.current().last_run\n"
            "second = run.view\n"
            "print('state:', run.state, run.result.content[0].text)\n"
            "print('notice:', second.notice)\n"
            "print('fallback:', second.transcript_text().splitlines()[-1])",
            "os.chmod('test.pi.jsonl', 0o644)",
            "%%agent --wait\nthird",
            "print('after:', second.notice)\n"
            "print('third:', repr(pi_notebook.current().last_run.view.notice))",
        ],
        tmp_path,
        env={**ENV, **kernel_env},
        kernel_name=kernel,
    )
    lines = outputs_text(nb.cells[5]).splitlines()
    assert lines[0] == "state: done two"  # the run did not fail: its reply is kept
    notice = lines[1]
    assert notice.startswith("notice: Not saved to the session file: Could not write the session")
    assert "Permission denied" in notice and "this turn is not in the file" in notice
    assert lines[2].startswith("fallback: ! Not saved to the session file: ")
    fallback = outputs_text(nb.cells[4])  # the text fallback, refreshed since
    assert fallback.splitlines()[-1].startswith("! Saved: "), fallback
    assert "Traceback" not in fallback and "never retrieved" not in fallback
    after = outputs_text(nb.cells[8]).splitlines()
    assert after[0].startswith("after: Saved: "), after
    assert after[1] == "third: ''"
    saved = [json.loads(line) for line in (tmp_path / "test.pi.jsonl").read_text().splitlines()]
    texts = [
        block.get("text")
        for entry in saved
        if entry.get("type") == "message" and entry["message"]["role"] == "assistant"
        for block in entry["message"]["content"]
    ]
    assert texts == ["one", "two", "three"]


def test_a_stopped_reply_without_usage_says_usage_unknown(tmp_path: Path) -> None:
    nb = execute(
        [
            FAUX_SETUP.format(tps=20)
            + "faux.set_responses([faux_assistant_message('slow ' * 200)])",
            LOAD,
            "%%agent\nTalk for a long time",
            "import asyncio\nawait asyncio.sleep(1.0)",
            "%abort",
            "import pi_notebook\n"
            "agent = pi_notebook.current()\n"
            "await agent.wait()\n"
            "print(agent.last_run.view.transcript_text().splitlines()[0])",
        ],
        tmp_path,
        env=ENV,
    )
    header = outputs_text(nb.cells[5]).strip()
    assert header == "pi run · stopped · faux/faux-1 · usage unknown: stopped", header
