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


@pytest.mark.xfail(
    reason="since the session keeps a reply whose write failed (SessionWriteError, pi 1.6 work), "
    "the run no longer fails with the harness's session error, so the notice is not wired yet",
    strict=False,
)
def test_a_failed_session_write_shows_a_not_saved_notice(
    tmp_path: Path, modes_kernel: tuple[str, dict[str, str]]
) -> None:
    kernel, kernel_env = modes_kernel
    replies = "faux_assistant_message('one'), faux_assistant_message('two')"
    nb = execute(
        [
            FAUX_SETUP.format(tps=None) + f"faux.set_responses([{replies}])",
            LOAD,
            "%%agent --wait\nfirst",
            "import os\nos.chmod('test.pi.jsonl', 0o444)",
            "%%agent --wait\nsecond",
            "import pi_notebook\n"
            "view = pi_notebook.current().last_run.view\n"
            "print('notice:', view.notice)",
        ],
        tmp_path,
        env={**ENV, **kernel_env},
        kernel_name=kernel,
    )
    notice = outputs_text(nb.cells[5])
    assert notice.startswith("notice: Not saved to the session file: Could not write the session")
    assert "Permission denied" in notice and "this turn is not in the file" in notice
    assert "! Not saved to the session file" in outputs_text(nb.cells[4])  # the text fallback


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
