"""``%load_ext pi_notebook`` stays light: what only a run, a tool call or a recording needs is
imported on first use (the time itself is measured by ``bench/kernel_bench.py``).
Checked in a fresh interpreter with a real IPython shell."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

DEFERRED = (
    "jsonschema",  # tool-argument validation: seconds where rfc3987-syntax is installed
    "pi_notebook.ai.validation",
    "pi_notebook.ai.cassette",  # PI_NOTEBOOK_RECORD / _REPLAY, %model --record / --replay
    "anywidget",  # the first run view
    "ipywidgets",
    "httpx",  # the first model request
    "aiohttp",  # the default transport under httpx: imported when the first client is made
    "httpx_aiohttp",
    "pi_notebook.ai.aiohttp_transport",
    # A new notebook's session is only started (its header line): the session's models, and
    # pydantic with them, load when it is first used; the first run imports the rest.
    "pydantic",
    "pydantic_core",
    "pi_notebook.ai.types",
    "pi_notebook.ai.events",
    "pi_notebook.ai.models",
    "pi_notebook.harness.entries",
    "pi_notebook.harness.session",
    "pi_notebook.harness.harness",
    "pi_notebook.harness.hooks",
    "pi_notebook.agent.loop",
    "pi_notebook.tools.decorator",  # the notebook's tools are made when first asked for
    "docstring_parser",
    "pi_notebook.mcp.config",  # no mcp.json next to the probe: nothing to read
    "pi_notebook.mcp.servers",
    "pi_notebook.notebook.checkpoints.recorder",  # checkpoints: the first run takes one
    "cloudpickle",
    "yaml",  # skills and prompt templates: read by the harness
    "pathspec",
)

PROBE = f"""
import json, sys
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "pi_notebook")
assert shell.find_cell_magic("agent") is not None
print(json.dumps([name for name in {DEFERRED!r} if name in sys.modules]))
"""


def test_load_ext_defers_what_only_a_run_needs(tmp_path: Path) -> None:
    env = {"JPY_SESSION_NAME": "probe.ipynb", "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=tmp_path,
        env={**_base_env(), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded == [], f"imported by %load_ext: {loaded}"


RESTORE_PROBE = f"""
import json, sys
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "pi_notebook")
import pi_notebook
agent = pi_notebook.current()
before = [name for name in {DEFERRED!r} if name in sys.modules]
print(json.dumps([before, len(agent.session), agent.session_path.name]))
"""


def test_the_started_session_opens_on_first_use(tmp_path: Path) -> None:
    """%load_ext wrote the header only; the session object opens from it when first asked
    for, as an empty session in that file."""
    env = {"JPY_SESSION_NAME": "probe.ipynb", "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", RESTORE_PROBE],
        cwd=tmp_path,
        env={**_base_env(), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    before, entries, name = json.loads(done.stdout.strip().splitlines()[-1])
    assert before == [] and entries == 0 and name == "probe.pi.jsonl"
    header = json.loads((tmp_path / "probe.pi.jsonl").read_text(encoding="utf-8"))
    assert header["type"] == "session" and header["cwd"] == str(tmp_path)


def _base_env() -> dict[str, str]:
    keep = ("PATH", "HOME", "LANG", "PYTHONDONTWRITEBYTECODE", "VIRTUAL_ENV")
    return {name: os.environ[name] for name in keep if name in os.environ}


WATCH = """\
import sys, threading
_importers = {}
class _Watch:
    def find_spec(self, name, path=None, target=None):
        if name.startswith(("pi_notebook.harness.harness", "pi_notebook.agent.loop",
                            "pi_notebook.tools.decorator", "pi_notebook.mcp.servers")):
            _importers.setdefault(name, threading.current_thread() is threading.main_thread())
        return None
sys.meta_path.insert(0, _Watch())
"""


def test_the_first_run_imports_the_run_layers_in_a_thread(tmp_path: Path) -> None:
    """A first %%agent (its model from PI_NOTEBOOK_MODEL) needs the harness on the event loop:
    its layers and the notebook's tools are made in a worker thread, so the loop is not
    stalled while the run view is live."""
    from tests.notebook.kernel_notebook import FAUX_SETUP, execute, outputs_text

    nb = execute(
        [
            WATCH,
            "%load_ext pi_notebook",
            FAUX_SETUP.format(tps=None) + "faux.set_responses([faux_assistant_message('Hi.')])",
            "%%agent --wait\nSay hi.",
            "import pi_notebook\n"
            "assert pi_notebook.current().last_run.result.content[0].text == 'Hi.'\n"
            "print(sorted(_importers.items()))",
        ],
        tmp_path,
        env={"JPY_SESSION_NAME": "test.ipynb", "PI_NOTEBOOK_MODEL": "faux/faux-1"},
    )
    found = outputs_text(nb.cells[-1])
    for name in ("harness.harness", "agent.loop", "tools.decorator", "mcp.servers"):
        assert f"('pi_notebook.{name}', False)" in found, found
